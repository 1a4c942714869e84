"""Renaming in extracted source: the extracted class to `Model`, names by a mapping, and dotted
module chains (`pkg.sub.fn`) to the bare names that were inlined.
"""

from __future__ import annotations

import libcst as cst

from autotriton.harvesting.parsing import _dotted


MODEL_NAME = "Model"


class _ChainRewriter(cst.CSTTransformer):
    """Replaces dotted chains (`pkg.sub.fn`) by bare names (`fn`)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        chain = _dotted(original)
        if chain in self.mapping:
            return cst.Name(self.mapping[chain])
        return updated


class _Renamer(cst.CSTTransformer):
    """Renames bare names (not attributes, keywords or import names)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.mapping.get(original.value)
        return updated.with_changes(value=new) if new else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_ImportAlias(self, original: cst.ImportAlias, updated: cst.ImportAlias) -> cst.ImportAlias:
        return original

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        return original


def rename_to_model(source: str, class_name: str) -> str:
    """The source with `class_name` (and every reference to it) renamed to `Model`; an unrelated
    top-level `Model` is renamed out of the way first."""
    if class_name == MODEL_NAME:
        return source
    module = cst.parse_module(source)
    mapping = {class_name: MODEL_NAME}
    taken = {n for n in _top_names(module)}
    if MODEL_NAME in taken:
        spare = f"{MODEL_NAME}_"
        while spare in taken:
            spare += "_"
        mapping[MODEL_NAME] = spare
    return module.visit(_Renamer(mapping)).code


def rename_names(source: str, mapping: dict[str, str]) -> str:
    """The source with bare names renamed by `mapping` (attributes, keywords, imports untouched)."""
    return cst.parse_module(source).visit(_Renamer(mapping)).code


def _top_names(module: cst.Module) -> set[str]:
    names = set()
    for stmt in module.body:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            names.add(stmt.name.value)
    return names

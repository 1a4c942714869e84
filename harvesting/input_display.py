"""How an input's value is written in a problem's source: a tensor's constructor call, and the
displays of dicts, lists and records of tensors, taken apart into their items and put back.

Shared by the input repairs (input_repair.py) and the record inputs (record_inputs.py); it imports
nothing of the harvester, so either can use it at import time.
"""

from __future__ import annotations

import ast
from typing import Any


def ones_code(shape: list[int]) -> str:
    """A float mask of `shape`, all ones (how a forward input named like a mask is first guessed)."""
    return f"torch.ones({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def tensor_code(shape: list[int], spec: dict[str, Any]) -> str:
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    if spec.get("dtype") == "int64":
        return f"torch.randint(0, {spec.get('high', 10)}, ({dims}))"
    if spec.get("dtype") == "bool":  # a mask of valid entries: most of them (all of them made `where` a no-op)
        return f"(torch.rand({dims}) > 0.25)"
    if spec.get("range") == "unit":
        return f"torch.rand({dims})"
    if spec.get("range") == "binary":  # a mask of missing values: some zeros, some ones
        return f"torch.randint(0, 2, ({dims})).float()"
    return f"torch.randn({dims})"


def rebuilt(spec: dict[str, Any], items: dict[Any, Any], codes: list[str]) -> tuple[str, dict[str, Any]]:
    """A dict, record or list input (code, spec) from its items' specs and codes, in order."""
    if spec["kind"] == "tensor_dict":
        return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(items, codes)) + "}", {**spec, "items": items}
    if spec["kind"] == "tensor_record":
        return "types.SimpleNamespace(" + ", ".join(f"{k}={c}" for k, c in zip(items, codes)) + ")", {**spec, "items": items}
    return "[" + ", ".join(codes) + "]", {**spec, "items": list(items.values())}


def item_codes(code: str) -> list[str] | None:
    """The item expressions of a dict or list display (`{'a': torch.randn(2, 8), ...}`, `[...]`) or
    of a namespace's keywords (`types.SimpleNamespace(x=torch.randn(8, 32), ...)`)."""
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return None
    items = node.values if isinstance(node, ast.Dict) else node.elts if isinstance(node, (ast.List, ast.Tuple)) else \
        [k.value for k in node.keywords] if isinstance(node, ast.Call) and not node.args else None
    return [ast.get_source_segment(code, v) or "" for v in items] if items is not None else None

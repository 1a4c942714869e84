"""Finding the classes to extract: which classes of a repository are torch.nn.Module subclasses,
through local bases, imports of the repository's own files, class aliases, torch's own classes,
and names a file takes from star imports (`from .torch_core import *`, fastai's and nbdev-made
libraries' way: `class View(Module)` with `Module` and `nn` bound in another file of the package).
"""

from __future__ import annotations

import functools

import libcst as cst

from autotriton.harvesting.parsing import ParsedFile, _dotted
from autotriton.harvesting.repository import Repository, _follow, star_import


# nn.Module subclasses of the frameworks models are most often written against, by the names their
# packages export them under (not imported here: the package may not be installed, and importing it
# would run its code): a Lightning module's forward and a Hugging Face model's are the model's own.
FRAMEWORK_MODULES = frozenset({
    "lightning.LightningModule", "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
    "lightning.pytorch.core.module.LightningModule", "pytorch_lightning.LightningModule",
    "pytorch_lightning.core.LightningModule", "pytorch_lightning.core.module.LightningModule",
    "transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel",
    "diffusers.ModelMixin", "diffusers.models.modeling_utils.ModelMixin",
})


@functools.lru_cache(maxsize=4096)
def _torch_module_class(qualified: str) -> bool | None:
    """True when `qualified` (e.g. "torch.nn.Conv2d", "lightning.pytorch.LightningModule") names a
    torch.nn.Module subclass of torch's or of a framework's (FRAMEWORK_MODULES)."""
    if qualified in FRAMEWORK_MODULES:
        return True
    if not qualified.startswith("torch."):
        return None
    import torch

    obj: object = torch
    for part in qualified.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


def _base_qualified(parsed: ParsedFile, expr: cst.BaseExpression) -> tuple[str, str]:
    """(head name, qualified dotted name through the file's imports) of a base-class expression."""
    dotted = _dotted(expr)
    if not dotted:
        return "", ""
    head, _, rest = dotted.partition(".")
    for bindings in parsed.imports.values():
        for b in bindings:
            if b.level:
                continue
            if b.asname == dotted or (rest and dotted.startswith(b.asname + ".")):
                tail = dotted[len(b.asname):]
                return head, b.qualified + tail
            if b.asname == head:
                return head, b.qualified + ("." + rest if rest else "")
    return head, dotted


class ModuleClassIndex:
    """Decides, with memo, whether a class of the repository is an nn.Module subclass."""

    def __init__(self, repo: Repository):
        self.repo = repo
        self._memo: dict[tuple[str, str], bool] = {}

    def is_module(self, path: str, class_name: str, depth: int = 0) -> bool:
        key = (path, class_name)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # cycle guard
        result = self._decide(path, class_name, depth)
        self._memo[key] = result
        return result

    def torch_base(self, path: str, class_name: str, depth: int = 0) -> str | None:
        """The qualified torch base class reached through the class's bases, if any."""
        parsed = self.repo.parsed(path)
        if parsed is None or class_name not in parsed.classes or depth > 8:
            return None
        node = parsed.statements[parsed.classes[class_name]]
        assert isinstance(node, cst.ClassDef)
        for arg in node.bases:
            qual, target = self._resolve(parsed, arg.value)
            if _torch_module_class(qual):
                return qual
            if target is not None:
                found = self.torch_base(target[0], target[1], depth + 1)
                if found:
                    return found
        return None

    def _resolve(self, parsed: ParsedFile, expr: cst.BaseExpression, hops: int = 0) -> tuple[str, tuple[str, str] | None]:
        """(qualified name, (file, class) of the repository or None) of a base-class expression: through
        the file's own imports and classes, else, for a name the file does not bind, through its star
        imports (files of the repository, followed in turn; `from torch.nn import *` qualifies the name)."""
        head, qual = _base_qualified(parsed, expr)
        target = self._locate(parsed, head, qual)
        if target is not None or not head or head in parsed.defines or _torch_module_class(qual) or hops > 6:
            return qual, target
        for idx in parsed.star_imports:
            module, level, found = star_import(self.repo, parsed, idx)
            other = self.repo.parsed(found) if found is not None else None
            if other is not None:
                star_qual, star_target = self._resolve(other, expr, hops + 1)
                if star_target is not None or _torch_module_class(star_qual):
                    return star_qual, star_target
            elif found is None and not level and module and _torch_module_class(f"{module}.{_dotted(expr)}"):
                return f"{module}.{_dotted(expr)}", None
        return qual, None

    def _locate(self, parsed: ParsedFile, head: str, qual: str) -> tuple[str, str] | None:
        if "." not in _dotted_tail(qual, head) and (head in parsed.classes or head in _assign_aliases(parsed)):
            return (parsed.path, head)
        for idx, bindings in parsed.imports.items():
            for b in bindings:
                if b.asname == head and b.name is not None:
                    resolved = self.repo.resolve_import(parsed.path, b)
                    if isinstance(resolved, tuple) and resolved[0]:
                        return _follow(self.repo, resolved[0], resolved[1])
        return None

    def _decide(self, path: str, class_name: str, depth: int) -> bool:
        parsed = self.repo.parsed(path)
        if parsed is None or depth > 8:
            return False
        if class_name not in parsed.classes:
            # `Module = torch.nn.Module` style aliases (kornia.core and others)
            for value in _assign_aliases(parsed).get(class_name, []):  # any branch's (an if/else switch)
                head, qual = _base_qualified(parsed, value)
                if _torch_module_class(qual):
                    return True
                target = self._locate(parsed, head, qual)
                if target is not None and target != (path, class_name) and self.is_module(target[0], target[1], depth + 1):
                    return True
            return False
        node = parsed.statements[parsed.classes[class_name]]
        assert isinstance(node, cst.ClassDef)
        for arg in node.bases:
            if arg.keyword is not None:
                continue
            qual, target = self._resolve(parsed, arg.value)
            if _torch_module_class(qual):
                return True
            if target is not None and self.is_module(target[0], target[1], depth + 1):
                return True
        return False

    def module_classes(self, path: str) -> list[str]:
        parsed = self.repo.parsed(path)
        if parsed is None:
            return []
        return [name for name in parsed.classes if self.is_module(path, name)]


def _assign_aliases(parsed: ParsedFile) -> dict[str, list[cst.BaseExpression]]:
    """Top-level `Name = dotted.name` assignments of a file (class aliases), also those made in a
    top-level `if`/`else` or `try`/`except` (rwkv: `if os.environ.get('RWKV_JIT_ON') != '0':
    MyModule = torch.jit.ScriptModule` / `else: MyModule = torch.nn.Module`): each value in file order."""
    cached = getattr(parsed, "_aliases", None)
    if cached is not None:
        return cached
    out: dict[str, list[cst.BaseExpression]] = {}

    def visit(statements) -> None:
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
                assign = stmt.body[0]
                if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and _dotted(assign.value):
                    out.setdefault(assign.targets[0].target.value, []).append(assign.value)
            elif isinstance(stmt, (cst.If, cst.Try)):
                for block in _branches(stmt):
                    visit(block)

    visit(parsed.statements)
    object.__setattr__(parsed, "_aliases", out)
    return out


def _branches(stmt: cst.If | cst.Try) -> list[list[cst.BaseStatement]]:
    """The statement lists of an `if`/`elif`/`else` chain or a `try`/`except`/`else`."""
    out: list[list[cst.BaseStatement]] = [list(stmt.body.body)]
    if isinstance(stmt, cst.Try):
        out += [list(h.body.body) for h in stmt.handlers]
    orelse = stmt.orelse
    if isinstance(orelse, cst.If):
        out += _branches(orelse)
    elif orelse is not None:
        out.append(list(orelse.body.body))
    return out


def _dotted_tail(qual: str, head: str) -> str:
    return qual[len(head):] if qual.startswith(head) else qual

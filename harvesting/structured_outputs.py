"""Forwards that return a structure of tensors: a dict (`{"logits": ..., "hidden": ...}`, Hugging
Face's ModelOutput), a dataclass, a namespace (a graph batch forward wrote into: record_inputs.py),
or lists of them. KernelBench compares a tensor or a tuple of
tensors, and the probe says so ("forward returned dict; expected a tensor or a tuple of tensors").

The problem keeps the module as written, renamed `StructuredModel`, and appends

    class Model(StructuredModel):
        def forward(self, x, mask=None):
            return _output_tensors(super().forward(x, mask=mask))

so `Model`'s constructor is the module's own, its forward has the module's signature, and the
Inductor converter finds it as for any `class Model(<a class of the source>)`
(distillation/inductor_module.py: ModelNew takes the base, without its forward).
"""

from __future__ import annotations

import ast
import re
from typing import Callable

from autotriton.harvesting.renaming import MODEL_NAME, rename_names
from autotriton.harvesting.signatures import _method

# validation/candidate_runner.py's _flatten_outputs
STRUCTURED_OUTPUT = re.compile(r"forward returned (\w+)(?: holding None)?; expected a tensor or a tuple of tensors")
# types with no tensors in them: a tuple of their tensors would be empty
_NOT_STRUCTURES = {"NoneType", "str", "bytes", "type", "function", "method"}

_HELPER = '''

def {helper}(out, _depth=0):
    """The tensors of a forward's output, in order: dict values, dataclass fields, list and
    tuple items, nested; an object's tensor attributes; other values (None, numbers, strings)
    left out."""
    if isinstance(out, torch.Tensor):
        return (out,)
    if isinstance(out, dict):
        items = list(out.values())
    elif hasattr(out, "__dataclass_fields__") and not isinstance(out, type):
        items = [getattr(out, name, None) for name in out.__dataclass_fields__]
    elif type(out).__name__ == "SimpleNamespace":  # a record input written into and returned
        items = list(vars(out).values())
    elif isinstance(out, (list, tuple)):
        items = list(out)
    elif hasattr(out, "__dict__") and not isinstance(out, (type, torch.nn.Module)):
        # another object (an action-value, a torch distribution): its tensor attributes, in
        # order, each once (Categorical keeps its logits twice), and those of the objects it
        # holds, two levels down (Independent(Normal(loc, scale), 1) holds its base distribution)
        found = {{}}
        for v in vars(out).values():
            held = (v,) if isinstance(v, torch.Tensor) else (
                {helper}(v, _depth + 1) if _depth < 2 and hasattr(v, "__dict__") else ())
            for t in held:
                found.setdefault(id(t), t)
        return tuple(found.values())
    else:
        return ()
    return tuple(t for item in items for t in {helper}(item))


class {model}({base}):
    """{base}, returning its output's tensors as a tuple (KernelBench compares tensors)."""

    def forward({params}):
        return {helper}(super().forward({call}))
'''


def structured_output(detail: str) -> str | None:
    """The type a probe's error says forward returned when that was not a tensor or a tuple of
    tensors (`dict`, a dataclass's name), or None."""
    m = STRUCTURED_OUTPUT.search(detail or "")
    return m.group(1) if m and m.group(1) not in _NOT_STRUCTURES else None


def _signature(forward: ast.FunctionDef | None) -> tuple[str, str]:
    """forward's parameters (defaults kept, annotations dropped: they may name what the subclass
    cannot see) and the call passing each on as it was given."""
    if forward is None:
        return "self, *args, **kwargs", "*args, **kwargs"
    args = ast.parse(ast.unparse(forward)).body[0].args  # a copy
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    positional = [a.arg for a in [*args.posonlyargs, *args.args][1:]]
    call = positional + ([f"*{args.vararg.arg}"] if args.vararg else [])
    call += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    call += [f"**{args.kwarg.arg}"] if args.kwarg else []
    return ast.unparse(args), ", ".join(call)


def with_torch_import(model_source: str) -> str | None:
    """The source, with `import torch` first (after any `from __future__` import) where it does not
    import torch by that name (the harvest's module source imports only what the module uses, and an
    appended helper calls torch); None when it does not parse or binds `torch` to something else."""
    try:
        tree = ast.parse(model_source)
    except SyntaxError:
        return None
    if any(isinstance(n, ast.Import) and any(a.name == "torch" and a.asname in (None, "torch") for a in n.names)
           for n in tree.body):
        return model_source
    bound = {t.id for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    bound |= {a.asname or a.name.split(".")[0] for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    if "torch" in bound:
        return None
    # after the `from __future__` imports, which must stay first (spandrel's blocks: "from __future__
    # imports must occur at the beginning of the file")
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    if not future:
        return "import torch\n" + model_source
    lines = model_source.splitlines(keepends=True)
    end = max(n.end_lineno or n.lineno for n in future)
    return "".join(lines[:end]) + ("" if lines[end - 1].endswith("\n") else "\n") + "import torch\n" + "".join(lines[end:])


def rewrite_model(model_source: str, *, helper: str, base: str, method: str, template: str,
                  wrap_call: Callable[[str], str] | None = None, **fields: object) -> str | None:
    """The source with `Model` renamed `base` (every reference to it too, so that `super(Model,
    self)` stays right; a free name if `base` is taken) and `template` appended, formatted with
    `helper`, `model`, `base` and `params`/`call`: the signature of Model's `method` (its own or
    inherited) and the call passing each parameter on. None when the source has no class Model or
    already defines `helper` (rewritten already, or a name of its own in the way)."""
    try:
        tree = ast.parse(model_source)
    except SyntaxError:
        return None
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    if MODEL_NAME not in classes:
        return None
    taken = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    taken |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if helper in taken:
        return None
    while base in taken:
        base += "_"
    params, call = _signature(_method(classes, MODEL_NAME, method))
    if wrap_call is not None:
        call = wrap_call(call)
    renamed = rename_names(model_source, {MODEL_NAME: base})
    return renamed.rstrip() + "\n" + template.format(helper=helper, model=MODEL_NAME, base=base, params=params, call=call,
                                                     **fields)


def tuple_outputs(model_source: str) -> str | None:
    """The source with `Model` renamed `StructuredModel` and a `Model` subclass appended whose
    forward returns the tensors of the module's output as a flat tuple (module docstring). None
    when the source has no class Model or was rewritten already."""
    return rewrite_model(model_source, helper="_output_tensors", base="StructuredModel", method="forward", template=_HELPER)

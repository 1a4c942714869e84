"""Forward inputs that are records of tensors: a graph batch (PyTorch Geometric's `Data` / `Batch`:
`data.x`, `data.edge_index`, `batch.edge_attr`), a batched molecular graph (chemprop's
`bmg.V`, `bmg.E`), any object forward only reads (and writes) attributes of.

Such a parameter gets a `types.SimpleNamespace` holding a tensor per attribute forward reads
before writing it. An input qualifies when every use of it in forward is an attribute access
(read or written; not a method call, not an attribute a tensor has: `x.shape` is a tensor's) or
`return p`. Each attribute's tensor is guessed as dict_inputs.py guesses a dict key's: forward
is read with `p.attr` as `p["attr"]`, so the first layer applied, the unpacked shape and the
attribute's name (`edge_index`: integer indices) all speak. Only the AST is read. Used by
synthesis.py; the probe's solver resizes the namespace's tensors (validation/shape_solver.py),
and a forward that returns the record gives its tensors (structured_outputs.py).
"""

from __future__ import annotations

import ast
import copy
import functools
from typing import Any

from autotriton.harvesting.dict_inputs import dict_input_options
from autotriton.harvesting.input_display import item_codes, rebuilt
from autotriton.harvesting.signatures import _Param

@functools.cache
def _tensor_names() -> frozenset[str]:
    """Attributes and methods of torch.Tensor: an input read through them is a tensor."""
    import torch

    return frozenset(dir(torch.Tensor))


def record_attributes(forward: ast.FunctionDef, param: str) -> list[str]:
    """The attributes forward reads from `param`, in order, when every use of `param` is an
    attribute access or `return param`; [] otherwise (a tensor, a module, a value passed on)."""
    parents = {id(c): n for n in ast.walk(forward) for c in ast.iter_child_nodes(n)}
    names = _tensor_names()
    read: list[str] = []
    uses = [n for n in ast.walk(forward) if isinstance(n, ast.Name) and n.id == param]
    for use in uses:
        up = parents.get(id(use))
        if isinstance(use.ctx, ast.Store):
            return []  # rebound: not the record handed in
        if isinstance(up, ast.Return) and up.value is use:
            continue
        if not (isinstance(up, ast.Attribute) and up.value is use) or up.attr in names or up.attr.startswith("_"):
            return []
        call = parents.get(id(up))
        if isinstance(call, ast.Call) and call.func is up:
            return []  # a method: an object of a class we do not have
        if isinstance(up.ctx, ast.Load) and up.attr not in read:
            read.append(up.attr)
    return read


class _AttributesAsItems(ast.NodeTransformer):
    """`p.attr` -> `p["attr"]`, loads and stores alike."""

    def __init__(self, param: str):
        self.param = param

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == self.param:
            return ast.copy_location(ast.Subscript(ast.Name(self.param, ast.Load()), ast.Constant(node.attr), node.ctx), node)
        return self.generic_visit(node)


def record_input_options(p: _Param, forward: ast.FunctionDef | None, calls: dict[str, ast.Call], values: dict[str, Any],
                         D: int, spatial: int, init: ast.FunctionDef | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Options (source, spec) for a forward input that is a record of tensors, best first; []
    when `p` is not one (record_attributes)."""
    if forward is None or "Tensor" in (p.annotation or "") or not record_attributes(forward, p.name):
        return []
    view = ast.fix_missing_locations(_AttributesAsItems(p.name).visit(copy.deepcopy(forward)))
    out: list[tuple[str, dict[str, Any]]] = []
    for code, spec in dict_input_options(p, view, calls, values, D, spatial, init, first_indices=True):
        codes = item_codes(code)
        if codes is not None and len(codes) == len(spec["items"]) and all(str(k).isidentifier() for k in spec["items"]):
            out.append(rebuilt({"kind": "tensor_record"}, spec["items"], codes))  # the dict's items as fields
    return out

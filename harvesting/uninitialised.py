"""Modules whose parameters start as uninitialised memory: a layer that expects pretrained weights
to be loaded later allocates them with `nn.Parameter(torch.empty(out, in))` and never fills them
(labml-nn's LoRA Linear and Embedding, and the GPT-2 blocks built of them). Two constructions with
one seed then hold different garbage, and the probe refuses the module as `nondeterministic` ("two
runs with the same seed gave different outputs", or, when the allocator hands two runs the same
garbage and the reseeded run other garbage, "forward draws random numbers"), though its forward is
an ordinary kernel. A source with torch.empty calls refused as nondeterministic is rewritten once
and probed again; a forward that really draws random numbers is then refused again.

Such a problem keeps the module as written, with its `torch.empty(...)` and `torch.empty_like(...)`
calls made `_filled_empty(...)` / `_filled_empty_like(...)`: the same allocation, its memory filled
by a draw from torch's seeded generator (a normal of standard deviation 0.02 for floating dtypes,
zeros otherwise). Memory the code fills afterwards is overwritten as before; memory it never fills
is now the same for the same seed. The helpers are defined after the source's imports, so calls at
import time find them too. The probe then decides again.
"""

from __future__ import annotations

import ast
import re

from autotriton.harvesting.structured_outputs import with_torch_import

HELPER = "_filled_empty"
STD = 0.02  # a pretrained layer's scale (GPT-2's initialiser), far from the uninitialised memory's extremes
_CALL = re.compile(r"\btorch\.(empty|empty_like)\(")

_HELPERS = f'''

def {HELPER}(*args, **kwargs):
    """torch.empty, its memory filled from torch's seeded generator (normal, std {STD}, for floating
    dtypes; zeros otherwise): uninitialised parameters made two constructions with one seed differ."""
    return _filled(torch.empty(*args, **kwargs))


def {HELPER}_like(*args, **kwargs):
    """torch.empty_like, filled as {HELPER} fills."""
    return _filled(torch.empty_like(*args, **kwargs))


def _filled(tensor):
    with torch.no_grad():
        return tensor.normal_(0.0, {STD}) if tensor.is_floating_point() else tensor.zero_()

'''


def filled_empties(model_source: str) -> str | None:
    """The source with its torch.empty / torch.empty_like calls filled (see the module's doc), or
    None when it has none, was rewritten already, or does not parse."""
    if HELPER in model_source or not _CALL.search(model_source):
        return None
    source = with_torch_import(model_source)
    if source is None:
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines(keepends=True)
    # after the module's leading imports (and docstring), before anything that could call them
    leading = 0
    for node in tree.body:
        if not (isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))):
            break
        leading = node.end_lineno or leading
    head, rest = "".join(lines[:leading]), "".join(lines[leading:])
    rest = _CALL.sub(lambda m: f"{HELPER}_like(" if m.group(1) == "empty_like" else f"{HELPER}(", rest)
    return head.rstrip("\n") + "\n" + _HELPERS + "\n" + rest.lstrip("\n")

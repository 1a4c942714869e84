"""Modules whose forward changes its own inputs in place: an activation wrapper holding
`nn.ReLU(inplace=True)` (facexlib's ReluLayer), a residual block whose guessed layer factory is
the identity, so that `act(conv(x))` is `relu_(x)` (super-image's ResBlock). The judge forbids a
candidate to write into its inputs, and the Inductor teacher's faithful copy of such a forward
does: six of 146 held-out package problems were lost so on an H100 (twenty-third run). Such a
problem keeps the module as written, renamed `InPlaceModel`, and appends

    class Model(InPlaceModel):
        def forward(self, x, mask=None):
            return super().forward(_own_copy(x), _own_copy(mask))

so that forward's in-place operations change copies; its outputs are the module's own. The probe
reports the mutation (validation/probe.py, `mutates_inputs`) and decides again on the rewritten
source; a module that still changes its inputs is kept as it is.
"""

from __future__ import annotations

from autotriton.harvesting.structured_outputs import rewrite_model, with_torch_import

HELPER = "_own_copy"

_TEMPLATE = '''

def {helper}(value):
    """A copy of a forward input (tensors inside lists, tuples and dicts too): forward changes it in place."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if type(value) in (list, tuple):
        return type(value)({helper}(v) for v in value)
    if type(value) is dict:
        return {{k: {helper}(v) for k, v in value.items()}}
    return value


class {model}({base}):
    """{base}, given copies of its inputs: its forward changes them in place."""

    def forward({params}):
        return super().forward({call})
'''


def _copied(call: str) -> str:
    """`x, *rest, k=k, **kw` -> each passed through the copy helper."""
    items = []
    for item in (call.split(", ") if call else []):
        if item.startswith("**"):
            items.append(f"**{HELPER}({item[2:]})")
        elif item.startswith("*"):
            items.append(f"*{HELPER}({item[1:]})")
        elif "=" in item:
            key, value = item.split("=", 1)
            items.append(f"{key}={HELPER}({value})")
        else:
            items.append(f"{HELPER}({item})")
    return ", ".join(items)


def copied_inputs(model_source: str) -> str | None:
    """The source with `Model` renamed `InPlaceModel` and a `Model` subclass appended whose forward
    (the module's own signature) passes copies of its inputs on (module docstring). None when the
    source has no class Model, binds `torch` to something else, or was rewritten already."""
    model_source = with_torch_import(model_source)  # the helper calls torch by that name
    if model_source is None:
        return None
    return rewrite_model(model_source, helper=HELPER, base="InPlaceModel", method="forward", template=_TEMPLATE,
                         wrap_call=_copied)

"""Modules that are the identity at their initial parameters: an affine layer with weight 1 and
bias 0 (vit-pytorch's Affine, a LayerScale of ones, a zero-initialised residual branch) returns its
input unchanged at initialisation, so the probe refuses it as `returns_input`, though it computes
once trained. Such a problem keeps the module as written, renamed `InitialModel`, and appends

    class Model(InitialModel):
        def __init__(self, dim, init_values=1.0):
            super().__init__(dim, init_values=init_values)
            _move_parameters(self)

which moves every floating parameter by a seeded normal draw (the judge seeds construction and loads
the reference's parameters into the candidate, so both see the same values). The probe then decides
again: a module that still returns its input (no parameters, or none on the path) stays refused.
"""

from __future__ import annotations

from autotriton.harvesting.structured_outputs import rewrite_model, with_torch_import

HELPER = "_move_parameters"
SCALE = 0.5  # the draw's standard deviation: far from an identity within the probe's 1e-5 tolerance

_TEMPLATE = '''

def {helper}(module):
    """Move every floating-point parameter of `module` off its initial value (seeded by the caller)."""
    with torch.no_grad():
        for p in module.parameters():
            if p.is_floating_point():
                p.add_(torch.randn_like(p) * {scale})


class {model}({base}):
    """{base}, its parameters moved off their initial values (at which it returns its input unchanged)."""

    def __init__({params}):
        super().__init__({call})
        {helper}(self)
'''


def perturbed_parameters(model_source: str) -> str | None:
    """The source with `Model` renamed `InitialModel` and a `Model` subclass appended whose
    constructor (the module's own signature) moves its parameters (module docstring). None when the
    source has no class Model, binds `torch` to something else, or was rewritten already."""
    model_source = with_torch_import(model_source)  # the helper calls torch by that name
    if model_source is None:
        return None
    return rewrite_model(model_source, helper=HELPER, base="InitialModel", method="__init__", template=_TEMPLATE, scale=SCALE)

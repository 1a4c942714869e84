"""A helper imported under an alias keeps working when a parameter has the helper's own name.

Real code (pytorch-wavelets' DTCWT): `from .coeffs import biort as _biort`, then
`_biort(biort)` in an `__init__` whose parameter is `biort`. Inlining the helper and renaming the
alias to the helper's name made that `biort(biort)`: the string parameter called as a function,
and the class was lost as `no_working_inputs`. What a user relies on: the standalone problem
computes what the package computes.
"""

from __future__ import annotations

import re

import torch

from autotriton.harvesting.extract import Repository, extract_class

COEFFS = '''
import torch


def biort(name):
    return torch.ones(4) * len(name), torch.zeros(4)


def level1():
    return biort("legall")
'''

ALIASED = '''
import torch
import torch.nn as nn
from pkg.coeffs import biort as _biort, level1


class Filter(nn.Module):
    def __init__(self, biort="near_sym_a"):
        super().__init__()
        h0, _ = _biort(biort)
        g0, _ = level1()
        self.register_buffer("h0", h0 + g0)

    def forward(self, x):
        return x * self.h0
'''

CHAINED = '''
import torch.nn as nn
import pkg.coeffs as coeffs


class Filter(nn.Module):
    def __init__(self, biort="near_sym_a"):
        super().__init__()
        h0, _ = coeffs.biort(biort)
        self.register_buffer("h0", h0)

    def forward(self, x):
        return x * self.h0
'''

PLAIN = '''
import torch.nn as nn
from pkg.coeffs import biort


class Filter(nn.Module):
    def __init__(self, name="near_sym_a"):
        super().__init__()
        h0, _ = biort(name)
        self.register_buffer("h0", h0)

    def forward(self, x):
        return x * self.h0
'''


def _extract(layer: str) -> str:
    files = {"pkg/__init__.py": "", "pkg/coeffs.py": COEFFS, "pkg/layer.py": layer}
    return extract_class(Repository(files, lambda p: files[p].encode()), "pkg/layer.py", "Filter").source


def _run(source: str, *init) -> torch.Tensor:
    namespace: dict = {}
    exec(compile(source, "standalone.py", "exec"), namespace)
    return namespace["Filter"](*init)(torch.ones(4))


def test_an_aliased_helper_shadowed_by_a_parameter_is_renamed_not_the_use():
    source = _extract(ALIASED)
    assert not re.search(r"(?<![\w.])biort\(biort\)", source), source
    # the helper and the package's own use of it inside coeffs.py (level1) agree on the new name
    assert _run(source).tolist() == [10.0 + 6.0] * 4
    assert _run(source, "ab").tolist() == [2.0 + 6.0] * 4


def test_a_module_chain_resolved_to_a_shadowed_name_is_renamed_too():
    source = _extract(CHAINED)
    assert not re.search(r"(?<![\w.])biort\(biort\)", source), source
    assert _run(source).tolist() == [10.0] * 4


def test_nothing_is_renamed_where_nothing_is_shadowed():
    source = _extract(PLAIN)
    assert "def biort(name)" in source and "biort(name)" in source, source
    assert _run(source).tolist() == [10.0] * 4

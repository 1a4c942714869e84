"""Modules written as dataclasses (resemble-enhance's CFM, held-out set 38: `@dataclass(eq=False) class
CFM(nn.Module)` with annotated fields and a `__post_init__` that builds the layers): there is no
`__init__` in the source, the constructor is the one the dataclass generates from the fields. It was
read as nn.Module's (no arguments), and every guess failed with "missing 2 required positional
arguments"."""

from __future__ import annotations

import ast

from autotriton.harvesting import HarvestConfig, harvest_local
from autotriton.harvesting.signatures import _classes, dataclass_params

from tests.test_harvesting_synthesis import HEADER

DATACLASS_MODULES = '''
from dataclasses import dataclass, field


@dataclass(eq=False)
class Flow(nn.Module):
    cond_dim: int
    output_dim: int
    hidden_dim: int = 64
    name: str = "flow"
    scales: list = field(default_factory=list)
    steps: int = field(default=4, init=False)

    def __post_init__(self):
        super().__init__()
        self.cond = nn.Linear(self.cond_dim, self.hidden_dim)
        self.out = nn.Linear(self.hidden_dim, self.output_dim)

    def forward(self, x, cond):
        return self.out(torch.tanh(self.cond(cond)) * x)


@dataclass(eq=False)
class GatedFlow(Flow):
    gate_dim: int = 8

    def __post_init__(self):
        super().__post_init__()
        self.gate = nn.Linear(self.output_dim, self.gate_dim)

    def forward(self, x, cond):
        return self.gate(super().forward(x, cond))
'''


def test_a_dataclass_modules_constructor_is_its_fields():
    classes = _classes(ast.parse(DATACLASS_MODULES))
    own = dataclass_params(classes, "Flow")
    assert [(p.name, p.default) for p in own] == [
        ("cond_dim", None), ("output_dim", None), ("hidden_dim", "64"), ("name", "'flow'"), ("scales", "(list)()")]
    assert [p.name for p in dataclass_params(classes, "GatedFlow")] == [
        "cond_dim", "output_dim", "hidden_dim", "name", "scales", "gate_dim"]  # the base's fields first


def test_dataclass_modules_become_problems(tmp_path):
    (tmp_path / "flows.py").write_text(HEADER + DATACLASS_MODULES)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    status = {p.name: (p.status, p.reject_reason, result.details.get(p.key)) for p in result.problems}
    assert status.keys() == {"Flow", "GatedFlow"}
    assert all(s[:2] == ("runnable", None) for s in status.values()), status
    flow = next(p for p in result.problems if p.name == "Flow")
    assert [s.get("name") for s in flow.init_spec][:2] == ["cond_dim", "output_dim"]

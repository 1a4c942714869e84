"""Forward inputs that are records of tensors (issue 13): graph neural network layers take a graph
batch and read its attributes (PyTorch Geometric's `data.x`, `data.edge_index`; GraphGym's
`batch.x = self.bn(batch.x)`, returning the batch; chemprop's `bmg.V`, `bmg.E`). The harvester
handed them a tensor and they ended as no_working_inputs on "'Tensor' object has no attribute
'x'" (held-out set 22: torch-geometric, chemprop). Each module below is written here in that style
and must become a runnable problem through the real harvest path, its input a namespace holding
the attributes forward reads."""

from __future__ import annotations

import ast
import types

import pytest
import torch

from autotriton.harvesting.record_inputs import record_attributes
from tests.test_harvesting_forward_forms import _harvest, _load

GRAPH_MODULES = '''
class EdgeConv(nn.Module):
    """Messages along the edges, summed at their targets."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, data):
        x, edge_index = data.x, data.edge_index
        messages = self.lin(x)[edge_index[0]]
        out = torch.zeros(x.shape[0], messages.shape[1]).index_add_(0, edge_index[1], messages)
        return torch.relu(out)


class NodeNorm(nn.Module):
    """GraphGym's style: the node features normalised in place in the batch, the batch returned."""

    def __init__(self, dim_in):
        super().__init__()
        self.bn = nn.BatchNorm1d(dim_in)

    def forward(self, batch):
        batch.x = self.bn(batch.x)
        return batch


class BondMessages(nn.Module):
    """chemprop's style: atom features gathered at each bond's source beside the bond's own."""

    def __init__(self, d_v, d_e, d_h):
        super().__init__()
        self.W_i = nn.Linear(d_v + d_e, d_h)

    def forward(self, bmg):
        return self.W_i(torch.cat([bmg.V[bmg.edge_index[0]], bmg.E], dim=1))
'''


def test_graph_layers_reading_a_batchs_attributes_become_runnable_problems(tmp_path):
    problems = _harvest(tmp_path, "graph.py", GRAPH_MODULES)
    assert set(problems) == {"EdgeConv", "NodeNorm", "BondMessages"}
    for name, attributes in (("EdgeConv", ["x", "edge_index"]), ("NodeNorm", ["x"]), ("BondMessages", ["V", "edge_index", "E"])):
        problem = problems[name]
        assert problem.input_spec[0]["kind"] == "tensor_record"
        ns = _load(problem.reference_source)  # stands alone: `types` imported for the namespace
        torch.manual_seed(0)
        (record,) = ns["get_inputs"]()
        assert isinstance(record, types.SimpleNamespace) and list(vars(record)) == attributes
        model = ns["Model"](*ns["get_init_inputs"]()).eval()
        with torch.no_grad():
            out = model(record)
        assert isinstance(out, torch.Tensor) or all(isinstance(t, torch.Tensor) for t in out)
    # indices into the nodes: integers below the node count, as the edges of a graph are
    data = _load(problems["EdgeConv"].reference_source)["get_inputs"]()[0]
    assert data.edge_index.dtype == torch.int64 and int(data.edge_index.max()) < data.x.shape[0]
    # the batch NodeNorm returns gives its tensors (KernelBench compares tensors)
    assert "SimpleNamespace" in problems["NodeNorm"].reference_source.split("class Model(")[1]


def _forward(body: str) -> ast.FunctionDef:
    return ast.parse(f"def forward(self, p):\n    {body}").body[0]


@pytest.mark.parametrize("body, attributes", [
    ("return self.lin(p.x)[p.edge_index[0]]", ["x", "edge_index"]),
    ("p.x = self.bn(p.x)\n    return p", ["x"]),
    ("return p.reshape(2, -1)", []),  # a tensor's method
    ("return self.lin(p.T)", []),  # a tensor's attribute
    ("return self.lin(p)", []),  # handed on whole
    ("return p.encode(self.lin)", []),  # a method of an object we do not have
    ("x = p.x\n    p = x\n    return p", []),  # rebound
])
def test_only_inputs_read_solely_through_their_own_attributes_are_records(body, attributes):
    assert record_attributes(_forward(body), "p") == attributes

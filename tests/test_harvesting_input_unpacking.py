"""A forward input unpacked into a fixed number of names (alphafold3-pytorch's feature tensors,
held-out set 28): the error says how many, the statement which input and along which axis."""

from __future__ import annotations

from autotriton.harvesting.statement_inputs import unpacked_input
from autotriton.harvesting.synthesis import Attempt

from tests.test_harvesting_synthesis import assert_all_runnable

STANDALONE = "class Model(nn.Module):\n    def forward(self, x, feats, ids):\n        pass\n"
GUESS = Attempt([], [], ["torch.randn(2, 8, 32)", "torch.randn(2, 8, 32)", "torch.randint(0, 8, (4,))"],
                [{"kind": "tensor", "shape": [2, 8, 32]}, {"kind": "tensor", "shape": [2, 8, 32]},
                 {"kind": "tensor", "shape": [4], "dtype": "int64", "high": 8}])


def _detail(statement: str, error: str) -> str:
    return f'Traceback (most recent call last):\n  File "problem.py", line 12, in forward\n    {statement}\n{error}'


def test_the_unpacked_axis_gets_as_many_items_and_a_shape_unpacked_gets_as_many_axes():
    unbound = unpacked_input(STANDALONE, GUESS, _detail("res_idx, token_idx, asym_id = feats.unbind(dim = -1)",
                                                        "ValueError: too many values to unpack (expected 3)"))
    assert unbound.input_spec[1]["shape"] == [2, 8, 3] and unbound.input_code[1] == "torch.randn(2, 8, 3)"
    assert unbound.input_spec[0] == GUESS.input_spec[0] and unbound.input_spec[2] == GUESS.input_spec[2]
    by_torch = unpacked_input(STANDALONE, GUESS, _detail("a, b = torch.unbind(feats, 1)",
                                                         "ValueError: too many values to unpack (expected 2)"))
    assert by_torch.input_spec[1]["shape"] == [2, 2, 32]
    plain = unpacked_input(STANDALONE, GUESS, _detail("q, k, v = x", "ValueError: too many values to unpack (expected 3)"))
    assert plain.input_spec[0]["shape"] == [3, 8, 32]
    ranked = unpacked_input(STANDALONE, GUESS, _detail("batch_size, seq_len = ids.shape",
                                                       "ValueError: not enough values to unpack (expected 2, got 1)"))
    assert ranked.input_spec[2]["shape"] == [4, 8] and ranked.input_spec[2]["dtype"] == "int64"
    assert ranked.input_code[2].startswith("torch.randint(") and "(4, 8)" in ranked.input_code[2]
    # another error, a name that is no input, or a starred target: nothing to say
    assert unpacked_input(STANDALONE, GUESS, _detail("a, b = feats.unbind(-1)", "RuntimeError: shape mismatch")) is None
    assert unpacked_input(STANDALONE, GUESS, _detail("a, b = other.unbind(-1)",
                                                     "ValueError: too many values to unpack (expected 2)")) is None
    assert unpacked_input(STANDALONE, GUESS, _detail("a, *rest = feats.unbind(-1)",
                                                     "ValueError: not enough values to unpack (expected at least 1, got 0)")) is None


FEATURES = '''
class RelativePositions(nn.Module):
    """Per-token features packed on the last axis, unbound by name, then embedded pairwise."""

    def __init__(self, dim_out, r_max=4):
        super().__init__()
        self.r_max = r_max
        self.embed = nn.Linear(2 * r_max + 2, dim_out)

    def forward(self, molecule_feats):
        res_idx, token_idx, chain_id = molecule_feats.unbind(dim=-1)
        offset = (res_idx[:, :, None] - res_idx[:, None, :]).clamp(-self.r_max, self.r_max) + self.r_max
        same_chain = (chain_id[:, :, None] == chain_id[:, None, :]).float()
        onehot = torch.nn.functional.one_hot(offset.long(), 2 * self.r_max + 1).float()
        tokens = (token_idx[:, :, None] - token_idx[:, None, :]).float().tanh()
        return self.embed(torch.cat([onehot, same_chain[..., None] + tokens[..., None]], dim=-1))
'''


def test_a_module_unbinding_its_packed_features_becomes_runnable(tmp_path):
    assert_all_runnable(tmp_path, "features.py", FEATURES, 1)

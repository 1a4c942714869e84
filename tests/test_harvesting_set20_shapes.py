"""Input guesses for module shapes held-out set 20 failed on (forecasting heads), written here."""

from __future__ import annotations

from test_harvesting_synthesis import assert_all_runnable

FLATTEN_HEADS = '''
class FlattenHead(nn.Module):
    def __init__(self, n_vars, nf, target_window, head_dropout=0):
        super().__init__()
        self.n_vars = n_vars
        self.flatten = nn.Flatten(start_dim=-2)
        self.linear = nn.Linear(nf, target_window)
        self.dropout = nn.Dropout(head_dropout)

    def forward(self, x):
        return self.dropout(self.linear(self.flatten(x)))


class PatchHead(nn.Module):
    def __init__(self, d_model, num_patches, horizon):
        super().__init__()
        self.proj = nn.Linear(d_model * num_patches, horizon)

    def forward(self, x):
        b, c = x.shape[0], x.shape[1]
        return self.proj(x.reshape(b, c, -1))
'''


def test_an_input_flattened_before_a_linear_is_shaped_so_its_trailing_sizes_multiply_to_the_width(tmp_path):
    """`nn.Flatten(start_dim=-2)` then `nn.Linear(nf, ...)` (neuralforecast's FlattenHead, PatchTST-
    style heads): torch says "mat1 and mat2 shapes cannot be multiplied (2x256 and 32x4)", where
    256 is no single dimension of the input but the product of its last two; the repair reshapes
    those so they multiply to the width the matmul wants."""
    assert_all_runnable(tmp_path, "heads.py", FLATTEN_HEADS, 2)

"""Input guesses for module shapes held-out set 20 failed on (forecasting heads), written here."""

from __future__ import annotations

from test_harvesting_synthesis import assert_all_runnable, first_guess

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


NAMED_CHOICES = '''
ACTIVATIONS = ["ReLU", "Softplus", "Tanh", "SELU", "LeakyReLU", "PReLU", "Sigmoid"]
NORMS = {"batch": nn.BatchNorm1d, "layer": nn.LayerNorm}


class MLP(nn.Module):
    def __init__(self, in_features, out_features, activation, hidden_size, num_layers, dropout):
        super().__init__()
        assert activation in ACTIVATIONS, f"{activation} is not in {ACTIVATIONS}"
        act = getattr(nn, activation)()
        layers = [nn.Linear(in_features, hidden_size), act]
        for _ in range(num_layers - 1):
            layers += [nn.Linear(hidden_size, hidden_size), act, nn.Dropout(dropout)]
        layers.append(nn.Linear(hidden_size, out_features))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class Normed(nn.Module):
    def __init__(self, dim, norm):
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"unknown norm {norm}")
        self.proj = nn.Linear(dim, dim)
        self.norm = NORMS[norm](dim)

    def forward(self, x):
        return self.norm(self.proj(x))
'''


def test_a_parameter_checked_against_a_module_level_list_of_names_is_given_one_of_them(tmp_path):
    """`assert activation in ACTIVATIONS` (neuralforecast's MLPs: "relu is not in ['ReLU', ...]",
    and the class nn.ReLU failed as well) and `if norm not in NORMS: raise` over a dict's keys:
    the names are read from the module-level constant the comparison names."""
    mlp = first_guess(NAMED_CHOICES, "MLP")
    assert mlp.init_code[2] == "'ReLU'", mlp.init_code
    normed = first_guess(NAMED_CHOICES, "Normed")
    assert normed.init_code[1] == "'batch'", normed.init_code
    assert_all_runnable(tmp_path, "mlp.py", NAMED_CHOICES, 2)


LAYER_LISTS = '''
class Encoder(nn.Module):
    def __init__(self, attn_layers, norm_layer=None):
        super().__init__()
        self.attn_layers = nn.ModuleList(attn_layers)
        self.norm = norm_layer

    def forward(self, x, attn_mask=None):
        for attn_layer in self.attn_layers:
            x = attn_layer(x, attn_mask=attn_mask)
        if self.norm is not None:
            x = self.norm(x)
        return x
'''


def test_a_list_of_layers_called_with_masks_is_given_stand_in_networks(tmp_path):
    """`for layer in self.layers: x = layer(x, attn_mask=attn_mask)` (neuralforecast's Autoformer /
    Informer encoders): the items take keyword arguments nn.GELU refuses, so the list holds the
    stand-in network, which takes any and keeps x's shape."""
    from autotriton.harvesting.synthesis import STAND_IN

    attempt = first_guess(LAYER_LISTS, "Encoder")
    assert f"{STAND_IN}()" in attempt.init_code[0], attempt.init_code
    assert_all_runnable(tmp_path, "encoder.py", LAYER_LISTS, 1)

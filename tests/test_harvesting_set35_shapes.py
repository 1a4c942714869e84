"""Constructor and input guesses for module shapes held-out sets 34 and 35 failed on (restoration
blocks, depth-estimation decoders), written here in the style of that code; each must become a
runnable problem through the real harvest path."""

from __future__ import annotations

from test_harvesting_synthesis import assert_all_runnable, first_guess

OPTIONAL_READ = '''
class Block(nn.Module):
    def __init__(self, dim, drop_path=0.0, window_size=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(drop_path)
        self.window_size = window_size

    def forward(self, x):
        return x + self.drop(self.proj(self.norm(x)))


class Stage(nn.Module):
    """RGT's group: one drop-path rate per block, from a list that defaults to None."""

    def __init__(self, dim, depth=2, drop_paths=None):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, drop_path=drop_paths[i]) for i in range(depth)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


class Attention(nn.Module):
    """GRL's blocks: a config object defaulting to None, read where it is handed on."""

    def __init__(self, dim, args=None):
        super().__init__()
        self.block = Block(dim, window_size=args.window_size)
        self.scale = args.scale

    def forward(self, x):
        return self.block(x) * self.scale


class Guarded(nn.Module):
    """A None default the code tests stays the default."""

    def __init__(self, dim, norm=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = norm.build(dim) if norm is not None else nn.Identity()

    def forward(self, x):
        return self.norm(self.proj(x))
'''


def test_a_none_default_read_into_without_a_test_is_given_a_value(tmp_path):
    stage = first_guess(OPTIONAL_READ, "Stage")
    assert stage.init_code[2] != "None" and len(eval(stage.init_code[2])) >= 2
    assert "SimpleNamespace" in first_guess(OPTIONAL_READ, "Attention").init_code[1]
    assert len(first_guess(OPTIONAL_READ, "Guarded").init_code) == 1  # norm left to its default
    assert_all_runnable(tmp_path, "optional_read.py", OPTIONAL_READ, 4)


DECODER_BLOCKS = '''
class UpSample(nn.Module):
    """A decoder step: upsampled to the skip connection's height and width, read with size(2), size(3)."""

    def __init__(self, skip_input, output_features):
        super().__init__()
        self.conv = nn.Conv2d(skip_input, output_features, 3, padding=1)

    def forward(self, x, concat_with):
        up_x = nn.functional.interpolate(x, size=[concat_with.size(2), concat_with.size(3)], mode="bilinear",
                                         align_corners=True)
        return torch.relu(self.conv(torch.cat([up_x, concat_with], dim=1)))


class UpConv(nn.Module):
    """A transposed convolution with every argument required: output padding must stay below the stride."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding, output_padding)
        self.norm = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return torch.relu(self.norm(self.up(x)))
'''


def test_decoder_steps_get_four_axis_skips_and_a_valid_output_padding(tmp_path):
    up = first_guess(DECODER_BLOCKS, "UpSample")
    assert all(code.count(",") == 3 for code in up.input_code)  # x and the skip, both (B, C, H, W)
    assert first_guess(DECODER_BLOCKS, "UpConv").init_code[5] == "0"
    assert_all_runnable(tmp_path, "decoder_blocks.py", DECODER_BLOCKS, 2)


LOSS_MODES = '''
BINARY_MODE: str = "binary"
MULTICLASS_MODE: str = "multiclass"


class SoftDice(nn.Module):
    """torchseg's losses: the mode a string asserted to be one of the module's named constants."""

    def __init__(self, mode: str, smooth: float = 0.0, eps: float = 1e-7):
        super().__init__()
        assert mode in {BINARY_MODE, MULTICLASS_MODE}
        self.mode = mode
        self.smooth = smooth
        self.eps = eps

    def forward(self, y_pred, y_true):
        if self.mode == BINARY_MODE:
            y_pred = y_pred.sigmoid()
        else:
            y_pred = y_pred.softmax(1)
        inter = (y_pred * y_true).sum()
        return 1 - (2 * inter + self.smooth) / ((y_pred + y_true).sum() + self.smooth).clamp_min(self.eps)
'''


def test_a_mode_asserted_among_named_constants_is_one_of_their_values(tmp_path):
    assert first_guess(LOSS_MODES, "SoftDice").init_code[0] == "'binary'"
    assert_all_runnable(tmp_path, "loss_modes.py", LOSS_MODES, 1)


CONFIG_ENUM = '''
from enum import Enum


class Activation(str, Enum):
    GeLU = "gelu"
    ReLU = "relu"


class OutputHead(nn.Module):
    """fairchem's heads: a config object (its dataclass imported only for type checking) whose
    `activation` field is handed to an Enum of the file, and a width read off it."""

    def __init__(self, global_cfg, output_type):
        super().__init__()
        act = Activation(global_cfg.activation)
        self.ffn = nn.Sequential(nn.Linear(global_cfg.hidden_size, global_cfg.hidden_size),
                                 nn.GELU() if act == Activation.GeLU else nn.ReLU())
        self.out = nn.Linear(global_cfg.hidden_size, 3 if output_type == "Vector" else 1)

    def forward(self, x):
        return self.out(self.ffn(x))
'''


def test_a_config_field_handed_to_an_enum_of_the_file_is_one_of_its_values(tmp_path):
    cfg = first_guess(CONFIG_ENUM, "OutputHead").init_code[0]
    assert "activation='gelu'" in cfg and "hidden_size=" in cfg
    assert_all_runnable(tmp_path, "config_enum.py", CONFIG_ENUM, 1)


CONFIG_TEXT = '''
class NormLayer(nn.Module):
    """granite-tsfm's layers: a config's field is text (`"batch" in config.norm_mlp.lower()`)."""

    def __init__(self, config):
        super().__init__()
        if "batch" in config.norm_mlp.lower():
            self.norm = nn.BatchNorm1d(config.d_model)
        else:
            self.norm = nn.LayerNorm(config.d_model)
        self.double = config.mode == "double"

    def forward(self, x):
        y = self.norm(x.transpose(1, 2)).transpose(1, 2) if isinstance(self.norm, nn.BatchNorm1d) else self.norm(x)
        return y * 2 if self.double else y
'''


def test_config_fields_used_as_text_are_strings(tmp_path):
    cfg = first_guess(CONFIG_TEXT, "NormLayer").init_code[0]
    assert "norm_mlp='batch'" in cfg and "mode='double'" in cfg and "d_model=" in cfg
    assert_all_runnable(tmp_path, "config_text.py", CONFIG_TEXT, 1)

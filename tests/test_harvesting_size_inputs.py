"""Forward inputs that are an image's (height, width) handed in beside its flattened tokens, as
SwinIR-family restoration networks (spandrel, held-out set 34) write them: spread into a shape
(`view(B, C, *x_size)`), unpacked and compared with a stored resolution, or only handed on to the
blocks. Each module below is written here, in the style of that code, and must become a runnable
problem through the real harvest path, with the size given as ints and the tokens sized to it."""

from __future__ import annotations

import ast

from autotriton.harvesting import HarvestConfig, harvest_local
from autotriton.harvesting.input_guesses import _python_value_use

from tests.test_harvesting_synthesis import HEADER

SWIN_BLOCKS = '''
class ChannelBlock(nn.Module):
    """HAT's CAB shape: tokens back to an image with `view(B, C, *x_size)`."""

    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv2d(dim, dim, 3, padding=1)

    def forward(self, x, x_size):
        B, L, C = x.shape
        y = x.transpose(1, 2).view(B, C, *x_size)
        return self.conv(y).flatten(2).transpose(1, 2)


class WindowBlock(nn.Module):
    """SwinIR's block: the size unpacked, compared with the stored resolution, passed to a method."""

    def __init__(self, dim, input_resolution=(8, 8), window_size=4):
        super().__init__()
        self.input_resolution = input_resolution
        self.window_size = window_size
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)

    def calculate_mask(self, x_size):
        H, W = x_size
        return torch.zeros(1, H, W, 1)

    def forward(self, x, x_size):
        H, W = x_size
        B, L, C = x.shape
        shortcut = x
        x = self.norm(x).view(B, H, W, C)
        if self.input_resolution == x_size:
            mask = torch.zeros(1, H, W, 1)
        else:
            mask = self.calculate_mask(x_size).to(x.device)
        x = (x + mask).view(B, H * W, C)
        return shortcut + self.proj(x)


class Group(nn.Module):
    """SwinIR's RSTB shape: the size only handed down to the blocks."""

    def __init__(self, dim, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList([WindowBlock(dim) for _ in range(depth)])
        self.conv = ChannelBlock(dim)

    def forward(self, x, x_size):
        for blk in self.blocks:
            x = blk(x, x_size)
        return self.conv(x, x_size) + x
'''


def _use(forward_source: str, param: str):
    return _python_value_use(ast.parse(forward_source).body[0], param)


def test_sizes_spread_compared_or_handed_on_are_ints_and_the_tokens_fit_them(tmp_path):
    (tmp_path / "swin.py").write_text(HEADER + "import torch.nn.functional as F\n" + SWIN_BLOCKS)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    problems = {p.name: p for p in result.problems}
    status = {n: (p.status, p.reject_reason, result.details.get(p.key)) for n, p in problems.items()}
    assert set(status) == {"ChannelBlock", "WindowBlock", "Group"}
    assert all(s[:2] == ("runnable", None) for s in status.values()), status
    for p in problems.values():
        x, size = p.input_spec
        assert size["kind"] == "ints" and len(size["value"]) == 2
        assert x["kind"] == "tensor" and x["shape"][1] == size["value"][0] * size["value"][1]


def test_a_size_is_read_from_its_uses_and_a_tensor_stays_one():
    assert _use("def forward(self, x, x_size):\n    return x.view(1, 2, *x_size)", "x_size") == ("ints", 2)
    assert _use("def forward(self, x, hw_shape):\n    return self.block(x, hw_shape)", "hw_shape") == ("ints", 2)
    assert _use("def forward(self, x, s):\n    if self.res == s:\n        x = x * 2\n    h, w, d = s\n    return x",
                "s") == ("ints", 3)
    # handed on alone under a name that says nothing, handed to torch, or compared with a literal
    # and used in arithmetic: not sizes
    assert _use("def forward(self, x, cond):\n    return self.block(x, cond)", "cond") is None
    assert _use("def forward(self, x, size):\n    return torch.cat([x, size], 1)", "size") is None
    assert _use("def forward(self, x, y):\n    return x.view(*y.shape)", "y") is None


SWIN_STORED_RESOLUTION = '''
def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size, H, W):
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class StoredResolutionBlock(nn.Module):
    """The Swin block of HTSAT (laion-clap, held-out set 38): the resolution is a constructor
    argument, the window size keeps its default of 7, and forward views its tokens as that image
    before partitioning it into windows, with no assert to say the two must agree."""

    def __init__(self, dim, input_resolution, num_heads, window_size=7, shift_size=0):
        super().__init__()
        self.input_resolution = input_resolution
        self.window_size = window_size
        if min(self.input_resolution) <= self.window_size:
            self.window_size = min(self.input_resolution)
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        H, W = self.input_resolution
        B, L, C = x.shape
        x = self.norm(x).view(B, H, W, C)
        windows = window_partition(x, self.window_size).view(-1, self.window_size * self.window_size, C)
        windows = self.proj(windows).view(-1, self.window_size, self.window_size, C)
        return window_reverse(windows, self.window_size, H, W).view(B, H * W, C)
'''


def test_a_guessed_resolution_is_a_multiple_of_the_default_window(tmp_path):
    """A resolution guessed 32 does not split into windows of 7: it is guessed 28 instead."""
    (tmp_path / "swin.py").write_text(HEADER + SWIN_STORED_RESOLUTION)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    (p,) = result.problems
    assert (p.status, p.reject_reason) == ("runnable", None), result.details.get(p.key)
    resolution = next(s["value"] for s in p.init_spec if s.get("name") == "input_resolution")
    assert all(r % 7 == 0 for r in resolution)
    assert p.input_spec[0]["shape"][1] == resolution[0] * resolution[1]

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

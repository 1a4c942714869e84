"""Forward inputs whose rank or size the forward's own code tells: the subscripts of the einsum an
input enters, a starred unpacking of its shape (`b, f, _, h, w, *_, p = *x.shape, self.p`), and an
assert that one of its sizes equals a constructor value (`x.shape[-1] == self.num_categories`);
einx and einops.einsum patterns, shape unpacking after `x.unsqueeze(1)`, and optional inputs
forward asserts are given (the shapes held-out set 15 failed on).
Each module below is written here, in the style of common PyTorch code, and must become a
runnable problem through the real harvest path."""

from __future__ import annotations

from autotriton.harvesting.input_guesses import _einops_rank, _pattern_rank
from autotriton.harvesting.synthesis import synthesize

from tests.test_harvesting_synthesis import HEADER, assert_all_runnable

RANKS = '''
class PairDistances(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, pos):
        sim = torch.einsum('bic,bjc->bij', pos, pos)
        return torch.einsum('bij,bjd->bid', sim.softmax(-1), self.proj(x))


class VideoFrames(nn.Module):
    def __init__(self, patch_size):
        super().__init__()
        self.patch_size = patch_size

    def forward(self, video):
        b, f, _, h, w, *_, p = *video.shape, self.patch_size
        return video.reshape(b, f, -1).mean(-1) * p


class Categorical(nn.Module):
    def __init__(self, categories, dim):
        super().__init__()
        self.num_categories = len(categories)
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x_categ):
        assert x_categ.shape[-1] == self.num_categories, 'one value per category'
        return x_categ.mean(-1, keepdim=True) * self.scale
'''


def _first(name: str):
    return synthesize((HEADER + RANKS).replace(f"class {name}(", "class Model("))[0]


def test_einops_patterns_tell_the_rank():
    assert _pattern_rank("b (h w) c") == 3 and _pattern_rank("b ... d") is None
    import ast
    fn = ast.parse("def forward(self, x):\n    x = self.norm(x)\n    return rearrange(x, 'b n d -> b d n')\n").body[0]
    assert _einops_rank(fn, "x", {}) is None  # the pattern reads the normalised x, not the input
    fn = ast.parse("def forward(self, x):\n    return self.to_seq(x)\n").body[0]
    layer = ast.parse("Sequential(Rearrange('b c h w -> b (h w) c'), Linear(4, 4))", mode="eval").body
    assert _einops_rank(fn, "x", {"to_seq": layer}) == 4


def test_the_forward_code_sets_the_rank_and_size_of_the_first_guess():
    assert len(_first("PairDistances").input_spec[1]["shape"]) == 3
    assert len(_first("VideoFrames").input_spec[0]["shape"]) == 5
    first = _first("Categorical")
    assert first.input_spec[0]["shape"][-1] == len(first.init_spec[0]["value"])


def test_modules_whose_input_shapes_the_forward_tells_become_runnable(tmp_path):
    assert_all_runnable(tmp_path, "ranks.py", RANKS, 3)


def _input_shapes(source: str, cls: str) -> list[list[list[int]]]:
    """Every attempt's input shapes for class `cls` of `source` (under HEADER)."""
    attempts = synthesize(HEADER + source.replace(f"class {cls}", "class Model"))
    return [[spec["shape"] for spec in a.input_spec] for a in attempts]


EINX_EMBEDDING = '''
import math
import einx


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim, theta=10000):
        super().__init__()
        half_dim = dim // 2
        inv_freq = (torch.arange(half_dim) * -(math.log(theta) / (half_dim - 1))).exp()
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x):
        emb = einx.multiply("b, d -> b d", x, self.inv_freq)
        return torch.cat((emb.sin(), emb.cos()), dim=-1)
'''

EINOPS_EINSUM = '''
from einops import einsum


class Similarity(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, q, k):
        return einsum(self.proj(q), k, "b i d, b j d -> b i j")
'''


def test_einx_and_einops_einsum_patterns_tell_the_inputs_rank():
    """`einx.multiply('b, d -> b d', x, freqs)` takes a 1-D x (BS-RoFormer's SinusoidalPosEmb was
    tried at 4-D and 3-D); einops' einsum names its operands in a pattern that comes last."""
    first = _input_shapes(EINX_EMBEDDING, "SinusoidalPosEmb")[0]
    assert len(first) == 1 and len(first[0]) == 1, first
    first = _input_shapes(EINOPS_EINSUM, "Similarity")[0]
    assert [len(s) for s in first] == [3, 3], first


UNSQUEEZED = '''
import torch.nn.functional as F


class PeriodDiscriminator(nn.Module):
    def __init__(self, period, channels=8):
        super().__init__()
        self.period = period
        self.conv = nn.Conv2d(1, channels, (3, 1), padding=(1, 0))

    def forward(self, x):
        x = x.unsqueeze(1)
        b, c, t = x.shape
        if t % self.period != 0:
            x = F.pad(x, (0, self.period - t % self.period), "reflect")
            t = x.shape[-1]
        x = x.view(b, c, t // self.period, self.period)
        return self.conv(x).flatten(1)


class TokenMixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, tokens):
        batch, seq_len, device = *tokens.shape[:2], tokens.device
        positions = torch.arange(seq_len, device=device).float()[None, :, None]
        return self.proj(self.norm(tokens)) + positions.expand(batch, -1, 1)
'''


def test_unpacking_after_unsqueeze_and_a_starred_shape_prefix_give_the_inputs_rank(tmp_path):
    """`x = x.unsqueeze(1); b, c, t = x.shape` takes a 2-D waveform batch (vocos' DiscriminatorP was
    given 3-D and 4-D ones); `*tokens.shape[:2]` needs at least two axes, and `tokens` a norm takes are
    embeddings, not ids (titans' attention)."""
    assert all(len(shapes[0]) == 2 for shapes in _input_shapes(UNSQUEEZED, "PeriodDiscriminator"))
    assert len(_input_shapes(UNSQUEEZED, "TokenMixer")[0][0]) >= 2
    assert_all_runnable(tmp_path, "discriminators.py", UNSQUEEZED, 2)


ASSERTED_OPTIONAL = '''
def exists(v):
    return v is not None


class AdaptiveNorm(nn.Module):
    """A norm whose scale and shift come from a conditioning vector that forward insists on."""

    def __init__(self, dim, cond_dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.to_scale_shift = nn.Linear(cond_dim, dim * 2)

    def forward(self, x, cond=None, mask=None):
        assert exists(cond)
        scale, shift = self.to_scale_shift(cond).chunk(2, dim=-1)
        out = self.norm(x) * (scale[:, None] + 1) + shift[:, None]
        return out if mask is None else out * mask[..., None]


class Gated(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, gate=None):
        if gate is None:
            raise ValueError("gate is required")
        return self.proj(x) * gate.sigmoid()
'''


def test_optional_inputs_forward_asserts_are_given(tmp_path):
    """`forward(x, cond=None)` then `assert exists(cond)` (BS-RoFormer's AdaLN) or `if gate is None:
    raise`: called without them forward fails on any input, so they are inputs; `mask`, never
    asserted, is left to its default."""
    assert [len(shapes) for shapes in _input_shapes(ASSERTED_OPTIONAL, "AdaptiveNorm")] == [2] * len(
        _input_shapes(ASSERTED_OPTIONAL, "AdaptiveNorm"))
    assert len(_input_shapes(ASSERTED_OPTIONAL, "Gated")[0]) == 2
    assert_all_runnable(tmp_path, "adaptive.py", ASSERTED_OPTIONAL, 2)

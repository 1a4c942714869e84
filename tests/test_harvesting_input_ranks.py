"""Forward inputs whose rank or size the forward's own code tells: the subscripts of the einsum an
input enters, a starred unpacking of its shape (`b, f, _, h, w, *_, p = *x.shape, self.p`), and an
assert that one of its sizes equals a constructor value (`x.shape[-1] == self.num_categories`).
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

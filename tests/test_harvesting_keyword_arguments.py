"""Constructor arguments a module only hands on through `**kwargs` (alphafold3-pytorch's
AttentionPairBias, moshi's TransposedLayerNorm; held-out set 28): the probe's "missing ... required
argument" error names them, and the problem's Model takes them as parameters of their own."""

from __future__ import annotations

from autotriton.harvesting.keyword_arguments import keyword_model, missing_arguments

from tests.test_harvesting_forward_forms import _harvest, _load

HANDED_ON = '''
class Attention(nn.Module):
    def __init__(self, *, dim, heads=2, dim_head=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x, bias):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attn = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias).softmax(dim=-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(b, n, -1))


class AttentionPairBias(nn.Module):
    """Attention biased by a pairwise representation; everything else of Attention handed on."""

    def __init__(self, *, heads, dim_pairwise, **attn_kwargs):
        super().__init__()
        self.attn = Attention(
            heads=heads,
            **attn_kwargs
        )
        self.to_bias = nn.Sequential(nn.LayerNorm(dim_pairwise), nn.Linear(dim_pairwise, heads, bias=False))

    def forward(self, single_repr, pairwise_repr):
        bias = self.to_bias(pairwise_repr).permute(0, 3, 1, 2)
        return self.attn(single_repr, bias)


class CoordConv(nn.Module):
    """facexlib's CoordConvTh: coordinate channels added, the rest of Conv2d's arguments handed on."""

    def __init__(self, in_channels, *args, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels + 2, *args, **kwargs)

    def forward(self, x):
        b, _, h, w = x.shape
        ys = torch.linspace(-1, 1, h).view(1, 1, h, 1).expand(b, 1, h, w)
        xs = torch.linspace(-1, 1, w).view(1, 1, 1, w).expand(b, 1, h, w)
        return self.conv(torch.cat([x, ys, xs], dim=1))


class TransposedLayerNorm(nn.Module):
    """A LayerNorm over the channels of a [B, C, T] signal; LayerNorm's arguments handed on."""

    def __init__(self, **kwargs):
        super().__init__()
        self.layer_norm = nn.LayerNorm(**kwargs)

    def forward(self, x):
        return self.layer_norm(x.transpose(1, 2)).transpose(1, 2)
'''


def test_the_arguments_kwargs_must_carry_are_read_from_the_error():
    detail = ('Traceback (most recent call last):\n  File "problem.py", line 30, in __init__\n'
              "    self.attn = Attention(heads=heads, **attn_kwargs)\n"
              "TypeError: Attention.__init__() missing 2 required keyword-only arguments: 'dim' and 'dim_head'")
    assert missing_arguments(detail) == ["dim", "dim_head"]
    # the statement hands nothing on: another fault, not this one
    assert missing_arguments(detail.replace(", **attn_kwargs", "")) == []
    # a call over several lines, which the traceback shows by its first
    assert missing_arguments(detail.replace("Attention(heads=heads, **attn_kwargs)", "Attention(")) == ["dim", "dim_head"]
    source = "import torch\nimport torch.nn as nn\n\n" + HANDED_ON.replace("class AttentionPairBias", "class Model")
    rewritten = keyword_model(source, ["dim"])
    ns = _load(rewritten + "\n\ndef get_inputs():\n    return []\n\n\ndef get_init_inputs():\n    return []\n")
    model = ns["Model"](heads=2, dim_pairwise=16, dim=32)  # dim: a parameter of its own
    assert model.attn.to_qkv.in_features == 32 and isinstance(model, ns["KeywordsModel"])
    assert keyword_model(rewritten, ["dim"]) is None  # rewritten once
    assert keyword_model(source.replace("**attn_kwargs):", "dim=4, **attn_kwargs):", 1), ["dim"]) is None


def test_modules_handing_constructor_arguments_on_through_kwargs_become_runnable(tmp_path):
    problems = _harvest(tmp_path, "handed_on.py", HANDED_ON)
    assert set(problems) == {"Attention", "AttentionPairBias", "CoordConv", "TransposedLayerNorm"}
    for name in ("AttentionPairBias", "CoordConv", "TransposedLayerNorm"):
        assert "class Model(KeywordsModel)" in problems[name].reference_source

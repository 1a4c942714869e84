"""Constructor arguments that are option dicts spread into a call (`stft(x, **stft_cfg, window=w)`,
`Transformer(dim=d, **enc_params)`): the dict must hold what that call leaves unfilled, the
parameters of the file's own function or class. resemble-enhance's STFT losses (held-out set 38)
were given an empty dict ("stft() missing 2 required positional arguments: 'n_fft' and
'hop_length'"); their configuration asserts the one sample rate it takes (`assert hp.wav_rate ==
44100`), and was given 32."""

from __future__ import annotations

import ast

from autotriton.harvesting import HarvestConfig, harvest_local
from autotriton.harvesting.signatures import _classes
from autotriton.harvesting.usage_kinds import UsageReader

from tests.test_harvesting_synthesis import HEADER

STFT_LOSSES = '''
def make_cfg(hop_length, win_length=None):
    win_length = win_length or 4 * hop_length
    return dict(n_fft=2 ** (win_length - 1).bit_length(), hop_length=hop_length, win_length=win_length)


def all_cfgs(hp):
    assert hp.sample_rate == 24000, f"sample_rate must be 24000, got {hp.sample_rate}"
    return [make_cfg(h) for h in (8, 16)]


def magnitude(x, n_fft, hop_length, win_length, window):
    spec = torch.stft(x, n_fft, hop_length, win_length, window, return_complex=True)
    return spec.abs().transpose(2, 1)


class SpectralLoss(nn.Module):
    def __init__(self, hp, stft_cfg: dict):
        super().__init__()
        self.hp = hp
        self.stft_cfg = stft_cfg
        self.register_buffer("window", torch.hann_window(stft_cfg["win_length"]), persistent=False)

    def forward(self, x, y):
        cfg = dict(self.stft_cfg)
        x_mag = magnitude(x, **cfg, window=self.window)
        y_mag = magnitude(y, **cfg, window=self.window)
        return torch.norm(y_mag - x_mag, p="fro") / torch.norm(y_mag, p="fro")


class MultiResolutionLoss(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.losses = nn.ModuleList([SpectralLoss(hp, c) for c in all_cfgs(hp)])

    def forward(self, x, y):
        return sum(loss(x, y) for loss in self.losses)
'''

SPREAD_INTO_A_CLASS = '''
class Encoder(nn.Module):
    def __init__(self, dim, depth, heads, dropout=0.0):
        super().__init__()


class Model(nn.Module):
    def __init__(self, dim, enc_params, dropout=0.0):
        super().__init__()
        self.encoder = Encoder(dim=dim, dropout=dropout, **enc_params)


class DeepEncoder(Encoder):
    def __init__(self, dim, options):
        super().__init__(dim, **options)
'''


SPECTROGRAM_DISCRIMINATOR = '''
class SpecDiscriminator(nn.Module):
    """resemble-enhance's SpecNetwork shape: a [B, 1, T] signal, torch.stft with options from a dict."""

    def __init__(self, stft_cfg: dict):
        super().__init__()
        self.stft_cfg = stft_cfg
        self.conv = nn.Conv2d(1, 4, 3, padding=1)

    def forward(self, x):
        """
        Args:
            x: [B, 1, T]
        """
        x = x.squeeze(1)
        cfg = dict(self.stft_cfg)
        spec = torch.stft(x.float(), center=False, return_complex=True, **cfg).abs()
        return self.conv(spec.unsqueeze(1)).flatten(1)
'''


def test_a_spread_dict_holds_what_the_call_leaves_unfilled():
    tree = ast.parse(SPREAD_INTO_A_CLASS + STFT_LOSSES)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    reader = UsageReader(_classes(tree), functions)
    enc = reader.parameter("Model", "enc_params")
    assert enc.mapping and enc.keys == ["depth", "heads"]
    assert reader.parameter("DeepEncoder", "options").keys == ["depth", "heads"]  # spread into the base's __init__
    stft = reader.parameter("SpectralLoss", "stft_cfg")  # read by key, and spread through a copy
    assert stft.mapping and sorted(stft.keys) == ["hop_length", "n_fft", "win_length"]
    spec = UsageReader(_classes(ast.parse(SPECTROGRAM_DISCRIMINATOR)), {}).parameter("SpecDiscriminator", "stft_cfg")
    assert spec.keys == ["n_fft"]  # torch.stft's own signature: the one parameter without a default left unfilled
    hp = reader.parameter("MultiResolutionLoss", "hp")  # handed to a function that asserts its one value
    assert hp.attribute_choices.get("sample_rate") == [24000]


def test_spectral_losses_with_option_dicts_become_problems(tmp_path):
    (tmp_path / "losses.py").write_text(HEADER + STFT_LOSSES)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    status = {p.name: (p.status, p.reject_reason, result.details.get(p.key)) for p in result.problems}
    assert status.keys() == {"SpectralLoss", "MultiResolutionLoss"}
    assert all(s[:2] == ("runnable", None) for s in status.values()), status


def test_a_spectrogram_front_end_gets_a_signal_longer_than_its_fft(tmp_path):
    """torch.stft's own refusals say what the signal must be: "expected a 1D or 2D tensor", then
    "expected 0 < n_fft < 8, but got n_fft=64": a (B, T) signal, longer than the FFT."""
    (tmp_path / "disc.py").write_text(HEADER + SPECTROGRAM_DISCRIMINATOR)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    (p,) = result.problems
    assert (p.status, p.reject_reason) == ("runnable", None), result.details.get(p.key)
    n_fft = p.init_spec[0]["value"]["n_fft"] if isinstance(p.init_spec[0].get("value"), dict) else 64
    assert p.input_spec[0]["shape"][-1] > n_fft

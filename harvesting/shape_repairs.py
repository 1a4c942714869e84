"""Torch's shape errors read as the input shape they ask for: the table of error messages
(`mat1 and mat2 shapes cannot be multiplied`, channel counts, normalized shapes, ranks, padded
sizes smaller than a kernel, broadcasts, torch.stft's checks) and the reshaped `Attempt` each
one gives (input_repair.repair_attempt tries the dtype and range repairs first, then these).
"""

from __future__ import annotations

import math
import re
from typing import Any

from autotriton.harvesting.input_display import item_codes, ones_code, rebuilt, tensor_code
from autotriton.harvesting.synthesis import Attempt


# torch.stft's own checks: a signal is (T) or (B, T), and longer than the FFT
_STFT_RANK = re.compile(r"stft\(.*: expected a 1D or 2D tensor")
_STFT_SHORT = re.compile(r"expected 0 < n_fft < (\d+), but got n_fft=(\d+)")
# reflect/replicate padding (torch.stft's centring, `padding_mode="reflect"`) wider than the axis it pads
_PAD_WIDER = re.compile(r"Padding size should be less than the corresponding input dimension, but got: "
                        r"padding \((\d+), (\d+)\) at dimension (\d+) of input \[([\d, ]+)\]")
_MATMUL = re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)")
_CHANNELS = re.compile(r"expected input\[[\d, ]+\] to have (\d+) channels, but got (\d+) channels")
_NORMALIZED = re.compile(r"expected input with shape \[\*, ([\d, ]+)\], but got input of size\s*\[([\d, ]+)\]")
# nn.RNN/GRU/LSTM: "input.size(-1) must be equal to input_size. Expected 32, got 8"
_RNN_INPUT = re.compile(r"input\.size\(-1\) must be equal to input_size\. Expected (\d+), got (\d+)")
# einops: "Wrong shape: expected 4 dims. Received 3-dim tensor", "can't divide axis of length 8 in chunks of 7"
_EINOPS_RANK = re.compile(r"Wrong shape: expected (\d+) dims\. Received (\d+)-dim tensor")
_EINOPS_CHUNKS = re.compile(r"can't divide axis of length (\d+) in chunks of (\d+)")
_RANK = re.compile(r"[Ee]xpected (\d)D (?:\(unbatched\) or (\d)D \(batched\) )?input(?: to conv\dd)?(?:,| \(got)")
# A package's own rank check, "N ... got M" with the word for a rank before N: pytorch-crf's "emissions must
# have dimension of 3, got 4", piq's "Expected number of dimensions to be 2, got 4"; read as a rank only
# when an input has rank M (else "expected dimension 3, got 4" may be a size: _EXPECTED_GOT's case).
_RANK_GOT = re.compile(r"\b(?:dimensions?|dims|ndims?|rank)\b(?: of| to be| =|:| must be| should be)?\s*(\d)\b[^\d\n]{0,12}?\bgot\b\s*(\d)\b",
                       re.IGNORECASE)
# a package naming the axes it wants: gliner's "hidden_states must have shape [batch, sequence, hidden_size]",
# d3rlpy's "Expects (B, T), but got torch.Size([2, 32, 8])": as many axes as names (the input of the
# shape it got, when the message says it; else the first input of another rank)
_AXIS_NAMES = re.compile(r"(?:shape|size|dims|dimensions|[Ee]xpects?|[Ee]xpected|form)\s*:?\s*[\[(]\s*"
                         r"([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*){1,5})\s*[\])]")
_GOT_SHAPE = re.compile(r"\bgot\b[^\[\n]{0,30}\[([\d, ]+)\]")
# indexing a dimension the input lacks: "Dimension out of range (expected to be in range of [-4, 3], but got 4)"
_DIM_RANGE = re.compile(r"Dimension out of range \(expected to be in range of \[-(\d+), \d+\], but got (-?\d+)\)")
# a kernel larger than the (downsampled) input: "Calculated padded input size per channel: (2 x 2). Kernel size:
# (8 x 8). Kernel size can't be greater than actual input size"
_PADDED = re.compile(r"Calculated padded input size per channel: \(([\d x]+)\)\. Kernel size: \(([\d x]+)\)")
# spatial sizes downsampled to nothing before a later layer (an adaptive pooling or interpolation of
# a 0-sized map, a pooling window over a 1-pixel map): "Input and output sizes should be greater than
# 0, but got input (H: 0, W: 0)", "Given input size: (3x1x1). Calculated output size: (3x0x0). Output
# size is too small", "Kernel size can't be greater than actual input size"
_VANISHED = re.compile(r"sizes should be greater than 0|Output size is too small|"
                       r"[Kk]ernel size can't be greater than actual input size|smaller than kernel size")
# "Given input size: (96x1x1). Calculated output size: (96x-5x-5). Output size is too small"
_POOL_SIZES = re.compile(r"Given input size: \((\d+(?:x\d+)+)\)\. Calculated output size: \((-?\d+(?:x-?\d+)+)\)")


def _pooling_shortfall(detail: str) -> int | None:
    """How many times larger the map a pooling was given must be for an output of at least one
    (a map of i giving o needs i - o + 1), from torch's message; None when it does not say."""
    m = _POOL_SIZES.search(detail)
    if not m:
        return None
    given, out = [int(v) for v in m.group(1).split("x")], [int(v) for v in m.group(2).split("x")]
    if len(given) != len(out):
        return None
    factors = [-(-(i - o + 1) // i) for i, o in zip(given[1:], out[1:]) if o < 1 and i > 0]
    return max(factors) if factors and max(factors) > 1 else None


# Broadcasting: "The size of tensor a (8) must match the size of tensor b (2) at non-singleton dimension 3";
# which side is the input is not said: the input's dimension that is one size becomes the other.
_BROADCAST = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton dimension (\d+)")
# A shape unpacked into as many names as the rank forward expects (`b, t, d = x.shape`, `B, L, _ = X.size()`):
# "too many values to unpack (expected 3)" (Python 3.13 adds ", got 4"), "not enough values to unpack
# (expected 3, got 2)"; torch.cat / stack of an input with a tensor of another rank: "Tensors must have
# same number of dimensions: got 4 and 3"; `x.repeat(1, 1, n)` on an input of a higher rank.
_UNPACK_MANY = re.compile(r"too many values to unpack \(expected (\d+)(?:, got (\d+))?\)")
_UNPACK_FEW = re.compile(r"not enough values to unpack \(expected (\d+), got (\d+)\)")
# einsum's operands have as many axes as the equation names for them
_EINSUM_RANK = re.compile(r"einsum\(\): the number of subscripts in the equation \((\d+)\) does not match the number "
                          r"of dimensions \((\d+)\) for operand \d+")
_SAME_RANK = re.compile(r"Tensors must have same number of dimensions: got (\d+) and (\d+)")
_REPEAT_RANK = re.compile(r"Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
# A package's own message, in the common "expected N ... but got/found M" phrasing (vector-quantize's
# FSQ: "expected dimension of 2 but found dimension of 32"; torch.cat: "Expected size 32 but got size 8"):
# tried last, on an input dimension that is M.
_EXPECTED_GOT = re.compile(r"\bexpected\b[^\d\n]{0,60}?(\d+)\b[^\d\n]{0,60}?\b(?:got|found|received)\b[^\d\n]{0,30}?(\d+)\b",
                           re.IGNORECASE)
# nn.Embedding / F.embedding / EmbeddingBag fed a float guess:
# "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int;
# but got torch.FloatTensor instead (while checking arguments for embedding)"


def _to_rank(s: list[int], rank: int) -> list[int] | None:
    """A shape of another rank: dimensions of 8 inserted after batch and channels, or the trailing ones cut."""
    if len(s) < rank:
        return s[:2] + [8] * (rank - len(s)) + s[2:] if len(s) >= 2 else None
    if len(s) > rank:
        return s[:rank]
    return None


def _flattened_to(s: list[int], got: int, want: int) -> list[int] | None:
    """A shape whose trailing dimensions (two or more, batch kept) multiply to `got` (what a
    `flatten` before a Linear made of them) with those dimensions made to multiply to `want`
    instead: the last one kept where it divides `want` (`nn.Flatten(start_dim=-2)` then
    `nn.Linear(32, ...)`: [2, 8, 32] -> [2, 1, 32]), else ones and `want`."""
    for k in range(2, len(s)):
        if math.prod(s[-k:]) == got:
            tail = [1] * (k - 2) + ([want // s[-1], s[-1]] if want % s[-1] == 0 else [1, want])
            return s[:-k] + tail
    return None


def _resized_code(code: str, shape: list[int], spec: dict[str, Any]) -> str:
    """A tensor expression like `code` (random, or ones for a mask) of `shape`."""
    if code.lstrip().startswith("torch.ones("):
        dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
        return f"torch.ones(({dims}), dtype=torch.int64)" if spec.get("dtype") == "int64" else ones_code(shape)
    return tensor_code(shape, spec)


_CONTAINERS = ("tensor_dict", "tensor_record", "tensor_list")


def _reshaped_items(code: str, spec: dict[str, Any], item_fn) -> tuple[str, dict[str, Any]] | None:
    """A container input (code, spec) with `item_fn(code, spec)` (a new (code, spec), or None:
    unchanged) applied to each item, or None when no item changes."""
    codes = item_codes(code)
    old = dict(enumerate(spec["items"])) if spec["kind"] == "tensor_list" else dict(spec["items"])
    if codes is None or len(codes) != len(old):
        return None
    items, out, changed = {}, [], False
    for item_code, (key, item_spec) in zip(codes, old.items()):
        new = item_fn(item_code, item_spec)
        if new is not None:
            item_code, item_spec = new
            changed = True
        items[key] = item_spec
        out.append(item_code)
    return rebuilt(spec, items, out) if changed else None


def normalized_mismatch(detail: str) -> tuple[list[int], list[int]] | None:
    """(normalized shape, input size) of LayerNorm's refusal ("Given normalized_shape=[32], expected
    input with shape [*, 32], but got input of size[2, 32, 8, 8]"), or None for another error."""
    m = _NORMALIZED.search(detail or "")
    if m is None:
        return None
    return [int(x) for x in m.group(1).split(",") if x.strip()], [int(x) for x in m.group(2).split(",") if x.strip()]


def reshaped_attempt(attempt: Attempt, detail: str) -> Attempt | None:
    """A new attempt whose tensor inputs are reshaped as torch's shape error `detail` asks (a
    matmul's inner size, a convolution's channels, a normalized shape, a rank, a padded size
    smaller than the kernel, a broadcast), or None when no rule applies."""

    def reshaped_tensor(code: str, spec: Any, fn) -> tuple[str, Any] | None:
        if isinstance(spec, dict) and spec.get("kind") == "tensor" and spec.get("dtype") != "int64":
            new_shape = fn(list(spec["shape"]))
            if new_shape and new_shape != spec["shape"] and all(0 < d <= 4096 for d in new_shape):
                spec = {**spec, "shape": new_shape}
                return _resized_code(code, new_shape, spec), spec
        return None

    def reshape(fn) -> Attempt | None:
        codes, specs, changed = [], [], False
        for code, spec in zip(attempt.input_code, attempt.input_spec):
            new = reshaped_tensor(code, spec, fn)
            if new is None and isinstance(spec, dict) and spec.get("kind") in _CONTAINERS:
                # a dict, list or record of tensors (a time-series batch: {"X": ..., "missing_mask": ...,
                # "deltas": ...}): every item the error's rule applies to changes alike, so tensors
                # that were guessed with one shape keep agreeing with each other
                new = _reshaped_items(code, spec, lambda c, sp: reshaped_tensor(c, sp, fn))
            if new is not None:
                code, spec = new
                changed = True
            codes.append(code)
            specs.append(spec)
        if not changed:
            return None
        return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} repaired")

    if _STFT_RANK.search(detail):
        return reshape(lambda s: _to_rank(s, 2) if len(s) > 2 else None)
    m = _STFT_SHORT.search(detail)
    if m:
        length, n_fft = int(m.group(1)), int(m.group(2))
        return reshape(lambda s: s[:-1] + [4 * n_fft] if s and s[-1] == length else None)
    m = _PAD_WIDER.search(detail)
    if m:
        pad, dim = max(int(m.group(1)), int(m.group(2))), int(m.group(3))
        padded = [int(x) for x in m.group(4).split(",") if x.strip()]
        if dim < len(padded):
            size = padded[dim]

            def wider(s: list[int]) -> list[int] | None:  # the input's axis of that size, from the right
                at = next((i for i in range(len(s) - 1, 0, -1) if s[i] == size), None)
                return None if at is None else s[:at] + [4 * pad] + s[at + 1:]
            grown = reshape(wider)
            if grown is not None:
                return grown
    m = _MATMUL.search(detail)
    if m:
        got, want = int(m.group(2)), int(m.group(3))
        return reshape(lambda s: s[:-1] + [want] if s and s[-1] == got else None) \
            or reshape(lambda s: _flattened_to(s, got, want))
    m = _RNN_INPUT.search(detail)
    if m:
        want, got = int(m.group(1)), int(m.group(2))
        return reshape(lambda s: s[:-1] + [want] if s and s[-1] == got else None)
    m = _CHANNELS.search(detail)
    if m:
        want, got = int(m.group(1)), int(m.group(2))
        return reshape(lambda s: [s[0], want, *s[2:]] if len(s) > 1 and s[1] == got else None)
    normalized = normalized_mismatch(detail)
    if normalized:
        want = normalized[0]
        return reshape(lambda s: s[: len(s) - len(want)] + want if len(s) >= len(want) else None)
    m = _EINOPS_CHUNKS.search(detail)
    if m:
        length, chunk = int(m.group(1)), int(m.group(2))
        fit = chunk * max(1, -(-length // chunk))
        return reshape(lambda s: [fit if d == length and i > 0 else d for i, d in enumerate(s)])
    m = _EINOPS_RANK.search(detail)
    rank_m = _RANK.search(detail)
    if m or rank_m:
        rank = int(m.group(1)) if m else int(rank_m.group(2) or rank_m.group(1))
        return reshape(lambda s: _to_rank(s, rank))
    m = _UNPACK_MANY.search(detail)
    if m:
        want, got = int(m.group(1)), int(m.group(2)) if m.group(2) else None
        ranked = reshape(lambda s: _to_rank(s, want) if (len(s) == got if got else len(s) > want) else None)
        if ranked is not None:
            return ranked
    m = _UNPACK_FEW.search(detail)
    if m:
        want, got = int(m.group(1)), int(m.group(2))
        ranked = reshape(lambda s: _to_rank(s, want) if len(s) == got else None)
        if ranked is not None:
            return ranked
    m = _EINSUM_RANK.search(detail)
    if m:
        want, got = int(m.group(1)), int(m.group(2))
        ranked = reshape(lambda s: _to_rank(s, want) if len(s) == got else None)
        if ranked is not None:
            return ranked
    m = _SAME_RANK.search(detail)
    if m and m.group(1) != m.group(2):
        a, b = int(m.group(1)), int(m.group(2))
        # which operand is the input is not said: an input of the one rank takes the other
        ranked = reshape(lambda s: _to_rank(s, b) if len(s) == a else None) or \
            reshape(lambda s: _to_rank(s, a) if len(s) == b else None)
        if ranked is not None:
            return ranked
    if _REPEAT_RANK.search(detail):
        ranked = reshape(lambda s: _to_rank(s, len(s) - 1) if len(s) > 2 else None)
        if ranked is not None:
            return ranked
    m = _RANK_GOT.search(detail)
    if m and m.group(1) != m.group(2):
        want, got = int(m.group(1)), int(m.group(2))
        ranked = reshape(lambda s: _to_rank(s, want) if len(s) == got else None)
        if ranked is not None:
            return ranked
    m = _AXIS_NAMES.search(detail)
    if m:
        want = len(m.group(1).split(","))
        got_m = _GOT_SHAPE.search(detail[m.end():])
        got = [int(x) for x in got_m.group(1).split(",") if x.strip()] if got_m else None
        first: list[bool] = []

        def named_rank(s: list[int]) -> list[int] | None:
            if len(s) == want or (got is not None and s != got) or (got is None and first):
                return None
            first.append(True)
            return _to_rank(s, want)

        ranked = reshape(named_rank)
        if ranked is not None:
            return ranked
    m = _DIM_RANGE.search(detail)
    if m:
        rank, asked = int(m.group(1)), int(m.group(2))
        need = asked + 1 if asked >= 0 else -asked
        if need > rank:
            return reshape(lambda s: _to_rank(s, need) if len(s) == rank else None)
    m = _PADDED.search(detail)
    if m:
        padded = [int(x) for x in m.group(1).split("x")]
        kernel = [int(x) for x in m.group(2).split("x")]
        if len(padded) == len(kernel):
            factor = max(-(-k // max(p, 1)) for p, k in zip(padded, kernel))
            spatial = len(kernel)
            # the input's spatial sizes (its last ones) grown by what the kernel lacked, whatever downsampled them first
            return reshape(lambda s: s[:-spatial] + [d * factor for d in s[-spatial:]] if len(s) >= spatial + 2 and factor > 1 else None)
    if _VANISHED.search(detail):
        # the input's spatial sizes (all but batch and channels) four times larger (two more
        # halvings), or as many times larger as the map a pooling was given lacked where that is
        # more (pytorchcv's final AvgPool2d(7) given (96x1x1): seven times)
        factor = max(_pooling_shortfall(detail) or 0, 4)
        return reshape(lambda s: s[:2] + [d * factor for d in s[2:]] if len(s) >= 3 else None)
    m = _BROADCAST.search(detail)
    if m:
        a, b, axis = int(m.group(1)), int(m.group(2)), int(m.group(3))

        def broadcast(s: list[int]) -> list[int] | None:
            # the dimension torch names (of the broadcast shape: the input's own when the ranks
            # agree), else any non-batch dimension of that size, from the right
            for got, want in ((a, b), (b, a)):
                for at in (axis, *range(len(s) - 1, 0, -1)):
                    if 0 < at < len(s) and s[at] == got and want > 1:
                        return s[:at] + [want] + s[at + 1:]
            return None
        return reshape(broadcast)
    m = _EXPECTED_GOT.search(detail)
    if m and m.group(1) != m.group(2):
        want, got = int(m.group(1)), int(m.group(2))

        def one_dim(s: list[int]) -> list[int] | None:
            # the last dimension when it is M (features), else the first non-batch one that is
            if s and s[-1] == got:
                return s[:-1] + [want]
            at = next((i for i, d in enumerate(s) if i > 0 and d == got), None)
            return None if at is None else s[:at] + [want] + s[at + 1:]
        return reshape(one_dim)
    return None

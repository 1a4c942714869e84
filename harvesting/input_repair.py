"""Error-driven repair of input guesses: torch's own shape errors say what the input should
have been (`mat1 and mat2 shapes cannot be multiplied`, channel counts, normalized shapes,
ranks), so the harvester can try a reshaped `Attempt` instead of giving up on a module.
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
_FLOAT_INDICES = re.compile(r"Expected tensor for argument #\d+ '\w+' to have one of the following scalar types: "
                            r"Long, Int; but got torch\.\w+ instead \(while checking arguments for embedding")
# an index past the vocabulary (embedding, index_select), or past the rows it gathers (a graph's
# `x[edge_index[0]]`: "index 4 is out of bounds for dimension 0 with size 2")
_INDEX_RANGE = re.compile(r"index out of range in self|index -?\d+ is out of bounds for dimension \d+ with size (\d+)")
# values that must lie in [0, 1] (images, probabilities): piq's "Expected values to be greater or
# equal to 0, got -3.57", "non-negative", "in range [0, 1]"
_UNIT_RANGE = re.compile(r"greater (?:than )?or equal to 0\b|non-?negative|\[0,\s*1\]|between 0 and 1|range \(?0", re.IGNORECASE)
# integer inputs where floats are wanted (a loss's `target` guessed as labels): "mean(): could not
# infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"
_WANTS_FLOAT = re.compile(r"must be either a floating point|expected scalar type (?:Float|Double) but found Long|"
                          r"result type Float can't be cast to the desired output type Long|"
                          r"\b(?:Float|floating point)\b[^\n]{0,40}\bgot\b[^\n]{0,10}\bLong\b", re.IGNORECASE)


# a float mask where torch wants a boolean one: `torch.where(mask, ...)`, `masked_fill(mask, ...)`, `~mask`
_WANTS_BOOL = re.compile(r"where expected condition to be a boolean tensor|only supports boolean masks|"
                         r"only implemented on integer and Boolean-type tensors|"
                         r"expected (?:a )?(?:bool|boolean) (?:tensor|mask|dtype)|must be (?:a )?(?:bool|boolean)", re.IGNORECASE)


def _boolean_masks(attempt: Attempt) -> Attempt | None:
    """The float mask inputs (ones: forward's `mask`-named inputs, input_guesses.py) made boolean."""
    codes, specs, changed = list(attempt.input_code), list(attempt.input_spec), False
    for i, (code, spec) in enumerate(zip(codes, specs)):
        if isinstance(spec, dict) and spec.get("kind") == "tensor" and spec.get("dtype", "float32") == "float32" \
                and code.startswith("torch.ones("):
            specs[i] = {**spec, "dtype": "bool"}
            codes[i] = tensor_code(list(spec["shape"]), specs[i])
            changed = True
    return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} boolean masks") if changed else None


# one input that must have another's shape (a loss's target and its input): "Target size
# (torch.Size([2, 8])) must be the same as input size (torch.Size([2, 32, 8, 8]))", "Using a target
# size (torch.Size([2, 8])) that is different to the input size (...)": the first shape becomes the second
_SAME_SIZE = re.compile(r"torch\.Size\(\[([\d, ]*)\]\)\)?[^\n]{0,60}?(?:must be the same as|different to|must match)"
                        r"[^\n]{0,40}?torch\.Size\(\[([\d, ]*)\]\)")


def _same_size(attempt: Attempt, detail: str) -> Attempt | None:
    """The input whose shape is the first one an error compares given the second (any dtype)."""
    m = _SAME_SIZE.search(detail)
    if m is None:
        return None
    have, want = ([int(x) for x in g.split(",") if x.strip()] for g in m.groups())
    if not want or have == want or not all(0 < d <= 4096 for d in want):
        return None
    codes, specs = list(attempt.input_code), list(attempt.input_spec)
    at = next((i for i in reversed(range(len(specs))) if isinstance(specs[i], dict) and specs[i].get("kind") == "tensor"
               and list(specs[i]["shape"]) == have), None)
    if at is None:
        return None
    specs[at] = {**specs[at], "shape": want}
    codes[at] = tensor_code(want, specs[at])
    return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} repaired")


def _retyped_inputs(attempt: Attempt, detail: str) -> Attempt | None:
    """Float inputs drawn in [0, 1) when the module refused negative values; integer inputs made
    floats when it wanted floats."""
    unit, floats = bool(_UNIT_RANGE.search(detail)), bool(_WANTS_FLOAT.search(detail))
    codes, specs, changed = [], [], False
    for code, spec in zip(attempt.input_code, attempt.input_spec):
        if isinstance(spec, dict) and spec.get("kind") == "tensor":
            new = dict(spec)
            if floats and spec.get("dtype") == "int64":
                del new["dtype"]
                new.pop("high", None)
            if unit and new.get("dtype") != "int64":
                new["range"] = "unit"
            if new != spec:
                spec, code, changed = new, tensor_code(list(spec["shape"]), new), True
        codes.append(code)
        specs.append(spec)
    return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} retyped") if changed else None


def _vocabulary_bound(init_spec: list[Any]) -> int:
    """An index bound the module's embedding tables can hold: the smallest integer constructor
    argument of at least 2 (a vocabulary is rarely smaller than the other sizes), at most 10."""
    ints = []
    for spec in init_spec:
        if isinstance(spec, dict):
            values = list(spec.get("fields", {}).values()) if spec.get("kind") == "namespace" else [spec.get("value")]
        else:
            values = [spec]
        ints += [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v >= 2]
    return min([10, *ints])


def _index_inputs(attempt: Attempt, detail: str) -> Attempt | None:
    """Index inputs: the first float tensor input as integers below a vocabulary bound when an
    embedding refused floats; integer inputs' bound lowered to the size the error names (2 when it
    names none) when an index ran past a table or the rows it indexes."""
    specs = list(attempt.input_spec)
    tensors = [i for i, spec in enumerate(specs) if isinstance(spec, dict) and spec.get("kind") == "tensor"]
    changed = False
    if _FLOAT_INDICES.search(detail):
        at = next((i for i in tensors if specs[i].get("dtype") != "int64"), None)
        if at is None:
            return None
        specs[at] = {**specs[at], "dtype": "int64", "high": _vocabulary_bound(attempt.init_spec)}
        changed = True
    else:
        m = _INDEX_RANGE.search(detail)
        bound = max(1, int(m.group(1))) if m is not None and m.group(1) else 2
        for i in tensors:
            if specs[i].get("dtype") == "int64" and specs[i].get("high", 10) > bound:
                specs[i] = {**specs[i], "high": bound}
                changed = True
    codes = [code if new is old else tensor_code(list(new["shape"]), new)
             for code, new, old in zip(attempt.input_code, specs, attempt.input_spec)]
    if not changed and not _FLOAT_INDICES.search(detail):
        # the integer tensors of a dict or a record (a graph batch's `edge_index`)
        for i, spec in enumerate(specs):
            lowered = _lowered_items(codes[i], spec, bound) if isinstance(spec, dict) else None
            if lowered is not None:
                codes[i], specs[i] = lowered
                changed = True
    if not changed:
        return None
    return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} repaired")


def _lowered_items(code: str, spec: dict[str, Any], bound: int) -> tuple[str, dict[str, Any]] | None:
    """A dict or record input with its integer tensors' bound lowered to `bound`, or None."""
    if spec.get("kind") not in ("tensor_dict", "tensor_record"):
        return None
    codes = item_codes(code)
    if codes is None or len(codes) != len(spec["items"]):
        return None
    items, out, changed = {}, [], False
    for (key, item), item_code in zip(spec["items"].items(), codes):
        if isinstance(item, dict) and item.get("dtype") == "int64" and item.get("high", 10) > bound:
            item = {**item, "high": bound}
            item_code = tensor_code(list(item["shape"]), item)
            changed = True
        items[key] = item
        out.append(item_code)
    return rebuilt(spec, items, out) if changed else None


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


def _leaf(entry: Any) -> tuple[list[int], str | None] | None:
    """A solved tensor entry: a shape, or {"shape": ..., "dtype": "int64"} (forward wanted indices)."""
    shape, dtype = (entry, None) if isinstance(entry, list) else \
        (entry.get("shape"), entry.get("dtype")) if isinstance(entry, dict) and "shape" in entry else (None, None)
    if not (isinstance(shape, list) and shape and all(type(d) is int and 0 < d <= 4096 for d in shape)):
        return None
    return shape, dtype if dtype == "int64" else None


def _resized_tensor(code: str | None, spec: dict[str, Any] | None, entry: Any) -> tuple[str, dict[str, Any]] | None:
    """A tensor input (code, spec; None for a dict key forward read that the guess lacked) as the
    probe solved it, or None when it stays as it is."""
    leaf = _leaf(entry)
    if leaf is None:
        return None
    shape, dtype = leaf
    if spec is None:
        spec = {"kind": "tensor", "shape": shape, "dtype": "float32"}
        code = None
    elif not (spec.get("kind") == "tensor" and len(shape) == len(spec["shape"])):
        return None
    new = {**spec, "shape": shape}
    if dtype == "int64" and spec.get("dtype") != "int64":
        new.update(dtype="int64", high=2)  # indices: the smallest range any table or dimension has
    if new.get("dtype") == "int64":
        new.pop("range", None)
    if code is not None and new == spec:
        return None
    return (_resized_code(code, shape, new) if code is not None and new.get("dtype") == spec.get("dtype")
            else tensor_code(shape, new)), new


def _resized_input(code: str, spec: Any, suggested: Any) -> tuple[str, Any] | None:
    """One input (code, spec) as the probe solved it (a tensor entry; {"dict": {key: entry}} for a
    dict of tensors, keys forward read and the guess lacked among them; {"record": {attribute:
    entry}} for a namespace; {"list": [...]} for a list), or None when nothing changes."""
    if not isinstance(spec, dict):
        return None
    if spec.get("kind") == "tensor":
        return _resized_tensor(code, spec, suggested)
    wanted = suggested.get(spec["kind"].removeprefix("tensor_")) if isinstance(suggested, dict) else None
    if spec.get("kind") in ("tensor_dict", "tensor_record") and isinstance(wanted, dict):
        keys = list(spec["items"]) + [k for k in wanted if k not in spec["items"]]
    elif spec.get("kind") == "tensor_list" and isinstance(wanted, list) and len(wanted) == len(spec["items"]):
        keys, wanted = list(range(len(spec["items"]))), dict(enumerate(wanted))
    else:
        return None
    codes = item_codes(code)
    if codes is None or len(codes) != len(spec["items"]):
        return None
    old = dict(enumerate(spec["items"])) if spec["kind"] == "tensor_list" else spec["items"]
    items, out, changed = {}, [], False
    for j, key in enumerate(keys):
        resized = _resized_tensor(codes[j] if j < len(codes) else None, old.get(key), wanted.get(key))
        if resized is None and key not in old:
            return None  # a key the probe named but gave no tensor for
        item_code, item_spec = resized if resized is not None else (codes[j], old[key])
        changed = changed or resized is not None
        items[key] = item_spec
        out.append(item_code)
    return rebuilt(spec, items, out) if changed else None


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


def solved_attempt(attempt: Attempt, shapes: list[Any] | None, init: list[Any] | None = None) -> Attempt | None:
    """The attempt with its tensor inputs resized to `shapes`, the sizes the probe found forward's
    shape checks pass with (validation/shape_solver.py; one entry per input, None: unchanged), and
    its integer constructor arguments set to `init`'s (one entry per argument, None: unchanged),
    or None when that changes nothing."""
    codes, specs, changed = list(attempt.input_code), list(attempt.input_spec), False
    if shapes and len(shapes) == len(attempt.input_spec):
        for i, (code, spec, suggested) in enumerate(zip(attempt.input_code, attempt.input_spec, shapes)):
            resized = _resized_input(code, spec, suggested) if suggested is not None else None
            if resized is not None:
                codes[i], specs[i] = resized
                changed = True
    init_code, init_spec = list(attempt.init_code), list(attempt.init_spec)
    if init and len(init) == len(attempt.init_code):
        for i, value in enumerate(init):
            if type(value) is int:
                init_code[i] = repr(value)
                spec = init_spec[i]
                init_spec[i] = {**spec, "value": value} if isinstance(spec, dict) and "value" in spec else value
                changed = True
    return Attempt(init_code, init_spec, codes, specs, label=f"{attempt.label} solved") if changed else None


def repair_attempts(attempt: Attempt, detail: str) -> list[Attempt]:
    """The attempts to try next for a torch error, best first: repair_attempt's and, for a failed
    broadcast that wants a larger size, also the same with the first constructor size equal to the
    smaller one raised to match: a ResNet bottleneck adds its input to an output of
    `planes * expansion` channels, so `inplanes` must grow with the input (inplanes=32, planes=32:
    "size of tensor a (128) must match the size of tensor b (32)")."""
    first = repair_attempt(attempt, detail)
    out = _channels_last(attempt, detail) + ([first] if first is not None else [])
    channels = _CHANNELS.search(detail)
    if first is None and channels is not None:
        # No input has the channels the convolution got: it met what the module made of them (a
        # decoder step's `torch.cat([up_x, skip])`), so the constructor's width that the layer was
        # built with grows to them instead (the first argument of that value, as the layer's input comes first).
        want, got = int(channels.group(1)), int(channels.group(2))
        for i, spec in enumerate(attempt.init_spec):
            value = spec.get("value") if isinstance(spec, dict) else None
            if type(value) is int and value == want and i < len(attempt.init_code) and attempt.init_code[i] == str(want):
                codes, specs = list(attempt.init_code), list(attempt.init_spec)
                codes[i], specs[i] = str(got), {**spec, "value": got}
                out.append(Attempt(codes, specs, attempt.input_code, attempt.input_spec,
                                   label=f"{attempt.label} constructor channels"))
                break
        return out
    m = _BROADCAST.search(detail)
    if first is None or m is None:
        return out
    # Several inputs of one shape all reshaped: perhaps only one of them meets the other operand
    # (`img = self.conv2(x) + x_img`, a 3-channel output added to the second input): each alone
    # too, the last input first (the one added in).
    changed = [i for i, (old, new) in enumerate(zip(attempt.input_spec, first.input_spec)) if old != new]
    if len(changed) > 1 and len({repr(attempt.input_spec[i]) for i in changed}) == 1:
        for i in reversed(changed):
            codes, specs = list(attempt.input_code), list(attempt.input_spec)
            codes[i], specs[i] = first.input_code[i], first.input_spec[i]
            out.append(Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} repaired (input {i})"))
    a, b = int(m.group(1)), int(m.group(2))
    got, want = min(a, b), max(a, b)
    grown = [s["shape"] for s in first.input_spec if isinstance(s, dict) and s.get("kind") == "tensor"]
    if want not in {d for shape in grown for d in shape}:
        return out
    for i, spec in enumerate(attempt.init_spec):
        value = spec.get("value") if isinstance(spec, dict) else None
        if type(value) is int and value == got and i < len(attempt.init_code) and attempt.init_code[i] == str(got):
            codes, specs = list(first.init_code), list(first.init_spec)
            codes[i], specs[i] = str(want), {**spec, "value": want}
            out.append(Attempt(codes, specs, first.input_code, first.input_spec, label=f"{attempt.label} repaired with constructor"))
            break
    return out


def normalized_mismatch(detail: str) -> tuple[list[int], list[int]] | None:
    """(normalized shape, input size) of LayerNorm's refusal ("Given normalized_shape=[32], expected
    input with shape [*, 32], but got input of size[2, 32, 8, 8]"), or None for another error."""
    m = _NORMALIZED.search(detail or "")
    if m is None:
        return None
    return [int(x) for x in m.group(1).split(",") if x.strip()], [int(x) for x in m.group(2).split(",") if x.strip()]


def _channels_last(attempt: Attempt, detail: str) -> list[Attempt]:
    """A norm over the last axis given a channels-first input whose channels are the normalized size
    ("Given normalized_shape=[32], expected input with shape [*, 32], but got input of size [2, 32,
    8, 8]"): the same input channels last ([2, 8, 8, 32], a ConvNeXt or Swin block's layout), then as
    tokens ([2, 64, 32], a ViT block's); every input of that shape alike."""
    want, got = normalized_mismatch(detail) or ([], [])
    if len(want) != 1 or len(got) < 3 or got[1] != want[0] or got[-1] == want[0]:
        return []
    out = []
    for label, shape in (("channels last", [got[0], *got[2:], got[1]]), ("tokens", [got[0], math.prod(got[2:]), got[1]])):
        codes, specs = list(attempt.input_code), list(attempt.input_spec)
        for i, spec in enumerate(specs):
            if isinstance(spec, dict) and spec.get("kind") == "tensor" and list(spec.get("shape", [])) == got:
                specs[i] = {**spec, "shape": shape}
                codes[i] = _resized_code(codes[i], shape, specs[i])
        if specs != list(attempt.input_spec):
            out.append(Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} repaired ({label})"))
    return out


def repair_attempt(attempt: Attempt, detail: str) -> Attempt | None:
    """A new attempt whose tensor inputs are reshaped as a torch shape error asks (or made
    integer indices, as an embedding's dtype or range error asks), or None."""
    if _FLOAT_INDICES.search(detail) or _INDEX_RANGE.search(detail):
        return _index_inputs(attempt, detail)
    if _UNIT_RANGE.search(detail) or _WANTS_FLOAT.search(detail):
        return _retyped_inputs(attempt, detail)
    if _WANTS_BOOL.search(detail):
        return _boolean_masks(attempt)
    if _SAME_SIZE.search(detail):
        return _same_size(attempt, detail)

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

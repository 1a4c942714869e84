"""Error-driven repair of input guesses: torch's own errors say what the input should have
been, so the harvester can try a repaired `Attempt` instead of giving up on a module. Here: the
order of the repairs, integer indices within a vocabulary, dtypes and value ranges, boolean
masks, sizes the shape solver found, channels-last layouts, and constructor sizes grown with
the input; the table of shape errors and the reshape each asks for is shape_repairs.py.
"""

from __future__ import annotations

import math
import re
from typing import Any

from autotriton.harvesting.input_display import item_codes, rebuilt, tensor_code
from autotriton.harvesting.shape_repairs import _BROADCAST, _CHANNELS, _resized_code, normalized_mismatch, reshaped_attempt
from autotriton.harvesting.synthesis import Attempt


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


# torch.cat/stack given one tensor where they take a sequence of them: the input is that sequence
# (pfrl's ConcatObsAndAction: `torch.cat(obs_and_action, dim=-1)`)
_WANTS_TENSORS = re.compile(r"argument 'tensors' \(position 1\) must be tuple of Tensors, not Tensor")


def _tensor_sequence(attempt: Attempt) -> Attempt | None:
    """The first float tensor input given as a list of two tensors of its shape."""
    for i, (code, spec) in enumerate(zip(attempt.input_code, attempt.input_spec)):
        if isinstance(spec, dict) and spec.get("kind") == "tensor" and spec.get("dtype", "float32") == "float32":
            codes, specs = list(attempt.input_code), list(attempt.input_spec)
            codes[i], specs[i] = f"[{code}, {code}]", {"kind": "tensor_list", "items": [spec, spec]}
            return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} tensor sequence")
    return None


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
    if _WANTS_TENSORS.search(detail):
        return _tensor_sequence(attempt)
    if _SAME_SIZE.search(detail):
        return _same_size(attempt, detail)
    return reshaped_attempt(attempt, detail)

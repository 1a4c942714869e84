"""Input sizes that a module's forward accepts, found by running it on symbolic shapes.

A harvested module rejects a guessed input with a shape error (`mat1 and mat2 shapes cannot be
multiplied`, a broadcast, a channel count, `view` of a size that does not divide) that says which
sizes clashed inside forward, not which input size has to change. torch's own symbolic shapes say
that: forward runs on fake tensors (no data) whose sizes are symbols `s0, s1, ...` with the guess's
sizes as hints, so every shape decision it makes (`torch._check(s2 == 96)` in F.linear's meta
function, `if x.shape[1] != self.dim: raise ...`) is a sympy expression over the input's sizes,
evaluated on the hints. The decision taken just before forward failed is the one to reverse: one
input size is moved to the nearest value that reverses it, and forward runs again, until it runs
through (or a round or time budget ends). The caller then runs the real module on those sizes:
this only proposes.

Runs inside the probe's confined child (validation/probe.py), on the module the probe built.
Sizes of 0 and 1 are static (torch specialises them); inputs that are not top-level tensors keep
their shapes.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

_QUIET = ("torch._subclasses.fake_tensor", "torch.fx.experimental.symbolic_shapes", "torch.fx.experimental.recording")


@contextmanager
def _quiet_logs() -> Iterator[None]:
    """FakeTensorMode logs every failing meta function at ERROR level: expected here, not news."""
    loggers = [logging.getLogger(name) for name in _QUIET]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


@functools.cache
def _recording_env_class() -> type:
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    class RecordingShapeEnv(ShapeEnv):
        """A ShapeEnv that keeps every decision it evaluates, in order: (expression, its value)."""

        def __init__(self, **kwargs: Any):
            super().__init__(**kwargs)
            self.decisions: list[tuple[Any, Any]] = []

        def _maybe_guard_rel(self, expr):  # type: ignore[override]
            # no size replaced by what a decision found it equal to (`s3 == 32` true: s3 stays s3),
            # so a later clash is still an expression of the input's sizes, not `Eq(128, 32)`
            return None

        def evaluate_expr(self, orig_expr, *args, **kwargs):  # type: ignore[override]
            value = super().evaluate_expr(orig_expr, *args, **kwargs)
            self.decisions.append((orig_expr, value))
            return value

    return RecordingShapeEnv


def _recording_env() -> Any:
    # duck_shape off: two sizes equal by chance (a 32-wide input of 32 steps) stay two symbols; sizes of
    # 1 stay symbols too (a channel moved to 1 is still the input's size where a later check reads it)
    return _recording_env_class()(duck_shape=False, specialize_zero_one=False)


# A slot names one tensor among forward's inputs: (input index,) for a tensor argument, (input
# index, key) for a tensor in a dict argument, (input index, position) for one in a list or tuple.
Slot = tuple

# forward wanted integer indices (an embedding, indexing) where a float tensor was guessed
_INDICES = re.compile(r"scalar types: Long, Int|tensors used as indices must be long|expected scalar type Long|"
                      r"must be an? (?:integer|long) tensor", re.IGNORECASE)


def _record(x: Any) -> bool:
    """A namespace of tensors (harvesting/record_inputs.py: a graph batch's `data.x`)."""
    import types

    return type(x) is types.SimpleNamespace


def _slots(inputs: list[Any]) -> dict[Slot, Any]:
    """Every input tensor forward receives, top-level or one level down in a dict / list / tuple /
    namespace."""
    import torch

    out: dict[Slot, Any] = {}
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            out[(i,)] = x
        elif isinstance(x, dict) or _record(x):
            out.update({(i, k): v for k, v in (x if isinstance(x, dict) else vars(x)).items() if isinstance(v, torch.Tensor)})
        elif type(x) in (list, tuple):
            out.update({(i, j): v for j, v in enumerate(x) if isinstance(v, torch.Tensor)})
    return out


def _with(inputs: list[Any], tensors: dict[Slot, Any]) -> list[Any]:
    """`inputs` with the tensor of each slot of `tensors` put in (a dict key may be new)."""
    out = []
    for i, x in enumerate(inputs):
        if (i,) in tensors:
            x = tensors[(i,)]
        elif isinstance(x, dict):
            x = {**x, **{slot[1]: t for slot, t in tensors.items() if len(slot) == 2 and slot[0] == i}}
        elif _record(x):  # a copy: forward may write into the record (`data.x = self.lin(data.x)`)
            x = type(x)(**{**vars(x), **{slot[1]: t for slot, t in tensors.items() if len(slot) == 2 and slot[0] == i}})
        elif type(x) in (list, tuple):
            x = type(x)(tensors.get((i, j), v) for j, v in enumerate(x))
        out.append(x)
    return out


def _placeholder(shape: list[int], dtype: Any) -> Any:
    import torch

    return torch.empty(shape, dtype=dtype)


@functools.cache
def _counting_mode_class() -> type:
    from torch.overrides import TorchFunctionMode

    class Counting(TorchFunctionMode):
        """Counts torch calls: how far forward got before it failed."""

        calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls += 1
            return func(*args, **(kwargs or {}))

    return Counting


def _fake_run(build: Callable[[], Any], inputs: list[Any]
              ) -> tuple[BaseException | None, list[tuple[Any, Any]], dict[Any, tuple[Slot, int]], int]:
    """Run forward once on fake copies of `inputs`' tensors with symbolic sizes. Returns the
    exception (None when forward ran through), the decisions taken, where each size's symbol
    sits, and how many torch calls forward made (how far it got)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    env = _recording_env()
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
    where: dict[Any, tuple[Slot, int]] = {}
    fakes: dict[Slot, Any] = {}
    for slot, t in _slots(inputs).items():
        fakes[slot] = mode.from_tensor(t, symbolic_context=StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.DYNAMIC] * t.dim()))
        for k, size in enumerate(fakes[slot].shape):
            if isinstance(size, torch.SymInt):
                where[size.node.expr] = (slot, k)
    counter = _counting_mode_class()()
    try:
        model = build()
        with mode, counter, torch.no_grad():
            model(*_with(inputs, fakes))
    except Exception as exc:  # noqa: BLE001 (any failure of forward is information)
        return exc, env.decisions, where, counter.calls
    return None, env.decisions, where, counter.calls


# failures of the fake run itself: an op that wants concrete sizes, a value read from a tensor
_UNTRACEABLE = re.compile(r"expected to contain only concrete integers|GuardOnDataDependent|DataDependentOutput|"
                          r"DynamicOutputShape|data-dependent|only one element tensors|\.item\(\)|UnsupportedOperator")

# errors about how many axes an input has (no size of it would help)
_RANKISH = re.compile(r"values to unpack|[Dd]imension out of range|[Nn]umber of dimensions|expected \d+ dims|\b\d-?D\b|"
                      r"\brank\b|too many indices")


def _rank_step(build: Callable[[], Any], state: list[Any], depth: int, seen: set[str], deadline: float,
               max_numel: int) -> list[Any] | None:
    """`state` with one input given an axis more or one less (after the batch axis, or at the
    end), the variant that takes forward through or furthest past `depth` torch calls; None when
    none gets further."""
    best: tuple[int, list[Any]] | None = None
    for slot, t in reversed(list(_slots(state).items())):
        shape = list(t.shape)
        variants = ([shape[:1] + shape[2:], shape[:-1]] if len(shape) >= 2 else []) + \
                   ([shape[:1] + [8] + shape[1:], shape + [8]] if len(shape) <= 4 else [])
        for variant in variants:
            if time.monotonic() > deadline:
                return best[1] if best else None
            trial = _with(state, {slot: _placeholder(variant, t.dtype)})
            if not variant or math.prod(variant) > max_numel or _signature(trial) in seen:
                continue
            error, _, _, calls = _fake_run(build, trial)
            if error is None:
                return trial
            if calls > depth and (best is None or calls > best[0]):
                best = (calls, trial)
    return best[1] if best else None


def _candidates(hint: int, expr: Any, max_dim: int) -> list[int]:
    """Sizes to try for one symbol, nearest to its hint first (by ratio): every size up to 256,
    the hint times powers of two, and the numbers of the expression with their multiples."""
    import sympy

    values = set(range(1, 257))
    values.update(hint << k for k in range(1, 8))
    values.update(hint >> k for k in range(1, 8))
    for atom in expr.atoms(sympy.Integer):
        n = abs(int(atom))
        if n > 1:
            values.update(n * m for m in range(1, 9))
            values.update(n // d for d in (2, 4, 8) if n % d == 0)
    return sorted((v for v in values if 1 <= v <= max_dim), key=lambda v: (abs(math.log(v / max(hint, 1))), v))


def _reversal(expr: Any, value: Any, sym: Any, hints: dict[Any, int], max_dim: int) -> int | None:
    """The size nearest `hints[sym]` under which `expr` (the other symbols at their hints) takes
    the other value than `value`, or None."""
    import sympy

    want = not bool(value)
    fixed = expr.xreplace({s: sympy.Integer(v) for s, v in hints.items() if s != sym})
    if fixed.free_symbols - {sym}:
        return None  # a symbol not from an input (an unbacked size): nothing to move
    # the dividends of its remainders: a size that empties a flattened product divides by anything
    dividends = [m.args[0] for m in sympy.preorder_traversal(fixed) if type(m).__name__ in ("Mod", "PythonMod")]
    for v in _candidates(hints[sym], fixed, max_dim):
        try:
            at = {sym: sympy.Integer(v)}
            got = fixed.xreplace(at)
            empty = any(bool(d.xreplace(at) <= 0) for d in dividends)
        except Exception:  # noqa: BLE001 (a division by zero in the expression, and the like)
            continue
        if got in (sympy.true, sympy.false) and bool(got) == want and not empty:
            return v
    return None


def _tied_move(expr: Any, value: Any, where: dict[Any, Slot], hints: dict[Any, int], slots: dict[Slot, Any],
               max_dim: int) -> tuple[Slot, list[int]] | None:
    """(slot, new shape) with the spatial sizes of one input (its axes after batch and channels)
    of one size (a square image), one of which `expr` reads, moved together to the nearest size
    that reverses `expr` (`_reversal` of `expr` with those axes one symbol); None where no such
    group or size. A network built for a fixed resolution (DQN's 84 x 84 frames into
    `Linear(7 * 7 * 64, 512)`, MNIST's 28 x 28 into `view(-1, 4 * 4 * 50)`) is satisfied by one
    size on both axes, where moving one axis alone finds another product that divides (32 x 44:
    the view then folds the batch into its rows)."""
    groups: dict[tuple[Slot, int], list[Any]] = {}
    for sym in sorted(where, key=lambda s: where[s][1]):
        slot, k = where[sym]
        if k >= 2:
            groups.setdefault((slot, hints[sym]), []).append(sym)
    for (slot, _), syms in groups.items():
        # the square's axes, whether the decision reads one of them (a convolution's check of each
        # axis on its own) or several (a flattened size)
        if len(syms) < 2 or not expr.free_symbols & set(syms):
            continue
        first = next(s for s in syms if s in expr.free_symbols)
        others = [s for s in syms if s != first]
        size = _reversal(expr.xreplace({s: first for s in others}), value, first,
                         {s: v for s, v in hints.items() if s not in others}, max_dim)
        if size is None:
            continue
        shape = list(slots[slot].shape)
        for sym in syms:
            shape[where[sym][1]] = size
        return slot, shape
    return None


def _missing_key(error: BaseException, inputs: list[Any]) -> tuple[Slot, Any] | None:
    """forward read a key its dict input lacks (`inputs[properties.R]`, a key held in another
    module): the slot to add, as a float tensor shaped like the dict's first, or None."""
    import torch

    if not isinstance(error, KeyError) or len(error.args) != 1 or not isinstance(error.args[0], str):
        return None
    for i, x in enumerate(inputs):
        if isinstance(x, dict) and error.args[0] not in x and len(x) < 16:
            like = next((v for v in x.values() if isinstance(v, torch.Tensor)), None)
            return (i, error.args[0]), _placeholder(list(like.shape) if like is not None else [2, 8], torch.float32)
    return None


def solve_input_shapes(build: Callable[[], Any], inputs: list[Any], *, rounds: int = 16, budget_s: float = 10.0,
                       max_dim: int = 4096, max_numel: int = 1 << 24) -> list[Any] | None:
    """Input tensors under which `build()`'s forward runs through on fake tensors, or None (it
    already does, nothing was found, or the budget ran out). Besides sizes, a float input that
    forward uses as indices becomes int64, and a key a dict input lacks is added. One entry per
    input: a tensor's shape (`{"shape": ..., "dtype": "int64"}` when retyped), `{"dict": {key:
    entry}}` for a dict, `{"list": [entry or None, ...]}` for a list or tuple, None for anything
    else. `build` makes a fresh module each round (forward may keep what it saw)."""
    found = _solve(build, inputs, rounds=rounds, budget_s=budget_s, max_dim=max_dim, max_numel=max_numel)
    return _answer(inputs, found)


def solve_sizes(build_with: Callable[[list[Any]], Any], init: list[Any], inputs: list[Any], *,
                budget_s: float = 10.0, error: str = "", move_init: bool = True) -> dict[str, Any] | None:
    """Constructor sizes and input sizes under which forward runs through on fake tensors, or
    None. The inputs are searched first (solve_input_shapes); when no input size can make
    forward's checks pass (its own sizes disagree: a residual adding branches that two
    constructor arguments size, a skip connection concatenated onto a layer built for fewer
    channels), one integer constructor argument at a time is moved (to a number the error
    message names, another argument's value, double or half) and the inputs searched again on the
    module it builds; the variant that runs through wins, else the one that gets furthest is kept
    and a second argument moved (a constructor change is answered only when forward then runs
    through, or as far as fake tensors can follow it). `build_with(init)` builds the module;
    `error` is the real run's message; `move_init` False: inputs only. Answers {"inputs":
    solve_input_shapes's entries or None, "init": [None, or the new value, per constructor
    argument]}."""
    start = time.monotonic()
    # half the budget for the inputs when the constructor may be searched after them
    first = _solve(lambda: build_with(init), inputs, budget_s=budget_s / 2 if move_init else budget_s)
    answer = _answer(inputs, first)
    if first.outcome in ("through", "untraceable", "runs") or not move_init:
        return _inputs_only(init, answer)
    best = (first.depth, list(init), first)
    positions = [i for i, v in enumerate(init) if type(v) is int and v >= 2]
    numbers = _numbers(error)
    tried: set[tuple[int, ...]] = {tuple(init[i] for i in positions)}
    moved: set[int] = set()
    for _ in range(2):  # two arguments moved at most
        base_init, improved = best[1], False
        # what stopped the furthest variant names the second argument's value (RCAN: num_in_ch
        # moved to 3 runs through to `x + self.mean`, whose "(32) must match ... (3)" is num_out_ch's)
        fresh = _numbers(best[2].error) if moved else []
        for i in [k for k in positions if k not in moved]:
            for value in _init_candidates(base_init, i, numbers, positions, fresh):
                left = budget_s - (time.monotonic() - start)
                if left <= 0:
                    return _inputs_only(init, answer)
                trial = list(base_init)
                trial[i] = value
                key = tuple(trial[k] for k in positions)
                if key in tried:
                    continue
                tried.add(key)
                try:
                    found = _solve(lambda: build_with(trial), inputs, rounds=8, budget_s=min(left, 2.0))
                except Exception:  # noqa: BLE001 (the constructor refuses the value)
                    continue
                if found.outcome in ("through", "runs") or (found.outcome == "untraceable" and found.depth > first.depth):
                    return {"inputs": _answer(inputs, found), "init": [None if a == b else b for a, b in zip(init, trial)]}
                if found.depth > best[0]:
                    best, improved, moved_now = (found.depth, trial, found), True, i
        if not improved:
            break
        moved.add(moved_now)
    return _inputs_only(init, answer)


def _inputs_only(init: list[Any], answer: list[Any] | None) -> dict[str, Any] | None:
    return {"inputs": answer, "init": [None] * len(init)} if answer is not None else None


def _numbers(error: str) -> list[int]:
    """The integers an error message's last line names."""
    return [int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", error.strip().splitlines()[-1] if error.strip() else "")]


def _init_candidates(init: list[Any], i: int, numbers: list[int], positions: list[int], fresh: list[int] = ()) -> list[int]:
    """Values to try for constructor argument `i`: the error's numbers, the other integer
    arguments' values, double and half; nearest the present value first (by ratio), the error's
    numbers first among equals. `fresh`: numbers of a later error (the furthest variant's), tried
    before all of them."""
    here = init[i]
    pool = [(v, -1) for v in fresh] + [(v, 0) for v in numbers] + [(init[k], 1) for k in positions if k != i] \
        + [(here * 2, 2), (here // 2, 2)]
    best: dict[int, int] = {}
    for v, rank in pool:
        if 2 <= v <= min(4096, max(4 * here, 512)) and v != here:  # a layer 100x wider could exhaust the probe's memory
            best[v] = min(rank, best.get(v, rank))
    return sorted(best, key=lambda v: (best[v] >= 0, round(abs(math.log(v / here)), 6), best[v], v))[:10]


@dataclass
class _Found:
    """What one search over the inputs came to: `outcome` "through" (forward ran through on fake
    tensors), "untraceable" (fake tensors could not follow forward: `state` is what was solved up
    to there), "stuck" (out of moves or budget: `state` the sizes that got furthest, `depth` torch
    calls in), or "runs" (the inputs given already run through)."""

    outcome: str
    state: list[Any] | None
    depth: int
    first_depth: int = -1
    error: str = ""  # what stopped forward at `state` ("stuck", "untraceable")


def _answer(inputs: list[Any], found: _Found) -> list[Any] | None:
    """The wire form of a search's inputs, when they are worth a real run: solved, solved up to
    what fake tensors can follow, or sizes that took forward further than the guess did (the real
    run's error then steers the next repair, and this solver again)."""
    if found.state is None or _signature(found.state) == _signature(inputs):
        return None
    if found.outcome == "stuck" and found.depth <= found.first_depth:
        return None
    return _as_inputs(inputs, found.state)


def _solve(build: Callable[[], Any], inputs: list[Any], *, rounds: int = 16, budget_s: float = 10.0,
           max_dim: int = 4096, max_numel: int = 1 << 24) -> _Found:
    """The search of solve_input_shapes: one input size moved a round (see the module's doc)."""
    import sympy
    import torch

    state = _with(inputs, {slot: _placeholder(list(t.shape), t.dtype) for slot, t in _slots(inputs).items()})
    if not _slots(state):
        return _Found("stuck", None, -1)
    start, first = time.monotonic(), _signature(state)
    moved: set[tuple[Slot, int]] = set()
    seen, retyped, tried = {first}, None, set()
    deepest: tuple[int, list[Any], str] = (-1, state, "")  # the state forward got furthest with, how far, its error
    first_depth = -1

    def stuck() -> _Found:
        return _Found("stuck", deepest[1], deepest[0], first_depth, deepest[2])

    with _quiet_logs():
        for round_no in range(rounds):
            if time.monotonic() - start > budget_s:
                return stuck()
            error, decisions, where, depth = _fake_run(build, state)
            if error is None:
                return _Found("runs" if round_no == 0 else "through", state, 1 << 30, first_depth)
            if round_no == 0:
                first_depth = depth
            if depth > deepest[0]:
                deepest = (depth, state, f"{type(error).__name__}: {error}")
            slots = _slots(state)
            added = _missing_key(error, state)
            if added is not None:
                state = _with(state, {added[0]: added[1]})
                continue
            if _INDICES.search(str(error)):
                # which float input is used as indices is not said: the last one first; a retype
                # that leaves the same error is undone and the next tried
                if retyped is not None:
                    state = _with(state, {retyped: _placeholder(list(slots[retyped].shape), torch.float32)})
                options = [sl for sl in reversed(list(slots)) if slots[sl].is_floating_point() and sl not in tried]
                if not options:
                    return stuck()
                retyped = options[0]
                tried.add(retyped)
                state = _with(state, {retyped: _placeholder(list(slots[retyped].shape), torch.int64)})
                continue
            retyped = None
            if _UNTRACEABLE.search(f"{type(error).__name__}: {error}"):
                # a limit of fake tensors (an op that wants concrete sizes, a value forward reads),
                # not the module's complaint: what was solved so far is for the real run to try
                return _Found("untraceable", state, depth, first_depth, f"{type(error).__name__}: {error}")
            # decisions with a truth value over the inputs' sizes (not a size computed on the way)
            ours = [(e, v) for e, v in decisions if e.free_symbols and e.free_symbols <= set(where)
                    and isinstance(e, sympy.logic.boolalg.Boolean)]
            if not ours or _RANKISH.search(str(error)):
                # no size decision to reverse, or an error about axes: an input with an axis more or less
                ranked = _rank_step(build, state, depth, seen, start + budget_s, max_numel)
                if ranked is not None:
                    state = ranked
                    seen.add(_signature(state))
                    continue
                if not ours:
                    return stuck()
            expr, value = ours[-1]
            hints = {s: slots[slot].shape[k] for s, (slot, k) in where.items()}
            tied = _tied_move(expr, value, where, hints, slots, max_dim)
            if tied is not None:
                slot, shape = tied
                trial = _with(state, {slot: _placeholder(shape, slots[slot].dtype)})
                if math.prod(shape) <= max_numel and _signature(trial) not in seen:
                    state = trial
                    seen.add(_signature(state))
                    moved.update((slot, k) for k in range(2, len(shape)))
                    continue
            # a size not moved yet first, a batch size last, the last dimension before the first
            order = sorted(expr.free_symbols, key=lambda s: (where[s] in moved, where[s][1] == 0, -where[s][1]))
            for sym in order:
                size = _reversal(expr, value, sym, hints, max_dim)
                if size is None:
                    continue
                slot, k = where[sym]
                shape = list(slots[slot].shape)
                shape[k] = size
                trial = _with(state, {slot: _placeholder(shape, slots[slot].dtype)})
                if math.prod(shape) > max_numel or _signature(trial) in seen:
                    continue
                state = trial
                seen.add(_signature(state))
                moved.add((slot, k))
                break
            else:
                return stuck()
    return stuck()


def _signature(inputs: list[Any]) -> str:
    return repr(sorted((repr(slot), list(t.shape), str(t.dtype)) for slot, t in _slots(inputs).items()))


def _as_inputs(original: list[Any], solved: list[Any]) -> list[Any]:
    """The wire form of the solved inputs, per input (solve_input_shapes's)."""
    import torch

    out: list[Any] = []
    slots = _slots(solved)
    before = _slots(original)

    def leaf(slot: Slot) -> Any:
        t = slots[slot]
        was = before.get(slot)
        if t.dtype == torch.int64 and (was is None or was.dtype != torch.int64):
            return {"shape": list(t.shape), "dtype": "int64"}
        return list(t.shape)

    for i, x in enumerate(solved):
        if (i,) in slots:
            out.append(leaf((i,)))
        elif isinstance(x, dict) and any((i, k) in slots for k in x):
            out.append({"dict": {str(k): leaf((i, k)) for k in x if (i, k) in slots}})
        elif _record(x) and any((i, k) in slots for k in vars(x)):
            out.append({"record": {k: leaf((i, k)) for k in vars(x) if (i, k) in slots}})
        elif type(x) in (list, tuple) and any((i, j) in slots for j in range(len(x))):
            out.append({"list": [leaf((i, j)) if (i, j) in slots else None for j in range(len(x))]})
        else:
            out.append(None)
    return out

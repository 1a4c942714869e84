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

import logging
import math
import time
from contextlib import contextmanager
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


def _recording_env():
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

    # duck_shape off: two sizes equal by chance (a 32-wide input of 32 steps) stay two symbols
    return RecordingShapeEnv(duck_shape=False)


# A slot names one tensor among forward's inputs: (input index,) for a tensor argument, (input
# index, key) for a tensor in a dict argument, (input index, position) for one in a list or tuple.
Slot = tuple


def _slots(inputs: list[Any]) -> dict[Slot, list[int]]:
    """Every input tensor forward receives, top-level or one level down in a dict / list / tuple."""
    import torch

    out: dict[Slot, list[int]] = {}
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            out[(i,)] = list(x.shape)
        elif isinstance(x, dict):
            out.update({(i, k): list(v.shape) for k, v in x.items() if isinstance(v, torch.Tensor)})
        elif isinstance(x, (list, tuple)):
            out.update({(i, j): list(v.shape) for j, v in enumerate(x) if isinstance(v, torch.Tensor)})
    return out


def _replaced(inputs: list[Any], tensors: dict[Slot, Any]) -> list[Any]:
    """`inputs` with the tensor in each slot of `tensors` replaced."""
    out = []
    for i, x in enumerate(inputs):
        if (i,) in tensors:
            x = tensors[(i,)]
        elif isinstance(x, dict):
            x = {k: tensors.get((i, k), v) for k, v in x.items()}
        elif isinstance(x, (list, tuple)):
            x = type(x)(tensors.get((i, j), v) for j, v in enumerate(x)) if type(x) in (list, tuple) else x
        out.append(x)
    return out


def _tensor_at(inputs: list[Any], slot: Slot) -> Any:
    return inputs[slot[0]] if len(slot) == 1 else inputs[slot[0]][slot[1]]


def _fake_run(build: Callable[[], Any], inputs: list[Any], shapes: dict[Slot, list[int]]
              ) -> tuple[BaseException | None, list[tuple[Any, Any]], dict[Any, tuple[Slot, int]]]:
    """Run forward once on fake inputs of `shapes` (symbolic sizes). Returns the exception (None
    when forward ran through), the decisions taken, and where each input size's symbol sits."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    env = _recording_env()
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
    where: dict[Any, tuple[Slot, int]] = {}
    fakes: dict[Slot, Any] = {}
    for slot, shape in shapes.items():
        real = torch.empty(shape, dtype=_tensor_at(inputs, slot).dtype)
        fakes[slot] = mode.from_tensor(real, symbolic_context=StatelessSymbolicContext(
            dynamic_sizes=[DimDynamic.DYNAMIC] * len(shape)))
        for k, size in enumerate(fakes[slot].shape):
            if isinstance(size, torch.SymInt):
                where[size.node.expr] = (slot, k)
    try:
        model = build()
        with mode, torch.no_grad():
            model(*_replaced(inputs, fakes))
    except Exception as exc:  # noqa: BLE001 (any failure of forward is information)
        return exc, env.decisions, where
    return None, env.decisions, where


def _candidates(hint: int, expr: Any, max_dim: int) -> list[int]:
    """Sizes to try for one symbol, nearest to its hint first (by ratio): every size up to 256,
    the hint times powers of two, and the numbers of the expression with their multiples."""
    import sympy

    values = set(range(2, 257))
    values.update(hint << k for k in range(1, 8))
    values.update(hint >> k for k in range(1, 8))
    for atom in expr.atoms(sympy.Integer):
        n = abs(int(atom))
        if n > 1:
            values.update(n * m for m in range(1, 9))
            values.update(n // d for d in (2, 4, 8) if n % d == 0)
    return sorted((v for v in values if 2 <= v <= max_dim), key=lambda v: (abs(math.log(v / max(hint, 1))), v))


def _reversal(expr: Any, value: Any, sym: Any, hints: dict[Any, int], max_dim: int) -> int | None:
    """The size nearest `hints[sym]` under which `expr` (the other symbols at their hints) takes
    the other value than `value`, or None."""
    import sympy

    want = not bool(value)
    fixed = expr.xreplace({s: sympy.Integer(v) for s, v in hints.items() if s != sym})
    if fixed.free_symbols - {sym}:
        return None  # a symbol not from an input (an unbacked size): nothing to move
    for v in _candidates(hints[sym], fixed, max_dim):
        try:
            got = fixed.xreplace({sym: sympy.Integer(v)})
        except Exception:  # noqa: BLE001 (a division by zero in the expression, and the like)
            continue
        if got in (sympy.true, sympy.false) and bool(got) == want:
            return v
    return None


def solve_input_shapes(build: Callable[[], Any], inputs: list[Any], *, rounds: int = 10, budget_s: float = 10.0,
                       max_dim: int = 4096, max_numel: int = 1 << 24) -> list[Any] | None:
    """New shapes for `inputs` under which `build()`'s forward runs through on fake tensors, or
    None (it already does, no reversal was found, or the budget ran out). One entry per input: a
    shape for a tensor, `{"dict": {key: shape}}` for a dict of tensors, `{"list": [shape or None,
    ...]}` for a list or tuple, None for anything else. `build` makes a fresh module each round
    (forward may keep what it saw)."""
    shapes = _slots(inputs)
    if not shapes:
        return None
    start, first = time.monotonic(), {slot: list(s) for slot, s in shapes.items()}
    moved: set[tuple[Slot, int]] = set()
    seen = {repr(shapes)}
    with _quiet_logs():
        for _ in range(rounds):
            if time.monotonic() - start > budget_s:
                return None
            error, decisions, where = _fake_run(build, inputs, shapes)
            if error is None:
                return _as_inputs(inputs, shapes) if shapes != first else None
            ours = [(e, v) for e, v in decisions if e.free_symbols and e.free_symbols <= set(where)]
            if not ours:
                return None
            expr, value = ours[-1]
            hints = {s: shapes[slot][k] for s, (slot, k) in where.items()}
            # a size not moved yet first, a batch size last, the last dimension before the first
            order = sorted(expr.free_symbols, key=lambda s: (where[s] in moved, where[s][1] == 0, -where[s][1]))
            for sym in order:
                size = _reversal(expr, value, sym, hints, max_dim)
                if size is None:
                    continue
                slot, k = where[sym]
                trial = {sl: list(s) for sl, s in shapes.items()}
                trial[slot][k] = size
                if math.prod(trial[slot]) > max_numel or repr(trial) in seen:
                    continue
                shapes = trial
                seen.add(repr(shapes))
                moved.add((slot, k))
                break
            else:
                return None
    return None


def _as_inputs(inputs: list[Any], shapes: dict[Slot, list[int]]) -> list[Any]:
    """The wire form of `shapes`, per input (solve_input_shapes's)."""
    out: list[Any] = []
    for i, x in enumerate(inputs):
        if (i,) in shapes:
            out.append(shapes[(i,)])
        elif isinstance(x, dict) and any((i, k) in shapes for k in x):
            out.append({"dict": {str(k): shapes[(i, k)] for k in x if (i, k) in shapes}})
        elif isinstance(x, (list, tuple)) and any((i, j) in shapes for j in range(len(x))):
            out.append({"list": [shapes.get((i, j)) for j in range(len(x))]})
        else:
            out.append(None)
    return out

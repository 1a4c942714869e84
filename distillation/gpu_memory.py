"""GPU memory shared by batches distilled side by side (`distill.concurrent_batches` on a GPU judge).

Twelve batches side by side on one 80 GB H100 (benchmarks/RESULTS.md, twenty-third GPU run) ran
out of GPU memory on 40 of KernelBench level 1's 100 problems: captures compiling a 7.5 GB
RMSNorm input beside judge workers timing a 4 GB pooling, each process sure the memory was its
own. The answer here is a ledger in the distilling process: before a batch's captures and
judgement, it reserves what its problems need and waits while that does not fit in
`distill.gpu_memory_fraction` of the GPUs' memory; what it reserved is returned when the batch is
done. Small problems (most package modules: kilobytes) pass at once; big ones take turns; one
bigger than the whole runs alone rather than never. Waiters are served in arrival order, so a big
problem is not starved by a stream of small ones.

A problem's need is estimated from one run at its own sizes on the meta device
(`JudgePool.footprints`, worked out in a judge worker with the problem's environment):
`gpu_memory_factor` x (inputs + outputs), plus twice the parameters, plus 1 GiB for the
processes' CUDA contexts. An estimate is not a measurement; the factor (4 by default: the
reference's run and the candidates', each with inputs and outputs, plus the comparison) is the
knob to turn where a run still runs out of memory.

A batch reserves in two turns (`Reserving`): while its teacher writes (an Inductor capture holds
the inputs, eager's outputs and the compiled outputs, `gpu_memory_capture_factor`, 2 by default,
through a compile of minutes on the CPU) and while it is judged (`gpu_memory_factor`). Reserved
for both throughout, KernelBench level 1 on an H100 kept 67.7 GiB reserved while under 30 GiB was
in use and the machine's load stayed near 2 of 16 cores: 15 problems in 1,066 s
(benchmarks/RESULTS.md, twenty-fifth GPU run).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

GIB = 2**30
PROCESS_OVERHEAD = GIB  # a capture process's and a candidate process's CUDA contexts, caches and workspace


def problem_need(footprint: dict[str, Any] | None, factor: float) -> int:
    """Bytes to reserve for one problem from its footprint (inputs, outputs, parameters); an
    unknown footprint (get_inputs() does not run on meta) reserves the process overhead only."""
    if not footprint:
        return PROCESS_OVERHEAD
    inputs = int(footprint.get("inputs") or 0)
    outputs = footprint.get("outputs")
    outputs = inputs if outputs is None else int(outputs)  # forward not runnable on meta: as big as its inputs
    return int(factor * (inputs + outputs)) + 2 * int(footprint.get("parameters") or 0) + PROCESS_OVERHEAD


def gpu_memory_bytes(environ: dict[str, str] | os._Environ = os.environ) -> int | None:
    """Total memory of the GPUs this process may use (CUDA_VISIBLE_DEVICES), from nvidia-smi, so
    that the distilling process never creates a CUDA context of its own; None without one."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    visible = [v.strip() for v in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    total = 0
    for line in out.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3 or not parts[2].isdigit():
            continue
        if visible and parts[0] not in visible and parts[1] not in visible:
            continue
        total += int(parts[2]) * 2**20  # MiB
    return total or None


class MemoryLedger:
    """Reservations against `capacity` bytes, served in arrival order; a reservation bigger than
    the capacity waits until nothing else is held, then runs alone."""

    def __init__(self, capacity: int):
        if capacity <= 0:
            raise ValueError(f"a memory ledger needs a positive capacity, not {capacity}")
        self.capacity = int(capacity)
        self.held = 0
        self.peak = 0
        self.waited = 0  # reservations that had to wait
        self._queue: deque[object] = deque()
        self._cond = threading.Condition()

    def _fits(self, nbytes: int) -> bool:
        return self.held == 0 or self.held + nbytes <= self.capacity

    @contextmanager
    def reserve(self, nbytes: int) -> Iterator[bool]:
        """Hold `nbytes` for the block; gives whether the reservation had to wait."""
        nbytes = max(0, int(nbytes))
        ticket = object()
        waited = False
        with self._cond:
            self._queue.append(ticket)
            if self._queue[0] is not ticket or not self._fits(nbytes):
                self.waited += 1
                waited = True
            while self._queue[0] is not ticket or not self._fits(nbytes):
                self._cond.wait()
            self._queue.popleft()
            self.held += nbytes
            self.peak = max(self.peak, self.held)
            self._cond.notify_all()  # the next in line may fit too
        try:
            yield waited
        finally:
            with self._cond:
                self.held -= nbytes
                self._cond.notify_all()


def batch_ledger(fraction: float, device: str, side_by_side: int, capacity: int | None = None) -> MemoryLedger | None:
    """The ledger for batches side by side on a GPU judge (`capacity` given: that many bytes,
    e.g. in tests); None where nothing is shared (one batch at a time, a CPU judge, fraction 0,
    no GPU found)."""
    if capacity is None:
        if fraction <= 0 or side_by_side <= 1 or device == "cpu":
            return None
        total = gpu_memory_bytes()
        if not total:
            return None
        capacity = int(total * fraction)
    return MemoryLedger(capacity)


def batch_needs(batches: Sequence[Sequence[Any]], footprints: dict[str, dict[str, Any] | None], factor: float) -> list[int]:
    """Each batch's reservation: its problems' needs added up (they are captured and judged together)."""
    return [sum(problem_need(footprints.get(p.key), factor) for p in batch) for batch in batches]


class NotAdmitted(Exception):
    """A batch that waited for its first reservation until it could no longer end in time."""


class Reserving:
    """`inner` (a teacher or a judge) whose `methods` run under a reservation of `nbytes` from
    `ledger`, one call at a time; everything else, attributes set included, is `inner`'s.
    `admit`: asked once, when the first reserved call had to wait for its reservation (a batch
    queued behind others for minutes): False raises NotAdmitted instead of running the call, so
    a time budget that let the batch start is still kept when the wait ate its time."""

    def __init__(self, inner: Any, ledger: MemoryLedger, nbytes: int, methods: Sequence[str],
                 admit: Callable[[], bool] | None = None):
        object.__setattr__(self, "_reserving", (inner, ledger, int(nbytes), frozenset(methods)))
        object.__setattr__(self, "_admit", [admit] if admit is not None else [])

    def __getattr__(self, name: str) -> Any:
        inner, ledger, nbytes, methods = object.__getattribute__(self, "_reserving")
        attr = getattr(inner, name)
        if name not in methods or not callable(attr):
            return attr
        pending = object.__getattribute__(self, "_admit")

        def reserved(*args: Any, **kwargs: Any) -> Any:
            with ledger.reserve(nbytes) as waited:
                admit = pending.pop() if pending else None  # the first reserved call only
                if waited and admit is not None and not admit():
                    raise NotAdmitted(f"waited for {nbytes / GIB:.1f} GiB of GPU memory past the time budget")
                return attr(*args, **kwargs)
        return reserved

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_reserving")[0], name, value)

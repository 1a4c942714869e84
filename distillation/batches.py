"""A long distillation run as batches: each finished batch handed over at once (the caller stores
it), a time budget that starts no batch it would not see end, and batches run side by side.

Why side by side: a batch is written (the Inductor teacher compiles its problems on the CPU) and
then judged (the candidates run on the GPU), and it ends with its slowest capture. One batch at a
time leaves the GPU idle while the CPU compiles and the CPU idle while the GPU judges; with
`distill.concurrent_batches` > 1 one batch is being judged while the next ones are written, on a
shared warm judge (JudgePool hands each job to whichever worker is free). Each batch is still
`distill()` of its own problems, and each finished batch is handed to `on_batch` in the calling
thread, so a warehouse connection is only ever used from one thread.

`PrefetchingTeacher` (prefetch.py) is the narrower form of the same idea for one batch at a
time: used when `concurrent_batches` is 1 and `distill.prefetch` is on.

Side by side on a GPU, batches share its memory: each reserves its problems' estimated need
while its teacher writes and again while it is judged, and waits while that does not fit
(gpu_memory.py, `distill.gpu_memory_fraction`).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from autotriton.distillation.config import DistillConfig
from autotriton.distillation.gpu_memory import MemoryLedger, NotAdmitted, Reserving, batch_ledger, batch_needs
from autotriton.distillation.pipeline import DistillResult, Explainer, Judge, distill
from autotriton.distillation.prefetch import PrefetchingTeacher
from autotriton.records import Problem

__all__ = ["BatchBudget", "BatchRun", "distill_batches"]


class BatchBudget:
    """`distill.time_budget_s`: whether another batch fits, judged from the batches so far (a
    batch is estimated to take as long as the 90th percentile of those yet: with few batches, the
    longest; with many small ones, one slow outlier does not stop the run minutes early).
    Batches still running count with the time they have run so far (a lower bound of theirs):
    side by side, the fast batches finish first, and an estimate from finished ones alone is
    biased short (an H200 build started batches that ran minutes past its budget).
    0 seconds: no limit."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds = float(seconds or 0)
        self._clock = clock
        self._start = clock()
        self._durations: list[float] = []

    def elapsed(self) -> float:
        return self._clock() - self._start

    def estimate(self, running: Sequence[float] = ()) -> float:
        """A batch's expected duration: the 90th percentile (nearest rank) of the finished batches'
        durations and the running ones' time so far (`running`)."""
        ordered = sorted([*self._durations, *running])
        if not ordered:
            return 0.0
        return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]

    def may_start(self, running: Sequence[float] = ()) -> bool:
        """Start the next batch? Always the first; later ones only when they should end in time
        (`running`: how long each batch in flight has run)."""
        if not self.seconds or not (self._durations or any(running)):
            return True
        return self.elapsed() + self.estimate(running) <= self.seconds

    def may_prefetch(self, index: int) -> bool:
        """Write batch `index` in the background now? It is judged after the batch being judged,
        so it must fit after that one too."""
        return not self.seconds or not self._durations or self.elapsed() + 2 * self.estimate() <= self.seconds

    def record(self, seconds: float) -> None:
        """A batch finished after `seconds` of its own."""
        self._durations.append(float(seconds))


@dataclass
class BatchRun:
    """What `distill_batches` did: the finished batches' results (in the order they finished,
    with their problems), how many problems were never started, and the first error, if any
    (raised by `distill_batches` after every running batch was finished and handed over)."""

    results: list[DistillResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # of the finished batches, in the same order
    left: int = 0
    stopped_by_budget: bool = False
    # GPU memory shared side by side (gpu_memory.py): {capacity_gb, peak_gb, waited, biggest_gb}; empty without a ledger
    memory: dict[str, Any] = field(default_factory=dict)


def distill_batches(batches: Sequence[Sequence[Problem]], teacher: Any, config: DistillConfig, validation_config: Any,
                    judge: Judge, *, on_batch: Callable[[int, Sequence[Problem], DistillResult], None],
                    budget: BatchBudget | None = None, explainer: Explainer | None = None,
                    environments: dict[str, list[str]] | None = None,
                    say: Callable[[str], None] = lambda text: None, memory: MemoryLedger | None = None) -> BatchRun:
    """Distil `batches` with `teacher` and the shared `judge`, `config.concurrent_batches` at a
    time; `on_batch(number, problems, result)` gets each one as it finishes, in this thread. No
    batch starts that the budget says would end too late. A teacher or judge error stops new
    batches; those running are finished and handed over first, then the error is raised.
    `memory`: the GPU memory ledger batches reserve from (default: one over
    `distill.gpu_memory_fraction` of the GPUs' memory when batches run side by side on a GPU judge)."""
    budget = budget or BatchBudget(0)
    batches = [list(b) for b in batches]
    side_by_side = max(1, int(config.concurrent_batches or 1))
    run = BatchRun()
    if environments and hasattr(teacher, "use_environments"):
        teacher.use_environments(environments)  # every batch's, before any is written in the background
    ledger = memory or batch_ledger(config.gpu_memory_fraction, str(getattr(judge, "device", validation_config.device)),
                                    side_by_side)
    measure = ledger is not None and hasattr(judge, "footprints")
    if measure:
        if environments and hasattr(judge, "use_environments"):
            judge.use_environments(environments)
        say(f"GPU memory: batches side by side reserve from {ledger.capacity / 2**30:.1f} GiB")
        run.memory = {"capacity_gb": round(ledger.capacity / 2**30, 2), "biggest_gb": 0.0}

    def needs(batch: list[Problem]) -> tuple[int, int]:
        """The batch's reservations while its teacher writes and while it is judged, measured when
        it is about to start (a footprint imports the problem's packages in a judge worker: for a
        whole build up front that was minutes)."""
        if not measure:
            return 0, 0
        footprints = dict(zip([p.key for p in batch], judge.footprints([p.reference_source for p in batch])))
        ((writing,), (judging,)) = (batch_needs([batch], footprints, config.gpu_memory_capture_factor),
                                    batch_needs([batch], footprints, config.gpu_memory_factor))
        run.memory["biggest_gb"] = max(run.memory["biggest_gb"], round(max(writing, judging) / 2**30, 2))
        return writing, judging

    def one(index: int, progress: bool) -> tuple[DistillResult, float]:
        started = time.monotonic()
        batch_writer, batch_judge = writer, judge
        if ledger is not None:  # each phase holds only its own reservation (gpu_memory.py)
            writing, judging = needs(batches[index])
            # a batch that queued for memory behind others starts its capture only if it still ends in time
            # (a twenty-ninth-run H100 batch waited minutes, then ran 150 s past the budget and was killed)
            batch_writer = Reserving(writer, ledger, writing, ("generate", "repair"),
                                     admit=lambda: budget.may_start([time.monotonic() - t for t in dict(started_at).values()]))
            batch_judge = Reserving(judge, ledger, judging, ("validate_many", "validate"))
        result = distill(batches[index], batch_writer, config, validation_config, batch_judge, explainer=explainer,
                         progress=progress, environments=environments)
        return result, time.monotonic() - started

    with ExitStack() as background:
        writer = teacher
        if side_by_side == 1 and config.prefetch and len(batches) > 1:
            writer = background.enter_context(PrefetchingTeacher(teacher, batches, config.samples,
                                                                 should_prefetch=budget.may_prefetch))
        pool = background.enter_context(ThreadPoolExecutor(max_workers=side_by_side, thread_name_prefix="distill-batch"))
        running: dict[Future, tuple[int, list[Problem]]] = {}
        started_at: dict[Future, float] = {}
        next_index = 0
        not_admitted = 0  # problems of batches started, then turned back by the budget after waiting for memory
        error: BaseException | None = None
        while next_index < len(batches) or running:
            while error is None and not not_admitted and next_index < len(batches) and len(running) < side_by_side:
                now = time.monotonic()
                if not budget.may_start([now - t for t in started_at.values()]):
                    run.stopped_by_budget = True
                    break
                batch = batches[next_index]
                next_index += 1
                if len(batches) > 1 and side_by_side == 1:
                    say(f"batch {next_index}/{len(batches)}: {len(batch)} problem(s)")
                # one live progress bar at a time: only when batches run one after another
                future = pool.submit(one, next_index - 1, side_by_side == 1)
                running[future], started_at[future] = (next_index, batch), time.monotonic()
            if not running:
                break
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: running[f][0]):
                number, batch = running.pop(future)
                started_at.pop(future, None)
                try:
                    result, seconds = future.result()
                except NotAdmitted:
                    run.stopped_by_budget = True
                    not_admitted += len(batch)
                    continue
                except BaseException as exc:  # noqa: BLE001  (kept, raised once the others are in)
                    error = error or exc
                    continue
                budget.record(seconds)
                on_batch(number, batch, result)
                run.results.append(result)
                run.problems.extend(batch)
            if run.stopped_by_budget and not running:
                break
        run.left = sum(len(b) for b in batches[next_index:]) + not_admitted
    if ledger is not None and run.memory:
        run.memory.update(peak_gb=round(ledger.peak / 2**30, 2), waited=ledger.waited)
    if error is not None:
        raise error
    return run

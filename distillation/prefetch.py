"""A teacher that writes the next batch while the judge works on this one.

A build runs batch after batch: the teacher writes (the Inductor teacher compiles on the CPU, an
LLM endpoint answers over the network), then the judge runs the candidates (on the GPU). Done in
turn, each side waits for the other. `PrefetchingTeacher` starts the teacher on batch k+1 in a
background thread as soon as it has handed batch k over, so a batch's writing overlaps the
previous batch's judging. It only reorders work: the candidates of each batch are the ones the
wrapped teacher would have written for it, in the same order.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

from autotriton.records import Candidate, Problem


def _batch_id(problems: Sequence[Problem], samples: int) -> tuple[tuple[str, ...], int]:
    return tuple(p.key for p in problems), samples


class PrefetchingTeacher:
    """Wraps a teacher; `generate` of the batch after the one asked for starts at once in the
    background. Every other attribute (name, version, failures, counters, repair,
    use_environments, ...) is the wrapped teacher's own."""

    def __init__(self, teacher: Any, batches: Sequence[Sequence[Problem]], samples: int,
                 should_prefetch: Callable[[int], bool] | None = None):
        """`should_prefetch(index)` says whether batch `index` may start in the background now
        (a caller with a time budget declines batches it will not wait for)."""
        self.inner = teacher
        self._batches = [list(b) for b in batches]
        self._samples = samples
        self._should_prefetch = should_prefetch or (lambda index: True)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="teacher-prefetch")
        self._pending: dict[tuple[tuple[str, ...], int], Future] = {}

    def __getattr__(self, name: str) -> Any:  # only called for what this class does not define
        return getattr(self.inner, name)

    def _start(self, index: int) -> None:
        if 0 <= index < len(self._batches) and self._should_prefetch(index):
            ident = _batch_id(self._batches[index], self._samples)
            if ident not in self._pending:
                self._pending[ident] = self._pool.submit(self.inner.generate, self._batches[index], self._samples)

    def generate(self, problems: list[Problem], samples: int = 1) -> list[Candidate]:
        ident = _batch_id(problems, samples)
        future = self._pending.pop(ident, None)
        # One batch is written at a time: the next starts when this one is handed over, so its
        # writing overlaps the caller's judging of this one, never another batch's writing.
        candidates = future.result() if future is not None else self.inner.generate(problems, samples)
        index = next((i for i, b in enumerate(self._batches) if _batch_id(b, self._samples) == ident), None)
        if index is not None:
            self._start(index + 1)
        return candidates  # a teacher error surfaced above, in the batch it belongs to

    def close(self) -> None:
        """Stop prefetching: a batch not yet started is dropped; one being written is waited for."""
        for future in self._pending.values():
            future.cancel()
        self._pool.shutdown(wait=True)
        self._pending.clear()

    def __enter__(self) -> "PrefetchingTeacher":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

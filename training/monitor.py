"""Watching a run: a rich progress bar on stderr, step timing, and the PNG of training curves."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Sequence

from transformers import TrainerCallback


class RichProgress(TrainerCallback):
    """A rich progress bar over optimizer steps (on stderr), showing the latest loss / reward."""

    def __init__(self, description: str, console=None, enabled: bool = True):
        self.description = description
        self.console = console
        self.enabled = enabled
        self._progress = None
        self._task = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not self.enabled or not state.is_world_process_zero:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("[bold blue]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TimeRemainingColumn(), TextColumn("{task.fields[status]}"),
            console=self.console or Console(stderr=True), transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=state.max_steps, completed=state.global_step,
                                             status="")

    def on_step_end(self, args, state, control, **kwargs):
        if self._progress is not None:
            self._progress.update(self._task, completed=state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self._progress is None or not logs:
            return
        parts = []
        for key, label in (("loss", "loss"), ("reward", "reward"), ("eval_loss", "eval"), ("judge/correct", "correct")):
            if key in logs and isinstance(logs[key], (int, float)):
                parts.append(f"{label} {logs[key]:.4g}")
        if parts:
            self._progress.update(self._task, status="  ".join(parts))

    def on_train_end(self, args, state, control, **kwargs):
        if self._progress is not None:
            self._progress.update(self._task, completed=state.global_step)
            self._progress.stop()
            self._progress = None


class StepTimer(TrainerCallback):
    """Wall time of every optimizer step, logged as `time/step_s` (with `time/*` from the trainer)."""

    def __init__(self):
        self.step_times: list[float] = []
        self._t0: float | None = None

    def on_step_begin(self, args, state, control, **kwargs):
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self._t0 is not None:
            self.step_times.append(time.perf_counter() - self._t0)
            self._t0 = None

    def steady_step_s(self) -> float | None:
        """Median step time without the first step (which pays for warm-up: CUDA, allocator, judge)."""
        import statistics

        rest = self.step_times[1:] or self.step_times
        return statistics.median(rest) if rest else None


class TimeBudget(TrainerCallback):
    """Ends training cleanly (the final model is still saved) before a step would end past
    `seconds` of wall time from the start of training: a step starts only while the time spent
    plus the longest step so far fits. At least one step always runs; 0 = no budget.
    `stopped` says whether the budget ended the run early."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.stopped = False
        self._start: float | None = None
        self._step_start: float | None = None
        self._longest = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_begin(self, args, state, control, **kwargs):
        self._step_start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        now = time.perf_counter()
        if self._step_start is not None:
            self._longest = max(self._longest, now - self._step_start)
        if self.seconds and self._start is not None and state.global_step < state.max_steps \
                and now - self._start + self._longest > self.seconds:
            control.should_training_stop = True
            self.stopped = True
        return control


def step_breakdown(log_history: Sequence[dict[str, Any]], step_times: Sequence[float]) -> dict[str, float]:
    """Median seconds per GRPO step, split as the trainer spent them (first step left out: it
    pays for warm-up): `generation_s`, `reward_wait_s` (the time the trainer waited for the
    judge: all of the judge's time without reward_overlap), `update_s` (the rest of the step:
    log-probs, loss, backward, optimizer) and `judge_s` (the judge's own wall time per batch,
    in the background under reward_overlap). Empty when nothing was timed."""
    import statistics

    def median(values: list[float]) -> float | None:
        rest = values[1:] or values
        return statistics.median(rest) if rest else None

    generation = series(log_history, "time/generation_s")[1]
    judge = series(log_history, "time/reward_s")[1]
    waits = series(log_history, "time/reward_wait_s")[1] or judge  # without overlap the trainer waits for all of it
    step, gen, wait = median(list(step_times)), median(generation), median(waits)
    out: dict[str, float] = {}
    if step is None:
        return out
    out["step_s"] = step
    if gen is not None:
        out["generation_s"] = gen
    if wait is not None:
        out["reward_wait_s"] = wait
        out["reward_wait_share"] = wait / step if step else 0.0
    if judge:
        out["judge_s"] = median(judge)
    out["update_s"] = max(0.0, step - (gen or 0.0) - (wait or 0.0))
    return out


def series(log_history: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of one logged metric, skipping entries without it or with NaN."""
    steps, values = [], []
    for entry in log_history:
        value = entry.get(key)
        if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
            steps.append(int(entry.get("step", len(steps))))
            values.append(float(value))
    return steps, values


SFT_CURVES = (("loss", "eval_loss"), ("learning_rate",), ("grad_norm",), ("mean_token_accuracy", "eval_mean_token_accuracy"))
GRPO_CURVES = (("reward", "reward_std"), ("judge/correct", "judge/compiled", "judge/rule_violation", "judge/hack", "judge/no_code"),
               ("completions/mean_length",), ("loss", "kl"))


def plot_curves(log_history: Sequence[dict[str, Any]], path: str | Path, panels: Sequence[Sequence[str]],
                title: str = "") -> Path | None:
    """One PNG with a panel per group of metrics (those never logged are left out); returns the
    path, or None when nothing was logged."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    present = [[k for k in group if series(log_history, k)[0]] for group in panels]
    present = [g for g in present if g]
    if not present:
        return None
    fig, axes = plt.subplots(len(present), 1, figsize=(7, 2.4 * len(present)), squeeze=False, sharex=True)
    for ax, group in zip(axes[:, 0], present):
        for key in group:
            xs, ys = series(log_history, key)
            ax.plot(xs, ys, marker="o" if len(xs) < 30 else None, markersize=3, label=key)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    axes[-1, 0].set_xlabel("step")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

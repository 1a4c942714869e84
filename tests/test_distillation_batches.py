"""distill_batches: batches side by side on one judge (`distill.concurrent_batches`), each stored
in the calling thread as it finishes, within a time budget, and nothing finished lost to an error."""

from __future__ import annotations

import json
import threading
import time

import pytest
from typer.testing import CliRunner

from autotriton.distillation import DistillConfig
from autotriton.distillation.batches import BatchBudget, distill_batches
from autotriton.distillation.cache import append_record
from autotriton.distillation.openai_teacher import TeacherError
from autotriton.distillation.replay import record_from_candidate
from autotriton.records import Candidate, Problem
from autotriton.validation import JudgePool

from distillation_helpers import RELU_KERNEL, RELU_PROBLEM


def relu_problems(n: int) -> list[Problem]:
    # distinct references (the scale differs); the ReLU kernel is right for the first only
    return [Problem(reference_source=RELU_PROBLEM.replace("torch.relu(x)", f"torch.relu(x) * {i + 1}.0"), name=f"relu{i}")
            for i in range(n)]


class KernelTeacher:
    """Writes the ReLU kernel for every problem; `hold(batch_names)` runs before it answers."""

    name, version = "inductor", "test"

    def __init__(self, hold=lambda names: None):
        self.hold = hold
        self.threads: list[str] = []

    def generate(self, problems, samples=1):
        self.threads.append(threading.current_thread().name)
        self.hold([p.name for p in problems])
        return [Candidate(problem_key=p.key, code=RELU_KERNEL, generator=self.name) for p in problems]


@pytest.fixture(scope="module")
def judge_config():
    from autotriton.validation.config import ValidationConfig

    return ValidationConfig(device="cpu", trials=1, workers=1, timeout_s=60)


@pytest.fixture(scope="module")
def judge(judge_config):
    with JudgePool(judge_config) as pool:
        yield pool


def config(**kw) -> DistillConfig:
    return DistillConfig(teacher="replay", describe_trace=False, rounds=0, **kw)


def test_batches_run_side_by_side_and_each_is_handed_over_in_the_calling_thread(judge, judge_config):
    """Two batches are written at the same time (the teacher waits at a barrier both must reach:
    one after the other it would time out), every batch is judged on the one shared judge, and
    `on_batch` (where the caller stores) always runs in the caller's thread."""
    problems = relu_problems(4)
    together = threading.Barrier(2, timeout=20)
    first_two = {"relu0", "relu1"}

    def hold(names):
        if first_two & set(names):
            together.wait()

    teacher = KernelTeacher(hold)
    handed: list[tuple[int, list[str], str, int]] = []
    run = distill_batches([[p] for p in problems], teacher, config(concurrent_batches=2), judge_config, judge,
                          on_batch=lambda n, batch, result: handed.append(
                              (n, [p.name for p in batch], threading.current_thread().name, result.stats["validated_pairs"])))
    assert sorted(n for n, *_ in handed) == [1, 2, 3, 4] and run.left == 0 and not run.stopped_by_budget
    assert {thread for *_, thread, _ in handed} == {threading.current_thread().name}
    assert all(t.startswith("distill-batch") for t in teacher.threads)
    # each batch's own verdicts: the kernel is right for relu0 alone
    assert {tuple(names): pairs for _, names, _, pairs in handed} == {("relu0",): 1, ("relu1",): 0, ("relu2",): 0, ("relu3",): 0}
    assert [p.name for p in run.problems] == [names[0] for _, names, _, _ in handed]  # results and problems in one order


def test_the_budget_starts_no_batch_that_would_end_too_late(judge, judge_config):
    """With a budget, the first `concurrent_batches` batches start (nothing is known yet); once
    they took ~1 s each, no batch starts that would end past 1.5 s: the rest are left, counted."""
    teacher = KernelTeacher(lambda names: time.sleep(1.0))
    budget = BatchBudget(1.5)
    handed = []
    run = distill_batches([[p] for p in relu_problems(6)], teacher, config(concurrent_batches=2), judge_config, judge,
                          on_batch=lambda n, batch, result: handed.append(n), budget=budget)
    assert sorted(handed) == [1, 2] and run.left == 4 and run.stopped_by_budget
    assert budget.estimate() >= 1.0 and len(run.results) == 2


def test_the_budget_estimates_a_batch_by_the_90th_percentile_of_those_so_far():
    """One slow outlier among many small batches does not stop a run minutes early; with few
    batches the estimate is the longest."""
    now = [0.0]
    budget = BatchBudget(100, clock=lambda: now[0])
    for seconds in (5, 40):
        budget.record(seconds)
    assert budget.estimate() == 40
    for _ in range(18):
        budget.record(5)
    assert budget.estimate() == 5  # 20 batches: the 18th shortest
    now[0] = 94
    assert budget.may_start()
    now[0] = 96
    assert not budget.may_start()


def test_batches_still_running_count_in_the_estimate_with_their_time_so_far():
    """Side by side, the fast batches finish first: an estimate from them alone would start
    batches that end long past the budget while slow ones are still running. A batch in flight
    counts with the time it has run (a lower bound of its own duration)."""
    now = [0.0]
    budget = BatchBudget(100, clock=lambda: now[0])
    assert budget.may_start([0.0, 0.0])  # nothing known yet: the first wave starts
    for seconds in (5, 5, 5):
        budget.record(seconds)
    now[0] = 60
    assert budget.estimate() == 5 and budget.may_start()  # from the finished ones alone: 60 + 5 fits
    running = [60.0] * 9  # nine batches of the first wave still going after 60 s
    assert budget.estimate(running) == 60 and not budget.may_start(running)
    for _ in range(17):
        budget.record(5)
    assert budget.may_start([60.0])  # one slow batch among twenty finished is an outlier (90th percentile)


def test_an_error_stops_new_batches_after_the_running_ones_are_handed_over(judge, judge_config):
    """Batch 2 fails at once while batch 1 is still being written: batch 1 is finished and handed
    over (stored), no further batch starts, then the teacher's error is raised."""
    started = threading.Event()

    def hold(names):
        if names == ["relu1"]:
            assert started.wait(20)
            raise TeacherError("endpoint went away")
        started.set()
        time.sleep(0.5)

    handed = []
    with pytest.raises(TeacherError, match="endpoint went away"):
        distill_batches([[p] for p in relu_problems(4)], KernelTeacher(hold), config(concurrent_batches=2), judge_config,
                        judge, on_batch=lambda n, batch, result: handed.append([p.name for p in batch]))
    assert handed == [["relu0"]]


def test_cli_distill_side_by_side_stores_what_one_after_another_does(tmp_path):
    """`--set distill.concurrent_batches=2` through the verb: every batch stored, the same
    verdicts as batches one after another (the run's summary counts them all)."""
    from autotriton.flows.cli import app
    from autotriton.warehouse import Warehouse

    problems = relu_problems(3)
    replay = tmp_path / "r.jsonl"
    for p in problems:
        append_record(replay, record_from_candidate(p, Candidate(problem_key=p.key, code=RELU_KERNEL, generator="inductor")))
    summaries = {}
    for side_by_side in (1, 2):
        db = tmp_path / f"w{side_by_side}.duckdb"
        with Warehouse(db) as wh:
            run = wh.start_run("harvest", {})
            wh.put_problems(run, problems)
            wh.finish_run(run, "succeeded", {})
        result = CliRunner().invoke(app, [
            "--db", str(db), "--set", "validation.device=cpu", "--set", "validation.trials=1", "--set", "validation.workers=1",
            "--set", "distill.replay_shipped=false", "--set", "distill.describe_trace=false", "--set", "distill.batch_problems=1",
            "--set", f"distill.concurrent_batches={side_by_side}", "distill", "--teacher", "replay", "--replay", str(replay), "--json"])
        assert result.exit_code == 0, result.output
        summaries[side_by_side] = json.loads(result.stdout)
        with Warehouse(db, read_only=True) as wh:
            assert len(wh.candidates()) == 3 and len(wh.verdicts()) == 3
    for s in summaries.values():
        assert s["batches"] == 3 and s["problems"] == 3 and s["new_candidates"] == 3 and s["problems_left"] == 0
        assert s["validated_pairs"] == 1 and s["verdicts"] == {"correct": 1, "incorrect": 2}


def replayed_relu_warehouse(tmp_path):
    """(problems, warehouse path, the distill command's arguments): three harvested ReLU problems
    and a replay file answering each with the ReLU kernel (right for the first only)."""
    from autotriton.warehouse import Warehouse

    problems = relu_problems(3)
    replay = tmp_path / "r.jsonl"
    for p in problems:
        append_record(replay, record_from_candidate(p, Candidate(problem_key=p.key, code=RELU_KERNEL, generator="inductor")))
    db = tmp_path / "w.duckdb"
    with Warehouse(db) as wh:
        run = wh.start_run("harvest", {})
        wh.put_problems(run, problems)
        wh.finish_run(run, "succeeded", {})
    base = ["--db", str(db), "--set", "validation.device=cpu", "--set", "validation.trials=1", "--set", "validation.workers=1",
            "--set", "distill.replay_shipped=false", "--set", "distill.describe_trace=false",
            "distill", "--teacher", "replay", "--replay", str(replay), "--json"]
    return problems, db, base


def test_cli_distill_redo_unsolved_distils_again_only_what_has_no_pair(tmp_path):
    """After a teacher or converter fix, `--redo-unsolved` distils again the problems the teacher
    was run on without a validated pair; the solved ones stay skipped."""
    from autotriton.flows.cli import app

    problems, db, base = replayed_relu_warehouse(tmp_path)
    first = json.loads(CliRunner().invoke(app, base).stdout)
    assert first["problems"] == 3 and first["validated_pairs"] == 1
    assert json.loads(CliRunner().invoke(app, base).stdout) == {"problems": 0, "skipped_distilled": 3}
    again = json.loads(CliRunner().invoke(app, [*base, "--redo-unsolved"]).stdout)
    assert again["problems"] == 2 and again["skipped_distilled"] == 1 and again["validated_pairs"] == 0


def test_cli_distill_name_glob_distils_only_the_problems_it_matches(tmp_path):
    """`--name GLOB` (repeatable) narrows a build to one family of problems, e.g. the generator's
    short pointwise ones first; a glob matching nothing says so and stores nothing."""
    from autotriton.flows.cli import app
    from autotriton.warehouse import Warehouse

    problems, db, base = replayed_relu_warehouse(tmp_path)
    missing = CliRunner().invoke(app, [*base, "--name", "conv*"])
    assert missing.exit_code != 0 and "named like 'conv*'" in missing.output
    picked = json.loads(CliRunner().invoke(app, [*base, "--name", "relu0", "--name", "relu2"]).stdout)
    assert picked["problems"] == 2 and picked["validated_pairs"] == 1
    with Warehouse(db, read_only=True) as wh:
        names = {p.name for p in wh.problems()}
        assert {c.problem_key for c in wh.candidates()} == {p.key for p in problems if p.name in ("relu0", "relu2")}
        assert names == {"relu0", "relu1", "relu2"}
    rest = json.loads(CliRunner().invoke(app, base).stdout)
    assert rest["problems"] == 1 and rest["skipped_distilled"] == 2


def test_cli_distill_skips_what_an_imported_release_already_solved(tmp_path):
    """A build continued on another machine from a release (`db import`, no distill run of its own)
    does not distil again the problems the release holds this teacher's pairs for."""
    from autotriton.flows.cli import app

    problems, db, base = replayed_relu_warehouse(tmp_path)
    assert json.loads(CliRunner().invoke(app, base).stdout)["validated_pairs"] == 1
    release = tmp_path / "release"
    assert CliRunner().invoke(app, ["--db", str(db), "db", "release", "--out", str(release), "--json"]).exit_code == 0
    fresh = tmp_path / "fresh.duckdb"
    assert CliRunner().invoke(app, ["--db", str(fresh), "db", "import", str(release), "--json"]).exit_code == 0
    again = [a if a != str(db) else str(fresh) for a in base]
    rest = json.loads(CliRunner().invoke(app, [*again, "--redo-unsolved"]).stdout)
    assert rest["skipped_distilled"] == 1 and rest["problems"] == 2  # the release's solved problem stays done

"""distill(): generate -> judge -> repair with the judge's errors; only reward-1 verdicts make pairs.

The repair loop runs the real `openai` client against the local server and the real judge
(CPU interpreter); the bookkeeping test uses a scripted judge so it can pin down round logic.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from autotriton.distillation import DistillConfig, ReplayTeacher, distill
from autotriton.distillation.cache import append_record
from autotriton.distillation.openai_teacher import OpenAITeacher
from autotriton.distillation.replay import record_from_candidate
from autotriton.records import Candidate, Problem, Verdict
from autotriton.validation import JudgePool

from distillation_helpers import RELU_KERNEL, RELU_KERNEL_BROKEN, RELU_KERNEL_WRONG, RELU_PROBLEM, ChatServer, Reply, answer

SIGMOID_PROBLEM = RELU_PROBLEM.replace("torch.relu(x)", "torch.sigmoid(x)")


@pytest.fixture(scope="module")
def judge_config():
    from autotriton.validation.config import ValidationConfig

    return ValidationConfig(device="cpu", trials=2, workers=1, timeout_s=60)


@pytest.fixture(scope="module")
def judge(judge_config):
    with JudgePool(judge_config) as pool:
        yield pool


def llm_config(server: ChatServer, tmp_path, **kw) -> DistillConfig:
    values = dict(teacher="openai", base_url=server.base_url, model="test-model", cache_dir=str(tmp_path / "cache"),
                  backoff_base_s=0.01, request_timeout_s=30.0, rounds=2, samples=1, concurrency=2, describe_trace=False)
    values.update(kw)
    return DistillConfig(**values)


def test_repair_loop_sends_the_validators_error_back_and_keeps_the_fixed_kernel(judge, judge_config, tmp_path):
    problem = Problem(reference_source=RELU_PROBLEM, name="relu")
    script = [Reply(content=answer(RELU_KERNEL_BROKEN, "Use a relu helper.")), Reply(content=answer(RELU_KERNEL, "Fixed: tl.maximum."))]
    with ChatServer(script) as server:
        result = distill([problem], OpenAITeacher(llm_config(server, tmp_path)), llm_config(server, tmp_path), judge_config, judge=judge)
        requests = list(server.requests)
    assert len(requests) == 2, "a solved problem must not be repaired again"
    first, second = result.candidates
    verdicts = {v.candidate_key: v for v in result.verdicts}
    failed = verdicts[first.key]
    assert failed.status != "correct" and failed.error
    # The second request is the multi-turn conversation: prompt, broken answer, validator feedback.
    messages = requests[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "tl.relu_max" in messages[2]["content"]
    feedback = messages[3]["content"]
    assert f"Status: {failed.status}" in feedback
    assert failed.error.strip().splitlines()[-1] in feedback  # the error's last line, verbatim
    # The repair validated with reward 1 on the CPU interpreter and is the only training pair.
    assert second.repair_round == 1 and second.parent_key == first.key
    assert verdicts[second.key].status == "correct"
    assert [(p.key, c.key) for p, c, _ in result.pairs] == [(problem.key, second.key)]
    stats = result.stats
    assert stats["problems"] == 1 and stats["candidates"] == 2 and stats["validated_pairs"] == 1 and stats["yield"] == 1.0
    assert stats["rounds"] == [{"candidates": 1, "malformed": 0, "validated": 0}, {"candidates": 1, "malformed": 0, "validated": 1}]
    assert stats["tokens"]["total"] == 300 and sum(stats["verdicts"].values()) == 2


def test_malformed_output_is_recorded_and_repaired(judge, judge_config, tmp_path):
    problem = Problem(reference_source=RELU_PROBLEM, name="relu")
    script = [Reply(content="Sure! ReLU clamps negatives to zero."), Reply(content=answer(RELU_KERNEL))]
    with ChatServer(script) as server:
        result = distill([problem], OpenAITeacher(llm_config(server, tmp_path)), llm_config(server, tmp_path), judge_config, judge=judge)
        feedback = server.requests[1]["messages"][-1]["content"]
    malformed, fixed = result.candidates
    assert malformed.parse_error and malformed.code == "" and malformed.key not in {v.candidate_key for v in result.verdicts}
    assert "no ```python code block" in feedback and "Sure! ReLU" in server.requests[1]["messages"][-2]["content"]
    assert result.stats["malformed"] == 1 and result.stats["validated_pairs"] == 1 and fixed.parent_key == malformed.key


def test_replayed_candidates_are_judged_again_and_only_reward_1_counts(judge, judge_config, tmp_path):
    relu = Problem(reference_source=RELU_PROBLEM, name="relu")
    sigmoid = Problem(reference_source=SIGMOID_PROBLEM, name="sigmoid")
    missing = Problem(reference_source=RELU_PROBLEM.replace("37", "41"), name="relu41")
    path = tmp_path / "inductor.jsonl"
    for problem, code in ((relu, RELU_KERNEL), (sigmoid, RELU_KERNEL_WRONG)):
        append_record(path, record_from_candidate(problem, Candidate(problem_key=problem.key, code=code, generator="inductor", generator_version="t")))
    teacher = ReplayTeacher(DistillConfig(describe_trace=False), paths=[path], shipped=False)
    result = distill([relu, sigmoid, missing], teacher, DistillConfig(rounds=3, describe_trace=False), judge_config, judge=judge)
    statuses = {v.problem_key: v.status for v in result.verdicts}
    assert statuses == {relu.key: "correct", sigmoid.key: "incorrect"}
    assert [p.name for p, _, _ in result.pairs] == ["relu"]
    assert result.stats["teacher_counters"]["replay_miss"] == 1 and result.stats["yield"] == pytest.approx(1 / 3, abs=1e-3)
    assert len(result.stats["rounds"]) == 1  # replay cannot repair: no repair rounds
    reasons = {row["subject"]: (row["reason"], row["detail"]) for row in result.rejections}
    assert reasons == {sigmoid.key: ("not_validated", "sigmoid: incorrect x1"),
                       missing.key: ("replay_miss", "relu41: no recorded output for this problem_key in 1 replay file(s)")}
    assert all(c.reasoning and c.instruction for c in result.candidates)


class ScriptedTeacher:
    """A teacher whose answers are fixed per (problem name, round), to pin down the round logic."""

    name, version = "scripted", "1"

    def __init__(self, answers: dict[tuple[str, int], list[str]]):
        self.answers = answers
        self.counters: dict = {}
        self.repair_calls: list[int] = []
        self.histories: list[list[list[str]]] = []

    def _cand(self, problem, code, rnd, parent=None, sample=0):
        return Candidate(problem_key=problem.key, code=code, generator="scripted", repair_round=rnd, parent_key=parent,
                         parse_error=None if code else "no code", sampling={"sample": sample},
                         usage={"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": 0.001})

    def generate(self, problems, samples):
        return [self._cand(p, code, 0, sample=i) for p in problems for i, code in enumerate(self.answers[(p.name, 0)][:samples])]

    def repair(self, requests):
        self.repair_calls.append(len(requests))
        self.histories.append([[t.candidate.code for t in r.history] for r in requests])
        out = []
        for r in requests:
            codes = self.answers[(r.problem.name, r.repair_round)]
            out.append(self._cand(r.problem, codes[int(r.parent.sampling["sample"])], r.repair_round, r.parent.key))
        return out


def code(status: str, version: int) -> str:
    return f"status, version = '{status}', {version}"


class VerdictByCode:
    """Judge stand-in for the bookkeeping test: the verdict status is written in the code."""

    def __init__(self):
        self.jobs: list[tuple[str, str]] = []

    def validate_many(self, jobs):
        from autotriton.hashing import source_key
        from autotriton.records import candidate_key

        self.jobs.extend(jobs)
        out = []
        for problem, code in jobs:
            status = code.split("'")[1]
            pk = source_key(problem)
            out.append(Verdict(candidate_key=candidate_key(code, pk), problem_key=pk, status=status,
                               correct=status == "correct", rule_ok=status != "rule_violation", error=f"{status} happened"))
        return out


def test_round_bookkeeping_dedup_and_stats():
    a = Problem(reference_source=RELU_PROBLEM, name="a")
    b = Problem(reference_source=SIGMOID_PROBLEM, name="b")
    answers = {
        ("a", 0): [code("correct", 1), code("correct", 1)],  # two samples, same code: one candidate, judged once
        ("b", 0): [code("incorrect", 1), ""],
        ("b", 1): [code("rule_violation", 2), code("correct", 2)],
        ("b", 2): [code("correct", 3), "unused"],
    }
    teacher, judge = ScriptedTeacher(answers), VerdictByCode()
    result = distill([a, b], teacher, DistillConfig(samples=2, rounds=3, describe_trace=False), None, judge=judge)
    assert teacher.repair_calls == [2, 1]  # round 1 repairs b's two failures, round 2 only the one still failing
    # Round 2's conversation holds both earlier attempts of that chain, oldest first.
    assert teacher.histories[1] == [[code("incorrect", 1), code("rule_violation", 2)]]
    assert len(judge.jobs) == 5 and all(job[1] for job in judge.jobs)  # the malformed output was never judged
    assert result.stats["outputs"] == 7 and result.stats["candidates"] == 6 and result.stats["malformed"] == 1
    assert result.stats["verdicts"] == {"correct": 3, "incorrect": 1, "rule_violation": 1}
    assert result.stats["validated_pairs"] == 3 and result.stats["problems_solved"] == 2 and result.stats["yield"] == 1.0
    assert result.stats["tokens"] == {"prompt": 70, "completion": 35, "total": 105, "spent_this_run": 0}  # every output, duplicates too
    assert result.stats["cost_usd"] == pytest.approx(0.007)
    assert [r["candidates"] for r in result.stats["rounds"]] == [3, 2, 1]
    assert sorted(c.code for _, c, _ in result.pairs) == [code("correct", 1), code("correct", 2), code("correct", 3)]
    assert result.rejections == []  # both problems solved


def test_cli_inductor_without_gpu_is_a_clear_error(tmp_path):
    import torch

    from autotriton.flows.cli import app

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "w.duckdb"), "distill", "--teacher", "inductor"])
    assert result.exit_code == 2
    assert "needs a CUDA GPU" in result.output or "has none" in result.output


def test_cli_distill_writes_candidates_and_verdicts_with_lineage(tmp_path):
    from autotriton.flows.cli import app
    from autotriton.warehouse import Warehouse

    db = tmp_path / "w.duckdb"
    relu = Problem(reference_source=RELU_PROBLEM, name="relu")
    sigmoid = Problem(reference_source=SIGMOID_PROBLEM, name="sigmoid")
    with Warehouse(db) as wh:
        run = wh.start_run("harvest", {})
        wh.put_problems(run, [relu, sigmoid])
        wh.finish_run(run, "succeeded", {})
    replay = tmp_path / "r.jsonl"
    append_record(replay, record_from_candidate(relu, Candidate(problem_key=relu.key, code=RELU_KERNEL, generator="inductor")))
    args = ["--db", str(db), "--set", "validation.device=cpu", "--set", "validation.trials=2", "--set", "validation.workers=1",
            "--set", "distill.replay_shipped=false", "--set", "distill.describe_trace=false", "distill", "--teacher", "replay", "--replay", str(replay), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert {"problems", "candidates", "verdicts", "validated_pairs", "tokens"} <= set(summary)
    assert summary["problems"] == 2 and summary["candidates"] == 1 and summary["verdicts"] == {"correct": 1}
    assert summary["validated_pairs"] == 1 and summary["new_candidates"] == 1
    with Warehouse(db, read_only=True) as wh:
        [(problem, cand, verdict)] = wh.validated_pairs()
        assert problem.key == relu.key and cand.generator == "replay:inductor" and cand.reasoning
        runs = {r["run_id"]: r for r in wh.runs(kind="distill")}
        assert summary["run_id"] in runs and runs[summary["run_id"]]["status"] == "succeeded"
    assert summary["unsolved"] == {"replay_miss": 1}
    with Warehouse(db, read_only=True) as wh:
        [rejection] = wh.rejections(stage="distill")
        assert rejection["subject"] == sigmoid.key and rejection["reason"] == "replay_miss"
    # Both problems were run through this teacher (one solved, one a replay miss): nothing left.
    assert json.loads(CliRunner().invoke(app, args).stdout) == {"problems": 0, "skipped_distilled": 2}
    again = json.loads(CliRunner().invoke(app, [*args, "--redo"]).stdout)
    assert again["new_candidates"] == 0 and again["validated_pairs"] == 1  # re-judged, nothing duplicated


def test_feedback_keeps_the_candidates_frames_and_drops_the_judges_internals():
    from autotriton.distillation.pipeline import clean_traceback

    error = '''Traceback (most recent call last):
  File "/work/main/validation/candidate_runner.py", line 261, in run_job
    out = model(*inputs)
          ^^^^^^^^^^^^^^
  File "/tmp/judge-x/candidate-1/candidate.py", line 24, in forward
    relu_kernel[(triton.cdiv(n, 64),)](x, y, n, BLOCK=64)
  File "/venv/lib/python3.11/site-packages/triton/runtime/interpreter.py", line 1361, in __call__
    raise InterpreterError(repr(e)) from e
triton.runtime.errors.InterpreterError: AttributeError("module 'triton.language' has no attribute 'relu_max'")'''
    cleaned = clean_traceback(error)
    assert cleaned.splitlines() == [
        '  File "candidate.py", line 24, in forward',
        "    relu_kernel[(triton.cdiv(n, 64),)](x, y, n, BLOCK=64)",
        "triton.runtime.errors.InterpreterError: AttributeError(\"module 'triton.language' has no attribute 'relu_max'\")",
    ]
    assert clean_traceback("plain message\nsecond line") == "plain message\nsecond line"


def test_llm_explains_only_validated_compiler_pairs(judge, judge_config, tmp_path):
    relu = Problem(reference_source=RELU_PROBLEM, name="relu")
    sigmoid = Problem(reference_source=SIGMOID_PROBLEM, name="sigmoid")
    path = tmp_path / "inductor.jsonl"
    for problem, code in ((relu, RELU_KERNEL), (sigmoid, RELU_KERNEL_WRONG)):
        append_record(path, record_from_candidate(problem, Candidate(problem_key=problem.key, code=code, generator="inductor")))
    words = Reply(content="<instruction>Implement ReLU with Triton.</instruction><reasoning>One masked pass.</reasoning>")
    with ChatServer([words]) as server:
        config = llm_config(server, tmp_path, teacher="replay", explain_with_llm=True, describe_trace=False)
        from autotriton.distillation import make_explainer, make_teacher

        assert isinstance(make_teacher(config), ReplayTeacher) and not make_teacher(config).describe
        teacher = ReplayTeacher(config, paths=[path], shipped=False, describe=False)
        result = distill([relu, sigmoid], teacher, config, judge_config, judge=judge, explainer=make_explainer(config))
        assert server.count == 1  # one explain request: the validated pair only
        assert "Implement ReLU" not in server.requests[0]["messages"][1]["content"]
    by_problem = {c.problem_key: c for c in result.candidates}
    assert (by_problem[relu.key].instruction, by_problem[relu.key].reasoning) == ("Implement ReLU with Triton.", "One masked pass.")
    assert "sigmoid" in by_problem[sigmoid.key].instruction and "relu_kernel" in by_problem[sigmoid.key].reasoning
    assert result.stats["explain_tokens"] == 150


def test_feedback_names_compile_errors_per_kernel_and_numeric_mismatch():
    from autotriton.distillation import format_feedback

    compile_failed = Verdict(
        candidate_key="c", problem_key="p", status="compile_error",
        error="kernel relu_kernel failed to compile for sm_90",
        compile_report={"target": "cuda:90", "ok": False, "kernels": {
            "relu_kernel": {"ok": False, "error": "at 7:4: out of resource: shared memory, Required: 300000, Hardware limit: 232448"},
            "other_kernel": {"ok": True, "error": None}}},
    )
    text = format_feedback(compile_failed)
    assert "Compile errors (target sm_90):\n- kernel `relu_kernel`: at 7:4: out of resource: shared memory" in text
    assert "other_kernel" not in text
    wrong = Verdict(candidate_key="c", problem_key="p", status="incorrect", max_abs_err=0.5, triton_kernels_launched=["k"],
                    trials=[{"seed": 1, "shapes": [[4, 33]], "ok": False, "max_abs_err": 0.5, "reason": "132 of 132 elements differ"}])
    text = format_feedback(wrong)
    assert "max_abs_err = 0.5" in text and "seed=1, shapes=[[4, 33]], max_abs_err=0.5, reason=132 of 132 elements differ" in text
    assert format_feedback(None, "truncated code block (no closing ```)").startswith("Your answer could not be used: truncated")


def test_cli_openai_teacher_records_malformed_output_and_its_repair(tmp_path):
    from autotriton.flows.cli import app
    from autotriton.warehouse import Warehouse

    db = tmp_path / "w.duckdb"
    relu = Problem(reference_source=RELU_PROBLEM, name="relu")
    sigmoid = Problem(reference_source=SIGMOID_PROBLEM, name="sigmoid")
    with Warehouse(db) as wh:
        run = wh.start_run("harvest", {})
        wh.put_problems(run, [relu, sigmoid])
        wh.finish_run(run, "succeeded", {})
    sigmoid_kernel = RELU_KERNEL.replace("tl.maximum(x, 0.0)", "tl.sigmoid(x)")

    def reply(body):
        conversation = json.dumps(body["messages"])
        if "torch.sigmoid" not in conversation:
            return Reply(content=answer(RELU_KERNEL))
        if len(body["messages"]) == 2:  # first attempt at sigmoid: prose, no code
            return Reply(content="Sigmoid is 1 / (1 + exp(-x)); easy to write in Triton.")
        return Reply(content=answer(sigmoid_kernel))

    with ChatServer(fallback=reply) as server:
        args = ["--db", str(db), "--set", "validation.device=cpu", "--set", "validation.trials=2", "--set", "validation.workers=1",
                "--set", f"distill.base_url={server.base_url}", "--set", "distill.model=test-model",
                "--set", f"distill.cache_dir={tmp_path / 'cache'}", "--set", "distill.price_prompt_per_m=1.0",
                "distill", "--teacher", "openai", "--rounds", "1", "--json"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        # relu, sigmoid, sigmoid's repair: three distinct conversations (a transport-level retry of
        # one, which a loaded machine can cause, repeats the same body)
        assert len({json.dumps(b, sort_keys=True) for b in server.requests}) == 3
    summary = json.loads(result.stdout)
    assert summary["malformed"] == 1 and summary["validated_pairs"] == 2 and summary["candidates"] == 3
    assert summary["tokens"]["prompt"] == 300 and summary["cost_usd"] == pytest.approx(0.0003)
    with Warehouse(db, read_only=True) as wh:
        stored = {c.key: c for c in wh.candidates(problem_keys=[sigmoid.key])}
        [bad] = [c for c in stored.values() if c.parse_error]
        [good] = [c for c in stored.values() if not c.parse_error]
        assert bad.code == "" and "Sigmoid is 1 / (1 + exp(-x))" in bad.raw_output
        assert good.parent_key == bad.key and good.repair_round == 1 and good.generator == "openai:test-model"
        assert {c.key for _, c, _ in wh.validated_pairs()} >= {good.key}


def test_outcomes_give_both_yields_failure_classes_and_speed_of_solved_problems():
    """The distill summary's failure classes (each unsolved problem by its best candidate) and the
    geometric-mean speed of the solved ones against eager and torch.compile (suspect ones left out)."""
    from autotriton.distillation.pipeline import _outcomes
    from autotriton.records import Candidate, Problem, Verdict

    problems = [Problem(reference_source=f"x = {i}\n", name=f"p{i}") for i in range(5)]
    cands = [Candidate(problem_key=p.key, code=f"y = {i}\n") for i, p in enumerate(problems)]
    cands.append(Candidate(problem_key=problems[0].key, code="y = 99\n"))
    cands.append(Candidate(problem_key=problems[4].key, code="", parse_error="extern_kernels"))
    v = [
        Verdict(cands[0].key, problems[0].key, "correct", correct=True, rule_ok=True, correct_own_sizes=True, speedup=0.5,
                speedup_vs_compile=0.25),
        Verdict(cands[1].key, problems[1].key, "correct", correct=True, rule_ok=True, correct_own_sizes=True, speedup=2.0,
                speedup_vs_compile=1.0),
        Verdict(cands[2].key, problems[2].key, "incorrect", rule_ok=True, correct_own_sizes=True, odd_sizes_ok=False),
        Verdict(cands[3].key, problems[3].key, "runtime_error", rule_ok=True, correct_own_sizes=False),
        Verdict(cands[5].key, problems[0].key, "correct", correct=True, rule_ok=True, correct_own_sizes=True, speedup=50.0,
                speedup_vs_compile=40.0, timing={"suspect": True}),
    ]
    out = _outcomes(problems, cands, v, solved={problems[0].key, problems[1].key})
    assert out["yield_own_sizes"] == 3 / 5
    assert out["failure_classes"] == {"odd_sizes_only": 1, "runtime_error": 1, "conversion_failed": 1}
    assert out["speed"]["timed_problems"] == 2 and out["speed"]["geomean_speedup_vs_eager"] == 1.0
    assert out["speed"]["geomean_speedup_vs_compile"] == 0.5


def test_cli_distill_stores_each_batch_so_a_failed_run_keeps_what_it_finished(tmp_path, monkeypatch):
    """`distill.batch_problems`: each batch is stored as it finishes; a teacher failure in a later
    batch fails the run (exit 2, saying what was kept) but loses nothing from the earlier ones."""
    import autotriton.distillation.batches as batches_module
    from autotriton.distillation.openai_teacher import TeacherError
    from autotriton.flows.cli import app
    from autotriton.warehouse import Warehouse

    db = tmp_path / "w.duckdb"
    problems = [Problem(reference_source=RELU_PROBLEM.replace("torch.relu(x)", f"torch.relu(x) * {i + 1}.0" if i else "torch.relu(x)"),
                        name=f"relu{i}") for i in range(3)]
    with Warehouse(db) as wh:
        run = wh.start_run("harvest", {})
        wh.put_problems(run, problems)
        wh.finish_run(run, "succeeded", {})
    replay = tmp_path / "r.jsonl"
    for p in problems:  # the same kernel for each: right for relu0 only
        append_record(replay, record_from_candidate(p, Candidate(problem_key=p.key, code=RELU_KERNEL, generator="inductor")))
    base = ["--db", str(db), "--set", "validation.device=cpu", "--set", "validation.trials=2", "--set", "validation.workers=1",
            "--set", "distill.replay_shipped=false", "--set", "distill.describe_trace=false", "--set", "distill.batch_problems=1",
            "distill", "--teacher", "replay", "--replay", str(replay), "--json"]

    real, calls = batches_module.distill, []

    def failing_second_batch(batch, *args, **kwargs):
        calls.append([p.key for p in batch])
        if len(calls) == 2:
            raise TeacherError("endpoint went away")
        return real(batch, *args, **kwargs)

    monkeypatch.setattr(batches_module, "distill", failing_second_batch)
    failed = CliRunner().invoke(app, base)
    assert failed.exit_code == 2 and "the 1 finished batch(es) were stored" in failed.output, failed.output
    assert [len(keys) for keys in calls] == [1, 1]
    with Warehouse(db, read_only=True) as wh:
        stored = wh.candidates()
        assert [c.problem_key for c in stored] == calls[0]  # the first batch, judged and kept
        assert len(wh.verdicts(candidate_keys=[c.key for c in stored])) == 1
        [distill_run] = wh.runs(kind="distill")
        assert distill_run["status"] == "failed"

    monkeypatch.setattr(batches_module, "distill", real)
    # Run again (a fresh machine with the carried warehouse): the build continues where it
    # stopped, leaving out the problem the teacher already did.
    summary = json.loads(CliRunner().invoke(app, base).stdout)
    assert summary["skipped_distilled"] == 1 and summary["problems"] == 2 and summary["batches"] == 2
    relu0_left = problems[0].key not in calls[0]  # the kernel is right for relu0 alone
    assert summary["new_candidates"] == 2 and summary["verdicts"] == ({"correct": 1, "incorrect": 1} if relu0_left else {"incorrect": 2})
    assert json.loads(CliRunner().invoke(app, base).stdout) == {"problems": 0, "skipped_distilled": 3}  # nothing left
    # --redo distils everything again: nothing new to store, the same verdicts.
    summary = json.loads(CliRunner().invoke(app, [*base, "--redo"]).stdout)
    assert summary["batches"] == 3 and summary["problems"] == 3 and summary["candidates"] == 3
    assert summary["validated_pairs"] == 1 and summary["verdicts"] == {"correct": 1, "incorrect": 2}
    assert summary["new_candidates"] == 0 and summary["skipped_distilled"] == 0
    assert summary["yield"] == round(1 / 3, 4) and summary["failure_classes"] == {"incorrect": 2}


def test_prefetching_teacher_writes_the_next_batch_while_the_caller_judges_this_one():
    """PrefetchingTeacher: the batch after the one handed over is written in the background (so
    capture overlaps judging), one batch at a time, and each batch gets exactly the candidates
    the wrapped teacher writes for it."""
    import threading

    from autotriton.distillation.prefetch import PrefetchingTeacher

    class Recording:
        name, version = "recording", "1"

        def __init__(self):
            self.calls: list[tuple[list[str], str]] = []
            self.started = {i: threading.Event() for i in range(3)}
            self.running = 0
            self.most_at_once = 0
            self.lock = threading.Lock()

        def generate(self, problems, samples=1):
            with self.lock:
                self.running += 1
                self.most_at_once = max(self.most_at_once, self.running)
            index = int(problems[0].name[1:]) // 2
            self.calls.append(([p.key for p in problems], threading.current_thread().name))
            self.started[index].set()
            try:
                return [Candidate(problem_key=p.key, code=f"y = {p.name}\n", generator=self.name) for p in problems for _ in range(samples)]
            finally:
                with self.lock:
                    self.running -= 1

    problems = [Problem(reference_source=f"x = {i}\n", name=f"p{i}") for i in range(6)]
    batches = [problems[0:2], problems[2:4], problems[4:6]]
    inner = Recording()
    with PrefetchingTeacher(inner, batches, samples=2) as writer:
        assert writer.name == "recording"  # the wrapped teacher's own attributes
        first = writer.generate(batches[0], 2)
        assert inner.started[1].wait(10), "the second batch was not started in the background"
        second = writer.generate(batches[1], 2)
        third = writer.generate(batches[2], 2)
    for batch, got in zip(batches, (first, second, third)):
        assert [c.problem_key for c in got] == [p.key for p in batch for _ in range(2)]
    assert [keys for keys, _ in inner.calls] == [[p.key for p in b] for b in batches]  # each batch written once
    assert inner.calls[0][1] == threading.current_thread().name  # the first in the caller's thread
    assert all(thread.startswith("teacher-prefetch") for _, thread in inner.calls[1:])
    assert inner.most_at_once == 1  # never two batches at once (the teacher's own parallelism is per batch)


def test_cli_distill_time_budget_stops_between_batches_and_the_next_run_continues(tmp_path, monkeypatch):
    """`distill --time-budget S`: no batch starts that would end past S seconds (estimated from
    the batches so far); the run ends cleanly with what it finished stored and the number of
    problems left, and the next run distils exactly those."""
    import time as time_module

    import autotriton.distillation.batches as batches_module
    from autotriton.flows.cli import app
    from autotriton.warehouse import Warehouse

    db = tmp_path / "w.duckdb"
    problems = [Problem(reference_source=RELU_PROBLEM.replace("torch.relu(x)", f"torch.relu(x) * {i + 1}.0"), name=f"relu{i}")
                for i in range(3)]
    with Warehouse(db) as wh:
        run = wh.start_run("harvest", {})
        wh.put_problems(run, problems)
        wh.finish_run(run, "succeeded", {})
    replay = tmp_path / "r.jsonl"
    for p in problems:
        append_record(replay, record_from_candidate(p, Candidate(problem_key=p.key, code=RELU_KERNEL, generator="inductor")))
    base = ["--db", str(db), "--set", "validation.device=cpu", "--set", "validation.trials=1", "--set", "validation.workers=1",
            "--set", "distill.replay_shipped=false", "--set", "distill.describe_trace=false", "--set", "distill.batch_problems=1",
            "distill", "--teacher", "replay", "--replay", str(replay), "--json"]
    real = batches_module.distill

    def slow_batch(batch, *args, **kwargs):  # every batch takes at least 1.5 s
        time_module.sleep(1.5)
        return real(batch, *args, **kwargs)

    monkeypatch.setattr(batches_module, "distill", slow_batch)
    result = CliRunner().invoke(app, [*base, "--time-budget", "2"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["problems"] == 1 and summary["problems_left"] == 2 and summary["candidates"] == 1
    with Warehouse(db, read_only=True) as wh:
        assert len(wh.candidates()) == 1
        [distill_run] = wh.runs(kind="distill")
        assert distill_run["status"] == "succeeded"  # a clean stop, not a failure
    monkeypatch.setattr(batches_module, "distill", real)
    rest = json.loads(CliRunner().invoke(app, base).stdout)
    assert rest["skipped_distilled"] == 1 and rest["problems"] == 2 and rest["problems_left"] == 0

"""The JSONL record format, the response cache and the replay teacher (no judge needed)."""

from __future__ import annotations

import json
import multiprocessing
import threading

import pytest

from autotriton.distillation import REPLAY_FIELDS, DistillConfig, ReplayFormatError, ReplayTeacher, ResponseCache, read_records, replay_record
from autotriton.distillation.cache import append_record
from autotriton.distillation.replay import SHIPPED_REPLAY_DIR
from autotriton.records import Problem

from distillation_helpers import RELU_KERNEL, RELU_KERNEL_WRONG, RELU_PROBLEM


def relu_problem() -> Problem:
    return Problem(reference_source=RELU_PROBLEM, name="relu")


def record_for(problem: Problem, code: str, **kw) -> dict:
    return replay_record(problem_key=problem.key, problem_name=problem.name, teacher=kw.pop("teacher", "inductor"),
                         teacher_version=kw.pop("teacher_version", "torch 2.11 / triton 3.6 / H200"), prompt_version="",
                         code=code, **kw)


def test_replay_record_has_exactly_the_documented_fields_in_order():
    rec = replay_record(problem_key="k", problem_name="n", teacher="inductor", teacher_version="v", prompt_version="",
                        code="c", created="2026-11-30T00:00:00+00:00")
    assert tuple(rec) == REPLAY_FIELDS == ("problem_key", "problem_name", "teacher", "teacher_version", "prompt_version",
                                           "code", "reasoning", "instruction", "usage", "created")


def test_replay_serves_recorded_code_fills_descriptions_and_counts_misses(tmp_path):
    problem = relu_problem()
    other = Problem(reference_source=RELU_PROBLEM.replace("torch.relu", "torch.sigmoid"), name="sigmoid")
    path = tmp_path / "inductor.jsonl"
    append_record(path, record_for(problem, RELU_KERNEL, usage={}))
    append_record(path, record_for(problem, RELU_KERNEL_WRONG, reasoning="my own reasoning", instruction="my own instruction"))
    append_record(path, record_for(problem, RELU_KERNEL + "\n# same code, other comment\n"))  # a duplicate after normalisation
    teacher = ReplayTeacher(DistillConfig(), paths=[path], shipped=False)
    assert len(teacher) == 2
    cands = teacher.generate([problem, other], samples=5)
    assert [c.code for c in cands] == [RELU_KERNEL, RELU_KERNEL_WRONG]
    first, second = cands
    assert first.generator == "replay:inductor" and first.generator_version == "torch 2.11 / triton 3.6 / H200"
    assert first.sampling["replay_file"] == "inductor.jsonl" and first.problem_key == problem.key
    # No words recorded: describe_problem writes them, naming the kernel and the op.
    assert "relu" in first.instruction and "relu_kernel" in first.reasoning
    assert "returns [4, 37] float32" in first.instruction and "aten.relu" in first.reasoning  # traced on the meta device
    assert (second.instruction, second.reasoning) == ("my own instruction", "my own reasoning")
    assert teacher.counters["replay_miss"] == 1 and teacher.counters["replay_hit"] == 1
    assert [c.code for c in teacher.generate([problem], samples=1)] == [RELU_KERNEL]
    assert teacher.counters["traced"] == 1  # traced once, remembered for the second call


def test_replay_reads_an_llm_cache_dir_and_skips_unparsed_outputs(tmp_path):
    problem = relu_problem()
    cache = ResponseCache(tmp_path / "cache", "openai", "m")
    cache.put(record_for(problem, RELU_KERNEL, teacher="openai:m", request_key="a", raw_output="...", parse_error=None))
    cache.put(record_for(problem, "", teacher="openai:m", request_key="b", raw_output="no code", parse_error="no ```python code block"))
    teacher = ReplayTeacher(DistillConfig(replay_paths=[str(tmp_path / "cache")], replay_shipped=False, describe_trace=False))
    [cand] = teacher.generate([problem], samples=3)
    assert cand.generator == "replay:openai:m" and cand.raw_output == "..."
    assert teacher.counters["replay_unusable"] == 1


def test_replay_version_changes_with_the_data(tmp_path):
    problem = relu_problem()
    path = tmp_path / "r.jsonl"
    append_record(path, record_for(problem, RELU_KERNEL))
    v1 = ReplayTeacher(paths=[path], shipped=False).version
    assert ReplayTeacher(paths=[path], shipped=False).version == v1
    append_record(path, record_for(problem, RELU_KERNEL_WRONG))
    assert ReplayTeacher(paths=[path], shipped=False).version != v1


def test_bad_replay_files_name_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(record_for(relu_problem(), RELU_KERNEL))
    path.write_text(good + "\n" + json.dumps({"problem_key": "x", "code": "y"}) + "\n")
    with pytest.raises(ReplayFormatError, match=r"bad.jsonl:2: missing field\(s\) problem_name"):
        ReplayTeacher(paths=[path], shipped=False)
    path.write_text(good + "\n{not json\n" + good + "\n")
    with pytest.raises(ReplayFormatError, match=r"bad.jsonl:2: not valid JSON"):
        list(read_records(path))
    with pytest.raises(FileNotFoundError, match="nowhere.jsonl"):
        ReplayTeacher(paths=[tmp_path / "nowhere.jsonl"], shipped=False)


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "c.jsonl"
    good = json.dumps(record_for(relu_problem(), RELU_KERNEL))
    path.write_text(good + "\n" + good[: len(good) // 2])  # a writer died mid-line
    assert len(list(read_records(path))) == 1


def _append_many(path: str, tag: int) -> None:
    for i in range(200):
        append_record(path, {"request_key": f"{tag}-{i}", "payload": "x" * 5000 + str(i)})


def test_concurrent_appends_never_interleave(tmp_path):
    path = str(tmp_path / "shared.jsonl")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(path, tag)) for tag in range(3)]
    threads = [threading.Thread(target=_append_many, args=(path, 10 + t)) for t in range(2)]
    for worker in (*procs, *threads):
        worker.start()
    for worker in (*procs, *threads):
        worker.join()
    records = list(read_records(path, required=("request_key",)))
    assert len(records) == 1000 and len({r["request_key"] for r in records}) == 1000


def test_response_cache_persists_across_instances(tmp_path):
    cache = ResponseCache(tmp_path, "openai", "deepseek/r1:70b")
    assert cache.get("k") is None
    cache.put({"request_key": "k", "raw_output": "hello"})
    cache.put({"request_key": "k", "raw_output": "ignored: first answer wins"})
    again = ResponseCache(tmp_path, "openai", "deepseek/r1:70b")
    assert again.get("k")["raw_output"] == "hello" and len(again) == 1
    assert again.path.name == "openai__deepseek_r1_70b.jsonl"


def test_shipped_replay_data_is_well_formed():
    # The demo's teacher is this data: its absence is a broken package, not a reason to skip.
    files = sorted(SHIPPED_REPLAY_DIR.glob("*.jsonl"))
    assert files, f"no shipped replay data in {SHIPPED_REPLAY_DIR} (*.jsonl): the demo's replay teacher has nothing to replay"
    teacher = ReplayTeacher(DistillConfig())
    assert len(teacher) > 0
    for path in files:
        for record in read_records(path):
            assert record["code"] and "class ModelNew" in record["code"], f"{path}: {record['problem_name']}"
            assert "extern_kernels" not in record["code"] and "torch._inductor" not in record["code"]


def test_write_replay_round_trips_through_the_replay_teacher(tmp_path):
    from autotriton.distillation.replay import write_replay
    from autotriton.records import Candidate

    problem = relu_problem()
    cand = Candidate(problem_key=problem.key, code=RELU_KERNEL, generator="inductor", generator_version="torch 2.11+cu128 H200")
    malformed = Candidate(problem_key=problem.key, code="", parse_error="no code", generator="inductor")
    assert write_replay(tmp_path / "out.jsonl", [(problem, cand), (problem, malformed)]) == 1
    [line] = list(read_records(tmp_path / "out.jsonl"))
    assert tuple(line) == REPLAY_FIELDS and line["problem_name"] == "relu"
    [replayed] = ReplayTeacher(DistillConfig(describe_trace=False), paths=[tmp_path / "out.jsonl"], shipped=False).generate([problem], 1)
    assert replayed.key == cand.key and replayed.generator == "replay:inductor"

"""The LLM teacher through the real `openai` client against a local OpenAI-compatible server."""

from __future__ import annotations

import json
import time

import pytest

from autotriton.distillation import DistillConfig, RepairRequest, Turn, format_feedback
from autotriton.distillation.openai_teacher import OpenAITeacher, TeacherError, repair_messages
from autotriton.prompting import PROMPT_VERSION
from autotriton.records import Problem

from distillation_helpers import RELU_KERNEL, RELU_KERNEL_BROKEN, RELU_PROBLEM, ChatServer, Reply, answer


@pytest.fixture
def problem() -> Problem:
    return Problem(reference_source=RELU_PROBLEM, name="relu")


def make_config(server: ChatServer, tmp_path, **overrides) -> DistillConfig:
    values = dict(teacher="openai", base_url=server.base_url, model="test-model", api_key_env="AUTOTRITON_TEST_KEY",
                  cache_dir=str(tmp_path / "cache"), backoff_base_s=0.01, backoff_max_s=5.0, request_timeout_s=10.0,
                  max_retries=3, temperature=0.7, top_p=0.9, max_tokens=512, concurrency=2)
    values.update(overrides)
    return DistillConfig(**values)


def test_completion_becomes_candidate_with_think_reasoning_usage_and_cost(problem, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTRITON_TEST_KEY", "sk-test-secret-123")
    with ChatServer([Reply(content=answer(RELU_KERNEL, "Flat elementwise kernel."), prompt_tokens=1000, completion_tokens=500)]) as server:
        teacher = OpenAITeacher(make_config(server, tmp_path, price_prompt_per_m=2.0, price_completion_per_m=8.0))
        [cand] = teacher.generate([problem], samples=1)
        request = server.requests[0]
    assert cand.parse_error is None
    assert "class ModelNew" in cand.code and "relu_kernel[" in cand.code
    assert cand.reasoning == "Flat elementwise kernel."
    assert cand.generator == "openai:test-model" and cand.prompt_version == PROMPT_VERSION
    assert cand.usage == {"prompt_tokens": 1000, "completion_tokens": 500, "cost_usd": pytest.approx(0.006)}
    assert cand.sampling["temperature"] == 0.7 and cand.sampling["seed"] == 0
    assert cand.problem_key == problem.key and cand.repair_round == 0 and cand.parent_key is None
    # The request is the shared prompt: system + user turn holding the reference and the instruction.
    assert request["model"] == "test-model" and request["max_tokens"] == 512 and request["top_p"] == 0.9
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert "torch.relu(x)" in request["messages"][1]["content"]
    assert cand.instruction and cand.instruction in request["messages"][1]["content"]
    # The key is read from the environment at call time and never written anywhere.
    cache_text = (tmp_path / "cache").joinpath("openai__test-model.jsonl").read_text()
    assert "sk-test-secret-123" not in cache_text and "sk-test-secret-123" not in json.dumps(cand.to_dict())


def test_streaming_with_reasoning_content(problem, tmp_path):
    reply = Reply(content="Here it is.\n\n```python\n" + RELU_KERNEL + "```\n", reasoning_content="I will fuse nothing; relu is one op.",
                  prompt_tokens=321, completion_tokens=123)
    with ChatServer([reply]) as server:
        [cand] = OpenAITeacher(make_config(server, tmp_path, stream=True)).generate([problem], samples=1)
        request = server.requests[0]
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert cand.parse_error is None and cand.code.strip() == RELU_KERNEL.strip()
    assert cand.reasoning == "I will fuse nothing; relu is one op."  # reasoning_content wins over the text
    assert cand.usage == {"prompt_tokens": 321, "completion_tokens": 123}  # no prices configured: cost unknown


def test_reasoning_content_non_streaming_and_think_when_streaming(problem, tmp_path):
    with ChatServer([Reply(content=answer(RELU_KERNEL, think=False), reasoning_content="from the field")]) as server:
        [a] = OpenAITeacher(make_config(server, tmp_path)).generate([problem], 1)
    with ChatServer([Reply(content=answer(RELU_KERNEL, "thought in tags"))]) as server:
        [b] = OpenAITeacher(make_config(server, tmp_path / "b", stream=True)).generate([problem], 1)
    assert a.reasoning == "from the field" and b.reasoning == "thought in tags"
    assert a.code == b.code


def test_429_then_success_respects_retry_after(problem, tmp_path):
    script = [Reply(status=429, content="slow down", headers={"Retry-After": "1"}), Reply(content=answer(RELU_KERNEL))]
    with ChatServer(script) as server:
        teacher = OpenAITeacher(make_config(server, tmp_path, backoff_base_s=0.0))
        [cand] = teacher.generate([problem], 1)
        gap = server.times[1] - server.times[0]
    assert server.count == 2 and cand.parse_error is None
    assert gap >= 0.9, f"retried after {gap:.2f}s although the server said Retry-After: 1"
    assert teacher.counters["retries"] == 1 and teacher.counters["requests"] == 2


def test_5xx_retried_with_backoff_and_permanent_failure_is_counted_not_raised(problem, tmp_path):
    with ChatServer([Reply(status=503), Reply(status=500), Reply(content=answer(RELU_KERNEL))]) as server:
        teacher = OpenAITeacher(make_config(server, tmp_path))
        assert len(teacher.generate([problem], 1)) == 1
    assert teacher.counters["retries"] == 2
    with ChatServer(fallback=lambda body: Reply(status=502)) as server:
        teacher = OpenAITeacher(make_config(server, tmp_path / "x", max_retries=2))
        assert teacher.generate([problem], 1) == []
        assert server.count == 3  # the first try and two retries
    assert teacher.counters["request_failures"] == 1
    assert teacher.failures[problem.key].startswith("request_failed: InternalServerError after 3 attempt(s)")


def test_timeout_then_retry_succeeds(problem, tmp_path):
    script = [Reply(content=answer(RELU_KERNEL_BROKEN), delay_s=2.0), Reply(content=answer(RELU_KERNEL))]
    with ChatServer(script) as server:
        teacher = OpenAITeacher(make_config(server, tmp_path, request_timeout_s=0.5))
        start = time.monotonic()
        [cand] = teacher.generate([problem], 1)
        elapsed = time.monotonic() - start
    assert cand.code.strip() == RELU_KERNEL.strip()  # the slow (timed-out) answer was not used
    assert teacher.counters["retries"] == 1 and server.count == 2
    assert elapsed < 2.0


def test_malformed_outputs_are_recorded_not_raised(problem, tmp_path):
    wrong_class = answer(RELU_KERNEL.replace("class ModelNew", "class MyModel"))
    truncated = "<think>relu</think>\n```python\n" + RELU_KERNEL[: len(RELU_KERNEL) // 2]
    script = [Reply(content="I think you should use Triton. Good luck!"), Reply(content=wrong_class),
              Reply(content=truncated, finish_reason="length")]
    with ChatServer(script) as server:
        teacher = OpenAITeacher(make_config(server, tmp_path, concurrency=1))
        cands = teacher.generate([problem], samples=3)
    assert len(cands) == 3
    by_error = {c.sampling["sample"]: c.parse_error for c in cands}
    assert "no ```python code block" in by_error[0]
    assert "ModelNew" in by_error[1]
    assert "truncated" in by_error[2]
    for cand in cands:
        assert cand.code == "" and cand.raw_output  # nothing usable, but the text is kept
    assert sorted(c.sampling["seed"] for c in cands) == [0, 1, 2]  # distinct samples


def test_cache_makes_a_rerun_send_no_requests(problem, tmp_path):
    other = Problem(reference_source=RELU_PROBLEM.replace("torch.randn(4, 37)", "torch.randn(8, 5)"), name="relu8")
    with ChatServer(fallback=lambda body: Reply(content=answer(RELU_KERNEL))) as server:
        first = OpenAITeacher(make_config(server, tmp_path)).generate([problem, other], samples=2)
        assert server.count == 4
        again = OpenAITeacher(make_config(server, tmp_path))
        second = again.generate([problem, other], samples=2)
        assert server.count == 4, "the rerun sent requests although every answer was cached"
        assert again.counters["cache_hits"] == 4 and again.usage_totals["prompt_tokens"] == 0
        # Different sampling parameters are a different request.
        OpenAITeacher(make_config(server, tmp_path, temperature=0.1)).generate([problem], samples=1)
        assert server.count == 5
    assert [c.to_dict() for c in first] == [c.to_dict() for c in second]


def test_bad_key_or_model_stops_with_a_clear_error(problem, tmp_path):
    with ChatServer(fallback=lambda body: Reply(status=401, content="invalid api key")) as server:
        with pytest.raises(TeacherError, match="AUTOTRITON_TEST_KEY"):
            OpenAITeacher(make_config(server, tmp_path)).generate([problem], 1)


def test_repair_conversation_holds_every_attempt_and_its_feedback(problem):
    from autotriton.records import Candidate, Verdict, Violation

    first = Candidate(problem_key=problem.key, code=RELU_KERNEL_BROKEN, instruction="Write relu.", sampling={"sample": 0})
    verdict = Verdict(candidate_key=first.key, problem_key=problem.key, status="runtime_error",
                      error="Traceback ...\nAttributeError: module 'triton.language' has no attribute 'relu_max'",
                      violations=[Violation("TRITON-NO-LAUNCH", "no kernel launched", 12)])
    feedback = format_feedback(verdict)
    assert "relu_max" in feedback and "[TRITON-NO-LAUNCH] no kernel launched (line 12)" in feedback
    request = RepairRequest(problem=problem, history=[Turn(first, feedback)], verdict=verdict)
    messages = repair_messages(request)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "tl.relu_max" in messages[2]["content"] and messages[3]["content"] == feedback
    assert request.repair_round == 1 and request.parent is first


def test_explain_writes_instruction_and_reasoning_or_falls_back(problem, tmp_path):
    good = Reply(content="<instruction>Implement ReLU in Triton.</instruction>\n<reasoning>One flat masked kernel.</reasoning>")
    with ChatServer([good, Reply(content="I cannot help with that.")]) as server:
        teacher = OpenAITeacher(make_config(server, tmp_path, concurrency=1))
        assert teacher.explain(problem, RELU_KERNEL) == ("Implement ReLU in Triton.", "One flat masked kernel.")
        other = Problem(reference_source=RELU_PROBLEM.replace("37", "38"), name="relu38")
        instruction, reasoning = teacher.explain(other, RELU_KERNEL)
    assert "relu_kernel" in reasoning and "relu" in instruction  # the deterministic description
    assert teacher.counters["explain_unparsed"] == 1


def test_concurrency_is_bounded(tmp_path):
    problems = [Problem(reference_source=RELU_PROBLEM.replace("37", str(n)), name=f"relu{n}") for n in range(30, 36)]
    with ChatServer(fallback=lambda body: Reply(content=answer(RELU_KERNEL), delay_s=0.3)) as server:
        cands = OpenAITeacher(make_config(server, tmp_path, concurrency=2)).generate(problems, samples=1)
        assert server.count == 6 and len(cands) == 6
        assert server.max_in_flight == 2
    assert [c.problem_key for c in cands] == [p.key for p in problems]  # candidates come back in problem order


def test_connection_errors_are_retried_then_counted(problem, tmp_path):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = DistillConfig(teacher="openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", cache_dir=str(tmp_path),
                           max_retries=2, backoff_base_s=0.01, request_timeout_s=5)
    teacher = OpenAITeacher(config)
    assert teacher.generate([problem], 1) == []
    assert teacher.counters["retries"] == 2 and teacher.counters["request_failure:APIConnectionError"] == 1
    assert "APIConnectionError after 3 attempt(s)" in teacher.failures[problem.key]

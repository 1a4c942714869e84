"""The Inductor teacher repairs a candidate that TF32 products made wrong: captured again in fp32.

What a user relies on: a deep chain of GEMMs whose TF32 error passes the judge's tolerance is not
lost to the dataset; the pipeline's repair round asks the Inductor teacher again and gets the same
problem compiled with TF32 off, recorded as a repair of the failed candidate. Candidates that failed
for any other reason get no repair (the compiler would write the same code again).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotriton.distillation.inductor import InductorTeacher, capture_in_subprocess
from autotriton.distillation.teacher import RepairingTeacher, RepairRequest, Turn
from autotriton.records import Problem, Verdict

FIXTURES = Path(__file__).parent / "data" / "inductor"
VALUE_ERROR = "main trial (seed 1): output: 73 of 16384 element(s) outside atol=rtol=0.01 (max abs error 0.0701)"


def _capture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.fixture()
def teacher_and_calls():
    """A teacher whose captures come from the recorded H200 captures, with each request noted."""
    teacher = InductorTeacher(jobs=2)
    calls: list[tuple[str, bool, bool]] = []

    def recorded(problem: Problem, dynamic_parameters: bool, tf32: bool = True) -> dict:
        calls.append((problem.name, dynamic_parameters, tf32))
        return _capture(problem.name)

    teacher._capture = recorded  # the subprocess capture needs a GPU; its request is tested below
    return teacher, calls


def _request(teacher: InductorTeacher, fixture: str, status: str, error: str, **sampling) -> RepairRequest:
    capture = _capture(fixture)
    problem = Problem(reference_source=capture["source"], name=fixture)
    parent = teacher._candidate(problem, capture)
    parent.sampling.update(sampling)
    verdict = Verdict(candidate_key=parent.key, problem_key=problem.key, status=status, error=error)
    return RepairRequest(problem=problem, history=[Turn(parent, error)], verdict=verdict)


def test_a_gemm_wrong_by_values_is_captured_again_without_tf32(teacher_and_calls):
    teacher, calls = teacher_and_calls
    assert isinstance(teacher, RepairingTeacher)  # so the pipeline's repair rounds include it
    request = _request(teacher, "template_addmm_relu", "incorrect", VALUE_ERROR, dynamic_parameters=True)
    assert "tl.dot(" in request.parent.code
    (repaired,) = teacher.repair([request])
    assert calls == [("template_addmm_relu", True, False)]  # the parent's variant, TF32 off
    assert repaired.repair_round == 1 and repaired.parent_key == request.parent.key
    assert repaired.sampling["tf32"] is False and repaired.sampling["dynamic_parameters"] is True
    assert repaired.code and repaired.generator == "inductor"
    assert teacher.counters["tf32_repairs_converted"] == 1


@pytest.mark.parametrize("fixture,status,error,sampling", [
    # wrong shape: precision cannot be the cause
    ("template_addmm_relu", "incorrect", "odd_sizes trial (seed 2): output has shape (2, 32), expected (2, 33)", {}),
    # not a value mismatch at all
    ("template_addmm_relu", "rule_violation", VALUE_ERROR, {}),
    # already fp32 products
    ("template_addmm_relu", "incorrect", VALUE_ERROR, {"tf32": False}),
    # no tensor-core products in the kernels
    ("pointwise_relu", "incorrect", VALUE_ERROR, {}),
    # NaN where the reference has none: an unwritten or broken output, not rounding
    ("template_addmm_relu", "incorrect", "main trial (seed 3): output: NaN where the reference has none (4 element(s))", {}),
])
def test_other_failures_get_no_repair(teacher_and_calls, fixture, status, error, sampling):
    teacher, calls = teacher_and_calls
    assert teacher.repair([_request(teacher, fixture, status, error, **sampling)]) == []
    assert calls == []


def test_the_capture_request_carries_tf32_to_the_capture_process():
    """The subprocess side records what it was asked (a CPU capture: no templates, only the flag)."""
    source = json.loads((Path(__file__).parent.parent / "examples" / "demo" / "problems.jsonl")
                        .read_text().splitlines()[0])["source"]
    got = [capture_in_subprocess(source, name="p", timeout_s=300, device="cpu", max_autotune=False, tf32=flag)
           for flag in (True, False)]
    assert [c.get("ok") for c in got] == [True, True], [c.get("error") for c in got]
    assert [c["tf32"] for c in got] == [True, False]

"""Distillation: teachers that turn problems into verified Triton candidates with reasoning.

Public API:
    Teacher, RepairingTeacher, RepairRequest, Turn      the teacher interface (teacher.py)
    ReplayTeacher                                        recorded outputs, offline default (replay.py)
    OpenAITeacher                                        any OpenAI-compatible endpoint (openai_teacher.py)
    InductorTeacher                                      torch.compile on a GPU (inductor.py)
    distill(problems, teacher, config, validation_config, judge=None) -> DistillResult
    PrefetchingTeacher(teacher, batches, samples)       the next batch written while this one is judged (prefetch.py)
    describe_problem(problem_source, candidate_code=None) -> (instruction, reasoning)
    ResponseCache, read_records, REPLAY_FIELDS          the JSONL record format (cache.py, REPLAY.md)
    make_teacher(config), make_explainer(config)        the teacher a DistillConfig names, its LLM explainer
    TEACHERS, TeacherSpec, register_teacher, teacher_spec  the teacher registry (teachers.py: how to add one)
"""

from __future__ import annotations

from typing import Any

from autotriton.distillation.cache import REPLAY_FIELDS, ReplayFormatError, ResponseCache, read_records, replay_record
from autotriton.distillation.config import DistillConfig
from autotriton.distillation.describe import describe_problem
from autotriton.distillation.pipeline import DistillResult, combine_results, distill, format_feedback, interleave_by_origin
from autotriton.distillation.prefetch import PrefetchingTeacher
from autotriton.distillation.replay import ReplayTeacher
from autotriton.distillation.teacher import RepairingTeacher, RepairRequest, Teacher, Turn, candidate_from_completion
from autotriton.distillation.teachers import (TEACHERS, GPUUnavailableError, TeacherSpec, make_explainer, make_teacher,
                                              register_teacher, teacher_spec)

__all__ = [
    "combine_results",
    "Teacher", "RepairingTeacher", "RepairRequest", "Turn", "candidate_from_completion",
    "ReplayTeacher", "OpenAITeacher", "InductorTeacher", "TeacherError", "make_teacher",
    "distill", "DistillResult", "format_feedback", "describe_problem", "PrefetchingTeacher", "interleave_by_origin",
    "ResponseCache", "ReplayFormatError", "read_records", "replay_record", "REPLAY_FIELDS", "DistillConfig",
    "GPUUnavailableError", "make_explainer",
    "TEACHERS", "TeacherSpec", "register_teacher", "teacher_spec",
]


def __getattr__(name: str) -> Any:
    # The teachers' classes resolve on first use (their modules defer the openai client and torch).
    if name in ("OpenAITeacher", "TeacherError"):
        from autotriton.distillation import openai_teacher

        return getattr(openai_teacher, name)
    if name == "InductorTeacher":
        from autotriton.distillation.inductor import InductorTeacher

        return InductorTeacher
    raise AttributeError(f"module 'autotriton.distillation' has no attribute {name!r}")

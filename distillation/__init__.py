"""Distillation: teachers that turn problems into verified Triton candidates with reasoning.

Public API:
    Teacher, RepairingTeacher, RepairRequest, Turn      the teacher interface (teacher.py)
    ReplayTeacher                                        recorded outputs, offline default (replay.py)
    OpenAITeacher                                        any OpenAI-compatible endpoint (openai_teacher.py)
    InductorTeacher                                      torch.compile on a GPU (inductor.py)
    distill(problems, teacher, config, validation_config, judge=None) -> DistillResult
    describe_problem(problem_source, candidate_code=None) -> (instruction, reasoning)
    ResponseCache, read_records, REPLAY_FIELDS          the JSONL record format (cache.py, REPLAY.md)
    make_teacher(config), make_explainer(config)        the teacher a DistillConfig names, its LLM explainer
"""

from __future__ import annotations

from typing import Any

from autotriton.distillation.cache import REPLAY_FIELDS, ReplayFormatError, ResponseCache, read_records, replay_record
from autotriton.distillation.config import DistillConfig
from autotriton.distillation.describe import describe_problem
from autotriton.distillation.pipeline import DistillResult, combine_results, distill, format_feedback
from autotriton.distillation.replay import ReplayTeacher
from autotriton.distillation.teacher import RepairingTeacher, RepairRequest, Teacher, Turn, candidate_from_completion

__all__ = [
    "combine_results",
    "Teacher", "RepairingTeacher", "RepairRequest", "Turn", "candidate_from_completion",
    "ReplayTeacher", "OpenAITeacher", "InductorTeacher", "TeacherError", "make_teacher",
    "distill", "DistillResult", "format_feedback", "describe_problem",
    "ResponseCache", "ReplayFormatError", "read_records", "replay_record", "REPLAY_FIELDS", "DistillConfig",
    "GPUUnavailableError", "make_explainer",
]


def __getattr__(name: str) -> Any:
    # The openai client and the Inductor teacher (torch._inductor) are imported on first use.
    if name in ("OpenAITeacher", "TeacherError"):
        from autotriton.distillation import openai_teacher

        return getattr(openai_teacher, name)
    if name == "InductorTeacher":
        from autotriton.distillation.inductor import InductorTeacher

        return InductorTeacher
    raise AttributeError(f"module 'autotriton.distillation' has no attribute {name!r}")


class GPUUnavailableError(RuntimeError):
    """The chosen teacher needs a CUDA GPU and this machine has none."""


def make_teacher(config: DistillConfig) -> Teacher:
    """The teacher `config.teacher` names, built from the config.

    Raises GPUUnavailableError for `inductor` without a CUDA GPU. With `explain_with_llm`, the
    replay teacher asks the configured endpoint to explain pairs that have no words.
    """
    if config.teacher == "openai":
        from autotriton.distillation.openai_teacher import OpenAITeacher

        return OpenAITeacher(config)
    if config.teacher == "inductor":
        import torch

        if not torch.cuda.is_available():
            raise GPUUnavailableError(
                "the inductor teacher runs torch.compile on a CUDA GPU and this machine has none. "
                "Use --teacher replay (its recorded outputs, re-validated here) or --teacher openai, or run on a GPU machine."
            )
        from autotriton.distillation.inductor import InductorTeacher

        return InductorTeacher(config)  # type: ignore[call-arg]
    # With an LLM explainer configured, distill() has it write the words of validated pairs;
    # the replay teacher then leaves them empty instead of describing them itself.
    return ReplayTeacher(config, describe=not config.explain_with_llm)


def make_explainer(config: DistillConfig):
    """The LLM that writes instruction/reasoning for compiler pairs (`distill.explain_with_llm`),
    or None. The openai teacher writes its own words, so it needs none."""
    if not config.explain_with_llm or config.teacher == "openai":
        return None
    from autotriton.distillation.openai_teacher import OpenAITeacher

    return OpenAITeacher(config)

"""The teacher interface: problems in, candidates out.

A teacher turns each `Problem` into one or more `Candidate`s: a `ModelNew` written with Triton,
the reasoning behind it, the instruction it answers, and where it came from (teacher name and
version, prompt version, sampling parameters, token usage and cost). Teachers never judge their
own output; `distillation.pipeline.distill` sends every candidate to the validator.

Four teachers implement the protocol: `ReplayTeacher` (recorded outputs, offline default),
`InductorTeacher` (torch.compile on a GPU), `OpenAITeacher` (any OpenAI-compatible endpoint) and
`ElementwiseTeacher` (a readable kernel for elementwise forwards, statement by statement).
A teacher that can also fix its mistakes implements `RepairingTeacher.repair`: the pipeline then
sends it the validator's errors for up to `rounds` rounds, as a multi-turn conversation (the
Inductor teacher answers only candidates that TF32 products made wrong: recaptured in fp32).
Each teacher describes itself to the registry (teachers.py) with a `TeacherSpec`, defined here so a
teacher's file can declare its spec without importing the registry.

Malformed output (no code block, no `class ModelNew`, a cut-off block) is never an exception:
it becomes a Candidate with `code == ""`, `parse_error` saying what was wrong and the full text
in `raw_output`, so it is recorded and counted like any other outcome.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, runtime_checkable

from pydantic import BaseModel

from autotriton.prompting import PROMPT_VERSION, parse_completion
from autotriton.records import Candidate, Problem, Verdict

__all__ = [
    "Teacher", "RepairingTeacher", "RepairRequest", "Turn", "candidate_from_completion", "PROMPT_VERSION",
    "TeacherSpec", "GPUUnavailableError",
]


@runtime_checkable
class Teacher(Protocol):
    """Problems in, candidates out. `name`/`version` end up in every candidate's lineage."""

    name: str
    version: str
    # Teacher-side counters (requests, retries, cache hits, replay misses, ...), merged into the
    # distillation stats by the pipeline.
    counters: Counter
    # Optional: `failures`, a dict problem key -> "reason: detail" for problems the teacher could
    # not answer (replay_miss, request_failed, a conversion failure); distill() records them.

    def generate(self, problems: list[Problem], samples: int) -> list[Candidate]:
        """Up to `samples` candidates per problem (fewer when the teacher has nothing to offer)."""
        ...


@dataclass
class Turn:
    """One earlier attempt in a repair conversation: what the teacher answered and what the judge said."""

    candidate: Candidate
    feedback: str  # the validator's errors, rendered for the teacher (pipeline.format_feedback)


@dataclass
class RepairRequest:
    """Ask a teacher to fix a failed candidate. `history` holds every attempt so far, oldest first;
    the last one is the candidate being repaired (its key becomes the new candidate's parent_key)."""

    problem: Problem
    history: list[Turn]
    verdict: Verdict | None = None  # the last attempt's verdict (None when its output did not parse)

    @property
    def parent(self) -> Candidate:
        return self.history[-1].candidate

    @property
    def repair_round(self) -> int:
        return self.parent.repair_round + 1


@runtime_checkable
class RepairingTeacher(Teacher, Protocol):
    def repair(self, requests: list[RepairRequest]) -> list[Candidate]:
        """At most one new candidate per request (same order), with repair_round and parent_key set;
        none where the teacher has nothing new to offer (the Inductor teacher repairs only TF32 errors)."""
        ...


class GPUUnavailableError(RuntimeError):
    """The chosen teacher needs a CUDA GPU and this machine has none."""


@dataclass(frozen=True)
class TeacherSpec:
    """One teacher as the registry (teachers.py) knows it: what `distill.teacher = name` builds.

    The teacher's version is not part of the spec: it depends on what the built teacher serves
    (the replayed records, the torch/triton/capture versions, the model), so it is the built
    teacher's `version`, which every candidate's lineage and the flow's task cache carry.
    """

    name: str  # the `distill.teacher` / `--teacher` value
    description: str  # one line, shown by `--teacher` help and `config show`
    build: Callable[[Any], Teacher]  # DistillConfig -> the teacher (may raise GPUUnavailableError)
    # The teacher's own `distill.*` fields (flat keys, e.g. distill.inductor_jobs), composed into
    # DistillConfig (distillation/config.py); None when it only reads the shared fields.
    settings: Optional[type[BaseModel]] = None
    network: bool = False  # calls an endpoint: the flows retry its tasks (orchestration.network_retries)
    writes_words: bool = False  # writes its own instruction/reasoning, so `explain_with_llm` adds no explainer


def candidate_from_completion(
    problem: Problem,
    text: str,
    *,
    reasoning_content: str | None = None,
    generator: str,
    generator_version: str,
    instruction: str,
    sampling: dict[str, Any] | None = None,
    usage: dict[str, Any] | None = None,
    repair_round: int = 0,
    parent_key: str | None = None,
    finish_reason: str | None = None,
    prompt_version: str = PROMPT_VERSION,
) -> Candidate:
    """Parse a teacher's completion strictly into a Candidate; malformed output gives `parse_error`.

    A completion cut off by the token limit (finish_reason "length") whose code block never
    closed is reported as truncated, whatever the parser saw first.
    """
    parsed = parse_completion(text, reasoning_content)
    error = parsed.error
    if error is not None and finish_reason == "length":
        error = f"truncated output (hit max_tokens): {error}"
    return Candidate(
        problem_key=problem.key,
        code=parsed.code or "",
        reasoning=parsed.reasoning,
        instruction=instruction,
        generator=generator,
        generator_version=generator_version,
        prompt_version=prompt_version,
        sampling=dict(sampling or {}),
        repair_round=repair_round,
        parent_key=parent_key,
        usage=dict(usage or {}),
        raw_output=text or "",
        parse_error=error,
    )


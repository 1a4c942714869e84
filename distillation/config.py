"""Configuration of distillation (teachers): the shared `distill.*` fields, composed with each
registered teacher's own fields (declared beside the teacher, e.g. inductor.InductorSettings).

The keys stay flat (`distill.base_url`, `distill.inductor_jobs`, ...): one DistillConfig holds
the shared fields and every teacher's, so a config file can name any of them whatever teacher it
picks. `distill.teacher` accepts the names in the teacher registry (teachers.py).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from autotriton.distillation.teachers import TEACHERS, teacher_settings, teacher_spec

__all__ = ["DistillConfig", "SharedDistillSettings"]


class SharedDistillSettings(BaseModel):
    """The fields every teacher reads (the pipeline's, not one teacher's)."""

    teacher: str = Field("replay", description="; ".join(f"{s.name}: {s.description}" for s in TEACHERS.values()),
                         json_schema_extra={"enum": list(TEACHERS)})
    samples: int = Field(1, ge=1, description="candidates per problem (inductor teacher, deterministic: 2 adds the dynamic-parameters capture as a second candidate where it differs)")
    rounds: int = Field(2, ge=0, description="repair rounds: validator errors sent back to the LLM teacher")
    max_problems: int = Field(0, ge=0, description="distill at most this many problems (0 = all)")
    batch_problems: int = Field(32, ge=0, description="`distill` verb: problems distilled and stored per batch, so a long run stopped half-way keeps every finished batch (0 = one batch; the inductor teacher compiles a batch's problems in parallel)")
    skip_distilled: bool = Field(True, description="`distill` verb: leave out problems this teacher was already run on (a stored candidate or a recorded failure), so a build cut off on one machine continues from its warehouse on another; false (`distill --redo`) distils them again")
    redo_unsolved: bool = Field(False, description="`distill` verb with skip_distilled: distil again the problems this teacher was run on that have no validated pair (after a teacher or converter fix), still skipping the solved ones")
    prefetch: bool = Field(True, description="`distill` verb: the teacher writes the next batch while the judge works on this one (for inductor: captures compile on the CPU while candidates run on the GPU; on a machine whose cores the captures already fill, they also slow the judge's own JIT compiles: on 16 cores with 24 capture jobs judging was ~3x slower, so give captures fewer jobs or turn this off there)")
    concurrent_batches: int = Field(1, ge=1, description="`distill` verb: batches distilled side by side on one warm judge, so the GPU judges one batch while the teacher writes the next ones (inductor: a batch waits for its slowest capture; several at once keep the CPU and the GPU busy). Each is stored as it finishes. 1 = one after another (then `prefetch` applies)")
    gpu_memory_fraction: float = Field(0.85, ge=0, le=1, description="`distill` verb with batches side by side on a GPU judge: the share of the GPUs' memory the batches may reserve together; a batch reserves its problems' estimated need before its captures (gpu_memory_capture_factor) and again before its judgement (gpu_memory_factor) and waits while it does not fit, a problem bigger than the whole runs alone (distillation/gpu_memory.py). 0 = no reservations (every batch starts at once)")
    gpu_memory_factor: float = Field(4.0, gt=0, description="a problem's GPU memory reservation while it is judged: this many times one run's inputs + outputs at its own sizes (the reference's run and each candidate's, their answers), plus twice its parameters and 1 GiB per process (CUDA contexts)")
    gpu_memory_capture_factor: float = Field(2.0, gt=0, description="the same while the teacher writes (an Inductor capture: the inputs, eager's outputs and the compiled outputs on the GPU through minutes of compiling on the CPU); a batch reserves for its capture and for its judgement in turn, not for both throughout")
    time_budget_s: float = Field(0.0, ge=0, description="`distill` verb: stop starting batches when the next one would end past this many seconds from the start (estimated from the batches so far), so a build on a time-limited machine ends cleanly with every finished batch stored and says how many problems are left for the next run (0 = no limit)")
    describe_trace: bool = Field(True, description="when describing compiler pairs without an LLM, also trace the reference on the meta device (in a child process) for its aten ops and output shapes")
    explain_with_llm: bool = Field(False, description="with the openai teacher configured, have it write instruction and reasoning for compiler (inductor/replay) pairs")

    @field_validator("teacher")
    @classmethod
    def _registered(cls, name: str) -> str:
        teacher_spec(name)  # ValueError naming the registered teachers
        return name


# Shared fields first, then each teacher's in registration order (pydantic lists base fields
# from the last base to the first).
class DistillConfig(*reversed(teacher_settings()), SharedDistillSettings):  # type: ignore[misc]
    """Every `distill.*` field: the shared ones and each registered teacher's."""

"""The typed records that travel between stages (see README, "One module's journey").

SourceRef -> HarvestedModule -> Problem -> Candidate -> Verdict -> Export -> Checkpoint -> Evaluation

Each record is a plain dataclass with a content key; the warehouse schema is checked against
these fields (warehouse/schema.py). Standard library only: judge workers import this module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from autotriton.hashing import content_key, normalize_source, source_key

SourceKind = Literal["github", "local", "dataset", "suite", "synthetic"]
#: The kind of the problem generator's sources (harvesting/synthetic.py): the split tells generated
#: problems apart by it (training/data.py, near_duplicate_clusters).
GENERATED: SourceKind = "synthetic"
ShapeProfile = Literal["cpu-small", "gpu-full"]
VerdictStatus = Literal[
    "correct", "incorrect", "rule_violation", "compile_error", "runtime_error", "timeout", "crashed", "unsupported_here"
]
# Which sizes a candidate must be correct at to count as solved: the problem's own sizes only
# (KernelBench's definition), or also the judge's odd-size trial (generality; the dataset's default).
SizeRequirement = Literal["own_sizes", "own_and_odd_sizes"]
SIZE_REQUIREMENTS: tuple[str, ...] = ("own_sizes", "own_and_odd_sizes")
VERDICT_STATUSES: tuple[str, ...] = (
    "correct", "incorrect", "rule_violation", "compile_error", "runtime_error", "timeout", "crashed", "unsupported_here",
)


class Record:
    """Mixin: a dict view for storage and JSON output."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[arg-type]

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]


@dataclass(frozen=True)
class SourceRef(Record):
    """Where a module came from: enough to find it again and to honour its licence."""

    kind: str  # one of SourceKind
    repo: str  # "owner/name" for GitHub, a path for local sources, a file for datasets
    commit: str  # commit sha, or "" when the source is not under version control
    path: str  # file path inside the repo / row id inside a dataset
    licence: str | None  # SPDX id ("MIT", "Apache-2.0"), None when unknown
    stars: int | None = None
    url: str | None = None

    @property
    def key(self) -> str:
        return content_key("source", self.kind, self.repo, self.commit, self.path, self.licence, self.stars)


@dataclass
class HarvestedModule(Record):
    """One nn.Module class lifted out of its file, with everything it needs to stand alone."""

    source: SourceRef
    class_name: str
    original_source: str  # the whole file it was found in
    standalone_source: str  # the class plus exactly the imports, constants and helpers it needs

    @property
    def key(self) -> str:
        return source_key(self.standalone_source)

    @property
    def source_key(self) -> str:
        return self.source.key


@dataclass
class Problem(Record):
    """A runnable problem in KernelBench format: `Model`, `get_inputs()`, `get_init_inputs()`."""

    reference_source: str
    name: str
    module_key: str | None = None  # parent HarvestedModule (None for suite problems)
    source_key: str | None = None  # parent SourceRef
    init_spec: list[Any] = field(default_factory=list)  # JSON description of get_init_inputs()
    input_spec: list[Any] = field(default_factory=list)  # JSON description of get_inputs()
    shape_profile: str = "cpu-small"  # one of ShapeProfile
    op_tags: list[str] = field(default_factory=list)  # e.g. ["matmul", "relu"]
    status: str = "runnable"  # "runnable" or "rejected"
    reject_reason: str | None = None  # why it is not runnable (kept, never silently dropped)
    licence: str | None = None
    suite: str | None = None  # e.g. "kernelbench/level1" for benchmark problems
    suite_id: str | None = None  # e.g. "kernelbench/level1/19"
    # The environment it needs (autotriton/environments.py): the third-party distributions its
    # imports come from, normalised, with the repository's declared specifiers ("einops>=0.7"),
    # and that set's key. Empty / None: the judge's own packages suffice.
    requirements: list[str] = field(default_factory=list)
    environment_key: str | None = None
    # The task in words that prompts for it state (autotriton/describe.py `problem_instruction`),
    # computed once when the problem is made and stored with it; not part of its key. Empty: not
    # computed (a problem built by hand), so prompts compute it.
    instruction: str = ""

    @property
    def key(self) -> str:
        return source_key(self.reference_source)


@dataclass
class Candidate(Record):
    """A Triton implementation (`ModelNew`) proposed for a problem, by a teacher or a model."""

    problem_key: str
    code: str
    reasoning: str = ""
    instruction: str = ""
    generator: str = ""  # "inductor", "openai:<model>", "replay", "model:<name>"
    generator_version: str = ""
    prompt_version: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)  # temperature, top_p, seed, ...
    repair_round: int = 0
    parent_key: str | None = None  # the candidate this one repairs
    usage: dict[str, Any] = field(default_factory=dict)  # prompt/completion tokens, cost_usd
    raw_output: str = ""  # the generator's full text, kept for debugging malformed output
    parse_error: str | None = None  # set when no usable code could be parsed from raw_output

    @property
    def key(self) -> str:
        return candidate_key(self.code, self.problem_key)


def candidate_key(code: str, problem_key: str) -> str:
    return content_key("candidate", normalize_source(code), problem_key)


@dataclass
class Violation(Record):
    rule: str  # stable id, e.g. "TRITON-NO-LAUNCH"
    message: str
    line: int | None = None


@dataclass
class Verdict(Record):
    """What the judge concluded about one candidate. Rewards derive from it (validation/rewards.py)."""

    candidate_key: str
    problem_key: str
    status: str  # one of VERDICT_STATUSES
    correct: bool = False  # every trial matched the reference within tolerance
    rule_ok: bool = False  # no static or runtime rule violations
    compiled: bool = False  # every kernel compiled for the target
    violations: list[Violation] = field(default_factory=list)
    compile_report: dict[str, Any] = field(default_factory=dict)  # per kernel: ok, error, regs, shared, spills
    trials: list[dict[str, Any]] = field(default_factory=list)  # per trial: seed, shapes, ok, max_abs_err, ...
    triton_kernels_launched: list[str] = field(default_factory=list)
    aten_ops: list[str] = field(default_factory=list)  # aten compute ops seen in the candidate's forward
    error: str | None = None
    max_abs_err: float | None = None
    speedup: float | None = None  # vs eager PyTorch (GPU only)
    speedup_vs_compile: float | None = None  # vs torch.compile of the reference (GPU only)
    timing: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"  # "cpu" (interpreter) or a GPU name
    versions: dict[str, str] = field(default_factory=dict)  # torch, triton, python, ...
    judge_config_hash: str = ""
    elapsed_s: float = 0.0
    # `correct` covers every trial. The two parts, apart (validation/rewards.py `correct_at`):
    correct_own_sizes: bool | None = None  # every trial at the problem's own sizes matched (None: not recorded)
    odd_sizes_ok: bool | None = None  # the odd-size trial matched too (None: no odd-size trial ran)

    @property
    def key(self) -> str:
        return content_key("verdict", self.candidate_key, self.judge_config_hash, self.device)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Verdict":
        """The inverse of `to_dict` (violations come back as Violation records); unknown keys are an error."""
        values = dict(data)
        values["violations"] = [v if isinstance(v, Violation) else Violation(**v) for v in values.get("violations") or []]
        return cls(**values)


@dataclass
class Export(Record):
    """A dataset written to Parquet from the warehouse."""

    name: str  # "sft", "rl", ...
    filter: dict[str, Any]
    row_count: int
    content_hash: str
    path: str
    splits: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.content_hash


@dataclass
class Checkpoint(Record):
    base_model: str
    export_key: str
    trainer: str  # "sft" or "grpo"
    trainer_config: dict[str, Any]
    metrics: dict[str, Any]
    path: str

    @property
    def key(self) -> str:
        return content_key("checkpoint", self.base_model, self.export_key, self.trainer, self.trainer_config, self.path)


@dataclass
class Evaluation(Record):
    suite: str
    generator: str
    config: dict[str, Any]
    verdict_keys: list[str]
    metrics: dict[str, Any]

    @property
    def key(self) -> str:
        return content_key("evaluation", self.suite, self.generator, self.config)

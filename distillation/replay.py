"""The replay teacher: serves teacher outputs recorded earlier, so distillation runs offline.

What replay means (see distillation/REPLAY.md for the full statement): the code, reasoning and
instruction of each candidate were produced earlier by a real teacher (the Inductor teacher on a
GPU for the shipped data, or an LLM whose responses sit in a cache dir); replay only re-serves
them. It never serves verdicts: every replayed candidate is judged again, on this machine, in
every run, like any other candidate.

Records are looked up by problem_key (autotriton.hashing.source_key of the problem's reference
source), so a problem whose source changed gets no replayed candidate (counted `replay_miss`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from autotriton.distillation.cache import read_records
from autotriton.distillation.describe import fill_descriptions
from autotriton.distillation.teacher import TeacherSpec
from autotriton.hashing import content_key, normalize_source
from autotriton.records import Candidate, Problem

if TYPE_CHECKING:  # config.py composes DistillConfig from the teachers' settings: imported lazily
    from autotriton.distillation.config import DistillConfig

__all__ = ["ReplayTeacher", "ReplaySettings", "TEACHER", "SHIPPED_REPLAY_DIR", "replay_files", "record_from_candidate",
           "write_replay"]

SHIPPED_REPLAY_DIR = Path(__file__).resolve().parent / "data" / "replay"


def replay_files(paths: Iterable[str | Path], *, shipped: bool = True) -> list[Path]:
    """The JSONL files behind a replay teacher: the shipped data, then each path (a file, or a
    directory whose *.jsonl files are all read), in a stable order."""
    files: list[Path] = []
    roots: list[Path] = ([SHIPPED_REPLAY_DIR] if shipped and SHIPPED_REPLAY_DIR.is_dir() else []) + [Path(p) for p in paths]
    for root in roots:
        if root.is_dir():
            files.extend(sorted(root.glob("*.jsonl")))
        elif root.is_file():
            files.append(root)
        else:
            raise FileNotFoundError(f"{root}: no such replay file or directory (distill.replay_paths). "
                                    "Pass a .jsonl file of teacher outputs or a teacher cache directory.")
    unique: dict[Path, Path] = {}
    for f in files:
        unique.setdefault(f.resolve(), f)  # the same file named twice is read once
    return list(unique.values())


class ReplayTeacher:
    """Serves recorded teacher outputs, indexed by problem_key; see the module docstring."""

    def __init__(self, config: DistillConfig | None = None, *, paths: Iterable[str | Path] = (), shipped: bool | None = None,
                 describe: bool = True):
        if config is None:
            from autotriton.distillation.config import DistillConfig

            config = DistillConfig()
        shipped = config.replay_shipped if shipped is None else shipped
        self.files = replay_files([*config.replay_paths, *paths], shipped=shipped)
        self.describe = describe  # False: leave empty words for the caller (e.g. an LLM explainer in distill)
        self.trace = config.describe_trace
        self._traces: dict[str, dict[str, Any] | None] = {}  # problem key -> meta-device trace (None: untraceable)
        self.counters: Counter = Counter()
        self.failures: dict[str, str] = {}  # problem key -> why it got no candidate
        self.index: dict[str, list[dict[str, Any]]] = {}
        digests = []
        for path in self.files:
            for record in read_records(path, strict=True):
                record = dict(record, _file=path.name)
                if not record.get("code"):
                    self.counters["replay_unusable"] += 1  # a recorded parse failure: nothing to replay
                    continue
                entries = self.index.setdefault(record["problem_key"], [])
                norm = normalize_source(record["code"])
                if any(normalize_source(e["code"]) == norm for e in entries):
                    continue
                entries.append(record)
                digests.append((record["problem_key"], norm))
        self.name = "replay"
        # The version names exactly what is being replayed: the set of recorded outputs.
        self.version = content_key("replay", sorted(digests))

    def __len__(self) -> int:
        return sum(len(v) for v in self.index.values())

    def generate(self, problems: list[Problem], samples: int) -> list[Candidate]:
        out: list[Candidate] = []
        to_explain: list[int] = []
        for problem in problems:
            records = self.index.get(problem.key, [])[:samples]
            if not records:
                self.counters["replay_miss"] += 1
                self.failures[problem.key] = f"replay_miss: no recorded output for this problem_key in {len(self.files)} replay file(s)"
                continue
            self.counters["replay_hit"] += 1
            for sample, record in enumerate(records):
                instruction, reasoning = record.get("instruction") or "", record.get("reasoning") or ""
                cand = Candidate(
                    problem_key=problem.key,
                    code=record["code"],
                    reasoning=reasoning,
                    instruction=instruction,
                    generator=f"replay:{record['teacher']}",
                    generator_version=str(record.get("teacher_version") or ""),
                    prompt_version=str(record.get("prompt_version") or ""),
                    sampling={"replay_file": record["_file"], "sample": sample, **(record.get("sampling") or {})},
                    usage=dict(record.get("usage") or {}),
                    raw_output=record.get("raw_output") or "",
                )
                if not instruction or not reasoning:
                    to_explain.append(len(out))
                out.append(cand)
        if to_explain and self.describe:
            self._fill_descriptions(out, to_explain, {p.key: p for p in problems})
        return out

    def _fill_descriptions(self, cands: list[Candidate], indices: list[int], problems: dict[str, Problem]) -> None:
        """Instruction/reasoning for records that have none: the deterministic describe_problem text."""
        fill_descriptions([cands[i] for i in indices], problems, trace=self.trace, trace_cache=self._traces)
        self.counters["described"] += len(indices)
        self.counters["traced"] = sum(1 for t in self._traces.values() if t)


def record_from_candidate(problem: Problem, candidate: Candidate, *, created: str | None = None) -> dict[str, Any]:
    """The replay line for a candidate a teacher produced (e.g. InductorTeacher on a GPU)."""
    from autotriton.distillation.cache import replay_record

    if candidate.problem_key != problem.key:
        raise ValueError(f"candidate {candidate.key} answers problem {candidate.problem_key}, not {problem.key} ({problem.name})")
    return replay_record(
        problem_key=problem.key, problem_name=problem.name, teacher=candidate.generator,
        teacher_version=candidate.generator_version, prompt_version=candidate.prompt_version, code=candidate.code,
        reasoning=candidate.reasoning, instruction=candidate.instruction, usage=candidate.usage, created=created,
    )


def write_replay(path: str | Path, pairs: Iterable[tuple[Problem, Candidate]]) -> int:
    """Append one replay line per (problem, candidate) to `path`; returns the number written."""
    from autotriton.distillation.cache import append_record

    count = 0
    for problem, candidate in pairs:
        if candidate.code:
            append_record(path, record_from_candidate(problem, candidate))
            count += 1
    return count


class ReplaySettings(BaseModel):
    """The replay teacher's `distill.*` fields."""

    replay_paths: list[str] = Field(default_factory=list, description="extra replay JSONL files or cache dirs served by the replay teacher, besides the shipped data")
    replay_shipped: bool = Field(True, description="replay teacher also serves the data shipped in autotriton/distillation/data/replay")


def build_replay_teacher(config: DistillConfig) -> ReplayTeacher:
    # With an LLM explainer configured, distill() has it write the words of validated pairs;
    # the replay teacher then leaves them empty instead of describing them itself.
    return ReplayTeacher(config, describe=not config.explain_with_llm)


TEACHER = TeacherSpec(name="replay", description="recorded teacher outputs shipped with autotriton, offline",
                      build=build_replay_teacher, settings=ReplaySettings)

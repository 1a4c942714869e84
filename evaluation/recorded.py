"""A judge that serves verdicts recorded by an earlier run of autotriton's validator.

Judging is the only part of an evaluation that needs the GPU. When the candidates were already
judged on a GPU machine (e.g. `benchmarks/inductor_l1.py validate` on an H200, which writes
`verdicts.jsonl`), `RecordedJudge` lets `evaluate` score them elsewhere without judging again:
metrics, report and warehouse rows then describe exactly the verdicts the GPU run produced.

Each verdict is matched to its sample by content keys (problem key and candidate key), so a
verdict recorded for other code or another problem is never reused. A sample with no recorded
verdict is still judged statically here: code the static rules reject gets the same
`rule_violation` verdict the live judge gives without executing it (a sample with no code, for
instance); anything else counts as a `timeout` whose error says it was never judged, so a
recorded run cut short by its time limit shows up as failures, never as silently dropped samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from autotriton.hashing import source_key
from autotriton.records import Verdict, Violation, candidate_key

NOT_JUDGED = "no recorded verdict: the recorded judge run never judged this candidate (e.g. it ended at its deadline)"


def read_verdicts(paths: Sequence[str | Path]) -> list[Verdict]:
    """Verdicts from JSONL files: each line a `Verdict.to_dict()` object, or an object whose
    `record` field holds one (the format of benchmarks/inductor_l1.py's verdicts.jsonl). Lines
    without a full record (e.g. `not_judged` placeholders) are skipped."""
    from autotriton.evaluation.suite_entries import parse_json_lines

    def verdict(row: object) -> Verdict | None:
        record = row.get("record", row) if isinstance(row, dict) else None
        if not isinstance(record, dict) or "candidate_key" not in record:
            return None
        return Verdict.from_dict(record)

    return parse_json_lines(paths, verdict, "a verdict record", "each line needs a Verdict (candidate_key, problem_key, "
                            "status, ...) or an object with one under 'record'.")


class RecordedJudge:
    """Anything with `validate_many(jobs)`: serves recorded verdicts by (problem key, candidate key)."""

    def __init__(self, verdicts: Iterable[Verdict], *, source: str = "recorded"):
        self.source = source
        self.by_key: dict[tuple[str, str], Verdict] = {}
        for v in verdicts:
            self.by_key[(v.problem_key, v.candidate_key)] = v
        self.served = 0
        self.static_only = 0
        self.missing = 0

    @classmethod
    def from_jsonl(cls, paths: Sequence[str | Path]) -> "RecordedJudge":
        return cls(read_verdicts(paths), source=",".join(str(p) for p in paths))

    @property
    def device(self) -> str:
        """The device the recorded verdicts were judged on ('' when none were recorded)."""
        return next(iter(self.by_key.values())).device if self.by_key else ""

    def validate_many(self, jobs: Sequence[tuple[str, str]], *, progress: bool = False) -> list[Verdict]:
        del progress  # nothing slow happens here
        out = []
        for problem_source, code in jobs:
            pkey = source_key(problem_source)
            ckey = candidate_key(code, pkey)
            found = self.by_key.get((pkey, ckey))
            if found is not None:
                self.served += 1
                out.append(found)
                continue
            out.append(self._unrecorded(pkey, ckey, code))
        return out

    def _unrecorded(self, pkey: str, ckey: str, code: str) -> Verdict:
        from autotriton.validation import static_rules

        violations: list[Violation] = static_rules(code)  # as the judge would have applied them
        verdict = Verdict(candidate_key=ckey, problem_key=pkey, status="timeout", device=self.device)
        if violations:
            self.static_only += 1
            verdict.status, verdict.violations = "rule_violation", violations
            verdict.error = "not executed: the static rules already failed"
        else:
            self.missing += 1
            verdict.error = NOT_JUDGED
        return verdict

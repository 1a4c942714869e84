"""The released dataset: validated pairs and RL problems with provenance, as a Hugging Face
dataset folder with a card (DATASET.md, also README.md for the hub).

    <out>/README.md, DATASET.md      the card: YAML configs `pairs` and `problems`, sources, licences, counts
    <out>/release.json               what it is, the counts, the content hashes (what `db import` reads first)
    <out>/pairs/data/{train,validation}-00000-of-00001.parquet
    <out>/problems/data/{train,validation}-00000-of-00001.parquet

The rows carry every field of their records (nested ones as JSON text), so `autotriton db import`
rebuilds the same records, with the same content keys, in a fresh warehouse. The queries live
here; which rows go in and their split are decided by the caller (tasks/steps.py `build_release`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa

from autotriton.hashing import content_key
from autotriton.warehouse.layout import split_file, write_export

RELEASE_FORMAT = "autotriton-release"
RELEASE_VERSION = 1
CONFIGS = ("pairs", "problems")

_PROBLEM_COLUMNS = """
       p.key AS problem_key, p.name AS problem_name, p.reference_source, p.init_spec::VARCHAR AS init_spec,
       p.input_spec::VARCHAR AS input_spec, p.shape_profile, p.op_tags::VARCHAR AS op_tags, p.licence,
       p.suite, p.suite_id, p.module_key, p.source_key,
       s.kind AS source_kind, s.repo AS source_repo, s."commit" AS source_version, s.path AS source_path,
       s.url AS source_url, s.stars AS source_stars, s.licence AS source_licence,
       m.class_name AS module_class, m.standalone_source AS module_source,
       p.requirements::VARCHAR AS requirements, p.environment_key"""

# The reward-1 rule on each candidate's latest verdict, as in Warehouse.validated_pairs().
PAIRS_SQL = f"""
SELECT {_PROBLEM_COLUMNS},
       c.key AS candidate_key, c.code, c.reasoning, c.instruction, c.generator AS teacher, c.generator_version,
       c.prompt_version, c.sampling::VARCHAR AS sampling, c.repair_round, c.parent_key, c.usage::VARCHAR AS usage,
       v.key AS verdict_key, v.status AS verdict_status, CASE WHEN v.correct AND v.rule_ok THEN 1.0 ELSE 0.0 END AS reward,
       v.correct, v.rule_ok, v.compiled, v.max_abs_err, v.speedup, v.speedup_vs_compile, v.device,
       v.judge_config_hash, v.elapsed_s, v.error, v.violations::VARCHAR AS violations,
       v.compile_report::VARCHAR AS compile_report, v.trials::VARCHAR AS trials,
       v.triton_kernels_launched::VARCHAR AS triton_kernels_launched, v.aten_ops::VARCHAR AS aten_ops,
       v.timing::VARCHAR AS timing, v.versions::VARCHAR AS versions
FROM latest_verdicts v
JOIN candidates c ON c.key = v.candidate_key
JOIN problems p ON p.key = c.problem_key
LEFT JOIN sources s ON s.key = p.source_key
LEFT JOIN modules m ON m.key = p.module_key
WHERE v.correct AND v.rule_ok AND p.status = 'runnable'
ORDER BY p.key, c.key
"""

PROBLEMS_SQL = f"""
SELECT {_PROBLEM_COLUMNS},
       EXISTS (SELECT 1 FROM latest_verdicts v JOIN candidates c ON c.key = v.candidate_key
               WHERE c.problem_key = p.key AND v.correct AND v.rule_ok) AS solved
FROM problems p
LEFT JOIN sources s ON s.key = p.source_key
LEFT JOIN modules m ON m.key = p.module_key
WHERE p.status = 'runnable'
ORDER BY p.key
"""

REJECTIONS_SQL = "SELECT stage, reason, count(*) AS n FROM rejections GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2"


def release_rows(wh: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(validated pairs, runnable problems), each row with its provenance; see the SQL above."""
    return wh.sql(PAIRS_SQL).to_dicts(), wh.sql(PROBLEMS_SQL).to_dicts()


def source_label(row: Mapping[str, Any]) -> str:
    """A row's source in words: `timm==1.0.31` (PyPI), `owner/name` (GitHub), the suite, or the folder."""
    kind, repo, version = row.get("source_kind"), row.get("source_repo"), row.get("source_version")
    if kind == "pypi":
        return f"{repo}=={version}"
    if kind:
        return f"{kind}:{repo}"
    return f"suite:{row['suite']}" if row.get("suite") else "unknown"


def _table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    columns = list(dict.fromkeys(col for r in rows for col in r))
    return pa.Table.from_pydict({c: [r.get(c) for r in rows] for c in columns})


def _count_table(counts: Mapping[str, Any], head: tuple[str, str]) -> str:
    lines = [f"| {head[0]} | {head[1]} |", "| --- | ---: |"]
    lines += [f"| {k} | {v} |" for k, v in counts.items()]
    return "\n".join(lines) if counts else "(none)"


def _judge_table(counts: Mapping[str, int]) -> str:
    """| teacher | judged on | pairs |, from keys `teacher on device`."""
    lines = ["| teacher | judged on | pairs |", "| --- | --- | ---: |"]
    lines += [f"| {k.split(' on ', 1)[0]} | {k.split(' on ', 1)[-1]} | {v} |" for k, v in counts.items()]
    return "\n".join(lines) if counts else "(none)"


def dataset_card(name: str, counts: Mapping[str, Any], created: str) -> str:
    """DATASET.md: hub YAML (configs), then sources, licences, counts per stage, category and
    source, decontamination, and how to load it."""
    configs = ["---", f"pretty_name: {name}", "license: other", "tags:", "- triton", "- gpu-kernels", "- code",
               "configs:"]
    for config in CONFIGS:
        configs += [f"- config_name: {config}", "  data_files:"]
        for split in counts["splits"][config]:
            configs += [f"  - split: {split}", f"    path: {config}/{split_file(split)}"]
    configs.append("---")
    stage = counts["stages"]
    decon = counts["decontamination"]
    by_file = "\n".join(f"- `{f}`: {n} problem(s) removed" for f, n in decon["by_suite_file"].items()) or "- none matched"
    pair_splits = ", ".join(f"{s} {n}" for s, n in counts["splits"]["pairs"].items())
    problem_splits = ", ".join(f"{s} {n}" for s, n in counts["splits"]["problems"].items())
    return "\n".join(configs) + f"""

# {name}

PyTorch modules paired with Triton kernels that a hostile-code judge validated (correct on every
trial, no rule violated: reward 1), plus the runnable problems for reinforcement learning. Built by
autotriton's `db release` on {created} (warehouse code version `{counts['code_version']}`).

- `pairs`: {counts['rows']['pairs']} validated (problem, Triton kernel) pairs ({pair_splits})
- `problems`: {counts['rows']['problems']} runnable KernelBench-format problems, `solved` when a pair exists ({problem_splits})

Splits are by near-duplicate cluster of the problem (MinHash over its source): no problem, and no
near copy of one, is in two splits; a problem has the same split in both configs. Problems of the
synthetic generator share its template, not copied code: two of them are near copies when their
code is the same up to numbers and strings (one op chain at other sizes and constants); a generated
problem and a harvested one, when MinHash says so.

## Sources

{_count_table(counts['by_source'], ('source (package==version, repository or suite)', 'runnable problems'))}

## Licences

Every harvested file passed the licence allowlist `{', '.join(counts['licence_allowlist'])}`; each row keeps its
`licence` and its provenance (`source_kind`, `source_repo`, `source_version`, `source_path`, `source_url`).

{_count_table(counts['by_licence'], ('licence', 'runnable problems'))}

## Counts per stage

| stage | count |
| --- | ---: |
| modules harvested | {stage['modules']} |
| problems runnable | {stage['problems_runnable']} |
| problems rejected | {stage['problems_rejected']} |
| candidates (teacher outputs) | {stage['candidates']} |
| latest verdicts | {stage['verdicts']} |
| validated pairs (reward 1) | {stage['validated_pairs']} |
| removed by decontamination | {decon['problems_removed']} |
| released pairs | {counts['rows']['pairs']} |
| released problems | {counts['rows']['problems']} |

Latest verdicts by status: {', '.join(f'{k} {v}' for k, v in stage['verdicts_by_status'].items()) or 'none'}.

Rejections by stage and reason:

{_count_table(counts['rejections'], ('stage: reason', 'count'))}

## Pairs per op category and teacher

{_count_table(counts['pairs_by_category'], ('op category', 'pairs'))}

{_count_table(counts['pairs_by_teacher'], ('teacher', 'pairs'))}

Where each pair was judged (the `device` column: a GPU's name, or `cpu` for the CPU judge, which runs the
kernels under Triton's interpreter and times nothing, so such pairs have no speedup):

{_judge_table(counts.get('pairs_by_judge', {}))}

## Decontamination

Every problem was checked against the evaluation suites {', '.join(f'`{s}`' for s in decon['suites']) or '(none named: `harvest.eval_suites` was empty)'}
(exact model key and MinHash near copies at similarity >= {decon['threshold']}, sizes and input builders aside);
matches are left out of this dataset and recorded in the warehouse's rejections (stage `decontamination`).

{by_file}

## Loading

```python
import datasets

DIR = "path/to/this/folder"
pairs = datasets.load_dataset("parquet", data_files={{
    "train": f"{{DIR}}/pairs/data/train-*.parquet",
    "validation": f"{{DIR}}/pairs/data/validation-*.parquet",
}})
problems = datasets.load_dataset("parquet", data_files={{"train": f"{{DIR}}/problems/data/train-*.parquet"}})
# or with this card's configs: datasets.load_dataset(DIR, "pairs")
```

`autotriton db import DIR` loads it into a fresh warehouse (sources, modules, problems, candidates
and verdicts, with their content keys), so a build continues from it on another machine.

## Columns

Pairs: the problem (`reference_source`, `init_spec`, `input_spec`, `op_tags`, `op_category`), its
provenance and licence, the kernel (`code`, `reasoning`, `instruction`, `teacher`), the verdict
(`verdict_status`, `reward`, `max_abs_err`, `speedup`, `speedup_vs_compile`, `device`, `trials`, ...),
`split` and `cluster`. Nested values are JSON text. Both configs carry each problem's dependency
environment: `requirements` (the third-party distributions its reference imports, with the
source's declared specifiers; `[]` when torch suffices) and `environment_key`, which `autotriton`
installs into an isolated, cached environment before probing or judging it.
"""


def write_release(out: str | os.PathLike[str], pairs: Sequence[Mapping[str, Any]], problems: Sequence[Mapping[str, Any]],
                  counts: Mapping[str, Any], name: str = "autotriton-triton-kernels") -> dict[str, Any]:
    """Write the release folder (each config atomically), the card and release.json; returns the manifest."""
    root = Path(out).resolve()
    root.mkdir(parents=True, exist_ok=True)
    hashes = {}
    for config, rows in (("pairs", pairs), ("problems", problems)):
        chash = content_key("release", config, sorted(content_key("row", dict(r)) for r in rows))
        hashes[config] = chash
        write_export(_table(rows), root / config, "hf", {"name": config, "content_hash": chash, "rows": len(rows),
                                                          "release": name})
    created = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    card = dataset_card(name, counts, created)
    manifest = {"format": RELEASE_FORMAT, "version": RELEASE_VERSION, "name": name, "created": created,
                "content_hashes": hashes, "counts": counts}
    for fname, text in (("DATASET.md", card), ("README.md", card),
                        ("release.json", json.dumps(manifest, indent=1, sort_keys=True, default=str) + "\n")):
        tmp = root / f".{fname}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, root / fname)
    return manifest


def release_counts(wh: Any, pairs: Sequence[Mapping[str, Any]], problems: Sequence[Mapping[str, Any]],
                   decontamination: Mapping[str, Any], licence_allowlist: Sequence[str]) -> dict[str, Any]:
    """The figures of the card, from the warehouse and the released rows."""
    stats = wh.stats()
    rejections = {f"{r['stage']}: {r['reason']}": r["n"] for r in wh.sql(REJECTIONS_SQL).to_dicts()}
    by_status = stats["problems_by_status"]
    return {
        "code_version": (stats["last_runs"][0]["code_version"] if stats["last_runs"] else ""),
        "rows": {"pairs": len(pairs), "problems": len(problems)},
        "splits": {"pairs": dict(sorted(Counter(r["split"] for r in pairs).items())),
                   "problems": dict(sorted(Counter(r["split"] for r in problems).items()))},
        "stages": {"modules": stats["tables"]["modules"], "problems_runnable": by_status.get("runnable", 0),
                   "problems_rejected": sum(v for k, v in by_status.items() if k != "runnable"),
                   "candidates": stats["tables"]["candidates"], "verdicts": sum(stats["latest_verdicts_by_status"].values()),
                   "verdicts_by_status": stats["latest_verdicts_by_status"], "validated_pairs": stats["validated_pairs"]},
        "rejections": rejections,
        "by_source": dict(Counter(source_label(r) for r in problems).most_common()),
        "by_licence": dict(Counter(r.get("licence") or "unknown" for r in problems).most_common()),
        "pairs_by_category": dict(Counter(r["op_category"] for r in pairs).most_common()),
        "pairs_by_teacher": dict(Counter(r["teacher"] for r in pairs).most_common()),
        "pairs_by_judge": dict(Counter(f"{r['teacher']} on {r.get('device') or 'unknown'}" for r in pairs).most_common()),
        "licence_allowlist": list(licence_allowlist),
        "decontamination": {k: decontamination[k] for k in ("suites", "threshold", "problems_removed", "by_suite_file", "by_kind")},
    }

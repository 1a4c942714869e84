"""Built-in export row builders: functions of (warehouse, config) returning (rows, filter).

`autotriton db export NAME` looks NAME up in flows/cli/db_cmd.py's EXPORTERS, which maps names to
functions like these; `Warehouse.export_parquet(name, rows, filter, run)` writes and records the
result. Nested values are JSON text so every export has a flat, stable Parquet schema.
"""

from __future__ import annotations

from typing import Any

from autotriton.warehouse.schema import dumps
from autotriton.warehouse.store import Warehouse

Rows = list[dict[str, Any]]


def problem_rows(wh: Warehouse, config: Any = None) -> tuple[Rows, dict[str, Any]]:
    """Every runnable problem with its reference source and specs."""
    rows = [
        {
            "problem_key": p.key, "name": p.name, "suite": p.suite, "suite_id": p.suite_id,
            "reference_source": p.reference_source, "init_spec": dumps(p.init_spec), "input_spec": dumps(p.input_spec),
            "shape_profile": p.shape_profile, "op_tags": dumps(p.op_tags), "licence": p.licence,
            "module_key": p.module_key, "source_key": p.source_key,
        }
        for p in wh.problems(status="runnable")
    ]
    return rows, {"table": "problems", "status": "runnable"}


def pair_rows(wh: Warehouse, config: Any = None) -> tuple[Rows, dict[str, Any]]:
    """Validated (problem, candidate) pairs: the candidate's latest verdict is correct and rule_ok."""
    rows = [
        {
            "problem_key": p.key, "candidate_key": c.key, "verdict_key": v.key,
            "problem_name": p.name, "suite": p.suite, "licence": p.licence,
            "problem_source": p.reference_source, "code": c.code, "reasoning": c.reasoning,
            "instruction": c.instruction, "generator": c.generator, "prompt_version": c.prompt_version,
            "verdict_status": v.status, "device": v.device, "max_abs_err": v.max_abs_err,
            "speedup": v.speedup, "speedup_vs_compile": v.speedup_vs_compile,
            "triton_kernels_launched": dumps(v.triton_kernels_launched), "judge_config_hash": v.judge_config_hash,
        }
        for p, c, v in wh.validated_pairs()
    ]
    return rows, {"table": "latest_verdicts", "correct": True, "rule_ok": True}


def verdict_rows(wh: Warehouse, config: Any = None) -> tuple[Rows, dict[str, Any]]:
    """Every stored verdict (one per candidate x judge config x device), for analysis."""
    rows = [
        {
            "verdict_key": v.key, "candidate_key": v.candidate_key, "problem_key": v.problem_key,
            "status": v.status, "correct": v.correct, "rule_ok": v.rule_ok, "compiled": v.compiled,
            "violations": dumps([x.to_dict() for x in v.violations]), "error": v.error,
            "max_abs_err": v.max_abs_err, "speedup": v.speedup, "speedup_vs_compile": v.speedup_vs_compile,
            "device": v.device, "judge_config_hash": v.judge_config_hash, "elapsed_s": v.elapsed_s,
            "aten_ops": dumps(v.aten_ops), "triton_kernels_launched": dumps(v.triton_kernels_launched),
        }
        for v in wh.verdicts()
    ]
    return rows, {"table": "verdicts"}

"""Built-in export row builders: functions of (warehouse, config) returning (rows, filter).

`autotriton db export NAME` looks NAME up in flows/cli/db_cmd.py's EXPORTERS, which maps names to
functions like these; `Warehouse.export_parquet(name, rows, filter, run)` writes (a Hugging Face
dataset folder by default, warehouse/layout.py) and records the result. They read the stored columns with SQL rather than rebuilding records, so no content key is
recomputed (each is an AST round trip). Nested values stay JSON text: every export has a flat,
stable Parquet schema.
"""

from __future__ import annotations

from typing import Any

from autotriton.warehouse.store import Warehouse

Rows = list[dict[str, Any]]

PROBLEM_SQL = """
SELECT key AS problem_key, name, suite, suite_id, reference_source, init_spec::VARCHAR AS init_spec,
       input_spec::VARCHAR AS input_spec, shape_profile, op_tags::VARCHAR AS op_tags, licence, module_key, source_key
FROM problems WHERE status = 'runnable' ORDER BY key
"""

# The reward-1 rule (correct and rule_ok) is applied to each candidate's latest verdict, as in
# Warehouse.validated_pairs().
PAIR_SQL = """
SELECT p.key AS problem_key, c.key AS candidate_key, v.key AS verdict_key,
       p.name AS problem_name, p.suite, p.licence, p.reference_source AS problem_source,
       c.code, c.reasoning, c.instruction, c.generator, c.prompt_version,
       v.status AS verdict_status, v.device, v.max_abs_err, v.speedup, v.speedup_vs_compile,
       v.triton_kernels_launched::VARCHAR AS triton_kernels_launched, v.judge_config_hash
FROM latest_verdicts v
JOIN candidates c ON c.key = v.candidate_key
JOIN problems p ON p.key = c.problem_key
WHERE v.correct AND v.rule_ok AND p.status = 'runnable'
ORDER BY p.key, c.key
"""

# `reward` is validation.rewards.combined_reward without a speedup bonus (AutoTriton's rule: 1
# only when the candidate is both correct and rule-abiding), the figure GRPO and SFT select on.
VERDICT_SQL = """
SELECT key AS verdict_key, candidate_key, problem_key, status,
       CASE WHEN correct AND rule_ok THEN 1.0 ELSE 0.0 END AS reward, correct, rule_ok, compiled,
       violations::VARCHAR AS violations, error, max_abs_err, speedup, speedup_vs_compile, device,
       judge_config_hash, elapsed_s, aten_ops::VARCHAR AS aten_ops,
       triton_kernels_launched::VARCHAR AS triton_kernels_launched
FROM verdicts ORDER BY key
"""


def problem_rows(wh: Warehouse, config: Any = None) -> tuple[Rows, dict[str, Any]]:
    """Every runnable problem with its reference source and specs (JSON text)."""
    return wh.sql(PROBLEM_SQL).to_dicts(), {"table": "problems", "status": "runnable"}


def pair_rows(wh: Warehouse, config: Any = None) -> tuple[Rows, dict[str, Any]]:
    """Validated (problem, candidate) pairs: the candidate's latest verdict is correct and rule_ok."""
    return wh.sql(PAIR_SQL).to_dicts(), {"table": "latest_verdicts", "correct": True, "rule_ok": True}


def verdict_rows(wh: Warehouse, config: Any = None) -> tuple[Rows, dict[str, Any]]:
    """Every stored verdict (one per candidate x judge config x device), for analysis."""
    return wh.sql(VERDICT_SQL).to_dicts(), {"table": "verdicts"}


# The warehouse's own exports by name (`autotriton db export <name>`).
WAREHOUSE_EXPORTS = {"problems": problem_rows, "pairs": pair_rows, "verdicts": verdict_rows}

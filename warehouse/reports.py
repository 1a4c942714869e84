"""Why problems were lost, as queries a user can act on (`autotriton db stats`, `db report`).

Every stage stores what it could not use in the `rejections` table (stage, subject, reason,
detail): the harvest (a module's missing dependency, no working inputs, ...), the distillation
(a teacher's failure such as the Inductor converter's `conversion_failed:<kind>`, or
`not_validated`). Only the newest rejection of a subject per stage counts: a problem rejected
once and solved (or rejected for another reason) later is not counted twice.

    rejection_counts(wh)   {stage: {reason: {"count", "example": {"subject", "detail"}}}}
    loss_report(wh, top)   the top missing packages (what to install) and the top converter
                           failure kinds (what to file), each with an example
"""

from __future__ import annotations

from typing import Any

__all__ = ["rejection_counts", "loss_report", "MISSING_PACKAGE_SQL", "CONVERSION_PREFIX"]

CONVERSION_PREFIX = "conversion_failed:"  # distillation/inductor.py's reason for a converter failure
# the package a missing_dependency detail names: "needs package `einops`" (harvest extraction) or
# "No module named 'einops'" / "No module named 'einops.layers'" (the sandbox probe)
MISSING_PACKAGE_SQL = ("coalesce(nullif(regexp_extract(detail, 'needs package `([A-Za-z0-9_]+)', 1), ''), "
                       "nullif(regexp_extract(detail, 'No module named ''([A-Za-z0-9_]+)', 1), ''))")

# the newest rejection of each (stage, subject)
_LATEST = ("SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY stage, subject ORDER BY created_at DESC, key) "
           "AS newest FROM rejections) WHERE newest = 1")


def rejection_counts(wh: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """Rejections by stage and reason (most frequent first), each with one example."""
    rows = wh.sql(
        f"SELECT stage, reason, count(*) AS n, first(subject ORDER BY created_at, key) AS subject, "
        f"first(detail ORDER BY created_at, key) AS detail FROM ({_LATEST}) GROUP BY stage, reason "
        "ORDER BY stage, n DESC, reason").to_dicts()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["stage"], {})[r["reason"]] = {
            "count": int(r["n"]), "example": {"subject": r["subject"], "detail": (r["detail"] or "")[:300]}}
    return out


def loss_report(wh: Any, top: int = 10) -> dict[str, Any]:
    """What to install and what to file: the `top` packages missing_dependency rejections name
    (harvest), and the `top` converter failure kinds (distill), with counts and an example."""
    packages = wh.sql(
        f"SELECT package, count(*) AS n, first(detail ORDER BY created_at, key) AS detail FROM "
        f"(SELECT {MISSING_PACKAGE_SQL} AS package, detail, created_at, key FROM ({_LATEST}) "
        "WHERE reason = 'missing_dependency') WHERE package IS NOT NULL GROUP BY package "
        "ORDER BY n DESC, package LIMIT ?", [top]).to_dicts()
    kinds = wh.sql(
        f"SELECT substr(reason, {len(CONVERSION_PREFIX) + 1}) AS kind, count(*) AS n, "
        f"first(subject ORDER BY created_at, key) AS subject, first(detail ORDER BY created_at, key) AS detail FROM ({_LATEST}) "
        f"WHERE stage = 'distill' AND starts_with(reason, '{CONVERSION_PREFIX}') GROUP BY kind "
        "ORDER BY n DESC, kind LIMIT ?", [top]).to_dicts()
    unparsed = wh.sql(
        f"SELECT count(*) FROM ({_LATEST}) WHERE reason = 'missing_dependency' AND {MISSING_PACKAGE_SQL} IS NULL").rows[0][0]
    return {
        "missing_dependencies": [{"package": r["package"], "count": int(r["n"]), "example": (r["detail"] or "")[:300]}
                                 for r in packages],
        "missing_dependency_unnamed": int(unparsed),
        "converter_failures": [{"kind": r["kind"], "count": int(r["n"]),
                                "example": {"subject": r["subject"], "detail": (r["detail"] or "")[:300]}} for r in kinds],
        "rejections": rejection_counts(wh),
    }

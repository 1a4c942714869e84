"""Export task: the SFT and RL training sets, written as dataset folders and recorded with content
hashes; evaluation problems (harvest.eval_suites) are left out and counted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prefect.assets import materialize

from autotriton.tasks.artifacts import asset_key, markdown_table, publish_markdown
from autotriton.tasks.resources import Resources
from autotriton.tasks.steps import build_export
from autotriton.warehouse import Run

if TYPE_CHECKING:
    from autotriton.flows.config import PipelineConfig


@materialize(
    asset_key("exports"),
    asset_deps=[asset_key("problems"), asset_key("candidates"), asset_key("verdicts")],
    name="export-training-sets", by="autotriton",
)
def export_training_sets(resources: Resources, run: Run, config: PipelineConfig) -> dict[str, Any]:
    """Build the `sft` export (validated pairs) and the `rl` export (prompts chosen for diversity).
    An export with no rows is skipped and reported (e.g. nothing validated yet)."""
    wh = resources.warehouse
    out: dict[str, Any] = {}
    rows_md = []
    for name in ("sft", "rl"):
        export = out[name] = build_export(wh, run, config, name)
        if export is None:
            rows_md.append({"export": name, "rows": 0, "key": "(skipped: no rows)", "splits": "", "decontaminated": ""})
            continue
        removed = export.filter.get("decontamination", {}).get("problems_removed", 0)
        rows_md.append({"export": name, "rows": export.row_count, "key": export.key, "splits": export.splits,
                        "decontaminated": removed})
    publish_markdown("training-exports", "# Training exports\n\n" + markdown_table(rows_md), "SFT and RL exports")
    return out

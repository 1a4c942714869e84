"""Reasons a user can act on (issue 13): why harvested modules and distilled problems were lost,
counted by reason with an example, and the report of what to install (missing packages) and what
to file (the Inductor converter's failure kinds), through the product's verbs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from typer.testing import CliRunner

from autotriton.flows.cli import app

FIXTURES = Path(__file__).parent / "data" / "inductor"

NEEDS_EINOPS = '''# SPDX-License-Identifier: MIT
import torch
import torch.nn as nn
from einops_not_installed_xyz import rearrange


class Patchify(nn.Module):
    def forward(self, x):
        return rearrange(x, "b c h w -> b (h w) c")
'''

NEEDS_LOGURU = '''# SPDX-License-Identifier: MIT
import torch.nn as nn
import loguru_not_installed_xyz


class Logged(nn.Module):
    def forward(self, x):
        loguru_not_installed_xyz.logger.info("x")
        return x * 2
'''

FINE = '''# SPDX-License-Identifier: MIT
import torch
import torch.nn as nn


class Scale(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.w = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.w
'''


def one_json(result) -> dict:
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0])


def test_harvest_json_counts_rejections_with_an_example_and_the_missing_packages(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "patch.py").write_text(NEEDS_EINOPS)
    (repo / "patch2.py").write_text(NEEDS_EINOPS.replace("Patchify", "Unpatchify").replace("b (h w) c", "b c (h w)"))
    (repo / "log.py").write_text(NEEDS_LOGURU)
    (repo / "scale.py").write_text(FINE)
    summary = one_json(CliRunner().invoke(app, ["--db", str(tmp_path / "w.duckdb"), "harvest", "local", str(repo),
                                                "--no-probe", "--dry-run", "--json"]))
    assert summary["rejected"]["missing_dependency"] == 3
    example = summary["rejected_examples"]["missing_dependency"]
    assert example.split(":")[0] in ("Patchify", "Unpatchify", "Logged") and "not installed" in example
    assert summary["missing_dependencies"] == {"einops_not_installed_xyz": 2, "loguru_not_installed_xyz": 1}
    human = CliRunner().invoke(app, ["--db", str(tmp_path / "w.duckdb"), "harvest", "local", str(repo),
                                     "--no-probe", "--dry-run"])
    assert human.exit_code == 0 and "einops_not_installed_xyz (2)" in human.stdout


def test_converter_failures_land_in_the_warehouse_by_kind_and_the_report_lists_them(tmp_path, monkeypatch):
    """The product path of `autotriton distill --teacher inductor` (teacher -> distill ->
    store_distill_results) with recorded captures in place of the GPU: an ATen fallback and a
    graph break are stored as `conversion_failed:<kind>` rejections; with harvest rejections
    (missing packages, as the extractor and the probe word them) `db stats` counts them by
    reason with an example and `db report` ranks what to install and what to file."""
    import autotriton.distillation.inductor as inductor
    from autotriton.distillation import distill
    from autotriton.distillation.config import DistillConfig
    from autotriton.records import Problem
    from autotriton.tasks.steps import store_distill_results
    from autotriton.validation import ValidationConfig
    from autotriton.warehouse import Warehouse

    fallback = json.loads((FIXTURES / "aten_fallback_avg_pool3d.json").read_text())
    broken = copy.deepcopy(json.loads((FIXTURES / "pointwise_relu.json").read_text()))
    broken["attempts"][0]["graphs"].append(broken["attempts"][0]["graphs"][0])
    captures = {"avg_pool3d": fallback, "relu_with_break": broken}
    monkeypatch.setattr(inductor, "capture_in_subprocess",
                        lambda source, *, name, **_: captures[name]["attempts"][0])
    problems = [Problem(reference_source=c["source"], name=n) for n, c in captures.items()]
    teacher = inductor.InductorTeacher(DistillConfig(teacher="inductor"), jobs=1, dynamic=False)
    result = distill(problems, teacher, DistillConfig(teacher="inductor"), ValidationConfig(device="cpu", workers=1))
    reasons = {row["reason"] for row in result.rejections}
    assert reasons == {"conversion_failed:aten_fallback", "conversion_failed:graph_breaks"}

    db = tmp_path / "w.duckdb"
    with Warehouse(db) as wh:
        run = wh.start_run("distill", {})
        wh.put_problems(run, problems)
        store_distill_results(wh, run, [result])
        wh.put_rejections(run, [
            {"stage": "harvest", "subject": "k1", "reason": "missing_dependency",
             "detail": "pkg/a.py:3: needs package `einops`, which is not installed"},
            {"stage": "harvest", "subject": "k2", "reason": "missing_dependency",
             "detail": "ModuleNotFoundError: No module named 'einops.layers'"},
            {"stage": "harvest", "subject": "k3", "reason": "missing_dependency",
             "detail": "ModuleNotFoundError: No module named 'loguru'"},
            {"stage": "harvest", "subject": "k4", "reason": "no_working_inputs", "detail": "Block: shape mismatch"},
        ])
        wh.finish_run(run)

    stats = one_json(CliRunner().invoke(app, ["--db", str(db), "db", "stats", "--json"]))
    harvest = stats["rejections"]["harvest"]
    assert harvest["missing_dependency"]["count"] == 3 and harvest["no_working_inputs"]["count"] == 1
    assert "No module named" in harvest["missing_dependency"]["example"]["detail"] or \
        "needs package `einops`" in harvest["missing_dependency"]["example"]["detail"]
    distilled = stats["rejections"]["distill"]
    assert distilled["conversion_failed:aten_fallback"]["count"] == 1
    assert distilled["conversion_failed:aten_fallback"]["example"]["detail"].startswith("avg_pool3d: ")

    report = one_json(CliRunner().invoke(app, ["--db", str(db), "db", "report", "--json"]))
    assert [(d["package"], d["count"]) for d in report["missing_dependencies"]] == [("einops", 2), ("loguru", 1)]
    kinds = {k["kind"]: k for k in report["converter_failures"]}
    assert set(kinds) == {"aten_fallback", "graph_breaks"} and kinds["graph_breaks"]["count"] == 1
    assert "2 graphs" in kinds["graph_breaks"]["example"]["detail"]
    human = CliRunner().invoke(app, ["--db", str(db), "db", "report"])
    assert human.exit_code == 0 and "einops" in human.stdout and "aten_fallback" in human.stdout
    assert "missing_dependency" in CliRunner().invoke(app, ["--db", str(db), "db", "stats"]).stdout

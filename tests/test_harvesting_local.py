"""The local source and the CLI, with problems confirmed in the real validation sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.harvesting import HarvestConfig, harvest_dataset

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "modules"
DATA = Path(__file__).parent / "data" / "harvesting"


def _invoke(args: list[str]):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_cli_harvest_local_writes_the_warehouse_and_a_second_harvest_adds_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # a copy outside git: the checkout's HEAD moves as people commit, and a new commit is a new source
    examples = tmp_path / "modules"
    shutil.copytree(EXAMPLES, examples)
    db = str(tmp_path / "h.duckdb")
    first = _invoke(["--db", db, "harvest", "local", str(examples), "--json"])
    assert set(first) >= {"files", "modules", "runnable", "rejected", "duplicates"}
    assert first["files"] == 8 and first["modules"] == 13
    assert first["runnable"] == 11
    assert first["rejected"] == {"input_independent": 1, "missing_dependency": 1}  # ConstantBias, einops
    assert first["file_errors"] == {"syntax_error": 1}
    assert first["new_rows"]["problems"] == 13

    from autotriton.warehouse import Warehouse

    with Warehouse(db) as wh:
        runnable = wh.problems(status="runnable")
        assert len(runnable) == 11
        sa = next(p for p in runnable if p.name == "SelfAttention")
        assert "class Model(nn.Module)" in sa.reference_source and "def get_inputs()" in sa.reference_source
        assert "NEG_INF = -1e9" in sa.reference_source and "def scaled_scores" in sa.reference_source
        assert "class CrossScores" not in sa.reference_source  # nothing extra
        assert sa.licence == "Apache-2.0"
        reasons = {r["reason"] for r in wh.rejections()}
        assert {"syntax_error", "missing_dependency", "input_independent"} <= reasons
        lineage = wh.lineage(sa.key)
        assert lineage

    # the incremental state says nothing changed; the full re-harvest adds no rows either
    second = _invoke(["--db", db, "harvest", "local", str(examples), "--json"])
    assert second["modules"] == 0 and second["unchanged"] == 8
    assert not Path(db + ".harvest-state.json").exists()  # the state is in the warehouse, not beside it
    with Warehouse(db, read_only=True) as wh:
        assert list(wh.harvest_state()["sources"]) == [f"local:{examples}"]
    full = _invoke(["--db", db, "harvest", "local", str(examples), "--full", "--json"])
    assert full["runnable"] == 11 and all(v == 0 for v in full["new_rows"].values())


def test_cli_reports_a_missing_path(tmp_path):
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "x.duckdb"), "harvest", "local", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such file or directory" in result.output


def test_kernelbook_rows_become_modules_problems_and_pairs(tmp_path):
    result = harvest_dataset(DATA / "kernelbook_sample.jsonl", HarvestConfig(state_path=str(tmp_path / "s.json")))
    assert result.summary()["duplicates"] == 1  # ScaledTanhCopy: same module, renamed locals
    assert [r.reason for r in result.rejections] == ["licence_not_allowed"]  # the GPL row
    (problem, candidate), = result.pairs
    assert problem.status == "runnable" and "return [3.0]" in problem.reference_source  # [args, kwargs] -> positional
    assert candidate.generator == "kernelbook" and "class ModelNew(nn.Module)" in candidate.code
    assert "super(ModelNew, self)" in candidate.code and candidate.problem_key == problem.key
    assert result.sources[0].repo == "example-org/tiny-nets" and result.sources[0].stars == 42
    again = harvest_dataset(DATA / "kernelbook_sample.jsonl", HarvestConfig(state_path=str(tmp_path / "s.json")))
    assert again.problems == [] and again.summary()["unchanged"] == 1


def test_benchmark_suite_is_imported_verbatim(tmp_path, kernelbench_l1):
    result = harvest_dataset(kernelbench_l1, HarvestConfig(incremental=False, probe=False))
    assert len(result.problems) == 100
    first = json.loads(kernelbench_l1.read_text().splitlines()[0])
    p = result.problems[0]
    assert p.reference_source == first["source"] and p.suite == "kernelbench/level1" and p.suite_id == first["id"]
    assert p.licence == "MIT" and result.sources[0].repo == "ScalingIntelligence/KernelBench"


def test_nondeterministic_and_input_independent_modules_are_rejected_by_the_sandbox(tmp_path):
    from autotriton.harvesting import harvest_local

    (tmp_path / "m.py").write_text(
        "# SPDX-License-Identifier: MIT\nimport torch\nimport torch.nn as nn\n\n"
        "class Noisy(nn.Module):\n    def forward(self, x):\n        return x + torch.rand_like(x)\n\n"
        "class Constant(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n        self.w = nn.Parameter(torch.ones(dim))\n"
        "    def forward(self, x):\n        return self.w * 3\n\n"
        "class Fine(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n        self.fc = nn.Linear(dim, dim)\n"
        "    def forward(self, x):\n        return torch.sigmoid(self.fc(x))\n")
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    status = {p.name: (p.status, p.reject_reason) for p in result.problems}
    assert status == {"Noisy": ("rejected", "nondeterministic"), "Constant": ("rejected", "input_independent"),
                      "Fine": ("runnable", None)}
    fine = next(p for p in result.problems if p.name == "Fine")
    assert fine.init_spec and fine.input_spec[0]["shape"][-1] == fine.init_spec[0]["value"]


def test_apache_2_however_spelt_is_the_allowed_apache_2_0(tmp_path):
    """uni2ts' files carry `SPDX-License-Identifier: Apache-2` (not an SPDX id): read as Apache-2.0,
    an allowed licence, not refused as a licence of its own; a GPL header still is."""
    from autotriton.harvesting import harvest_local
    from autotriton.harvesting.licences import normalize_spdx

    body = ("import torch\nimport torch.nn as nn\n\n"
            "class Scale{n}(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
            "        self.w = nn.Parameter(torch.randn(dim))\n\n    def forward(self, x):\n        return x * self.w\n")
    (tmp_path / "a.py").write_text("#  SPDX-License-Identifier: Apache-2\n" + body.format(n="A"))
    (tmp_path / "g.py").write_text("# SPDX-License-Identifier: GPL-3.0-only\n" + body.format(n="G"))
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    assert [(p.name, p.status, p.licence) for p in result.problems] == [("ScaleA", "runnable", "Apache-2.0")]
    assert [r.reason for r in result.rejections] == ["licence_not_allowed"]
    for spelling in ("Apache License Version 2.0", "Apache Software License 2.0", "apache v2", "ASL 2.0", "Apache 2"):
        assert normalize_spdx(spelling) == "Apache-2.0", spelling
    assert normalize_spdx("Apache-1.1") == "Apache-1.1"
    # realesrgan's metadata: an id followed by the word
    assert normalize_spdx("BSD-3-Clause License") == "BSD-3-Clause" and normalize_spdx("MIT Licence") == "MIT"
    assert normalize_spdx("GPL-3.0 License") == "GPL-3.0"


def test_a_random_call_forward_never_makes_is_no_reason_to_reject_unless_nothing_runs_the_module(tmp_path):
    """Reading the source, `forward` reaches `sample` (a call by name) and its randn_like; running it, the
    branch is never taken in eval mode, so the probe (torch's RNG moved before forward) keeps the module.
    With harvest.probe off, the source is all there is to go by and the module is refused."""
    from autotriton.harvesting import harvest_local

    (tmp_path / "m.py").write_text(
        "# SPDX-License-Identifier: MIT\nimport torch\nimport torch.nn as nn\n\n"
        "class MaybeNoisy(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        "        self.fc = nn.Linear(dim, dim)\n        self.noisy = False\n\n"
        "    def sample(self, y):\n        return y + torch.randn_like(y)\n\n"
        "    def forward(self, x):\n        y = torch.tanh(self.fc(x))\n"
        "        return self.sample(y) if self.noisy else y\n\n"
        "class Noisy(nn.Module):\n    def forward(self, x):\n        return x * torch.rand_like(x)\n")
    probed = {p.name: (p.status, p.reject_reason) for p in harvest_local(tmp_path, HarvestConfig(incremental=False)).problems}
    assert probed == {"MaybeNoisy": ("runnable", None), "Noisy": ("rejected", "nondeterministic")}
    unprobed = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False))
    assert {p.name: p.reject_reason for p in unprobed.problems} == {"MaybeNoisy": "nondeterministic", "Noisy": "nondeterministic"}
    detail = unprobed.details[next(p.key for p in unprobed.problems if p.name == "MaybeNoisy")]
    assert "torch.randn_like" in detail


def test_a_keyword_only_constructor_becomes_a_problem_built_from_positional_inputs(tmp_path):
    """`__init__(self, *, dim, heads=2, depth)` (vit-pytorch's style): the problem's Model takes them
    positionally (required first), so `Model(*get_init_inputs())` builds it; the module runs in the
    sandbox as before. A nested class's keyword-only __init__ is left alone."""
    import ast

    from autotriton.harvesting import harvest_local

    (tmp_path / "m.py").write_text(
        "# SPDX-License-Identifier: MIT\nimport torch\nimport torch.nn as nn\n\n"
        "class Block(nn.Module):\n"
        "    class Options:\n        def __init__(self, *, eps):\n            self.eps = eps\n\n"
        "    def __init__(self, *, dim, heads=2, depth):\n        super().__init__()\n"
        "        self.fc = nn.Linear(dim, dim * heads)\n        self.depth = depth\n\n"
        "    def forward(self, x):\n        return torch.tanh(self.fc(x)) * self.depth\n")
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    (p,) = result.problems
    assert (p.status, p.reject_reason) == ("runnable", None), result.details.get(p.key)
    tree = ast.parse(p.reference_source)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    init = next(n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    assert [a.arg for a in init.args.args] == ["self", "dim", "depth", "heads"] and not init.args.kwonlyargs
    assert "def __init__(self, *, eps)" in p.reference_source


def test_a_module_that_is_the_identity_at_its_initial_parameters_is_probed_with_them_moved(tmp_path):
    """vit-pytorch's Affine (x * g + b with g = 1, b = 0) returns its input at initialisation: the
    problem keeps it and moves its parameters in a Model subclass (the reference's values, which the
    judge loads into candidates). A module with nothing to move (identity in eval mode) stays refused."""
    import torch

    from autotriton.harvesting import harvest_local

    (tmp_path / "m.py").write_text(
        "# SPDX-License-Identifier: MIT\nimport torch\nimport torch.nn as nn\n\n"
        "class Affine(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        "        self.g = nn.Parameter(torch.ones(1, 1, dim))\n        self.b = nn.Parameter(torch.zeros(1, 1, dim))\n\n"
        "    def forward(self, x):\n        return x * self.g + self.b\n\n"
        "class Skip(nn.Module):\n    def __init__(self, p=0.1):\n        super().__init__()\n        self.p = p\n\n"
        "    def forward(self, x):\n        return nn.functional.dropout(x, self.p, self.training)\n")
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    status = {p.name: (p.status, p.reject_reason) for p in result.problems}
    assert status == {"Affine": ("runnable", None), "Skip": ("rejected", "returns_input")}
    affine = next(p for p in result.problems if p.name == "Affine")
    ns: dict = {}
    exec(compile(affine.reference_source, "problem.py", "exec"), ns)
    torch.manual_seed(0)
    model = ns["Model"](*ns["get_init_inputs"]()).eval()
    (x,) = ns["get_inputs"]()
    assert isinstance(model, ns["InitialModel"]) and not torch.allclose(model(x), x)
    assert sorted(model.state_dict()) == ["b", "g"]  # the module's own parameters, nothing added


def test_a_class_decorator_that_reads_the_keyword_only_signature_is_left_out_of_the_problem(tmp_path):
    """spandrel's `@store_hyperparameters()` raises unless every __init__ parameter is keyword-only:
    once the problem's Model takes them positionally, the decorator (which saw the class as
    written) is left out, and the class builds and runs (37 classes of held-out set 34 lost)."""
    from autotriton.harvesting.renaming import positional_init
    from test_harvesting_synthesis import assert_all_runnable

    source = (
        "import inspect\n\n"
        "def store_hyperparameters():\n    def inner(cls):\n"
        "        spec = inspect.getfullargspec(cls.__init__)\n"
        "        if spec.args != ['self']:\n"
        "            raise UserWarning('all arguments of ' + cls.__name__ + '.__init__ must be keyword arguments')\n"
        "        return cls\n    return inner\n\n"
        "@store_hyperparameters()\nclass Upscaler(nn.Module):\n"
        "    def __init__(self, *, dim: int, scale: int = 2):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, dim, 3, padding=1)\n        self.out = nn.Conv2d(dim, 3 * scale ** 2, 3, padding=1)\n"
        "        self.shuffle = nn.PixelShuffle(scale)\n\n"
        "    def forward(self, x):\n        return self.shuffle(self.out(torch.relu(self.conv(x))))\n")
    assert "@store_hyperparameters()" not in positional_init(source, "Upscaler")
    plain = source.replace("*, dim: int", "dim: int")  # nothing rewritten: the decorator stays (and refuses)
    assert positional_init(plain, "Upscaler") == plain
    assert_all_runnable(tmp_path, "upscale.py", source, 1)

"""Dependency environments: a harvested module is probed and judged with its own dependencies.

The end-to-end test installs einops (a small pure-Python wheel) from PyPI into a cache under the
test's tmp dir: harvest -> environment built once (a second harvest reuses it) -> runnable problem
-> stored with its requirement set -> the judge judges a Triton candidate for it with the
environment; a missing and an unresolvable requirement are reported with their names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotriton.environments import (
    DependencyError, EnvironmentCache, EnvironmentConfig, environment_paths, normalize_requirements, pip_error,
    requirement_key,
)
from autotriton.harvesting import HarvestConfig, harvest_local
from autotriton.harvesting.requirements import declared_requirements, module_requirements

MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"

BLOCKS = '''\
import torch
import torch.nn as nn
from einops import rearrange


class ChannelsLastScale(nn.Module):
    """Moves channels last, einops-style, and scales."""

    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return rearrange(x, "b c ... -> b ... c") * self.scale
'''

GOOD_CANDIDATE = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _channels_last_scale_kernel(x_ptr, out_ptr, C, M, total, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    c = offs % C
    m = (offs // C) % M
    b = offs // (C * M)
    v = tl.load(x_ptr + b * C * M + c * M + m, mask=mask)
    tl.store(out_ptr + offs, v * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        B = x.shape[0]
        C = x.shape[1]
        M = x.numel() // (B * C)
        out = torch.empty([B] + list(x.shape[2:]) + [C], device=x.device, dtype=x.dtype)
        total = x.numel()
        _channels_last_scale_kernel[(triton.cdiv(total, 256),)](x, out, C, M, total, self.scale, BLOCK=256)
        return out
'''

# einops does the work (rearrange, and a reduce that runs aten.sum); a Triton kernel only scales.
EINOPS_CANDIDATE = '''\
import torch
import torch.nn as nn
import triton
import triton.language as tl
from einops import rearrange, reduce


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float = 2.0):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        y = reduce(rearrange(x, "b c ... -> b ... c 1"), "b ... c one -> b ... c", "sum").contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        _scale_kernel[(triton.cdiv(n, 256),)](y, out, n, self.scale, BLOCK=256)
        return out
'''


def _package(root: Path, name: str, dependencies: list[str], files: dict[str, str]) -> Path:
    pkg = root / name
    (pkg / name).mkdir(parents=True)
    (pkg / "LICENSE").write_text(MIT)
    (pkg / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1"\nlicense = "MIT"\ndependencies = {json.dumps(dependencies)}\n')
    (pkg / name / "__init__.py").write_text("")
    for rel, text in files.items():
        (pkg / name / rel).write_text(text)
    return pkg


# -- what a module needs, read statically ------------------------------------------------------


def test_declared_requirements_come_from_pyproject_setup_py_and_requirements_files():
    files = {
        "pyproject.toml": '[project]\ndependencies = ["einops>=0.7", "torch>=2"]\n[project.optional-dependencies]\nvis = ["Pillow<12"]\n',
        "setup.py": 'BASE = ["timm>=0.9"]\nsetup(name="x", install_requires=BASE + ["loguru"], extras_require={"cv": ["opencv-python>=4"]})\n',
        "requirements.txt": "# pinned\nPyYAML==6.0.2  # config\n-r other.txt\ngit+https://example.invalid/x.git\n",
        "requirements/dev.txt": "pytest\n",
        # setuptools' declarative config (k-diffusion declares its dependencies there only, set 17)
        "setup.cfg": "[metadata]\nname = x\n\n[options]\ninstall_requires =\n\tclean-fid\n\ttorch >= 2.0  # any\n"
                     "\n[options.extras_require]\ndocs =\n\tsphinx<8\n",
    }
    declared = declared_requirements(files.get, list(files))
    assert declared == {"einops": "einops>=0.7", "torch": "torch>=2", "pillow": "Pillow<12", "timm": "timm>=0.9",
                        "loguru": "loguru", "opencv-python": "opencv-python>=4", "clean-fid": "clean-fid",
                        "sphinx": "sphinx<8", "pyyaml": "PyYAML==6.0.2", "pytest": "pytest"}


def test_module_requirements_map_imports_to_distributions_with_the_declared_specifiers():
    source = (
        "import os\nimport torch\nimport numpy as np\nimport triton.language as tl\nfrom einops import rearrange\n"
        "import cv2\nfrom PIL import Image\nimport yaml\nfrom sklearn.cluster import KMeans\nimport mypkg.layers\n"
        "try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pandas\n"
    )
    reqs = module_requirements(source, {"einops": "einops>=0.7", "opencv-python": "opencv-python>=4"},
                               local_packages={"mypkg"}, providers={})
    # the judge's own torch/triton/numpy, the standard library, the repository's own package and
    # guarded (optional) imports are not requirements; cv2 takes the distribution the repository declares
    assert reqs == ["einops>=0.7", "opencv-python>=4", "pillow", "pyyaml", "scikit-learn"]


def test_imports_named_unlike_their_distribution_get_the_distribution_and_a_release_that_still_has_them():
    """pytorch-wavelets imports `pywt` (PyWavelets) and `pkg_resources` without declaring either: the
    import names are not distributions on PyPI ("Could not find a version that satisfies the
    requirement pywt"), and setuptools dropped pkg_resources in release 81."""
    source = "import pywt\nimport pkg_resources\nimport open_clip\nimport faiss\n"
    assert module_requirements(source, {}, providers={}) == ["pywavelets", "setuptools<81", "open-clip-torch", "faiss-cpu"]
    # what the repository declares still wins
    assert module_requirements(source, {"setuptools": "setuptools>=60,<70"}, providers={})[1] == "setuptools>=60,<70"


def test_an_import_named_unlike_any_distribution_takes_the_declared_one_its_name_begins_or_ends():
    """BitNet imports `zeta` and declares `zetascale` (set 16): the requirement was `zeta`, which is
    not on PyPI; a declared distribution whose name begins or ends with the import's is the one, when
    exactly one fits."""
    source = "import zeta\nfrom zeta.nn import MultiQueryAttention\nimport yamlx\n"
    declared = {"zetascale": "zetascale>=2", "einops": "einops", "pyyamlx": "pyyamlx", "yamlx-extra": "yamlx-extra"}
    assert module_requirements(source, declared, providers={}) == ["zetascale>=2", "yamlx"]  # two fit yamlx: its own name
    assert module_requirements("import zeta\n", {}, providers={}) == ["zeta"]  # nothing declared: the import's name
    # k-diffusion (set 17) declares clean-fid and clip-anytorch for its `cleanfid` and `clip` imports:
    # separators aside, and over the usual distribution of `clip` (openai-clip)
    kd = {"clean-fid": "clean-fid", "clip-anytorch": "clip-anytorch", "einops": "einops"}
    assert module_requirements("import cleanfid\nimport clip\n", kd, providers={}) == ["clean-fid", "clip-anytorch"]
    assert module_requirements("import clip\n", {}, providers={}) == ["openai-clip"]
    # stable-audio-tools (set 37) imports `dac` and declares descript-audio-codec: the words' initials
    sat = {"descript-audio-codec": "descript-audio-codec==1.0.0", "einops": "einops", "k-diffusion": "k-diffusion"}
    assert module_requirements("import dac\nimport kd\n", sat, providers={}) == ["descript-audio-codec==1.0.0", "kd"]


def test_requirement_sets_are_normalised_and_keyed_without_the_judges_packages():
    a = normalize_requirements(["Einops>=0.6", "einops<1", "torch>=2.0", "numpy", "PyYAML", "win-only; sys_platform == 'win32'"])
    assert a == ["einops<1,>=0.6", "pyyaml"]
    assert requirement_key(["pyyaml", "einops>=0.6,<1"]) == requirement_key(a)
    assert requirement_key(["torch"]) is None
    with pytest.raises(ValueError, match="does not parse"):
        normalize_requirements(["einops >>> 1"])


@pytest.mark.parametrize("output, reason", [
    ("ERROR: Could not find a version that satisfies the requirement nopkg-zq>=1 (from versions: none)\n"
     "ERROR: No matching distribution found for nopkg-zq>=1", "missing_dependency:nopkg-zq"),
    ("ERROR: Could not find a version that satisfies the requirement einops>=999 (from versions: 0.1.0, 0.8.1)",
     "unresolvable_dependency:einops"),
    ("ERROR: Cannot install torchvision==0.1 because these package versions have conflicting dependencies.\n\n"
     "The conflict is caused by:\n    The user requested torch==2.13.0\n    torchvision 0.1 depends on torch==1.0\n",
     "unresolvable_dependency:torchvision"),
])
def test_pip_failures_name_the_requirement_at_fault(output, reason):
    err = pip_error(output, ["nopkg-zq>=1", "einops>=999", "torchvision==0.1"])
    assert err.reason == reason and err.detail
    # built wheels-only (the default), a "not found" says why: fairscale is published as source alone
    wheels = pip_error(output, ["nopkg-zq>=1", "einops>=999", "torchvision==0.1"], wheels_only=True)
    assert wheels.reason == reason
    assert ("allow_sdist" in wheels.detail) == reason.startswith("missing_dependency")


def test_the_einops_compute_of_a_candidate_is_a_rule_violation_statically():
    from autotriton.validation import static_rules

    rules = {v.rule for v in static_rules(EINOPS_CANDIDATE)}
    assert "IMPORT-FORBIDDEN" in rules
    assert not {v.rule for v in static_rules(GOOD_CANDIDATE)}


# -- end to end, with einops from PyPI ------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One judge pool (probe and judge), one environment cache, three harvests of a package that
    declares einops, one of a package whose requirements cannot be met."""
    from autotriton.validation import JudgePool, ValidationConfig

    root = tmp_path_factory.mktemp("env-e2e")
    good = _package(root, "einblocks", ["einops>=0.6"], {"blocks.py": BLOCKS})
    broken = _package(root, "brokenblocks", ["autotriton-no-such-dist-zq>=1", "einops>=999"], {
        "missing.py": "import torch.nn as nn\nimport autotriton_no_such_dist_zq as z\n\n\nclass UsesMissing(nn.Module):\n"
                      "    def forward(self, x):\n        return z.f(x)\n",
        "too_new.py": "import torch.nn as nn\nfrom einops import reduce\n\n\nclass WantsFutureEinops(nn.Module):\n"
                      "    def forward(self, x):\n        return reduce(x, 'b c -> b', 'sum')\n",
    })
    envs = EnvironmentConfig(cache_dir=str(root / "envs"))
    cfg = HarvestConfig(incremental=False, state_path=str(root / "state.json"))
    vcfg = ValidationConfig(device="cpu", trials=2, workers=1, timeout_s=120.0)
    with JudgePool(vcfg) as pool:
        def probe(sources, environments=None):
            return pool.probe_many(sources, environments=environments)

        out = {"root": root, "envs": envs, "pool": pool}
        out["before"] = harvest_local(good, cfg, probe=probe)  # the judge's packages only (no einops here)
        out["first"] = harvest_local(good, cfg, probe=probe, environments=envs)
        marker = next((root / "envs").glob("*/autotriton-environment.json"))
        out["marker_mtime"] = marker.stat().st_mtime_ns
        out["second"] = harvest_local(good, cfg, probe=probe, environments=envs)
        out["marker_mtime_after"] = marker.stat().st_mtime_ns
        out["broken"] = harvest_local(broken, cfg, probe=probe, environments=envs)
        problem = next(p for p in out["first"].problems if p.name == "ChannelsLastScale")
        paths, missing = environment_paths([problem], envs)
        assert not missing
        pool.use_environments(paths)
        out["verdicts"] = pool.validate_many([(problem.reference_source, GOOD_CANDIDATE),
                                              (problem.reference_source, EINOPS_CANDIDATE)])
        yield out


def test_without_its_environment_an_einops_module_is_not_runnable(world):
    (p,) = [p for p in world["before"].problems if p.name == "ChannelsLastScale"]
    assert p.status == "rejected" and p.reject_reason == "missing_dependency"
    assert p.requirements == ["einops>=0.6"]  # what it would need is recorded all the same


def test_harvest_builds_the_environment_once_and_the_problem_runs_with_it(world):
    first, second = world["first"], world["second"]
    (p,) = [p for p in first.problems if p.name == "ChannelsLastScale"]
    assert p.status == "runnable", first.details.get(p.key)
    assert p.requirements == ["einops>=0.6"] and p.environment_key == requirement_key(["einops>=0.6"])
    assert first.stats["environments"]["built"] == 1 and first.stats["environments"]["reused"] == 0
    # the second harvest finds it in the cache: no pip run, the environment untouched
    assert second.stats["environments"] == {"built": 0, "reused": 1, "failed": 0, "build_s": 0.0}
    assert world["marker_mtime_after"] == world["marker_mtime"]
    assert [q.status for q in second.problems] == ["runnable"]
    env = EnvironmentCache(world["envs"]).lookup(["einops>=0.6"])
    assert env is not None and "einops" in env.installed
    # the judge's torch stays the judge's: nothing of it was installed into the environment
    assert not {"torch", "triton", "numpy"} & set(env.installed)


def test_missing_and_unresolvable_requirements_are_reported_with_their_names(world):
    result = world["broken"]
    by_name = {p.name: p for p in result.problems}
    missing, too_new = by_name["UsesMissing"], by_name["WantsFutureEinops"]
    assert missing.status == "rejected" and missing.reject_reason == "missing_dependency:autotriton-no-such-dist-zq"
    assert too_new.status == "rejected" and too_new.reject_reason == "unresolvable_dependency:einops"
    assert "einops>=999" in result.details[too_new.key] and "from versions" in result.details[too_new.key]
    assert result.stats["environments"]["failed"] == 2
    rows = {r["reason"] for r in result.rejection_rows()}
    assert {"missing_dependency:autotriton-no-such-dist-zq", "unresolvable_dependency:einops"} <= rows


def test_the_environment_is_stored_with_the_problem(world, tmp_path):
    from autotriton.warehouse import Warehouse

    (p,) = [p for p in world["first"].problems if p.name == "ChannelsLastScale"]
    with Warehouse(str(tmp_path / "wh.duckdb")) as wh:
        run = wh.start_run("harvest", {})
        wh.put_problems(run, [p])
        (stored,) = wh.problems(status="runnable")
    assert stored.requirements == ["einops>=0.6"] and stored.environment_key == p.environment_key


def test_the_judge_judges_a_triton_candidate_with_the_problems_environment(world):
    good, cheat = world["verdicts"]
    assert good.status == "correct" and good.rule_ok, (good.error, good.violations)
    assert good.triton_kernels_launched == ["_channels_last_scale_kernel"]
    # einops' compute inside ModelNew does not count as the kernel's work: the import is
    # forbidden, and at run time (einops imported from the environment) its aten.sum is caught
    rules = {v.rule for v in cheat.violations}
    assert cheat.status == "rule_violation" and not cheat.rule_ok
    assert {"IMPORT-FORBIDDEN", "RUNTIME-ATEN-COMPUTE"} <= rules, cheat.violations
    assert "sum" in next(v.message for v in cheat.violations if v.rule == "RUNTIME-ATEN-COMPUTE")


def test_dependency_error_is_raised_with_the_name_when_building_directly(world):
    cache = EnvironmentCache(world["envs"])
    with pytest.raises(DependencyError) as err:
        cache.ensure(["autotriton-no-such-dist-zq>=1"])
    assert err.value.name == "autotriton-no-such-dist-zq"


def test_env_verbs_list_and_build_the_warehouses_recorded_environments(world, tmp_path):
    from typer.testing import CliRunner

    from autotriton.flows.cli import app
    from autotriton.warehouse import Warehouse

    (p,) = [p for p in world["first"].problems if p.name == "ChannelsLastScale"]
    rejected = [q for q in world["broken"].problems if q.status == "rejected" and q.requirements]
    assert rejected
    db = str(tmp_path / "wh.duckdb")
    with Warehouse(db) as wh:
        wh.put_problems(wh.start_run("harvest", {}), [p, *rejected])
    common = ["--db", db, "--set", f"environments.cache_dir={world['envs'].cache_dir}"]
    built = CliRunner().invoke(app, [*common, "env", "build", "--json"])
    assert built.exit_code == 0, built.output
    # the runnable problem's set only: a rejected problem is never distilled, so its set is not built
    assert json.loads(built.stdout.strip().splitlines()[-1]) == {"built": 0, "reused": 1, "failed": {}}
    everything = CliRunner().invoke(app, [*common, "env", "build", "--all", "--json"])
    failed = json.loads(everything.stdout.strip().splitlines()[-1])["failed"]
    assert any("autotriton-no-such-dist-zq" in reqs for reqs in failed), failed
    listed = CliRunner().invoke(app, [*common, "env", "list", "--json"])
    envs = json.loads(listed.stdout.strip().splitlines()[-1])["environments"]
    assert any(e["requirements"] == ["einops>=0.6"] and "einops" in e["installed"] for e in envs)
    missing = CliRunner().invoke(app, ["--db", str(tmp_path / "none.duckdb"), "env", "build"])
    assert missing.exit_code == 2 and "no such warehouse" in missing.output


@pytest.mark.slow
def test_the_inductor_teacher_captures_the_reference_with_its_environment(world):
    """The teacher runs the reference too (torch.compile in a child process): with the problem's
    environment einops imports there; without it, the capture fails on the import."""
    from autotriton.distillation.inductor import capture_in_subprocess

    (p,) = [p for p in world["first"].problems if p.name == "ChannelsLastScale"]
    paths, _ = environment_paths([p], world["envs"])
    with_env = capture_in_subprocess(p.reference_source, name=p.name, timeout_s=300, device="cpu", max_autotune=False,
                                     env_paths=paths[p.key])
    assert with_env["ok"], with_env.get("error")
    without = capture_in_subprocess(p.reference_source, name=p.name, timeout_s=300, device="cpu", max_autotune=False)
    assert not without["ok"] and "einops" in str(without.get("error"))


def test_a_package_harvest_installs_what_the_packages_metadata_declares(world, tmp_path):
    """`harvest packages`: the unpacked wheel declares einops in its METADATA (Requires-Dist, with
    an extra that the module never imports); the module becomes runnable with einops installed,
    its requirement set taking the package's specifier. The environment built above is reused."""
    from autotriton.harvesting import harvest_packages
    from autotriton.harvesting.packages import PackageSource, SourcesFile

    cache = tmp_path / "pkgcache"
    root = cache / "einwheel-0.3-wheel"  # as fetch_package leaves an unpacked wheel: reused, no pip run
    (root / "einwheel").mkdir(parents=True)
    (root / "einwheel" / "__init__.py").write_text("")
    (root / "einwheel" / "blocks.py").write_text(BLOCKS)
    info = root / "einwheel-0.3.dist-info"
    info.mkdir()
    (info / "LICENSE").write_text(MIT)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: einwheel\nVersion: 0.3\nLicense: MIT\n"
                                   "Requires-Dist: einops>=0.6\nRequires-Dist: torch>=2\n"
                                   "Requires-Dist: matplotlib; extra == 'plots'\n\nRequires-Dist: not-a-header\n")
    spec = SourcesFile(tmp_path / "sources.toml", packages=[PackageSource("einwheel", "0.3", include=("einwheel",))])
    cfg = HarvestConfig(incremental=False, package_cache=str(cache))

    def probe(sources, environments=None):
        return world["pool"].probe_many(sources, environments=environments)

    without = harvest_packages(spec, cfg, probe=probe).result
    with_envs = harvest_packages(spec, cfg, probe=probe, environments=world["envs"]).result
    (before,) = [p for p in without.problems if p.name == "ChannelsLastScale"]
    (after,) = [p for p in with_envs.problems if p.name == "ChannelsLastScale"]
    assert before.status == "rejected" and before.reject_reason == "missing_dependency"
    assert after.status == "runnable", with_envs.details.get(after.key)
    assert after.requirements == ["einops>=0.6"] and after.environment_key == requirement_key(["einops>=0.6"])
    assert with_envs.stats["environments"]["reused"] == 1 and with_envs.stats["environments"]["built"] == 0


def test_declared_requirements_of_unpacked_packages_read_their_metadata(tmp_path):
    from autotriton.harvesting.requirements import declared_in_package

    sdist = tmp_path / "sdist"
    sdist.mkdir()
    (sdist / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: x\nRequires-Dist: einops>=0.7\n"
                                    "Requires-Dist: timm; python_version >= '3.9'\n\nlong description\nRequires-Dist: nope\n")
    (sdist / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["einops>=0.8"]\n')
    # the folder's own pyproject wins over the metadata; markers are dropped; the body is not read
    assert declared_in_package(sdist) == {"einops": "einops>=0.8", "timm": "timm"}


def _wheel(folder: Path, dist: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel of `files` whose metadata declares `requires` (default: no dependency)."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{dist.replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    info = f"{stem}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {**files, f"{info}/METADATA": metadata,
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: autotriton-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
        zf.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n")
    return path


def _harvest_with_wheels(world, tmp_path: Path, pkg: Path, wheels: Path | None = None):
    """(harvest_local of `pkg` with the world's judge as probe and an environment cache of its own,
    `wheels` a wheelhouse beside the index, the environment config used)."""
    update = {"cache_dir": str(tmp_path / "envs"), **({"find_links": [str(wheels)]} if wheels else {})}
    envs = world["envs"].model_copy(update=update)
    cfg = HarvestConfig(incremental=False, state_path=str(tmp_path / "state.json"))

    def probe(sources, environments=None):
        return world["pool"].probe_many(sources, environments=environments)

    return harvest_local(pkg, cfg, probe=probe, environments=envs), envs


def test_a_dependency_that_imports_an_undeclared_package_gets_it_installed_when_the_probe_names_it(world, tmp_path):
    """The repository declares `atzq-vendored-lib`, whose own metadata forgets that it imports einops
    (as segment_anything imports torchvision): the first probe fails with `No module named 'einops'`;
    einops is added to the module's requirements, its environment built, and the same guess runs.
    A missing package that no index has is still missing_dependency, its detail saying what was tried."""
    wheels = tmp_path / "wheels"
    _wheel(wheels, "atzq-vendored-lib", "0.1", {
        "atzq_vendored/__init__.py": "import einops\n\n\ndef flip(x):\n    return einops.rearrange(x, 'b c -> c b')\n",
        "atzq_vendored/gone.py": "import atzq_nowhere_mod_zq\n\n\ndef f(x):\n    return x\n",
    })
    pkg = _package(tmp_path, "usesvendor", ["atzq-vendored-lib"], {
        "flip.py": "import torch\nimport torch.nn as nn\nfrom atzq_vendored import flip\n\n\nclass FlipScale(nn.Module):\n"
                   "    def forward(self, x):\n        return flip(x) * 2.0\n",
        "gone.py": "import torch.nn as nn\nfrom atzq_vendored.gone import f\n\n\nclass UsesGone(nn.Module):\n"
                   "    def forward(self, x):\n        return f(x) + 1.0\n",
    })
    result, envs = _harvest_with_wheels(world, tmp_path, pkg, wheels)
    by_name = {p.name: p for p in result.problems}
    flip_scale, gone = by_name["FlipScale"], by_name["UsesGone"]
    assert flip_scale.status == "runnable", result.details.get(flip_scale.key)
    assert flip_scale.requirements == ["atzq-vendored-lib", "einops"]
    assert flip_scale.environment_key == requirement_key(["atzq-vendored-lib", "einops"])
    assert "einops" in EnvironmentCache(envs).lookup(flip_scale.requirements).installed
    # both modules import the package, whose __init__ imports einops: added for each
    assert result.stats["added_dependencies"] == {"einops": 2}
    assert gone.status == "rejected" and gone.reject_reason == "missing_dependency"
    assert gone.requirements == ["atzq-vendored-lib", "einops"]
    detail = result.details[gone.key]
    assert "atzq_nowhere_mod_zq" in detail and "installing atzq-nowhere-mod-zq failed" in detail
    assert result.stats["missing_dependencies"] == {"atzq_nowhere_mod_zq": 1}


def test_an_upper_bound_no_installable_release_meets_is_dropped_and_the_module_probed_with_a_newer_one(world, tmp_path):
    """A package pinned below what installs beside the judge's torch (audiocraft's
    `torchaudio<2.1.2,>=2.0.0`; here `einops<0.1`, which no release meets): the bound is dropped, the
    environment built with the newest release, and the module runs with it; the problem records
    what was installed. A lower bound no release meets (`einops>=999`, above) is not loosened."""
    from autotriton.harvesting.problem_environments import without_upper_bounds as _without_upper_bounds

    assert _without_upper_bounds(["torchaudio<2.1.2,>=2.0.0", "einops"], "torchaudio") == ["torchaudio>=2.0.0", "einops"]
    assert _without_upper_bounds(["xformers[full]==0.0.22; python_version >= '3.8'"], "xformers") == [
        'xformers[full]; python_version >= "3.8"']
    assert _without_upper_bounds(["einops>=999"], "einops") is None

    pkg = _package(tmp_path, "pinnedblocks", ["einops<0.1"], {"blocks.py": BLOCKS})
    envs = world["envs"].model_copy(update={"cache_dir": str(tmp_path / "envs")})
    cfg = HarvestConfig(incremental=False, state_path=str(tmp_path / "state.json"))

    def probe(sources, environments=None):
        return world["pool"].probe_many(sources, environments=environments)

    result = harvest_local(pkg, cfg, probe=probe, environments=envs)
    (p,) = [p for p in result.problems if p.name == "ChannelsLastScale"]
    assert p.status == "runnable", result.details.get(p.key)
    assert p.requirements == ["einops"] and p.environment_key == requirement_key(["einops"])
    assert result.stats["relaxed_requirements"] == {"einops<0.1": 1}


def test_an_import_no_distribution_is_named_after_is_left_to_the_packages_that_bring_it(world, tmp_path):
    """The repository declares `atzq-codec` (import `atzqc`), which requires `atzq-signal-tools`
    (import `atzqsig`, as descript-audio-codec brings descript-audiotools' `audiotools`); the module
    imports both. `atzqsig`, guessed as a distribution of its own name, is on no index: it is left
    out of the set (and counted), the environment built from the rest, and the module runs with the
    import its dependency installed. Alone in a set, such a name is still missing_dependency (above)."""
    from autotriton.harvesting.problem_environments import without_missing

    assert without_missing(["atzq-codec", "atzqsig"], "atzqsig") == ["atzq-codec"]
    assert without_missing(["atzqsig"], "atzqsig") is None

    wheels = tmp_path / "wheels"
    _wheel(wheels, "atzq-codec", "0.1", {"atzqc/__init__.py": "def twice(x):\n    return x * 2\n"},
           requires=("atzq-signal-tools",))
    _wheel(wheels, "atzq-signal-tools", "0.1", {"atzqsig/__init__.py": "def plus_one(x):\n    return x + 1\n"})
    pkg = _package(tmp_path, "codecblocks", ["atzq-codec"], {
        "codec.py": "import torch\nimport torch.nn as nn\nfrom atzqc import twice\nfrom atzqsig import plus_one\n\n\n"
                    "class Codec(nn.Module):\n    def forward(self, x):\n        return plus_one(twice(x))\n",
    })
    result, envs = _harvest_with_wheels(world, tmp_path, pkg, wheels)
    (codec,) = [p for p in result.problems if p.name == "Codec"]
    assert codec.status == "runnable", result.details.get(codec.key)
    assert codec.requirements == ["atzq-codec"]
    assert "atzq-signal-tools" in EnvironmentCache(envs).lookup(codec.requirements).installed
    assert result.stats["relaxed_requirements"] == {"atzqsig (no such distribution)": 1}

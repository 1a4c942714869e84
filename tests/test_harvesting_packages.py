"""Package sources (issue 17): a sources file names pinned packages (and folders); each is fetched
with pip (here from a local find-links folder holding a source distribution built in the test, so
no network), unpacked, licence-checked and harvested with package/version/path provenance."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.harvesting import HarvestConfig, HarvestInputError
from autotriton.harvesting.packages import FetchError, harvest_packages, load_sources, missing_module, package_licence

MIT = """MIT License

Copyright (c) 2026 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""

LAYERS = '''import torch
from torch import nn

from .helpers import scale


class Scaled(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return scale(self.proj(x))


class Gated(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * x
'''

NEEDS_EINOPS = '''import torch
from torch import nn
from einops_absent_for_tests import rearrange


class Flatten(nn.Module):
    def forward(self, x):
        return rearrange(x, "b c -> (b c)")
'''


def make_sdist(folder: Path, name: str = "tinytorch-pkg", version: str = "0.1", licence: str = MIT,
               extra: dict[str, str] | None = None) -> Path:
    """A real source distribution (setup.py, PKG-INFO, LICENSE, the package) in `folder`."""
    pkg = name.replace("-", "_")
    top = f"{pkg}-{version}"
    files = {
        "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        "setup.py": f"from setuptools import setup\nsetup(name={name!r}, version={version!r}, packages=[{pkg!r}])\n",
        "LICENSE": licence,
        f"{pkg}/__init__.py": "",
        f"{pkg}/helpers.py": "def scale(x):\n    return x * 2.0\n",
        f"{pkg}/layers.py": LAYERS,
        f"{pkg}/needs_einops.py": NEEDS_EINOPS,
        f"{pkg}/tests/test_layers.py": "import torch\nclass TestOnly(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
        **(extra or {}),
    }
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / f"{pkg}-{version}.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return archive


@pytest.fixture
def local_index(tmp_path, monkeypatch):
    """pip reads only a local folder (find-links, no index): the test never touches the network."""
    links = tmp_path / "links"
    make_sdist(links)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def write_sources(tmp_path: Path, text: str, name: str = "sources.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_package_is_fetched_and_harvested_with_provenance(tmp_path, local_index):
    sources = write_sources(tmp_path, '[[package]]\nname = "tinytorch-pkg"\nversion = "0.1"\n'
                                      'include = ["tinytorch_pkg"]\nexclude = ["*/tests/*"]\n')
    cfg = HarvestConfig(probe=False, package_cache=str(tmp_path / "cache"), state_path=str(tmp_path / "state.json"))
    harvest = harvest_packages(sources, cfg)
    result = harvest.result
    assert (tmp_path / "cache" / "tinytorch-pkg-0.1-sdist" / "tinytorch_pkg" / "layers.py").is_file()
    runnable = sorted(p.name for p in result.problems if p.status == "runnable")
    assert runnable == ["Gated", "Scaled"]  # TestOnly is excluded by the glob
    refs = {r.path: r for r in result.sources}
    ref = refs["tinytorch_pkg/layers.py"]
    assert (ref.kind, ref.repo, ref.commit, ref.licence) == ("pypi", "tinytorch-pkg", "0.1", "MIT")
    assert ref.url == "https://pypi.org/project/tinytorch-pkg/0.1/#sdist:tinytorch_pkg/layers.py"
    scaled = next(p for p in result.problems if p.name == "Scaled")
    assert "return v0 * 2.0" in scaled.reference_source or "def scale" in scaled.reference_source  # the helper came along
    stats = harvest.per_source["tinytorch-pkg==0.1"]
    assert stats["runnable"] == 2 and stats["rejected"] == {"missing_dependency": 1}
    assert stats["missing_modules"] == {"einops_absent_for_tests": 1}  # the module a dependency environment must provide
    # A pinned package harvested before is not fetched or read again.
    again = harvest_packages(sources, cfg)
    assert again.result.unchanged == 1 and again.result.problems == []


def test_licence_outside_the_allowlist_is_recorded_not_harvested(tmp_path, monkeypatch):
    links = tmp_path / "links"
    make_sdist(links, licence="GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    sources = write_sources(tmp_path, '[[package]]\nname = "tinytorch-pkg"\nversion = "0.1"\n')
    cfg = HarvestConfig(probe=False, package_cache=str(tmp_path / "cache"), incremental=False)
    result = harvest_packages(sources, cfg).result
    assert result.problems == []
    assert [(r.subject, r.reason) for r in result.rejections] == [("tinytorch-pkg==0.1", "licence_not_allowed")]
    assert "GPL-3.0" in result.rejections[0].detail


def test_a_version_pip_cannot_find_is_recorded_and_the_rest_goes_on(tmp_path, local_index):
    sources = write_sources(tmp_path, '[[package]]\nname = "tinytorch-pkg"\nversion = "9.9"\n\n'
                                      '[[package]]\nname = "tinytorch-pkg"\nversion = "0.1"\n')
    cfg = HarvestConfig(probe=False, package_cache=str(tmp_path / "cache"), incremental=False)
    result = harvest_packages(sources, cfg, fetch_timeout_s=120).result
    failed = [r for r in result.rejections if r.reason == "fetch_failed"]
    assert [r.subject for r in failed] == ["tinytorch-pkg==9.9"] and "check the name and version" in failed[0].detail
    assert sum(p.status == "runnable" for p in result.problems) == 3  # no exclude: tests/ counts too


@pytest.mark.parametrize("text, message", [
    ('[[package]]\nname = "timm"\n', "package #1 (timm): `version` must be a pinned version"),
    ('[[package]]\nname = "timm"\nversion = "1.0"\nincludes = ["x"]\n', "unknown field(s) includes"),
    ('[[package]]\nname = "timm"\nversion = "1.0"\ninclude = "timm/layers"\n\n[[package]]\nname = "timm"\nversion = "1.0"\n',
     "package #2: timm==1.0 is listed twice"),
    ("packages = []\n", "unknown key(s) packages"),
    ("", "lists no package and no folder"),
    ("[[package]\n", "not valid TOML"),
])
def test_bad_sources_files_name_the_entry_at_fault(tmp_path, text, message):
    with pytest.raises(HarvestInputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        load_sources(write_sources(tmp_path, text))


def test_yaml_sources_and_the_shipped_default_list():
    root = Path(__file__).resolve().parents[1]
    shipped = load_sources(root / "harvesting" / "sources" / "pytorch.toml")
    assert len(shipped.packages) >= 12 and len({p.name for p in shipped.packages}) == len(shipped.packages)
    assert all(p.version[0].isdigit() and p.include for p in shipped.packages)
    held_out = load_sources(root / "harvesting" / "sources" / "held_out.toml")  # issue 13's held-out sets, pinned
    names = [p.name.lower() for p in held_out.packages]
    assert len(names) >= 60 and len(set(names)) == len(names) and all(p.version[0].isdigit() for p in held_out.packages)
    assert not set(names) & {p.name.lower() for p in shipped.packages}  # the two lists never harvest a package twice


def test_yaml_file_with_a_folder(tmp_path):
    (tmp_path / "models").mkdir()
    path = write_sources(tmp_path, "package:\n  - name: timm\n    version: '1.0.31'\nfolder:\n  - path: models\n", "s.yaml")
    spec = load_sources(path)
    assert spec.packages[0].label == "timm==1.0.31" and spec.folders[0].path == str(tmp_path / "models")


def test_missing_module_is_read_from_either_wording():
    assert missing_module("x.py:3: needs package `einops`, which is not installed") == "einops"
    assert missing_module("ModuleNotFoundError: No module named 'timm.layers'") == "timm"
    assert missing_module("RuntimeError: shapes") is None


def test_wheel_metadata_licence(tmp_path):
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: pkg\nLicense-Expression: BSD-3-Clause\n\nbody\n")
    assert package_licence(tmp_path) == "BSD-3-Clause"


def test_a_licence_the_metadata_names_but_the_harvest_does_not_know_is_quoted(tmp_path):
    """fastervit's METADATA says `License: NVIDIA Source Code License-NC`: not an SPDX id, so the
    package is refused as licence_unknown, and the refusal quotes what the metadata names (it said
    "no ... packaging metadata names a licence")."""
    from autotriton.harvesting import HarvestConfig
    from autotriton.harvesting.core import Harvester
    from autotriton.harvesting.packages import named_licence

    info = tmp_path / "fastvit-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fastvit\nLicense: NVIDIA Source Code License-NC\n\nbody\n")
    assert package_licence(tmp_path) is None and named_licence(tmp_path) == "NVIDIA Source Code License-NC"
    harvester = Harvester(HarvestConfig(incremental=False))
    assert not harvester.licence_ok(None, "fastvit==1.0", named=named_licence(tmp_path))
    (rejection,) = harvester.result.rejections
    assert rejection.reason == "licence_unknown" and "'NVIDIA Source Code License-NC'" in rejection.detail
    assert named_licence(tmp_path.parent / "nothing-here") is None


def test_cli_verb_stores_and_reports_per_package(tmp_path, local_index, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sources = write_sources(tmp_path, '[[package]]\nname = "tinytorch-pkg"\nversion = "0.1"\ninclude = ["tinytorch_pkg"]\n'
                                      'exclude = ["*/tests/*"]\n\n[[package]]\nname = "tinytorch-pkg"\nversion = "9.9"\n')
    db = tmp_path / "w.duckdb"
    result = CliRunner().invoke(app, ["--db", str(db), "--set", f"harvest.package_cache={tmp_path / 'cache'}",
                                      "harvest", "packages", "--sources", str(sources), "--no-probe", "--json"])
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["runnable"] == 2 and summary["per_source"]["tinytorch-pkg==0.1"]["missing_modules"] == {"einops_absent_for_tests": 1}
    assert summary["new_rows"]["problems"] == 3 and summary["file_errors"] == {"fetch_failed": 1}
    # one run per package, each stored when it was done (a cut-off harvest keeps the finished ones)
    runs = CliRunner().invoke(app, ["--db", str(db), "db", "sql", "SELECT count(*) FROM runs WHERE kind = 'harvest-packages'", "--json"])
    assert json.loads(runs.stdout)["rows"] == [[2]]
    rows = CliRunner().invoke(app, ["--db", str(db), "db", "sql", "SELECT DISTINCT kind, repo, \"commit\" FROM sources", "--json"])
    assert json.loads(rows.stdout)["rows"] == [["pypi", "tinytorch-pkg", "0.1"]]
    none = CliRunner().invoke(app, ["--db", str(db), "harvest", "packages"])
    assert none.exit_code == 2 and "--sources" in none.stderr


def test_fetch_only_fills_the_cache_with_sources_only(tmp_path, monkeypatch):
    """`--fetch-only` on a machine with network, the harvest later on one without: the cache keeps
    Python files, licences and metadata, nothing else."""
    links = tmp_path / "links"
    make_sdist(links, extra={"tinytorch_pkg/weights.bin": "\0" * 64, "docs/index.md": "# docs\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    sources = write_sources(tmp_path, '[[package]]\nname = "tinytorch-pkg"\nversion = "0.1"\n')
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "w.duckdb"), "--set", f"harvest.package_cache={tmp_path / 'cache'}",
                                      "harvest", "packages", "--sources", str(sources), "--fetch-only", "--json"])
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["packages"]["tinytorch-pkg==0.1"]["format"] == "sdist" and summary["failed"] == 0
    root = tmp_path / "cache" / "tinytorch-pkg-0.1-sdist"
    kept = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert kept == ["LICENSE", "PKG-INFO", "setup.py", "tinytorch_pkg/__init__.py", "tinytorch_pkg/helpers.py",
                    "tinytorch_pkg/layers.py", "tinytorch_pkg/needs_einops.py", "tinytorch_pkg/tests/test_layers.py"]
    assert not (root / "docs").exists()  # emptied folders go too
    assert not (tmp_path / "w.duckdb").exists()  # nothing harvested, nothing stored


def test_include_globs_select_a_src_layout_sdist_like_its_wheel():
    """pytorch-metric-learning's sdist keeps its package in src/, its wheel at the top: the same
    `include = ["pytorch_metric_learning"]` must select both (it selected nothing in the sdist)."""
    from autotriton.harvesting.packages import PackageSource, _selected

    src = PackageSource("pytorch-metric-learning", "2.9.0", ("pytorch_metric_learning",), ("*/tests/*",))
    assert _selected("pytorch_metric_learning/losses/arcface_loss.py", src)
    assert _selected("src/pytorch_metric_learning/losses/arcface_loss.py", src)
    assert not _selected("src/pytorch_metric_learning/tests/test_x.py", src)
    assert not _selected("src/other_pkg/x.py", src) and not _selected("setup.py", src)


def make_wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel (dist-info with METADATA, WHEEL, RECORD) holding `files`."""
    import zipfile

    pkg = name.replace("-", "_")
    info = f"{pkg}-{version}.dist-info"
    files = {**files, f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nLicense: MIT\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
             f"{info}/licenses/LICENSE": MIT}
    files[f"{info}/RECORD"] = "".join(f"{p},,\n" for p in [*files, f"{info}/RECORD"])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pkg}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for rel, text in files.items():
            zf.writestr(rel, text)
    return path


OPS_SCALE = "def scale(x):\n    return x * 2.0\n"
USES_OPS = LAYERS.replace("from .helpers import scale", "from ._ops.scale import scale")


def test_an_sdist_that_keeps_a_package_in_another_folder_is_read_from_its_wheel(tmp_path, monkeypatch):
    """`package_dir={"pkg._ops": "ops"}` (spikingjelly 2.0.0's pyproject.toml): in the sdist the
    module `pkg._ops.scale` is the file ops/scale.py, so the layers' `from ._ops.scale import
    scale` finds no file; the wheel lays the same files out as their imports read them."""
    from autotriton.harvesting.packages import PackageSource, fetch_package
    from autotriton.harvesting.requirements import remapped_packages

    links = tmp_path / "links"
    setup = ("from setuptools import setup\nsetup(name='tinytorch-pkg', version='0.1', "
             "packages=['tinytorch_pkg', 'tinytorch_pkg._ops'], package_dir={'tinytorch_pkg._ops': 'ops'})\n")
    make_sdist(links, extra={"setup.py": setup, "ops/__init__.py": "", "ops/scale.py": OPS_SCALE,
                             "tinytorch_pkg/layers.py": USES_OPS})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    src = PackageSource("tinytorch-pkg", "0.1")
    # no wheel published: the sdist is all there is, and is taken
    folder, kind = fetch_package(src, tmp_path / "cache")
    assert kind == "sdist" and remapped_packages(folder) == {"tinytorch_pkg._ops": "ops"}
    # the wheel appears: the cached sdist is passed over for it
    make_wheel(links, "tinytorch-pkg", "0.1", {"tinytorch_pkg/__init__.py": "", "tinytorch_pkg/_ops/__init__.py": "",
                                               "tinytorch_pkg/_ops/scale.py": OPS_SCALE, "tinytorch_pkg/layers.py": USES_OPS})
    folder, kind = fetch_package(src, tmp_path / "cache")
    assert kind == "wheel" and (folder / "tinytorch_pkg" / "_ops" / "scale.py").is_file()
    # and the harvest of it makes both layers problems (Scaled through its helper)
    result = harvest_packages(write_sources(tmp_path, '[[package]]\nname = "tinytorch-pkg"\nversion = "0.1"\n'
                                            'include = ["tinytorch_pkg/layers.py"]\n'),
                              HarvestConfig(incremental=False, package_cache=str(tmp_path / "cache")))
    assert sorted((p.name, p.status) for p in result.result.problems) == [("Gated", "runnable"), ("Scaled", "runnable")]


def test_package_dirs_are_read_from_pyproject_and_setup_cfg_and_the_src_layout_is_not_one(tmp_path):
    from autotriton.harvesting.requirements import remapped_packages

    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"" = "src"\n"pkg._ops" = "ops"\n')
    (tmp_path / "setup.cfg").write_text("[options]\npackage_dir =\n    pkg.native = csrc/python\n    pkg = pkg\n")
    assert remapped_packages(tmp_path) == {"pkg._ops": "ops", "pkg.native": "csrc/python"}


def test_an_sdist_whose_build_computes_another_version_is_still_fetched(tmp_path, monkeypatch):
    """torchmd-net 3.1.0 publishes an sdist only, whose version setuptools-scm computes from git at
    build time: built without the repository it says 0.0.0, and pip refuses the file it found for
    ==3.1.0. The sdist pip resolved is the published one: fetched unbuilt and harvested."""
    from autotriton.harvesting.packages import PackageSource, fetch_package

    links = tmp_path / "links"
    make_sdist(links, version="3.1.0", extra={
        "setup.py": "from setuptools import setup\nsetup(name='tinytorch-pkg', version='0.0.0', packages=['tinytorch_pkg'])\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    folder, kind = fetch_package(PackageSource("tinytorch-pkg", "3.1.0"), tmp_path / "cache")
    assert kind == "sdist" and (folder / "tinytorch_pkg" / "layers.py").is_file()
    assert "Version: 3.1.0" in (folder / "PKG-INFO").read_text()
    result = harvest_packages(write_sources(tmp_path, '[[package]]\nname = "tinytorch-pkg"\nversion = "3.1.0"\n'
                                            'include = ["tinytorch_pkg/layers.py"]\n'),
                              HarvestConfig(incremental=False, package_cache=str(tmp_path / "cache")))
    assert sorted((p.name, p.status) for p in result.result.problems) == [("Gated", "runnable"), ("Scaled", "runnable")]
    # a version no index has is still refused, with pip's reason
    with pytest.raises(FetchError, match="3.2.0"):
        fetch_package(PackageSource("tinytorch-pkg", "3.2.0"), tmp_path / "cache2")

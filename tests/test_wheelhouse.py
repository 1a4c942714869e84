"""Wheelhouses for offline GPU machines (autotriton/wheelhouse.py), without the network: the
target's own torch/triton stand in as metadata-only wheels and replace this machine's pins."""

from __future__ import annotations

import zipfile

import pytest

from autotriton.wheelhouse import (
    DEFAULT_EXCLUDE, WheelhouseError, _target_constraints, excluded, installed_names, pyproject_requirements, stub_wheels,
)


def test_the_targets_own_packages_replace_this_machines_pins(tmp_path):
    pins = tmp_path / "constraints.txt"
    pins.write_text("# exact\ntorch==2.13.0\ntriton==3.6.0\nnvidia-cublas-cu12==12.8\ntransformers==5.24.0\n")
    (target,) = _target_constraints([str(pins)], ["torch==2.11.0", "triton==3.6.0"], DEFAULT_EXCLUDE, str(tmp_path))
    assert open(target).read().split() == ["torch==2.11.0", "triton==3.6.0", "transformers==5.24.0"]


def test_stub_wheels_carry_only_metadata_with_the_targets_best_tags(tmp_path):
    (path,) = stub_wheels(["torch==2.11.0+cu130"], str(tmp_path), "3.12", "manylinux_2_28_x86_64")
    assert path.endswith("torch-2.11.0-9999-cp312-cp312-manylinux_2_28_x86_64.whl")  # build 9999: preferred over the index's
    with zipfile.ZipFile(path) as z:
        meta = z.read("torch-2.11.0.dist-info/METADATA").decode()
        assert "Name: torch\nVersion: 2.11.0\n" in meta and "Requires-Dist" not in meta
    with pytest.raises(WheelhouseError, match="exact pin"):
        stub_wheels(["torch>=2.11"], str(tmp_path), "3.12", "manylinux_2_28_x86_64")


def test_the_projects_wheelhouse_asks_for_its_build_backend_and_never_torch_or_cuda(tmp_path):
    from autotriton.paths import REPO_ROOT

    reqs = pyproject_requirements(REPO_ROOT / "pyproject.toml", ["test"])
    assert any(r.startswith("setuptools") for r in reqs) and any(r.startswith("pytest") for r in reqs)
    assert all(excluded(n, DEFAULT_EXCLUDE) for n in ("torch", "triton", "nvidia-cudnn-cu12", "cuda-bindings"))
    assert not excluded("transformers", DEFAULT_EXCLUDE)
    with pytest.raises(WheelhouseError, match="no \\[project.optional-dependencies\\] group 'gpu'"):
        pyproject_requirements(REPO_ROOT / "pyproject.toml", ["gpu"])


def test_a_targets_package_listing_becomes_names_it_keeps(tmp_path):
    """`--exclude-from image.txt`: `pip list --format=freeze` (or `pip freeze`, or bare names) of
    the GPU machine; none of those is downloaded, the machine keeps its own."""
    listing = tmp_path / "image.txt"
    listing.write_text("# pip list --format=freeze on the H200\nPyArrow==21.0.0\ntyping_extensions==4.15.0\n"
                       "-e git+https://example.invalid/x.git#egg=x\nmy-pkg @ file:///wheels/my_pkg-1.0-py3-none-any.whl\n"
                       "\neinops\nnumpy>=2 ; python_version >= '3.10'\n")
    names = installed_names(listing)
    assert names == ["pyarrow", "typing-extensions", "my-pkg", "einops", "numpy"]
    patterns = [*DEFAULT_EXCLUDE, *names]
    assert excluded("pyarrow", patterns) and excluded("typing_extensions", patterns) and not excluded("duckdb", patterns)


def _install(name: str, version: str, *requires: str, extras: tuple[str, ...] = ()) -> dict:
    """One item of `pip install --report`'s "install" list, as pip writes it."""
    return {"metadata": {"name": name, "version": version, "requires_dist": list(requires)}, "requested_extras": list(extras)}


def test_the_target_keeps_only_versions_every_requirement_accepts(tmp_path):
    """The H200 image has typer 0.27.2 and setuptools 81; autotriton needs typer>=0.29.2, and pip
    builds the project in an isolated environment that cannot see the image's setuptools: both
    must be in the wheelhouse, while the image's own rich, torch and numpy are left to it."""
    from autotriton.wheelhouse import installed_versions, kept_by_target, left_to_target

    listing = tmp_path / "freeze.txt"
    listing.write_text("typer==0.27.2\nrich==15.0.0\ntorch==2.11.0+cu130\nnumpy==2.5.2\nsetuptools==81.0.0\n"
                       "pydantic==1.10.0\neinops\n")
    target = installed_versions(listing)
    assert target == {"typer": "0.27.2", "rich": "15.0.0", "torch": "2.11.0+cu130", "numpy": "2.5.2",
                      "setuptools": "81.0.0", "pydantic": "1.10.0", "einops": None}
    requirements = ["setuptools>=69", "typer>=0.29.2,<0.30", "torch>=2.11,<2.14", "duckdb>=1.4", "pydantic>=2"]
    installs = [
        _install("setuptools", "84.2.1"), _install("typer", "0.29.2", "rich>=12.3.0", "click>=8.2"),
        _install("rich", "15.0.1", "markdown-it-py>=2.2"), _install("torch", "2.11.0"),
        _install("duckdb", "2.0.1", "numpy>=1.26; extra == 'numpy'", "pandas<0; python_version < '3.0'"),
        _install("numpy", "2.5.3"), _install("pydantic", "2.14.4"), _install("einops", "0.8.2"),
    ]
    kept = kept_by_target(installs, requirements, target, "3.12")
    assert kept == {"rich", "torch", "numpy", "setuptools"}  # typer and pydantic too old; einops: no version
    leave = left_to_target(installs, requirements, target, ("torch", "nvidia-*"), ["setuptools>=69"], "3.12")
    assert leave == {"rich", "torch", "numpy", "einops"}
    # a requirement the target's version fails, from a resolved package's own metadata
    installs.append(_install("newlib", "1.0", "rich>=16; python_version >= '3.10'"))
    assert "rich" not in kept_by_target(installs, requirements, target, "3.12")
    # an extra's requirement binds only where that extra was asked for
    installs[4]["metadata"]["requires_dist"][0] = "numpy>=3; extra == 'numpy'"
    assert "numpy" in kept_by_target(installs, requirements, target, "3.12")
    installs[4]["requested_extras"] = ["numpy"]
    assert "numpy" not in kept_by_target(installs, requirements, target, "3.12")


def test_a_set_that_needs_nothing_downloaded_still_makes_the_folder_and_its_record(tmp_path):
    """`env prefetch` of requirement sets all left to the target (its own torch): the wheel folder,
    not yet made, is made and records what was asked (it failed writing wheelhouse.json)."""
    import json

    from autotriton.wheelhouse import build_wheelhouse

    out = tmp_path / "not-yet" / "wheels"
    summary = build_wheelhouse(["torch==2.11.0"], out, provided=["torch==2.11.0"])
    assert summary["downloaded"] == [] and summary["left_to_the_target"] == ["torch==2.11.0"]
    assert json.loads((out / "wheelhouse.json").read_text())["requirements"] == ["torch==2.11.0"]


def _pure_wheel(folder, dist: str, version: str, *requires: str):
    """A pure-Python wheel of one empty module whose metadata requires `requires`."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{dist.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    files = {f"{dist.replace('-', '_')}.py": "",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
                                 + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: autotriton-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
        zf.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n")


def test_env_prefetch_leaves_what_the_gpu_machine_has_to_it(tmp_path, monkeypatch):
    """`autotriton env prefetch --exclude-from image.txt`: a dependency the GPU image already has at a
    version the requirement accepts is not downloaded (143 MB of opencv and scipy for one set of
    packages on the H200 image); one it has at a version the requirement refuses still is, and a
    listing that cannot be read is named."""
    import json

    from typer.testing import CliRunner

    from autotriton.flows.cli import app
    from autotriton.records import Problem
    from autotriton.warehouse import Warehouse

    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the local wheel folder only
    wheels = tmp_path / "wheels"
    _pure_wheel(wheels, "atzq-facelib", "1.0", "atzq-imagelib>=1.1")
    _pure_wheel(wheels, "atzq-imagelib", "1.2")
    db = str(tmp_path / "wh.duckdb")
    with Warehouse(db) as wh:
        wh.put_problems(wh.start_run("harvest", {}), [Problem(
            reference_source="import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x + 1\n",
            name="Face", requirements=["atzq-facelib"])])

    def prefetch(listing: str, out: str):
        (tmp_path / "image.txt").write_text(listing)
        res = CliRunner().invoke(app, ["--db", db, "--set", f"environments.find_links=[\"{wheels}\"]", "env", "prefetch",
                                       "--exclude-from", str(tmp_path / "image.txt"), "--out", str(tmp_path / out), "--json"])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout.strip().splitlines()[-1])

    kept = prefetch("# pip list --format=freeze\natzq-imagelib==1.2\nscipy==1.18.1\n", "kept")
    assert kept["downloaded"] == ["atzq-facelib==1.0"] and kept["left_to_the_target"] == ["atzq-imagelib==1.2 (the target's)"]
    assert sorted(p.name for p in (tmp_path / "kept").glob("*.whl")) == ["atzq_facelib-1.0-py3-none-any.whl"]
    too_old = prefetch("atzq-imagelib==1.0\n", "too-old")
    assert too_old["downloaded"] == ["atzq-facelib==1.0", "atzq-imagelib==1.2"] and too_old["left_to_the_target"] == []
    missing = CliRunner().invoke(app, ["--db", db, "env", "prefetch", "--exclude-from", str(tmp_path / "nope.txt"),
                                       "--out", str(tmp_path / "x")])
    assert missing.exit_code == 2 and "nope.txt" in missing.output and "pip list --format=freeze" in missing.output

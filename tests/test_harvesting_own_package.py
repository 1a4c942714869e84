"""A package module that imports a part of its own package the extractor cannot carry into the
problem (a compiled extension such as compressai's `compressai._CXX`, or a module imported as a
whole under an alias, as pytorch-wavelets' `import pytorch_wavelets.dwt.lowlevel as lowlevel`)
needs the package itself installed: its problem's requirements name the harvested release
(`name==version`), and its dependency environment installs it. Issue 13's held-out set 10 lost 8
compressai classes to "No module named 'compressai'" before this."""

from __future__ import annotations

import base64
import hashlib
import py_compile
import tempfile
import zipfile
from pathlib import Path

from autotriton.environments import EnvironmentConfig
from autotriton.harvesting import HarvestConfig
from autotriton.harvesting.packages import harvest_packages
from autotriton.harvesting.extract import Repository
from autotriton.harvesting.requirements import module_requirements, package_import_source

from tests.test_harvesting_packages import MIT

# Shipped as bytecode only (a sourceless `_native.pyc` beside the package's .py files), as a compiled
# extension is: importable once installed, but there is no source the extractor can copy.
NATIVE = "def scale(x):\n    return x * 3.0\n"

LAYERS = '''import torch
from torch import nn

from ownpkg._native import scale


class Tripled(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return scale(self.proj(x))
'''


def _bytecode(source: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "native.py", Path(tmp) / "native.pyc"
        src.write_text(source)
        py_compile.compile(str(src), cfile=str(out), doraise=True)
        return out.read_bytes()


def make_wheel(folder: Path, name: str = "ownpkg", version: str = "0.1") -> Path:
    """A real wheel (METADATA, WHEEL, RECORD with hashes), built without a build backend."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {
        f"{name}/__init__.py": b"", f"{name}/_native.pyc": _bytecode(NATIVE), f"{name}/layers.py": LAYERS.encode(),
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nLicense: MIT\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{name}-{version}.dist-info/licenses/LICENSE": MIT.encode()}
    record = []
    for rel, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    files[f"{name}-{version}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for rel, data in files.items():
            zf.writestr(rel, data)
    return path


def test_an_import_of_the_harvested_package_itself_requires_its_release():
    source = "import torch\nfrom ownpkg._native import scale\nfrom einops import rearrange\n"
    assert module_requirements(source, {}, local_packages={"ownpkg"}, own="ownpkg==0.1", providers={}) == ["ownpkg==0.1", "einops"]
    # a local clone has no release to install: its own imports stay out of the requirements
    assert module_requirements(source, {}, local_packages={"ownpkg"}, providers={}) == ["einops"]


def test_a_lookup_of_the_packages_own_files_by_name_requires_its_release():
    """pytorch-wavelets' filter banks load `.npz` data shipped in the package, found with
    `pkg_resources.resource_filename("pytorch_wavelets", ...)`: a string, not an import, yet only the
    installed release has the files."""
    for call in ('pkg_resources.resource_filename("ownpkg", "data")', 'importlib.resources.files("ownpkg.data")',
                 'resource_stream("ownpkg", "x.npz")', 'importlib.import_module("ownpkg.sub")'):
        source = f"import torch\nimport numpy as np\n\n\ndef bank(name):\n    return np.load({call})\n"
        assert module_requirements(source, {}, local_packages={"ownpkg"}, own="ownpkg==0.1", providers={}) == ["ownpkg==0.1"], call
    # another package's files, or a string that only looks like a name: nothing to install
    other = 'import torch\n\n\ndef f():\n    return files("otherpkg"), open_text("ownpkg data")\n'
    assert module_requirements(other, {}, local_packages={"ownpkg"}, own="ownpkg==0.1", providers={}) == []


def test_the_release_comes_with_what_importing_it_needs_declared_or_not():
    """pytorch-wavelets 1.3.0 imports `pywt` when the package is imported (its `__init__` imports
    the transforms, which import pywt) without declaring PyWavelets: a module that needs the release
    needs PyWavelets too. Only what `import pkg` runs counts: a module nothing imports at package
    level, and imports guarded by `try/except ImportError`, do not."""
    files = {
        "wav/__init__.py": "from .dwt import DWT\nfrom wav.coeffs import bank\n",
        "wav/dwt.py": "import torch\nimport pywt\nfrom . import lowlevel\n\nclass DWT: pass\n",
        "wav/lowlevel.py": "import numpy as np\nfrom einops import rearrange\n",
        "wav/coeffs.py": "from pkg_resources import resource_stream\ntry:\n    import scipy\nexcept ImportError:\n    scipy = None\n",
        "wav/plots.py": "import matplotlib.pyplot as plt\n",
    }
    repo = Repository(files, lambda p: files[p].encode())
    needs = module_requirements(package_import_source(repo), {"einops": "einops>=0.7"},
                                local_packages={"wav"}, providers={})
    assert sorted(needs) == ["einops>=0.7", "pywavelets", "setuptools<81"], needs
    source = 'import numpy as np\nfrom pkg_resources import resource_filename\n\n\ndef bank():\n    return np.load(resource_filename("wav", "data/b.npz"))\n'
    got = module_requirements(source, {}, local_packages={"wav"}, own="wav==1.3.0", providers={}, own_needs=needs)
    assert got[0] == "wav==1.3.0" and sorted(got[1:]) == ["einops>=0.7", "pywavelets", "setuptools<81"], got
    # without the release, nothing of it is added
    assert module_requirements("import torch\n", {}, local_packages={"wav"}, own="wav==1.3.0", providers={},
                               own_needs=needs) == []


def test_a_module_importing_its_package_runs_with_the_release_installed(tmp_path, monkeypatch):
    from autotriton.validation import JudgePool, ValidationConfig

    links = tmp_path / "links"
    make_wheel(links)
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip download reads the local folder only
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    sources = tmp_path / "sources.toml"
    sources.write_text('[[package]]\nname = "ownpkg"\nversion = "0.1"\n')
    cfg = HarvestConfig(incremental=False, package_cache=str(tmp_path / "cache"), state_path=str(tmp_path / "state.json"))
    envs = EnvironmentConfig(cache_dir=str(tmp_path / "envs"), offline=True, find_links=[str(links)])
    with JudgePool(ValidationConfig(device="cpu", trials=2, workers=1, timeout_s=120.0)) as pool:
        def probe(srcs, environments=None):
            return pool.probe_many(srcs, environments=environments)

        harvest = harvest_packages(sources, cfg, probe=probe, environments=envs)
    (problem,) = [p for p in harvest.result.problems if p.name == "Tripled"]
    assert problem.requirements == ["ownpkg==0.1"], problem.requirements
    assert problem.status == "runnable", harvest.result.details.get(problem.key)
    assert "from ownpkg._native import scale" in problem.reference_source

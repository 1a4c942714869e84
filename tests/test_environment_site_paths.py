"""A dependency environment whose package was built for another torch build still imports.

PyPI's torchvision wheels are built against torch's CUDA build; beside the CPU-only torch of a
machine without a GPU their C++ operators do not load and `import torchvision` stops in
`_meta_registrations` (pytorch/vision#9085). Modules that use torchvision's layers (timm, zeta
and many model repositories import it) were rejected as `broken_dependency` for that alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from autotriton.environments import EnvironmentConfig
from autotriton.harvesting import HarvestConfig, harvest_local

MIT = "MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"


def _package_with_unloadable_operators(site: Path, name: str = "visionpkg") -> Path:
    """A package shaped like torchvision: a C++ operator library that cannot load here, and a
    module that registers fake implementations for its operators without checking they exist."""
    pkg = site / name
    pkg.mkdir(parents=True)
    (pkg / "_C.so").write_bytes(b"\x7fELF not a shared object built for this torch")
    (pkg / "__init__.py").write_text(f"from {name} import _meta_registrations\nfrom {name}.layers import Double\n")
    (pkg / "_meta_registrations.py").write_text(
        f'raise RuntimeError("operator {name}::nms does not exist")\n')
    (pkg / "layers.py").write_text("import torch.nn as nn\n\n\nclass Double(nn.Module):\n"
                                   "    def forward(self, x):\n        return x * 2\n")
    return pkg


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


def test_a_package_whose_operators_do_not_load_imports_from_its_environment(tmp_path, monkeypatch):
    from autotriton import site_paths

    monkeypatch.setattr(site_paths, "_OPERATOR_REGISTRATIONS", (("visionpkg", "_meta_registrations"),))
    site = tmp_path / "site-packages"
    _package_with_unloadable_operators(site)
    # Appended as it was before: the package's own import fails.
    plain = _run(f"""
        import sys, torch
        sys.path.append({str(site)!r})
        import visionpkg
    """)
    assert plain.returncode != 0 and "visionpkg::nms does not exist" in plain.stderr
    # Through the worker's environment_on_path: it imports and its layers run; leaving takes the
    # package away, the stand-in for its registrations included.
    out = _run(f"""
        import sys, torch
        from autotriton import site_paths
        site_paths._OPERATOR_REGISTRATIONS = (("visionpkg", "_meta_registrations"),)
        from autotriton.validation.worker import environment_on_path
        with environment_on_path([{str(site)!r}]):
            import visionpkg
            print(float(visionpkg.Double()(torch.ones(1))))
            print(sys.modules["visionpkg._meta_registrations"].__doc__.split(":")[0])
        print(sorted(m for m in sys.modules if m.startswith("visionpkg")), {str(site)!r} in sys.path)
    """)
    assert out.returncode == 0, out.stderr
    doubled, note, left = out.stdout.splitlines()
    assert doubled == "2.0" and note == "Left out by autotriton"
    assert left == "[] False"


def test_a_package_whose_operators_load_is_left_alone(tmp_path, monkeypatch):
    """No C++ library, or one already imported: nothing is stood in for it."""
    from autotriton import site_paths

    site = tmp_path / "site-packages"
    (site / "pureviz").mkdir(parents=True)
    (site / "pureviz" / "__init__.py").write_text("")
    assert site_paths._without_unloadable_operators(str(site), "pureviz", "_meta_registrations") is False
    assert "pureviz._meta_registrations" not in sys.modules
    monkeypatch.setattr(sys, "path", list(sys.path))
    added = site_paths.add_environment([str(site), str(site)])
    assert added == [str(site)] and sys.path.count(str(site)) == 1
    assert site_paths.add_environment([str(site)]) == []  # already there: not added twice, not taken away by the caller


MODULE_WITH_TORCHVISION_LAYERS = '''\
import torch.nn as nn
from torchvision.ops import SqueezeExcitation


class ConvSE(nn.Module):
    """A convolution followed by torchvision's squeeze-and-excitation block."""

    def __init__(self, channels: int = 16):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.se = SqueezeExcitation(channels, channels // 4)

    def forward(self, x):
        return self.se(self.conv(x))
'''


def test_a_module_using_torchvision_layers_is_runnable_with_its_environment(tmp_path):
    """The real torchvision from the index, beside this machine's torch: the module is probed with
    it and becomes a runnable problem (on a CPU-only torch its C++ operators do not load)."""
    from autotriton.validation import JudgePool, ValidationConfig

    pkg = tmp_path / "sevision"
    (pkg / "sevision").mkdir(parents=True)
    (pkg / "LICENSE").write_text(MIT)
    (pkg / "pyproject.toml").write_text('[project]\nname = "sevision"\nversion = "0.1"\nlicense = "MIT"\n'
                                        f'dependencies = {json.dumps(["torchvision"])}\n')
    (pkg / "sevision" / "__init__.py").write_text("")
    (pkg / "sevision" / "blocks.py").write_text(MODULE_WITH_TORCHVISION_LAYERS)
    envs = EnvironmentConfig(cache_dir=str(tmp_path / "envs"))
    cfg = HarvestConfig(incremental=False, state_path=str(tmp_path / "state.json"))
    with JudgePool(ValidationConfig(device="cpu", trials=2, workers=1, timeout_s=120.0)) as pool:
        result = harvest_local(pkg, cfg, probe=lambda sources, environments=None: pool.probe_many(sources, environments=environments),
                               environments=envs)
    (problem,) = [p for p in result.problems if p.name == "ConvSE"]
    assert problem.requirements == ["torchvision"]
    assert problem.status == "runnable", result.details.get(problem.key)

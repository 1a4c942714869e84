"""Putting a problem's dependency environment on `sys.path`, and what that takes beyond the append.

The probe, the judge (its worker and each candidate's process) and the Inductor capture import a
harvested module with its own dependencies (autotriton/environments.py): the environment's
site-packages go AFTER the running Python's own folders, so torch, triton and numpy stay the
judge's. A package built for another torch *build* than the judge's can then fail to import
although the module never uses the part that fails. One such case is common enough to handle
here: torchvision's wheels on PyPI are built against torch's CUDA build; beside a CPU-only torch
(the judge's on a machine without a GPU) its C++ operators (nms, roi_align, deform_conv2d) do not
load, and `import torchvision` then stops in `torchvision._meta_registrations`, which registers
fake implementations for those operators without checking that they exist ("operator
torchvision::nms does not exist", pytorch/vision#9085). Those registrations only describe the
missing operators, so when the operators cannot load, the module is left out: torchvision imports,
its layers and transforms work, and calling one of its C++ operators raises torchvision's own
"Couldn't load custom C++ ops" error (a problem that needs them fails its probe with that reason).
"""

from __future__ import annotations

import os
import sys
import types
from glob import glob
from typing import Iterable

#: (package folder, module that registers its C++ operators' fake implementations unconditionally)
_OPERATOR_REGISTRATIONS = (("torchvision", "_meta_registrations"),)


def add_environment(paths: Iterable[str]) -> list[str]:
    """Append the environment folders not yet on `sys.path` (after the running Python's own) and
    prepare what they hold for import; returns the folders added (for the caller to take away)."""
    added = [str(p) for p in dict.fromkeys(paths) if str(p) not in sys.path]
    sys.path.extend(added)
    for folder in added:
        for package, registrations in _OPERATOR_REGISTRATIONS:
            _without_unloadable_operators(folder, package, registrations)
    return added


def _without_unloadable_operators(folder: str, package: str, registrations: str) -> bool:
    """When `folder/package` holds a C++ operator library (`_C*.so`) that does not load into this
    torch, stand an empty module in for `package.registrations` so the package imports. True when
    it did. A package already imported, or one whose library loads, is left as it is."""
    name = f"{package}.{registrations}"
    if package in sys.modules or name in sys.modules:
        return False
    libraries = sorted(glob(os.path.join(folder, package, "_C*.so")))
    if not libraries:
        return False
    import torch

    try:
        torch.ops.load_library(libraries[0])  # what the package's own import does first
        return False
    except (OSError, RuntimeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    stub = types.ModuleType(name, f"Left out by autotriton: {package}'s C++ operators do not load into torch "
                                  f"{torch.__version__} ({reason}), so there is nothing to register.")
    # The real file's path: the judge takes every module imported from an environment away with it.
    stub.__file__ = os.path.join(folder, package, registrations + ".py")
    sys.modules[name] = stub
    return True

"""Packages that bind their names through star imports (fastai and the libraries nbdev writes:
`from .imports import *`, `from .torch_core import *`, then `class View(Module)` with `Module` and
`nn` bound in other files, names that come from a package another file star-imports, fastcore's
in fastai, and objects such a star import binds that the package's files fill: `defaults.activation =
nn.ReLU`): their classes are found as nn.Modules and extracted with what the star imports give.
A package written here in fastai's shape (issue 13's held-out set 26: fastai 2.8.12, 0 of its
classes found before)."""

from __future__ import annotations

import torch

from autotriton.harvesting import HarvestConfig, harvest_local

MIT = ("MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy. "
       "The above copyright notice and this permission notice shall be included in all copies.\n")

IMPORTS = '''
import math
import torch
import torch.nn as nn
from torch.nn import *
from os import *
'''

TORCH_CORE = '''
from .imports import *


class Module(nn.Module):
    "Same as `nn.Module`, with a repr of its own"
    def extra_repr(self):
        return "fastai-style"


# fastai's `defaults.activation = nn.ReLU` on fastcore's `defaults`: an object a star import binds, filled here
environ["STARLIB_GAIN"] = "3"
'''

LAYERS = '''
from .imports import *
from .torch_core import *


class View(Module):
    "Reshape `x` to `size`"
    def __init__(self, *size):
        super().__init__()
        self.size = size

    def forward(self, x):
        return x.view(self.size) * 2.0


environ["STARLIB_BIAS"] = "1"


class Gained(Module):
    "Reads what two files put into an object a star import bound"
    def forward(self, x):
        return x * float(environ["STARLIB_GAIN"]) + float(environ["STARLIB_BIAS"])


class Residual(Module):
    "A linear layer and its input, added (Linear and ReLU come from torch.nn's star import)"
    def __init__(self, dim):
        super().__init__()
        self.lin = Linear(dim, dim)
        self.act = ReLU()

    def forward(self, x):
        return x + self.act(self.lin(x)) / math.sqrt(2)
'''

DIRECT = '''
import torch
from torch.nn import *


class Doubler(Module):
    def forward(self, x):
        return x * 2 + 1
'''


def test_classes_bound_through_star_imports_are_found_and_run(tmp_path):
    pkg = tmp_path / "starlib"
    pkg.mkdir()
    (tmp_path / "LICENSE").write_text(MIT)
    for name, text in {"__init__.py": "", "imports.py": IMPORTS, "torch_core.py": TORCH_CORE, "layers.py": LAYERS,
                       "direct.py": DIRECT}.items():
        (pkg / name).write_text(text)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False))
    by_name = {p.name: p for p in result.problems}
    for name in ("View", "Residual", "Doubler", "Gained"):
        assert name in by_name, sorted(by_name)
        assert by_name[name].status == "runnable", (name, by_name[name].reject_reason, result.details.get(by_name[name].key))
    source = by_name["Residual"].reference_source
    assert "from torch.nn import *" in source  # what `Linear` and `ReLU` come from, though no file of the package names them
    namespace: dict = {}
    exec(compile(source, "<problem>", "exec"), namespace)
    model = namespace["Model"](*namespace["get_init_inputs"]())
    x = namespace["get_inputs"]()[0]
    torch.testing.assert_close(model(x), x + torch.relu(model.lin(x)) / 2 ** 0.5)
    # both fills come along, neither renamed apart from the other
    gained = by_name["Gained"].reference_source
    assert 'environ["STARLIB_GAIN"] = "3"' in gained and 'environ["STARLIB_BIAS"] = "1"' in gained and "environ_2" not in gained

"""Extraction, dedup and bad-input handling (no sandbox needed)."""

from __future__ import annotations

import ast

import pytest

from autotriton.harvesting import DuplicateFilter, HarvestConfig, canonical_key, harvest_local, rename_to_model
from autotriton.harvesting.extract import ExtractionError, ModuleClassIndex, Repository, extract_class
from autotriton.harvesting.licences import detect_licence_text
from autotriton.harvesting.synthesis import problem_source, synthesize


def _repo(files: dict[str, str]) -> Repository:
    return Repository(files, lambda p: files[p].encode())


def _outputs(source: str, class_name: str) -> list[float]:
    """What the extracted module computes on ones(2): it stands alone and runs."""
    import torch

    ns: dict = {}
    exec(compile(source, "<m>", "exec"), ns)
    return ns[class_name]()(torch.ones(2)).tolist()


def _top_names(source: str) -> set[str]:
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name) for a in node.names)
    return names


ALIASES = '''
import os
import torch
import torch.nn as tnn
from torch.nn import Module
from torch import nn
from torch.nn import functional as F, init

SCALE = 3
UNUSED_CONSTANT = 7
CHAIN = SCALE * 2

def helper(x):
    return inner(x) * CHAIN

def inner(x):
    return x + 1

def unused_helper():
    return os.getcwd()

class A(Module):
    def forward(self, x):
        return helper(x)

class B(tnn.Module):
    def forward(self, x):
        return F.relu(x)

class C(torch.nn.Module):
    def forward(self, x):
        return x

class D(A):
    def forward(self, x):
        return super().forward(x) * 2

class E(nn.Sequential):
    pass

class NotAModule:
    def forward(self, x):
        return x
'''


def test_every_alias_of_nn_module_is_found():
    repo = _repo({"m.py": ALIASES})
    assert ModuleClassIndex(repo).module_classes("m.py") == ["A", "B", "C", "D", "E"]


def test_a_base_alias_chosen_in_an_if_or_try_block_is_found():
    """rwkv picks its base under a switch (`MyModule = torch.jit.ScriptModule` when the JIT is on,
    else `torch.nn.Module`); its one model class was not counted at all."""
    source = (
        "import os\nimport torch\n"
        "if os.environ.get('JIT') != '0':\n    MyModule = torch.jit.ScriptModule\nelse:\n    MyModule = torch.nn.Module\n"
        "try:\n    import apex\n    Norm = apex.FusedNorm\nexcept ImportError:\n    Norm = torch.nn.LayerNorm\n"
        "if False:\n    pass\nelif True:\n    Plain = object\n"
        "class Net(MyModule):\n    def forward(self, x):\n        return x * 2\n"
        "class Normed(Norm):\n    pass\n"
        "class NotOne(Plain):\n    def forward(self, x):\n        return x\n"
    )
    assert ModuleClassIndex(_repo({"m.py": source})).module_classes("m.py") == ["Net", "Normed"]


FRAMEWORK_BASES = '''
import lightning.pytorch as pl
import lightning as L
from pytorch_lightning import LightningModule
from transformers import PreTrainedModel
import transformers
from some_other_framework import Estimator


class Method(pl.LightningModule):
    def forward(self, x):
        return x


class Contrastive(Method):
    pass


class Classifier(L.LightningModule):
    pass


class Older(LightningModule):
    pass


class Encoder(PreTrainedModel):
    pass


class Decoder(transformers.PreTrainedModel):
    pass


class Fitted(Estimator):
    pass
'''


def test_classes_of_lightning_and_hugging_face_module_bases_are_modules():
    """solo-learn's methods (held-out set 29) subclass `pl.LightningModule`: nn.Modules, found without
    importing lightning; a base of an unknown package is not taken for one."""
    repo = _repo({"m.py": FRAMEWORK_BASES})
    assert ModuleClassIndex(repo).module_classes("m.py") == ["Method", "Contrastive", "Classifier", "Older", "Encoder", "Decoder"]


def test_extraction_keeps_exactly_the_transitive_needs():
    repo = _repo({"m.py": ALIASES})
    d = extract_class(repo, "m.py", "D").source
    assert _top_names(d) == {"Module", "A", "D", "helper", "inner", "CHAIN", "SCALE"}
    b = extract_class(repo, "m.py", "B").source
    assert _top_names(b) == {"tnn", "F", "B"}  # `init` trimmed from the shared import line
    assert "init" not in b and "os" not in b and "UNUSED_CONSTANT" not in b
    exec(compile(d, "<d>", "exec"), {})  # standalone: runs with nothing else


REGISTRY = '''
import torch.nn as nn


class CFG(dict):
    def __getattr__(self, name):
        return self[name]

    def __setattr__(self, name, value):
        self[name] = value


Activations = CFG()
Activations.relu = nn.ReLU
Activations.tanh = nn.Tanh
Activations["gelu"] = nn.GELU
NORMS = {}
NORMS.update(batch=nn.BatchNorm1d)
UNRELATED = CFG()
UNRELATED.x = 1


def get_activation(act):
    if act.lower() not in Activations:
        raise ValueError(f"activation `{act}` not supported")
    return Activations[act.lower()]()


class Block(nn.Module):
    def __init__(self, dim, act="relu", norm="batch"):
        super().__init__()
        self.norm = NORMS[norm](dim)
        self.act = get_activation(act)

    def forward(self, x):
        return self.act(self.norm(x))
'''


def test_a_registry_filled_at_the_top_level_comes_with_every_statement_that_fills_it():
    """torch-ecg's `Activations = CFG()` is filled by `Activations.relu = nn.ReLU` and the like: only
    the first came along, and every block failed "activation `relu` not supported" (held-out set 24)."""
    source = extract_class(_repo({"nets.py": REGISTRY}), "nets.py", "Block").source
    assert "Activations.relu = nn.ReLU" in source and 'Activations["gelu"] = nn.GELU' in source
    assert "NORMS.update(batch=nn.BatchNorm1d)" in source and "UNRELATED" not in source
    scope: dict = {}
    exec(compile(source, "<block>", "exec"), scope)
    assert type(scope["Block"](8).act).__name__ == "ReLU"


def test_rename_to_model_updates_references_and_moves_a_clashing_model():
    src = "import torch.nn as nn\nclass Model(nn.Module):\n    pass\nclass Net(Model):\n    def __init__(self):\n        super(Net, self).__init__()\n        self.k = Net.__name__\n"
    out = rename_to_model(src, "Net")
    assert "class Model(Model_)" in out and "class Model_(nn.Module)" in out and "super(Model, self)" in out
    assert "self.k = Model.__name__" in out


def test_relative_import_outside_the_repository_is_rejected_with_a_reason():
    repo = _repo({"pkg/m.py": "import torch.nn as nn\nfrom .missing import Thing\nclass A(nn.Module):\n    def forward(self, x):\n        return Thing(x)\n"})
    with pytest.raises(ExtractionError) as err:
        extract_class(repo, "pkg/m.py", "A")
    assert err.value.reason == "relative_import" and "pkg/m.py:2" in err.value.detail


def test_a_vendored_project_importing_its_own_modules_as_top_level_ones_is_inlined():
    """torchxrayvision/baseline_models/jfhealthcare/model/attention_map.py: `from model.utils import
    get_norm`, `model` being a folder beside it (the vendored project's root was on its sys.path);
    and a script's `from blocks import ...` of a file in its own folder."""
    net = ("import torch.nn as nn\nfrom model.utils import get_norm\nfrom blocks import Doubled\n"
           "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.norm = get_norm(8)\n"
           "        self.twice = Doubled()\n    def forward(self, x):\n        return self.twice(self.norm(x))\n")
    repo = _repo({"pkg/vendor/proj/model/__init__.py": "",
                  "pkg/vendor/proj/model/utils.py": "import torch.nn as nn\ndef get_norm(n):\n    return nn.BatchNorm1d(n)\n",
                  "pkg/vendor/proj/model/blocks.py": "import torch.nn as nn\nclass Doubled(nn.Module):\n    def forward(self, x):\n        return 2 * x\n",
                  "pkg/vendor/proj/model/net.py": net})
    out = extract_class(repo, "pkg/vendor/proj/model/net.py", "Net").source
    assert "def get_norm(n):" in out and "class Doubled(nn.Module):" in out and "import model" not in out and "from blocks" not in out


def test_an_installed_package_is_not_read_as_a_folder_of_the_same_name_inside_the_repository():
    """gluonts/torch/model/*/module.py: `from torch import nn` is torch's, though gluonts has a
    `torch` subpackage above the file; gluonts/pydantic.py's `from pydantic import ...` is the
    real pydantic's, not itself (set 23: 34 of gluonts' 46 classes rejected as relative_import)."""
    layer = ("from torch import nn\nfrom pkg.compat import ready\n"
             "class Head(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n        self.proj = nn.Linear(d, d)\n"
             "    def forward(self, x):\n        return self.proj(x) if ready() else x\n")
    repo = _repo({"pkg/__init__.py": "", "pkg/torch/__init__.py": "from pkg.torch.util import lag\n",
                  "pkg/torch/util.py": "def lag(x):\n    return x\n",
                  "pkg/compat.py": "from pydantic import VERSION\ndef ready():\n    return bool(VERSION)\n",
                  "pkg/pydantic.py": "from pydantic import VERSION\n",
                  "pkg/torch/model/head.py": layer})
    out = extract_class(repo, "pkg/torch/model/head.py", "Head").source
    assert "from torch import nn" in out and "def ready():" in out and "from pydantic import VERSION" in out
    exec(compile(out, "<head>", "exec"), {})


def test_missing_package_is_rejected_with_its_name():
    repo = _repo({"m.py": "import torch.nn as nn\nimport not_a_real_package_xyz as q\nclass A(nn.Module):\n    def forward(self, x):\n        return q.f(x)\n"})
    with pytest.raises(ExtractionError) as err:
        extract_class(repo, "m.py", "A")
    assert err.value.reason == "missing_dependency" and "not_a_real_package_xyz" in err.value.detail


def test_renamed_locals_comments_and_layout_are_exact_duplicates():
    a = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x, y):\n        s = x + y  # sum\n        return s * 2\n"
    b = 'import torch\nclass Model(torch.nn.Module):\n    """Doc."""\n    def forward(self, left, right):\n\n        total = left + right\n        return total * 2\n'
    c = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x, y):\n        return x - y\n"
    assert canonical_key(a) == canonical_key(b) != canonical_key(c)


def test_near_duplicates_are_caught_and_different_modules_are_not():
    base = "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n" + "".join(
        f"        self.l{i} = nn.Linear(d, d)\n" for i in range(8)) + "    def forward(self, x):\n" + "".join(
        f"        x = torch.relu(self.l{i}(x))\n" for i in range(8)) + "        return x\n"
    near = base.replace("return x\n", "return x * 1.5\n")
    other = "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, q, k):\n        return torch.softmax(q @ k.transpose(-1, -2), dim=-1).sum(0)\n"
    f = DuplicateFilter(0.85)
    assert f.check(base, "base") == (None, None)
    assert f.check(near, "near")[0] == "near_duplicate"
    assert f.check(other, "other") == (None, None)
    assert f.check(base, "again")[0] == "duplicate"


def test_synthesis_reads_first_layer_sizes_and_signatures():
    src = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
           "    def __init__(self, in_channels, num_classes, hidden_dim=512):\n        super().__init__()\n"
           "        self.conv = nn.Conv2d(in_channels, hidden_dim, 3)\n        self.fc = nn.Linear(hidden_dim, num_classes)\n"
           "    def forward(self, images):\n        return self.fc(self.conv(images).mean((2, 3)))\n")
    attempts = synthesize(src)
    first = attempts[0]
    assert first.input_spec[0]["shape"][1] == int(first.init_code[0])  # channels of the Conv2d input
    assert len(first.input_spec[0]["shape"]) == 4
    ns: dict = {}
    exec(compile(problem_source(src, first), "<p>", "exec"), ns)
    out = ns["Model"](*ns["get_init_inputs"]())(*ns["get_inputs"]())
    assert out.shape[0] == 2


@pytest.mark.parametrize("text,spdx", [
    ("Permission is hereby granted, free of charge, to any person ... The above copyright notice and this permission notice shall be included in all copies", "MIT"),
    ("Apache License\n Version 2.0, January 2004", "Apache-2.0"),
    ("Redistribution and use in source and binary forms ... Neither the name of the copyright holder", "BSD-3-Clause"),
    ("Redistribution and use in source and binary forms, with or without modification", "BSD-2-Clause"),
    ("GNU LESSER GENERAL PUBLIC LICENSE Version 3", "LGPL-3.0"),
    ("GNU GENERAL PUBLIC LICENSE Version 3, 29 June 2007", "GPL-3.0"),
    ("This is free and unencumbered software released into the public domain.", "Unlicense"),
    ("All rights reserved. Do not copy.", None),
    # GFPGAN's file: its own licence first, then the third-party components' (MPL-2.0 among them)
    ("GFPGAN is licensed under the Apache License Version 2.0 except for the third-party components listed below.\n"
     "Terms of the Apache License Version 2.0: ...\nOther dependencies and licenses:\n"
     "Mozilla Public License, v. 2.0. If a copy of the MPL was not distributed with this file ...", "Apache-2.0"),
    # and a GPL text that mentions the LGPL later is still the GPL
    ("GNU GENERAL PUBLIC LICENSE Version 3 ... consider it more useful to permit linking proprietary applications with "
     "the library. If this is what you want to do, use the GNU Lesser General Public License instead", "GPL-3.0"),
])
def test_licence_text_signatures(text, spdx):
    assert detect_licence_text(text) == spdx


def test_bad_files_are_reported_per_file_and_never_stop_a_harvest(tmp_path):
    (tmp_path / "LICENSE").write_text("MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy. "
                                      "The above copyright notice and this permission notice shall be included in all copies.\n")
    (tmp_path / "good.py").write_text("import torch\nimport torch.nn as nn\nclass Good(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n")
    (tmp_path / "syntax.py").write_text("import torch.nn as nn\nclass S(nn.Module)\n    pass\n")
    (tmp_path / "latin1.py").write_bytes(b"import torch.nn as nn\n# caf\xe9\nclass L(nn.Module):\n    pass\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02ELF")
    (tmp_path / "huge.py").write_text("x = 1\n" * 50_000)
    (tmp_path / "deps.py").write_text("import torch.nn as nn\nimport flash_attn_not_here\nclass F(nn.Module):\n    def forward(self, x):\n        return flash_attn_not_here.f(x)\n")
    cfg = HarvestConfig(incremental=False, probe=False, max_file_bytes=100_000)
    result = harvest_local(tmp_path, cfg)
    reasons = {r.subject.split(":", 1)[1]: r.reason for r in result.rejections}
    assert reasons == {"syntax.py": "syntax_error", "latin1.py": "not_utf8", "binary.py": "binary_file", "huge.py": "file_too_large"}
    assert "line 2" in next(r.detail for r in result.rejections if r.reason == "syntax_error")
    by_name = {p.name: p for p in result.problems}
    assert by_name["Good"].status == "runnable"
    assert by_name["F"].status == "rejected" and by_name["F"].reject_reason == "missing_dependency"
    assert result.summary()["files"] == 6


def test_files_parsed_in_worker_processes_harvest_as_parsed_one_by_one(tmp_path):
    """harvest.parse_jobs: a large package's files are parsed in processes ahead of extraction
    (libcst is the harvest's main CPU cost); the problems, their dependencies inlined across
    files, and the per-file rejections are the same as with one process."""
    (tmp_path / "LICENSE").write_text("MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy. "
                                      "The above copyright notice and this permission notice shall be included in all copies.\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "common.py").write_text("import torch\nSCALE = 3.0\ndef act(x):\n    return torch.tanh(x) * SCALE\n")
    bodies = ["act(self.proj(x))", "torch.softmax(self.proj(x), dim=-1) * act(x)", "self.proj(x).cumsum(-1) - act(x).mean()",
              "torch.relu(self.proj(act(x))).pow(2)", "torch.sigmoid(x) @ self.proj.weight.t() + act(x)",
              "act(torch.logsumexp(self.proj(x), dim=-1, keepdim=True) * x)"]
    for i, body in enumerate(bodies):
        (pkg / f"m{i}.py").write_text(
            f"import torch\nimport torch.nn as nn\nfrom .common import act\n\n\nclass Block{i}(nn.Module):\n"
            f"    def __init__(self, dim={8 + i}):\n        super().__init__()\n        self.proj = nn.Linear(dim, dim)\n\n"
            f"    def forward(self, x):\n        return {body}\n")
    (pkg / "broken.py").write_text("import torch.nn as nn\nclass S(nn.Module)\n    pass\n")
    results = {jobs: harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False, parse_jobs=jobs)) for jobs in (1, 2)}
    one, two = results[1], results[2]
    assert sorted((p.key, p.status) for p in two.problems) == sorted((p.key, p.status) for p in one.problems)
    assert len([p for p in two.problems if p.status == "runnable"]) == 6
    assert all("SCALE = 3.0" in p.reference_source for p in two.problems)  # inlined from pkg/common.py
    assert [(r.subject, r.reason, r.detail) for r in two.rejections] == [(r.subject, r.reason, r.detail) for r in one.rejections]
    assert [r.reason for r in two.rejections] == ["syntax_error"] and "line 2" in two.rejections[0].detail
    files = {f"pkg/{p.name}": p.read_text() for p in pkg.glob("*.py")}
    repo = Repository(files, lambda path: files[path].encode())
    assert repo.preparse(files, 2) == len(files)  # every file parsed in the pool, the broken one as its error
    assert repo.errors["pkg/broken.py"][0] == "syntax_error" and repo.parsed("pkg/broken.py") is None
    assert repo.parsed("pkg/m0.py").classes == {"Block0": 3}  # the fourth statement
    assert Repository(files, lambda path: files[path].encode()).preparse(files, 1) == 0  # one job: parsed on demand


def test_unknown_licence_is_rejected(tmp_path):
    (tmp_path / "m.py").write_text("import torch.nn as nn\nclass A(nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False))
    assert result.problems == [] and [r.reason for r in result.rejections] == ["licence_unknown"]
    (tmp_path / "m.py").write_text("# SPDX-License-Identifier: MIT\nimport torch.nn as nn\nclass A(nn.Module):\n    def forward(self, x):\n        return x * 2\n")
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False))
    assert [p.licence for p in result.problems] == ["MIT"]


def test_module_object_imports_of_the_repository_are_inlined_and_rewritten():
    files = {
        "pkg/__init__.py": "from . import ops\n",
        "pkg/ops/__init__.py": "from .act import fancy\n",
        "pkg/ops/act.py": "import torch\nK = 2\ndef fancy(x):\n    return torch.tanh(x) * K\n",
        "pkg/util.py": "def twice(x):\n    return 2 * x\n",
        "pkg/block.py": "from __future__ import annotations\nimport torch.nn as nn\nimport pkg\nfrom . import util\n"
                        "class Block(nn.Module):\n    def forward(self, x):\n        return util.twice(pkg.ops.fancy(x)).sum()\n",
    }
    source = extract_class(_repo(files), "pkg/block.py", "Block").source
    assert source.startswith("from __future__ import annotations\n")
    assert "return twice(fancy(x)).sum()" in source and "K = 2" in source
    assert "import pkg" not in source and "util." not in source
    ns: dict = {}
    exec(compile(source, "<m>", "exec"), ns)
    import torch

    assert ns["Block"]()(torch.zeros(3)).item() == 0.0


def test_a_package_imported_as_its_own_namespace_with_string_annotations_is_inlined():
    """escnn's modules `import escnn.nn` and write `-> 'escnn.nn.GeometricTensor'` beside
    `escnn.nn.GeometricTensor(...)`: the string annotation is an access of the import too, and was
    read as the module object itself (73 of escnn's classes rejected as relative_import)."""
    files = {
        "geo/__init__.py": "",
        "geo/nn/__init__.py": "from .tensor import Wrapped\nfrom . import init\n",
        "geo/nn/tensor.py": "class Wrapped:\n    def __init__(self, t):\n        self.t = t\n",
        "geo/nn/init.py": "def scale(x):\n    return 3 * x\n",
        "geo/nn/layer.py": "import torch.nn as nn\nimport geo.nn\n"
                           "class Layer(nn.Module):\n    def wrap(self, x) -> 'geo.nn.Wrapped':\n        return geo.nn.Wrapped(x)\n"
                           "    def forward(self, x: 'geo.nn.Wrapped | None' = None):\n"
                           "        return geo.nn.init.scale(self.wrap(x).t)\n",
    }
    source = extract_class(_repo(files), "geo/nn/layer.py", "Layer").source
    assert "import geo" not in source and "class Wrapped" in source and "def scale" in source
    assert "return Wrapped(x)" in source and "return scale(self.wrap(x).t)" in source
    assert _outputs(source, "Layer") == [3.0, 3.0]


# A dotted import read through its top name alone (libcst names such reads by the top package):
# - torch-spatiotemporal's `_logger.py`: `import logging.config` then `logging.getLogger(...)`; the
#   import was dropped (NameError in every probe): it is kept, and only it;
# - escnn's irrep.py: `import escnn.group` then `escnn.group.groups_dict[name]`; the module was left
#   undefined, then refused: the chain up to the subscript is inlined.
TOP_NAME_READS = {
    "an_external_module": (
        {"pkg/__init__.py": "from ._logger import logger\n",
         "pkg/_logger.py": "import logging.config\nimport os.path\nlogger = logging.getLogger('pkg')\n",
         "pkg/m.py": "import torch.nn as nn\nfrom pkg import logger\nclass A(nn.Module):\n    def forward(self, x):\n"
                     "        logger.debug('forward')\n        return x * 2\n"},
        ["import logging.config"], ["import os"], [2.0, 2.0]),
    "a_module_of_the_repository": (
        {"pkg/__init__.py": "", "pkg/sub.py": "TABLE = {'a': 3.0}\n",
         "pkg/m.py": "import torch.nn as nn\nimport pkg.sub\nclass A(nn.Module):\n    def forward(self, x):\n"
                     "        return x * pkg.sub.TABLE['a']\n"},
        ["return x * TABLE['a']"], ["import pkg"], [3.0, 3.0]),
}


@pytest.mark.parametrize("case", list(TOP_NAME_READS))
def test_a_dotted_import_read_through_its_top_name_stands_alone(case):
    files, present, absent, outputs = TOP_NAME_READS[case]
    source = extract_class(_repo(files), "pkg/m.py", "A").source
    assert all(text in source for text in present) and not any(text in source for text in absent), source
    assert _outputs(source, "A") == outputs


def test_a_submodule_of_a_namespace_package_is_the_repositorys_own():
    """pytorch-tabnet ships `pytorch_tabnet/` without an __init__.py (a PEP 420 namespace package)
    and imports `from pytorch_tabnet import sparsemax`: the submodule is inlined, not reported as
    a missing dependency `pytorch_tabnet`; a name that is no submodule stays external."""
    files = {
        "nspkg/sparse.py": "import torch\nimport torch.nn as nn\nclass Sparse(nn.Module):\n    def forward(self, x):\n"
                           "        return torch.relu(x - x.mean())\n",
        "nspkg/net.py": "import torch.nn as nn\nfrom nspkg import sparse\nclass Net(nn.Module):\n    def __init__(self):\n"
                        "        super().__init__()\n        self.act = sparse.Sparse()\n    def forward(self, x):\n"
                        "        return self.act(x) * 2\n",
        "nspkg/other.py": "import torch.nn as nn\nfrom nspkg import Missing\nclass Other(nn.Module):\n    def forward(self, x):\n"
                          "        return Missing(x)\n",
    }
    source = extract_class(_repo(files), "nspkg/net.py", "Net").source
    assert "import nspkg" not in source and "from nspkg" not in source and "class Sparse(nn.Module)" in source
    ns: dict = {}
    exec(compile(source, "<m>", "exec"), ns)
    import torch

    assert ns["Net"]()(torch.tensor([1.0, 3.0])).tolist() == [0.0, 2.0]
    with pytest.raises(ExtractionError) as err:
        extract_class(_repo(files), "nspkg/other.py", "Other")
    assert err.value.reason == "missing_dependency" and "nspkg" in err.value.detail


def test_a_package_that_imports_its_own_submodules_in_init_resolves_them(tmp_path):
    """normflows' shape: `pkg/__init__.py` does `from . import utils` and `pkg/utils/__init__.py`
    `from . import ops`; a module doing `from . import utils` (or `from ..utils import ops`) and
    calling `utils.ops.scale(x)` gets the function inlined. The name `utils` bound in `__init__.py`
    is the submodule itself, not a definition to follow (that followed itself: `relative_import`)."""
    files = {
        "pkg/__init__.py": "from . import utils\nfrom . import core\n",
        "pkg/utils/__init__.py": "from . import ops\n",
        "pkg/utils/ops.py": "import torch\ndef scale(x):\n    return torch.tanh(x) * 2\n",
        "pkg/core.py": "import torch.nn as nn\nfrom . import utils\nclass Flow(nn.Module):\n    def forward(self, x):\n"
                       "        return utils.ops.scale(x) + 1\n",
        "pkg/nets/mlp.py": "import torch.nn as nn\nfrom ..utils import ops\nclass Mlp(nn.Module):\n    def forward(self, x):\n"
                           "        return ops.scale(x) - 1\n",
    }
    import torch

    for path, name, offset in (("pkg/core.py", "Flow", 1.0), ("pkg/nets/mlp.py", "Mlp", -1.0)):
        source = extract_class(_repo(files), path, name).source
        assert "import utils" not in source and "import ops" not in source and "def scale(x)" in source
        ns: dict = {}
        exec(compile(source, "<m>", "exec"), ns)
        x = torch.tensor([0.0, 1.0])
        assert torch.allclose(ns[name]()(x), torch.tanh(x) * 2 + offset)


def test_definition_order_puts_what_each_statement_evaluates_first_and_keeps_the_rest_in_place():
    """extract._definition_order on many statements (a package like torchrl pulls thousands into one
    class's closure): each statement after the statements defining what it evaluates when it runs,
    and, among statements free to go, the original order."""
    import random

    from autotriton.harvesting.extract import _definition_order

    chain = [f"class C{i}({f'C{i - 1}' if i else 'object'}):\n    x = {i}" for i in range(2000)]
    assert _definition_order(chain[::-1], evaluates_annotations=True) == chain
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(2, 40)
        body = [f"v{i} = ({', '.join(['0'] + [f'v{j}' for j in rng.sample(range(i), min(i, rng.randint(0, 3)))])},)"
                for i in range(n)]
        shuffled = rng.sample(body, n)
        out = _definition_order(shuffled, evaluates_annotations=True)
        assert sorted(out) == sorted(body)
        position = {code.split(" =")[0]: k for k, code in enumerate(out)}
        for code in out:
            reads = [r for r in code.split("= (")[1].rstrip(",)").split(", ") if r != "0"]
            assert all(position[r] < position[code.split(" =")[0]] for r in reads), (shuffled, out)
    free = ["a = 1", "b = 2", "c = a", "d = 3"]
    assert _definition_order(["c = a", "b = 2", "a = 1", "d = 3"], evaluates_annotations=True) == ["b = 2", "a = 1", "c = a", "d = 3"]
    assert sorted(free) == sorted(_definition_order(free, evaluates_annotations=True))


def test_a_base_class_whose_methods_build_its_subclass_comes_before_it():
    """zuko's shape: `LazyTransform.inv()` returns `LazyInverse(self)` and `LazyInverse` subclasses
    LazyTransform; a method body's reads run later, so the base is defined first (the cycle put
    the subclass first: `NameError: name 'LazyTransform' is not defined`, 10 classes of set 7)."""
    files = {
        "flows/core.py": "import torch\nimport torch.nn as nn\n\n\nclass Inverse(nn.Module):\n    pass\n\n\n"
                         "class Lazy(nn.Module):\n    def inv(self):\n        return LazyInverse(self)\n\n"
                         "    def forward(self, x):\n        return torch.tanh(x)\n\n\n"
                         "class LazyInverse(Lazy):\n    def __init__(self, base: Lazy):\n        super().__init__()\n"
                         "        self.base = [base]\n\n    def forward(self, x):\n        return torch.atanh(x)\n",
        "flows/model.py": "import torch\nfrom .core import Lazy\n\n\nclass Scaled(Lazy):\n    def forward(self, x):\n"
                          "        return self.inv()(super().forward(x)) * 2\n",
    }
    import torch

    source = extract_class(_repo(files), "flows/model.py", "Scaled").source
    assert source.index("class Lazy(") < source.index("class LazyInverse(") < source.index("class Scaled(")
    ns: dict = {}
    exec(compile(source, "<m>", "exec"), ns)
    x = torch.tensor([0.25, -0.5])
    assert torch.allclose(ns["Scaled"]()(x), x * 2)


def test_synthesis_never_executes_harvested_code(tmp_path):
    marker = tmp_path / "pwned"
    src = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
           f"        self.fc = nn.Linear(__import__('pathlib').Path({str(marker)!r}).touch() or dim, dim)\n"
           "    def forward(self, x):\n        return self.fc(x)\n")
    assert synthesize(src)  # guesses are still made, from the signature
    assert not marker.exists()


def test_two_needed_definitions_with_one_name_are_both_kept_under_distinct_names():
    files = {
        "pkg/a.py": "import torch\ndef norm(x):\n    return x / x.abs().max()\nclass Helper(torch.nn.Module):\n    def forward(self, x):\n        return norm(x)\n",
        "pkg/b.py": "import torch\nfrom .a import Helper as H\ndef norm(x):\n    return x - x.mean()\nclass Block(torch.nn.Module):\n"
                    "    def __init__(self):\n        super().__init__()\n        self.h = H()\n    def forward(self, x):\n        return norm(self.h(x))\n",
    }
    extracted = extract_class(_repo(files), "pkg/b.py", "Block")
    ns: dict = {}
    exec(compile(extracted.source, "<m>", "exec"), ns)
    import torch

    out = ns[extracted.class_name]()(torch.tensor([1.0, 3.0]))
    assert torch.allclose(out, torch.tensor([-1 / 3, 1 / 3]))  # a.norm inside Helper, b.norm in Block


def test_helper_methods_nothing_reaches_are_dropped_with_their_imports():
    files = {
        "pkg/mixin.py": "import torch\nimport not_installed_io\nclass SaveMixin:\n    def save(self, name):\n"
                        "        not_installed_io.write(name, self.last)\n    def scale(self):\n        return 2\n",
        "pkg/block.py": "import torch\nfrom .mixin import SaveMixin\nclass Block(torch.nn.Module, SaveMixin):\n"
                        "    def forward(self, x):\n        return x * self.scale()\n    def unused_but_kept(self):\n        return 0\n",
    }
    source = extract_class(_repo(files), "pkg/block.py", "Block").source
    assert "def scale" in source and "def save" not in source and "not_installed_io" not in source
    assert "def unused_but_kept" in source  # the class itself is never pruned
    with pytest.raises(ExtractionError):  # without pruning the mixin's import is needed
        extract_class(_repo(files), "pkg/block.py", "Block", prune=False)


def test_states_saved_by_separate_harvests_merge(tmp_path):
    from autotriton.harvesting import HarvestState

    path = tmp_path / "state.json"
    a, b = HarvestState.load(path), HarvestState.load(path)  # two sources harvested side by side
    a.source("local:/x")["files"] = {"m.py": "1"}
    a.add_seen({"k1"})
    b.source("dataset:/y")["sha256"] = "2"
    b.add_seen({"k2"})
    a.save()
    b.save()
    merged = HarvestState.load(path)
    assert merged.source("local:/x") == {"files": {"m.py": "1"}} and merged.source("dataset:/y") == {"sha256": "2"}
    assert merged.seen == {"k1", "k2"}


@pytest.mark.parametrize("message,shape,expected", [
    ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x32 and 16x64)", [2, 8, 32], [2, 8, 16]),
    ("RuntimeError: Given groups=1, weight of size [16, 16, 3, 3], expected input[2, 32, 8, 8] to have 16 channels, "
     "but got 32 channels instead", [2, 32, 8, 8], [2, 16, 8, 8]),
    ("RuntimeError: Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[2, 8, 32]", [2, 8, 32], [2, 8, 16]),
    ("ValueError: expected 4D input (got 3D input)", [2, 8, 32], [2, 8, 8, 32]),
    ("RuntimeError: input.size(-1) must be equal to input_size. Expected 16, got 8", [2, 32, 8], [2, 32, 16]),
    ("EinopsError: Error while processing rearrange-reduction pattern. Input tensor shape: torch.Size([2, 32, 8]). "
     "Wrong shape: expected 4 dims. Received 3-dim tensor.", [2, 32, 8], [2, 32, 8, 8]),
    ("EinopsError: Shape mismatch, can't divide axis of length 8 in chunks of 7", [2, 32, 8, 8], [2, 32, 14, 14]),
    # a package's own assert message (vector-quantize-pytorch's FSQ), and torch.cat's
    ("AssertionError: expected dimension of 2 but found dimension of 32", [2, 8, 32], [2, 8, 2]),
    # broadcasting against a constructor-sized tensor (vector-quantize's ResidualFSQ)
    ("RuntimeError: The size of tensor a (32) must match the size of tensor b (2) at non-singleton dimension 2",
     [2, 8, 32], [2, 8, 2]),
    ("RuntimeError: The size of tensor a (64) must match the size of tensor b (16) at non-singleton dimension 1",
     [2, 16, 8], [2, 64, 8]),
    ("RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 16 but got size 8 for tensor "
     "number 1 in the list.", [2, 8, 32], [2, 16, 32]),
])
def test_torch_shape_errors_steer_the_next_input_guess(message, shape, expected):
    from autotriton.harvesting.input_repair import repair_attempt
    from autotriton.harvesting.synthesis import Attempt

    attempt = Attempt(["16"], [{"name": "dim", "value": 16}], ["torch.randn(...)"], [{"kind": "tensor", "shape": shape, "dtype": "float32"}])
    fixed = repair_attempt(attempt, message)
    assert fixed is not None and fixed.input_spec[0]["shape"] == expected
    assert fixed.input_code[0] == f"torch.randn({', '.join(map(str, expected))})" and fixed.init_code == ["16"]
    assert repair_attempt(attempt, "ZeroDivisionError: division by zero") is None
    assert repair_attempt(attempt, "AssertionError: expected 2 heads, got 2") is None  # nothing to change


def test_randomness_outside_init_is_found_unless_gated_on_training():
    from autotriton.harvesting.randomness import random_calls

    noisy = "import torch\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.w = torch.nn.Parameter(torch.randn(3))\n    def forward(self, x):\n        return x + torch.rand_like(x)\n"
    assert random_calls(noisy) == ["torch.rand_like (line 7)"]
    gated = ("import torch\ndef drop_path(x, p, training):\n    if not training:\n        return x\n    return x * x.new_empty(x.shape).bernoulli_(1 - p)\n"
             "class Model(torch.nn.Module):\n    def forward(self, x):\n        return drop_path(x, 0.1, self.training)\n")
    assert random_calls(gated) == []
    forced = ("import torch\nimport torch.nn.functional as F\ndef f(x):\n    return F.dropout(x, 0.5, training=True)\n"
              "def trunc_normal_(t):\n    return t.uniform_(-1, 1)\n"
              "class Model(torch.nn.Module):\n    def forward(self, x):\n        return f(x)\n")
    assert random_calls(forced) == ["F.dropout (line 4)"]  # reached from forward; the initialiser is not


def test_an_overlay_reads_and_parses_the_files_it_does_not_replace_once_with_its_repository():
    """extract_class gives each class an overlay of its pruned helpers; the files it does not
    replace are parsed once for the whole package, whichever asks first."""
    reads: list[str] = []
    files = {"a.py": "import torch\n\n\nX = 1\n", "b.py": "Y = 2\n", "c.py": "Z = 3\n"}

    def read(path: str) -> bytes:
        reads.append(path)
        return files[path].encode()

    repo = Repository(files, read)
    first = repo.overlay({"b.py": "Y = 20\n"})
    assert first.parsed("a.py") is repo.parsed("a.py")  # parsed through the overlay, kept by the repository
    second = repo.overlay({"c.py": "Z = 30\n"})
    assert second.parsed("a.py") is repo.parsed("a.py") and second.parsed("b.py") is repo.parsed("b.py")
    assert first.parsed("b.py") is not repo.parsed("b.py") and "Y = 20" in first.text("b.py")
    assert "Z = 30" in second.text("c.py") and repo.text("c.py") == "Z = 3\n"
    assert sorted(reads) == ["a.py", "b.py", "c.py"]  # each original file read once


def test_classes_a_registry_looks_up_by_name_in_its_module_come_along():
    """A Keras-style `get("gLN")` that returns `globals().get(identifier)` (asteroid's norms and
    activations): the classes it may return are named only by strings, so the extracted module
    carries every class and function of that file; the layer then builds with its default."""
    files = {
        "sep/norms.py": "import torch\nimport torch.nn as nn\n\n\n"
                        "class GlobLN(nn.Module):\n    def __init__(self, channels):\n        super().__init__()\n"
                        "        self.gamma = nn.Parameter(torch.ones(channels, 1))\n\n"
                        "    def forward(self, x):\n        mean = x.mean(dim=(1, 2), keepdim=True)\n"
                        "        var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)\n"
                        "        return self.gamma * (x - mean) / (var + 1e-8).sqrt()\n\n\n"
                        "class ChanLN(GlobLN):\n    pass\n\n\n"
                        "gLN = GlobLN\ncLN = ChanLN\n\n\n"
                        "def get(identifier):\n    if callable(identifier):\n        return identifier\n"
                        "    cls = globals().get(identifier)\n    if cls is None:\n"
                        "        raise ValueError('Could not interpret normalization identifier: ' + str(identifier))\n"
                        "    return cls\n",
        "sep/blocks.py": "import torch.nn as nn\nfrom . import norms\n\n\n"
                         "class ConvBlock(nn.Module):\n    def __init__(self, channels=8, norm_type='gLN'):\n"
                         "        super().__init__()\n        self.conv = nn.Conv1d(channels, channels, 3, padding=1)\n"
                         "        self.norm = norms.get(norm_type)(channels)\n\n"
                         "    def forward(self, x):\n        return self.norm(self.conv(x))\n",
    }
    import torch

    source = extract_class(_repo(files), "sep/blocks.py", "ConvBlock").source
    assert "class GlobLN(" in source and "class ChanLN(" in source and "cLN = ChanLN" in source
    ns: dict = {}
    exec(compile(source, "<m>", "exec"), ns)
    out = ns["ConvBlock"]()(torch.randn(2, 8, 16))
    assert out.shape == (2, 8, 16)
    assert type(ns["ConvBlock"](norm_type="cLN").norm).__name__ == "ChanLN"


def test_the_methods_of_a_shared_helper_are_read_once_for_all_the_classes_that_use_it(monkeypatch):
    """Pruning reads which attribute names each kept statement mentions; a package's classes share
    their bases, and torchrl's harvest re-read the same base methods for every class (40 % of its
    time). Each node is read once per repository, and the extractions are the same as without it."""
    from autotriton.harvesting import extract as extract_mod

    files = {
        "pkg/base.py": "import torch\nclass Base(torch.nn.Module):\n    def scale(self):\n        return self.factor()\n"
                       "    def factor(self):\n        return 2\n    def unused(self):\n        return self.nothing\n",
        "pkg/a.py": "from .base import Base\nclass A(Base):\n    def forward(self, x):\n        return x * self.scale()\n",
        "pkg/b.py": "from .base import Base\nclass B(Base):\n    def forward(self, x):\n        return x + self.scale()\n",
    }
    visits: list[str] = []

    class Recording(extract_mod._AttrNames):  # notes the node each read starts from
        def on_visit(self, node):
            if not self.names and not getattr(self, "started", False):
                self.started = True
                visits.append(getattr(getattr(node, "name", None), "value", type(node).__name__))
            return super().on_visit(node)

    monkeypatch.setattr(extract_mod, "_AttrNames", Recording)
    repo = _repo(files)
    first = [extract_class(repo, "pkg/a.py", "A").source]
    assert {"scale", "factor"} <= set(visits) and "unused" not in visits
    visits.clear()
    first.append(extract_class(repo, "pkg/b.py", "B").source)
    assert not {"scale", "factor"} & set(visits), visits  # Base's methods: read for A, not again for B
    assert "def unused" not in first[0] and "def factor" in first[0]
    fresh = [extract_class(_repo(files), path, name).source for path, name in (("pkg/a.py", "A"), ("pkg/b.py", "B"))]
    assert first == fresh


def test_a_name_an_import_binds_and_another_file_defines_keeps_both_under_two_names():
    """timm's norm.py: `try: from torch.nn.functional import rms_norm except ImportError: from
    .fast_norm import rms_norm`, beside `from .fast_norm import fast_rms_norm`, whose own file
    defines `def rms_norm`. Both are needed; the import's name was renamed where it is used
    (`rms_norm_2(x, ...)`) but not where the import binds it (NameError in every probe)."""
    files = {
        "pkg/__init__.py": "",
        "pkg/fast.py": "def rms_norm(x):\n    return x * 3\n\ndef fast_rms_norm(x):\n    return rms_norm(x) + 1\n",
        "pkg/norm.py": "import torch.nn as nn\nfrom .fast import fast_rms_norm\n"
                       "try:\n    from torch.nn.functional import relu as rms_norm\nexcept ImportError:\n"
                       "    from .fast import rms_norm\n\n"
                       "class Norm(nn.Module):\n    def forward(self, x):\n        return fast_rms_norm(x) + rms_norm(-x)\n",
    }
    source = extract_class(_repo(files), "pkg/norm.py", "Norm").source
    assert "def rms_norm(x)" in source, source
    assert _outputs(source, "Norm") == [4.0, 4.0]  # 3 * 1 + 1 from the file's function, relu(-1) = 0 from torch

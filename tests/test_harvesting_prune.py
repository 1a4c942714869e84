"""Modules over harvest.max_problem_chars lose what forward never reaches before they are judged
too large (harvesting/prune.py): sentence-transformers' Pooling and Dense were 35,000 characters,
two thirds of it saving and loading code and the hub client it imports (RESULTS.md, set 12)."""

from __future__ import annotations

import ast
import textwrap

import torch

from autotriton.harvesting.config import HarvestConfig
from autotriton.harvesting.local import harvest_local
from autotriton.harvesting.prune import prune_unused

BASE = '''\
import json
from abc import ABC, abstractmethod

import torch.nn as nn
import shutil
from urllib.request import urlretrieve


def _cached_path(name):
    """{pad}"""
    return urlretrieve(name)[0]


class Base(ABC, nn.Module):
    """The package's base module."""

    config_keys = []

    @abstractmethod
    def forward(self, features):
        """Pools."""

    @abstractmethod
    def save(self, path):
        """Saves."""

    def save_config(self, path):
        """{pad}"""
        with open(path, "w") as f:
            json.dump(self.get_config_dict(), f)
        shutil.copy(path, path + ".bak")

    def get_config_dict(self):
        return {{k: getattr(self, k) for k in self.config_keys}}

    def __repr__(self):
        return f"{{type(self).__name__}}({{self.get_config_dict()}})"
'''

POOL = '''\
import json

import torch
import torch.nn as nn

from .base import Base, _cached_path


class Pool(Base):
    config_keys = ["dim"]

    def __init__(self, dim=16):
        super().__init__()
        self.dim = dim
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        scale = getattr(self, "scale_of")(x)
        return self._pool(self.proj(x)) * scale

    def _pool(self, h):
        return h.mean(dim=1)

    def scale_of(self, x):
        return 2.0

    def extra_repr(self):
        return f"dim={{self.dim}}"

    def save(self, path):
        self.save_config(path)

    @classmethod
    def load(cls, name):
        with open(_cached_path(name)) as f:
            return cls(**json.load(f))
'''


def _package(tmp_path, pad: str) -> None:
    (tmp_path / "LICENSE").write_text("MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy. "
                                      "The above copyright notice and this permission notice shall be included in all copies.\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(BASE.format(pad=pad))
    (pkg / "pool.py").write_text(POOL.format())


def test_a_module_over_the_limit_loses_its_saving_code_and_the_imports_only_that_needed(tmp_path):
    _package(tmp_path, "Long documentation. " * 60)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False, max_problem_chars=3_000))
    pool = next(p for p in result.problems if p.name == "Pool")
    assert pool.status == "runnable", (pool.reject_reason, result.details.get(pool.key))
    source = pool.reference_source
    assert "def load" not in source and "def save" not in source and "_cached_path" not in source
    assert "urllib" not in source and "shutil" not in source and "import json" not in source
    # what forward reaches stays: its helper, a method named in a string, torch's hook, __repr__'s config
    for kept in ("def _pool", "def scale_of", "def extra_repr", "def get_config_dict", "def __repr__"):
        assert kept in source
    namespace: dict = {}
    exec(compile(source, "pool_problem.py", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"](16)
    x = torch.randn(2, 5, 16)
    assert torch.allclose(model(x), model.proj(x).mean(dim=1) * 2.0)
    assert "dim=16" in repr(model) or "Model" in repr(model)


def test_a_module_within_the_limit_is_kept_as_extracted(tmp_path):
    """Pruning applies only to modules the length check would reject: problems that fit keep
    every method (a user's harvested problems do not change under them)."""
    _package(tmp_path, "Long documentation. " * 60)
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False, max_problem_chars=30_000))
    pool = next(p for p in result.problems if p.name == "Pool")
    assert pool.status == "runnable" and "def save" in pool.reference_source and "urllib" in pool.reference_source
    assert len(pool.reference_source) > 3_000  # the limit the first test prunes under


def test_a_class_left_without_methods_keeps_a_valid_body_and_imports_keep_only_used_names():
    source = textwrap.dedent('''\
        import os, torch
        import torch.nn as nn


        class Saver:
            def save(self):
                return os.getcwd()


        class Model(nn.Module, Saver):
            def forward(self, x):
                return torch.relu(x)
    ''')
    pruned = prune_unused(source, "Model")
    tree = ast.parse(pruned)
    assert "os" not in pruned.split("class")[0] and "import torch" in pruned
    saver = next(s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == "Saver")
    assert [type(s).__name__ for s in saver.body] == ["Pass"]
    assert prune_unused("def broken(:\n", "Model") == "def broken(:\n"


def test_documentation_goes_when_pruning_is_not_enough_and_the_module_still_runs(tmp_path):
    """A module still over the limit after pruning loses its docstrings (a body left with only
    its docstring gets `pass`); what it computes is unchanged."""
    _package(tmp_path, "Long documentation. " * 60)
    (tmp_path / "pkg" / "pool.py").write_text(POOL.format().replace(
        "    def _pool(self, h):\n", "    def _pool(self, h):\n        \"\"\"" + "Pools over tokens. " * 80 + "\"\"\"\n"))
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False, max_problem_chars=1_500))
    pool = next(p for p in result.problems if p.name == "Pool")
    assert pool.status == "runnable", (pool.reject_reason, result.details.get(pool.key))
    assert "Pools over tokens" not in pool.reference_source and '"""Pools."""' not in pool.reference_source
    namespace: dict = {}
    exec(compile(pool.reference_source, "pool_problem.py", "exec"), namespace)
    model = namespace["Model"](16)
    x = torch.randn(2, 5, 16)
    assert torch.allclose(model(x), model.proj(x).mean(dim=1) * 2.0)


def test_a_docstring_a_decorator_may_read_is_kept_when_documentation_goes():
    from autotriton.harvesting.prune import strip_docstrings

    source = textwrap.dedent('''
        import torch


        def parse_docdata(cls):
            if not cls.__doc__:
                raise ValueError("docstring is empty")
            return cls


        @parse_docdata
        class Embedding(torch.nn.Module):
            """A table of vectors.

            ---
            name: Embedding
            """

            @property
            def width(self):
                """How wide a vector is."""
                return 3

            def forward(self, x):
                """Look the rows up."""
                return x * self.width
    ''')
    stripped = strip_docstrings(source)
    namespace: dict = {}
    exec(compile(stripped, "<stripped>", "exec"), namespace)  # the decorator finds its docstring
    assert "name: Embedding" in stripped
    # the others go: a property's and a plain method's
    assert "How wide" not in stripped and "Look the rows up" not in stripped


def test_comments_go_last_and_strings_holding_a_hash_stay():
    from autotriton.harvesting.prune import strip_comments

    source = textwrap.dedent('''\
        import torch  # the judge's torch


        # a note about the layer
        # that runs over lines



        class Model(torch.nn.Module):
            def forward(self, x):
                # x = x * 3  (the old scaling, commented out)
                tag = "#channel"  # a string with a hash is code
                return x * len(tag)  # 8
    ''')
    stripped = strip_comments(source)
    assert "#" not in stripped.replace('"#channel"', "")
    assert 'tag = "#channel"\n' in stripped and "import torch\n" in stripped
    assert "\n\n\n\n" not in stripped  # the blank lines the comments stood between collapse
    namespace: dict = {}
    exec(compile(stripped, "<stripped>", "exec"), namespace)
    assert torch.equal(namespace["Model"]()(torch.ones(2)), torch.full((2,), 8.0))
    assert strip_comments("def broken(:\n  # c\n") == "def broken(:\n  # c\n"


def test_a_module_over_the_limit_by_its_comments_becomes_a_problem(tmp_path):
    """Pruning and docstrings are not enough: commented-out code and notes go, and the module,
    unchanged in what it computes, is within the limit."""
    _package(tmp_path, "Doc.")
    notes = "".join(f"        # note {i}: an old variant, h = h.max(dim=1).values * {i}\n" for i in range(40))
    (tmp_path / "pkg" / "pool.py").write_text(POOL.format().replace("    def _pool(self, h):\n", "    def _pool(self, h):\n" + notes))
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False, max_problem_chars=1_500))
    pool = next(p for p in result.problems if p.name == "Pool")
    assert pool.status == "runnable", (pool.reject_reason, result.details.get(pool.key))
    assert "an old variant" not in pool.reference_source
    namespace: dict = {}
    exec(compile(pool.reference_source, "pool_problem.py", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Model"](16)
    x = torch.randn(2, 5, 16)
    assert torch.allclose(model(x), model.proj(x).mean(dim=1) * 2.0)


def test_modules_too_large_to_be_problems_are_counted_as_such_not_as_near_duplicates(tmp_path):
    """escnn: each module inlines the same 300,000 characters of its package's group theory, so
    its too-large modules were near-duplicates of one another (58 of 79 classes counted as
    duplicates, not too_large), after minutes of MinHash. An exact copy is still a duplicate."""
    (tmp_path / "LICENSE").write_text("MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy. "
                                      "The above copyright notice and this permission notice shall be included in all copies.\n")
    shared = "".join(f"def helper_{i}(x):\n    return x * {i} + {i % 7}\n\n\n" for i in range(120))
    calls = " + ".join(f"helper_{i}(x)" for i in range(120))
    (tmp_path / "shared.py").write_text(shared + f"def everything(x):\n    return {calls}\n")
    layers = "import torch.nn as nn\nfrom shared import everything\n\n\n"
    for name, op in (("First", "x * 2"), ("Second", "x - 1"), ("Third", "x / 3")):
        layers += f"class {name}(nn.Module):\n    def forward(self, x):\n        return everything({op})\n\n\n"
    (tmp_path / "layers.py").write_text(layers)
    (tmp_path / "copy.py").write_text(layers.split("class Second")[0])
    result = harvest_local(tmp_path, HarvestConfig(incremental=False, probe=False, max_problem_chars=3_000))
    reasons = sorted((p.name, p.reject_reason) for p in result.problems)
    assert reasons == [("First", "too_large"), ("Second", "too_large"), ("Third", "too_large")], reasons
    assert result.duplicates == 1  # copy.py's First

"""The Inductor teacher leaves out reference code that only the reference forward needed and the
judge's rules forbid (distillation/inductor_prune.py).

On an H200 (2026-12-02, run 20261202-002047-60b3bb4c) 16 of 82 judged package candidates were
correct but broke the static rules through code the converter carried over: an `__init__` that
stores `use_fused_attn()` (module globals read from `os.environ`), `torch.jit.Final` class
annotations, a `torch.jit.is_tracing()` in a helper method only forward called, `packaging.version`
checks, einops `Rearrange` layers inside `nn.Sequential`. The problems below have those shapes
(written here, no third-party code); `layerkit` is a local stand-in for a dependency package
outside the import allowlist. Each is captured on the CPU (cpu-triton dry run), converted, and
checked: the rules pass, ModelNew has the reference's state_dict keys, the CPU judge validates it.
The rules themselves are unchanged: hand-written candidates with the same code are still caught.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inductor_helpers import assert_cpu_judge_passes, capture_on_cpu, convert_all, load_source

LAYERKIT = '''import torch.nn as nn


class Rearrange(nn.Module):
    """merges the last two dimensions (a parameter-free layer, as einops' is)"""

    def forward(self, x):
        return x.flatten(-2)


def default_init_weights(module_list, scale=1.0, bias_fill=0.0):
    """basicsr's initialiser: kaiming-normal weights scaled, biases filled, for each layer given"""
    import torch

    for m in module_list if isinstance(module_list, list) else [module_list]:
        if isinstance(m, nn.Linear):
            nn.init.kaiming_normal_(m.weight)
            with torch.no_grad():
                m.weight.mul_(scale)
                m.bias.fill_(bias_fill)


def repeat_rows(t, times):
    """each row repeated `times` times (what einops' `repeat(t, "o ... -> (o r) ...", r=times)` does)"""
    return t.repeat_interleave(times, dim=0)


class Scale(nn.Module):
    """a layer with a parameter, from the same package"""

    def __init__(self, dim):
        super().__init__()
        self.gain = nn.Parameter(1.0 + 0.1 * __import__("torch").arange(dim, dtype=__import__("torch").float32))

    def forward(self, x):
        return x * self.gain
'''

ENV_FINAL = '''import os
from typing import Dict

import torch
import torch.nn as nn

_HAS_SDPA = hasattr(torch.nn.functional, "scaled_dot_product_attention")
if "TOY_FUSED_ATTN" in os.environ:
    _USE_FUSED = int(os.environ["TOY_FUSED_ATTN"])
else:
    _USE_FUSED = 1


def use_fused_attn() -> bool:
    return _HAS_SDPA and _USE_FUSED > 0


class Mixer(nn.Module):
    fused: torch.jit.Final[bool]
    cache: Dict[str, torch.Tensor]

    def __init__(self, dim: int):
        super().__init__()
        self.fused = use_fused_attn()
        self.norm = nn.LayerNorm(dim)
        self.bias = nn.Parameter(torch.linspace(-1.0, 1.0, dim))
        self.cache = {}

    def _bias(self) -> torch.Tensor:
        if torch.jit.is_tracing() or self.training:
            return self.bias
        return self.bias * 1.0

    def forward(self, x):
        return self.norm(x) + self._bias()


class Model(nn.Module):
    fused_attn: torch.jit.Final[bool]
    scale: float = 0.5

    def __init__(self, dim: int):
        super().__init__()
        self.fused_attn = use_fused_attn()
        self.mixer = Mixer(dim)
        self.out = nn.LayerNorm(dim)

    def forward(self, x):
        y = torch.relu(self.mixer(x))
        return self.out(y) * self.scale


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [16]
'''

SEQUENTIAL = '''import torch
import torch.nn as nn
from layerkit import Rearrange, Scale


class Model(nn.Module):
    def __init__(self, dim: int, patch: int):
        super().__init__()
        self.to_tokens = nn.Sequential(Rearrange(), nn.LayerNorm(dim * patch), Scale(dim * patch))
        self.merge = Rearrange()
        self.gain = Scale(dim * patch)

    def forward(self, x):
        return self.gain(torch.tanh(self.to_tokens(x)))


def get_inputs():
    return [torch.randn(2, 6, 8, 4)]


def get_init_inputs():
    return [8, 4]
'''

VERSION = '''import torch
import torch.nn as nn
import torch.nn.functional as F
from packaging import version


class Model(nn.Module):
    def __init__(self, dim: int, flash: bool = False):
        super().__init__()
        assert not (flash and version.parse(torch.__version__) < version.parse("2.0.0")), "flash needs torch 2"
        self.flash = flash
        self.norm = nn.LayerNorm(dim)
        self.new_gelu = version.parse(torch.__version__) >= version.parse("1.12")
        if not torch.cuda.is_available() or not flash:
            return
        capability = version.parse("{}.{}".format(*torch.cuda.get_device_capability()))
        if capability > version.parse("8.0"):
            print("using the fast path")

    def forward(self, x):
        return F.gelu(self.norm(x), approximate="tanh" if self.new_gelu else "none")


def get_inputs():
    return [torch.randn(4, 32)]


def get_init_inputs():
    return [32]
'''

MARKERS = '''import torch
import torch.fx
import torch.nn as nn
from torch.jit import is_scripting


@torch.fx.wrap
def _checked_scale(scale: float) -> float:
    if not is_scripting() and not torch.jit.is_tracing():
        if scale <= 0:
            raise ValueError("scale must be positive")
    return float(scale)


@torch.compiler.disable(recursive=False)
def _ramp(dim: int) -> torch.Tensor:
    return torch.linspace(0.5, 1.5, dim)


torch.fx.wrap("_ramp")


class Partial(nn.Module):
    def __init__(self, dim: int, mode: str):
        super().__init__()
        self.gain = nn.Parameter(torch.linspace(-1.0, 1.0, dim))
        if mode == "plain":
            self.forward = self.forward_plain
        elif mode == "gated":
            self.forward = self.forward_gated
        else:
            raise NotImplementedError(mode)

    def forward_plain(self, x):
        return x * self.gain

    def forward_gated(self, x):
        return x * self.gain * torch.sigmoid(x)


class Model(nn.Module):
    def __init__(self, dim: int, scale: float = 2.0):
        super().__init__()
        self.scale = _checked_scale(scale)
        self.block = Partial(dim, "gated")
        self.register_buffer("ramp", _ramp(dim))

    def forward(self, x):
        return self.block(x) * self.ramp * self.scale


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [16]
'''

INIT_VALUES = '''import torch
import torch.nn as nn
from layerkit import default_init_weights, repeat_rows


class Model(nn.Module):
    def __init__(self, dim: int, factor: int = 2):
        super().__init__()
        self.factor = factor
        self.weight = nn.Parameter(torch.empty(dim * factor, dim))
        self.bias = nn.Parameter(torch.empty(dim * factor))
        self.init_weights_(self.weight)
        self.modulation = nn.Linear(dim, dim)
        default_init_weights(self.modulation, scale=1, bias_fill=1)
        default_init_weights([self.modulation], 0.1)

    def init_weights_(self, weight):
        base = torch.empty(weight.shape[0] // self.factor, weight.shape[1])
        nn.init.kaiming_uniform_(base)
        base = repeat_rows(base, self.factor)
        with torch.no_grad():
            weight.data.copy_(base)
        nn.init.zeros_(self.bias)

    def forward(self, x):
        return torch.tanh((x + self.modulation.bias).unsqueeze(1) * self.weight).sum(-1) + self.bias


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return [8]
'''

# lucidrains-style run-time type checking (an H200 run, 2026-12-03: 8 of 197 package problems broke the
# import allowlist through `@beartype` on __init__ and `beartype.typing` annotations left in ModelNew)
# and alphafold3-pytorch's switchable checker (an H100 run, 2026-12-06: 13 candidates carried jaxtyping,
# beartype and an environs switch through `@typecheck`)
TYPE_CHECKED = '''import os

import torch
import torch.nn as nn
from beartype import beartype
from beartype.typing import Tuple


def identity(t):
    return t


should_typecheck = os.environ.get("TYPECHECK", "") == "1"
typecheck = beartype if should_typecheck else identity


def cast_tuple(t, length=1) -> Tuple[int, ...]:
    return t if isinstance(t, tuple) else (t,) * length


@beartype
class Gain(nn.Module):
    @typecheck
    def __init__(self, dim: int):
        super().__init__()
        self.gain = nn.Parameter(torch.linspace(0.5, 1.5, dim)[:, None])


class Model(nn.Module):
    @beartype
    def __init__(self, dim: int, kernel_size: int | Tuple[int, int] = 3):
        super().__init__()
        k, _ = cast_tuple(kernel_size, 2)
        self.conv = nn.Conv1d(dim, dim, k, padding=k // 2)
        self.gain = Gain(dim)

    @beartype
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.conv(x)) * self.gain.gain + x


def get_inputs():
    return [torch.randn(2, 8, 16)]


def get_init_inputs():
    return [8]
'''

PROBLEMS = {"env_final": ENV_FINAL, "sequential": SEQUENTIAL, "version": VERSION, "markers": MARKERS,
            "init_values": INIT_VALUES, "type_checked": TYPE_CHECKED}


@pytest.fixture(scope="module")
def layerkit_path(tmp_path_factory):
    """`layerkit` importable here, in the capture subprocess and in the judge's workers (PYTHONPATH)."""
    root = tmp_path_factory.mktemp("deps")
    (root / "layerkit").mkdir()
    (root / "layerkit" / "__init__.py").write_text(LAYERKIT)
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root))
        mp.setenv("PYTHONPATH", str(root) + ":" + __import__("os").environ.get("PYTHONPATH", ""))
        yield root


@pytest.fixture(scope="module")
def captured(layerkit_path, tmp_path_factory) -> dict[str, dict]:
    return capture_on_cpu(PROBLEMS, tmp_path_factory.mktemp("realworld_rules"), "rules")


@pytest.fixture(scope="module")
def converted(captured) -> dict:
    return convert_all(captured, PROBLEMS)


def _load(code: str, path: Path) -> dict:
    return load_source(code, path, "rules")


def _rules(code: str) -> list[str]:
    from autotriton.validation import static_rules

    return [f"{v.rule}: {v.message}" for v in static_rules(code)]


def _same_state(name: str, code: str, tmp_path: Path) -> None:
    import torch

    ref = _load(PROBLEMS[name], tmp_path / f"{name}_ref.py")
    new = _load(code, tmp_path / f"{name}_new.py")
    torch.manual_seed(0)
    model = ref["Model"](*ref["get_init_inputs"]())
    candidate = new["ModelNew"](*ref["get_init_inputs"]())
    assert sorted(candidate.state_dict()) == sorted(model.state_dict())
    assert {k: v.shape for k, v in candidate.state_dict().items()} == {k: v.shape for k, v in model.state_dict().items()}


def test_environment_helpers_jit_annotations_and_tracing_checks_are_left_out(converted, tmp_path):
    """timm's shape: `self.fused_attn = use_fused_attn()` (module globals from os.environ),
    `torch.jit.Final` annotations, `torch.jit.is_tracing()` in a method only forward called."""
    code = converted["env_final"].code
    assert _rules(code) == []
    assert "os" not in code.split() and "import os" not in code and "environ" not in code
    assert "torch.jit" not in code and "use_fused_attn" not in code
    assert "def _bias" not in code or "if False or self.training" in code  # the tracing check read as eager runs it
    assert "scale = 0.5" in code  # an annotated class attribute keeps its value
    assert "self.cache = {}" in code  # dead but allowed: kept, as the reference has it
    _same_state("env_final", code, tmp_path)


def test_parameter_free_layers_from_outside_the_allowlist_become_identity_in_place(converted, tmp_path):
    """einops' shape: Rearrange in nn.Sequential before layers with parameters keeps its index
    (`to_tokens.1.weight`, `to_tokens.2.gain` stay), one only forward used goes; a layer with a parameter stays."""
    code = converted["sequential"].code
    assert "nn.Sequential(nn.Identity(), nn.LayerNorm" in code
    assert "self.merge" not in code and "Rearrange" not in code
    assert "Scale" in code  # holds `gain.gain`: the rules still see it, nothing is faked
    assert [v for v in _rules(code) if "Rearrange" in v] == []
    assert any("layerkit" in v and "Scale" in v for v in _rules(code))
    _same_state("sequential", code, tmp_path)


def test_version_checks_go_with_the_code_that_needed_them(converted, tmp_path):
    """x-transformers' shape: packaging.version in an assert, in a flag only forward reads and
    in a device check after an early return."""
    code = converted["version"].code
    assert _rules(code) == []
    assert "packaging" not in code and "version" not in code
    assert "self.flash = flash" in code and "return" in code.split("def forward")[0]
    _same_state("version", code, tmp_path)


def test_tracer_markers_and_forward_rebinding_are_read_as_eager_execution_reads_them(converted, tmp_path):
    """timm's and FasterNet-like shapes: `@torch.fx.wrap` helpers, `torch.jit.is_scripting()`
    checks, `@torch.compiler.disable(...)`, a module-level `torch.fx.wrap("f")` and a helper module
    that picks its forward by rebinding `self.forward` in `__init__` (never run by the generated forward)."""
    code = converted["markers"].code
    assert _rules(code) == []
    assert "torch.fx" not in code and "is_scripting" not in code and "torch.compiler" not in code
    assert "self.forward =" not in code and "raise NotImplementedError(mode)" in code
    assert "raise ValueError" in code  # the helper's own check stays, as eager execution runs it
    _same_state("markers", code, tmp_path)


def test_weight_initialisation_through_a_forbidden_package_is_left_out(converted, tmp_path):
    """denoising-diffusion's Upsample shape: `__init__` initialises a weight through einops
    (`repeat` of a smaller kaiming init, copied into `weight.data`), and gfpgan's
    `default_init_weights(self.modulation, ...)` from basicsr (an H100 run, 2026-12-06): ModelNew's
    values come from the reference's state_dict, which the judge loads, so the writes that need the package go."""
    code = converted["init_values"].code
    assert _rules(code) == []
    assert "layerkit" not in code and "repeat_rows" not in code and "copy_" not in code and "default_init" not in code
    assert "nn.init.zeros_(self.bias)" in code  # allowed code stays as the reference has it
    _same_state("init_values", code, tmp_path)


def test_pruned_real_world_candidates_pass_the_cpu_judge(converted):
    assert_cpu_judge_passes(PROBLEMS, converted, ["env_final", "version", "markers", "init_values", "type_checked"])


def test_run_time_type_checkers_and_the_annotations_they_read_are_left_out(converted, tmp_path):
    code = converted["type_checked"].code
    assert _rules(code) == [], code
    assert "beartype" not in code and "Tuple" not in code and "typecheck" not in code and "environ" not in code
    _same_state("type_checked", code, tmp_path)


def test_the_rules_still_catch_the_same_code_in_a_hand_written_candidate(converted):
    """Nothing was relaxed: the pruned code put back by hand is a violation again."""
    code = converted["env_final"].code
    assert _rules(code) == []
    hostile = code.replace("import torch\n", "import torch\nimport os\n", 1).replace(
        "self.mixer = Mixer(dim)", "self.mixer = Mixer(dim)\n        self.fused_attn = int(os.environ.get('A', '1'))", 1)
    assert any(v.startswith("SYSTEM-ACCESS") for v in _rules(hostile))
    jit = code.replace("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n    fused_attn: torch.jit.Final[bool]\n", 1)
    assert any(v.startswith("TORCH-COMPILE") for v in _rules(jit))
    checked = converted["type_checked"].code.replace("import torch\n", "import torch\nfrom beartype import beartype\n", 1)
    assert any(v.startswith("IMPORT-FORBIDDEN") for v in _rules(checked))


def test_state_and_kept_reads_are_never_pruned():
    """Conservative: an attribute holding a parameter, one kept code reads, and everything when the
    capture's parameter names are unknown, stay even where the rules forbid their code."""
    import ast

    from autotriton.distillation.inductor_module import HEADER_BINDINGS, reference_model
    from autotriton.distillation.inductor_prune import prune_reference

    source = '''import os
import torch
import torch.nn as nn
from layerkit import Scale

_ON = int(os.environ.get("ON", "1"))


def flag():
    return _ON > 0


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gain = Scale(dim) if flag() else None
        self.read = flag()
        self.unread = flag()
        self.width = dim * 2 if self.read else dim

    def forward(self, x):
        return x
'''
    ref = reference_model(source)
    prune_reference(ref, ["gain.gain"], "pass", HEADER_BINDINGS)
    init = ast.unparse(ref.body[0])
    assert "self.gain = Scale(dim)" in init and "self.read = flag()" in init and "self.unread" not in init
    unknown = reference_model(source)
    prune_reference(unknown, None, "pass", HEADER_BINDINGS)
    assert "self.unread = flag()" in ast.unparse(unknown.body[0])

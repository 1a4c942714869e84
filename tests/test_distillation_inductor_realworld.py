"""The Inductor teacher on real-world module shapes (issue 13): what harvested repository code
looks like, unlike KernelBench problems -- typing and `from torch.nn import Module` imports,
helper functions and submodule classes, weight-init helpers called from __init__, optional
forward arguments, parameters of nn.Sequential/ModuleList/ParameterList/ParameterDict children,
buffers, module-level tensors and submodules, an int argument, a dataclass config under `from __future__ import annotations`,
a list of tensors as input.

On an H200 (2026-12-01) 19 of 88 such problems failed conversion with `unknown_graph_input`, 8
failed capture, and of the converted ones the judge failed those whose ModelNew lacked the
module's imports, its `_initialize_weights` or forward's optional arguments. Each kind is covered
here by a cpu-triton dry-run capture (Inductor's real Triton output for CPU tensors, see
benchmarks/inductor_l1.py cpu_triton_codegen), converted and judged by the CPU judge.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from inductor_helpers import assert_cpu_judge_passes, load_bench

NESTED = '''import math
from typing import Optional, Tuple

import torch
from torch import nn, Tensor, tensor
from torch.nn import Module
import torch.nn.functional as F

DEFAULT_EPS = 1e-6
_WINDOW = torch.hann_window(16)


def default(val, d):
    return val if val is not None else d


class RMSNorm(Module):
    def __init__(self, dim: int, eps: float = DEFAULT_EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LayerScale(nn.Module):
    def __init__(self, dim: int, init_values: float = 1e-5) -> None:
        super().__init__()
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma


class Model(Module):
    """A diffusers/timm-style block."""

    def __init__(self, dim: int, context_dim: Optional[int] = None, hidden: int = 24):
        super().__init__()
        context_dim = default(context_dim, dim)
        self.pre = nn.Sequential(nn.LayerNorm(dim), nn.GELU(), LayerScale(dim, 0.5))
        self.norms = nn.ModuleList([RMSNorm(dim) for _ in range(2)])
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(hidden) * (i + 1)) for i in range(2)])
        self.gamma = nn.Parameter(torch.zeros(dim))
        self.register_buffer("shift", torch.arange(dim, dtype=torch.float32) / dim)
        self.register_buffer("offset", tensor([0.25]))
        self._initialize_weights()

    def _initialize_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, RMSNorm):
                nn.init.normal_(m.weight, mean=1.0, std=0.02)
        nn.init.normal_(self.gamma, std=0.1)
        self._init_scales()

    def _init_scales(self):
        for s in self.scales:
            nn.init.uniform_(s, 0.5, 1.5)

    def _unused_helper(self, x: Tensor) -> Tensor:
        return torch.sigmoid(x)

    def forward(self, x: Tensor, y: Tensor, context: Optional[Tensor] = None, scale: float = 1.0) -> Tensor:
        h = self.pre(x)
        for norm in self.norms:
            h = norm(h)
        if context is not None:
            h = h + context
        z = F.silu(y * self.scales[0]) + y * self.scales[1]
        return (x + F.gelu(h) * self.gamma * scale + self.shift) * _WINDOW.sum() + z.mean(-1, keepdim=True) + self.offset


def get_inputs():
    return [torch.randn(2, 8, 32), torch.randn(2, 8, 24)]


def get_init_inputs():
    return [32]
'''

CONFIG = '''from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class BlockConfig:
    dim: int = 32
    eps: float = 1e-5
    mults: tuple = (1.0, 2.0)


class Base(nn.Module):
    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.cfg = cfg

    def init_weights(self):
        for p in self.parameters():
            nn.init.normal_(p, 1.0, 0.02)


class Model(Base):
    def __init__(self, dim: int = 32):
        super().__init__(BlockConfig(dim=dim))
        self.weights = nn.ParameterDict({f"level_{i}": nn.Parameter(torch.ones(dim)) for i in range(2)})
        self.init_weights()

    def forward(self, feats: List[torch.Tensor], bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        out = 0
        for i, f in enumerate(feats):
            out = out + F.layer_norm(f, (self.cfg.dim,), eps=self.cfg.eps) * self.weights[f"level_{i}"] * self.cfg.mults[i]
        if bias is not None:
            out = out + bias
        return out


def get_inputs():
    return [[torch.randn(2, 8, 32), torch.randn(2, 8, 32)]]


def get_init_inputs():
    return [32]
'''

GLOBALS = '''import torch
import torch.nn as nn

_GLOBAL_NORM = nn.LayerNorm(16)


class Model(nn.Module):
    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.heads = heads
        self.table = torch.linspace(0, 1, dim)
        self.coefs = [0.5, 1.5]
        self.use_bias = True
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x, repeats: int, mask=None):
        b, n, d = x.shape
        h = _GLOBAL_NORM(x) * self.table * self.coefs[1]
        h = h.view(b, n, self.heads, d // self.heads).softmax(-1).reshape(b, n, d)
        if self.use_bias:
            h = h + self.bias
        return h * repeats


def get_inputs():
    return [torch.randn(2, 8, 16), 3]


def get_init_inputs():
    return [16, 4]
'''

LOGGING = '''import logging
import warnings

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class Model(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = torch.tanh(x) * self.scale
        logger.info("forward with %d tokens", x.shape[1])
        warnings.warn("Model.forward: legacy path")
        return torch.sigmoid(h) + x


def get_inputs():
    return [torch.randn(2, 8, 16)]


def get_init_inputs():
    return [16]
'''

# timm's TinyViT / LeViT attention: in eval mode the bias gather is cached per device on the module.
# On an H200 (2026-12-02) the capture traced the filled cache, and ModelNew read
# `self.blocks[0].attn.attention_bias_cache['cuda:0']`: KeyError in the judge.
CACHE = '''import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim: int, resolution: int = 4):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))
        n = resolution * resolution
        self.attention_biases = nn.Parameter(torch.randn(1, n) * 0.02)
        self.register_buffer("attention_bias_idxs", torch.arange(n * n).remainder(n).view(n, n), persistent=False)
        self.attention_bias_cache = {}

    def get_attention_biases(self, device: torch.device) -> torch.Tensor:
        if self.training:
            return self.attention_biases[:, self.attention_bias_idxs]
        key = str(device)
        if key not in self.attention_bias_cache:
            self.attention_bias_cache[key] = self.attention_biases[:, self.attention_bias_idxs]
        return self.attention_bias_cache[key]

    def forward(self, x):
        return (x * self.scale + self.get_attention_biases(x.device)).softmax(-1)


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = Attention(dim)

    def forward(self, x):
        return self.attn(x) + x


def get_inputs():
    return [torch.randn(2, 16, 16)]


def get_init_inputs():
    return [16]
'''

# vit-pytorch's NormLinear: a parametrization (a class of the source) on a child's weight; ModelNew
# carries the class without its forward, so registering it must not call it (H200, 2026-12-02:
# "Module [L2Norm] is missing the required forward function" when ModelNew was built).
PARAMETRIZED = '''import torch
from torch import nn
import torch.nn.utils.parametrize as parametrize
import torch.nn.functional as F


class UnitNorm(nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, t):
        return F.normalize(t, dim=self.dim)


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        parametrize.register_parametrization(self.norm, "weight", UnitNorm(dim=-1))

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(4, 8, 32)]


def get_init_inputs():
    return [32]
'''

# x-transformers' RotaryEmbedding: forward under a decorator whose wrapper takes (*args, **kwargs);
# Dynamo names the inputs through the wrapper's `args`, the module first (H200, 2026-12-02: the
# candidate read `offset.shape[0]` for t's size and `t.inv_freq` for the buffer).
DECORATED = '''from functools import wraps

import torch
from torch import nn


def float32_math(fn):
    @wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)
    return inner


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (100 ** (torch.arange(0, dim, 2).float() / dim)))

    @float32_math
    def forward(self, t, offset=0):
        freqs = t.unsqueeze(-1) * self.inv_freq
        return torch.cat((freqs.sin(), freqs.cos()), dim=-1)


def get_inputs():
    return [torch.randn(2, 16)]


def get_init_inputs():
    return [32]
'''

PROBLEMS = {"nested": NESTED, "config": CONFIG, "globals": GLOBALS, "logging": LOGGING, "cache": CACHE,
            "parametrized": PARAMETRIZED, "decorated": DECORATED}


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> dict[str, dict]:
    """One cpu-triton dry-run capture per problem, through the L1 benchmark's capture stage."""
    tmp = tmp_path_factory.mktemp("realworld")
    suite = tmp / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": f"real/{n}", "name": n, "source": s}) + "\n" for n, s in PROBLEMS.items()))
    bench = load_bench()
    assert bench.main(["capture", "--suite", str(suite), "--out", str(tmp / "run"), "--jobs", "2",
                       "--capture-device", "cpu-triton"]) == 0
    return {n: json.loads((tmp / "run" / "captures" / f"real_{n}.json").read_text()) for n in PROBLEMS}


@pytest.fixture(scope="module")
def converted(captured) -> dict:
    from autotriton.distillation.inductor_convert import convert_capture

    return {n: convert_capture(c, PROBLEMS[n]) for n, c in captured.items()}


def _import(code: str, tmp_path: Path, name: str) -> dict:
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(f"realworld_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as the judge loads modules (a dataclass looks itself up there)
    spec.loader.exec_module(module)
    return vars(module)


def test_every_graph_input_of_nested_children_globals_and_list_inputs_is_mapped(converted):
    """unknown_graph_input: sizes and weights of Sequential/ModuleList/ParameterList/ParameterDict
    children, a module-level tensor, tensors inside a list argument."""
    for name, result in converted.items():
        assert result.ok, f"{name}: {result.reason}: {result.detail}"
    nested = converted["nested"].code
    forward = nested[nested.index("    def forward"):]
    assert "self.pre[0].weight" in forward and "self.norms[1].weight" in forward and "self.scales[1]" in forward
    assert "_WINDOW.to(x.device)" in forward  # a module-level tensor is not moved by model.to(device)
    config = converted["config"].code
    forward = config[config.index("    def forward"):]
    assert "feats[0]" in forward and "self.weights.level_1" in forward and "device=feats[0].device" in forward
    code = converted["globals"].code  # a module-level submodule, a plain tensor attribute, an int argument
    forward = code[code.index("    def forward"):]
    assert "_GLOBAL_NORM.weight.to(x.device)" in forward and "self.table.to(x.device)" in forward
    assert "= repeats" in forward and "if mask is not None:" in forward


def test_the_modules_own_imports_helpers_and_config_classes_are_carried_over(converted):
    """Imports trimmed to the names ModelNew needs (Optional, Module, Tensor, no Tuple/F/math),
    helper function and constants, submodule classes without their forward (never called; their
    torch compute is the reference's), a dataclass config and a source-defined base class."""
    code = converted["nested"].code
    tree = ast.parse(code)
    imports = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    assert {"from typing import Optional", "from torch import Tensor, tensor", "from torch.nn import Module"} <= imports
    assert not any("Tuple" in i or "functional" in i or i == "import math" for i in imports)
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert "default" in top and "DEFAULT_EPS = 1e-06" in code
    for cls in ("RMSNorm", "LayerScale"):
        assert cls in top and not any(getattr(m, "name", "") == "forward" for m in top[cls].body)
    config = converted["config"].code
    assert config.startswith("from __future__ import annotations")
    assert "@dataclass\nclass BlockConfig" in config and "class ModelNew(Base):" in config


def test_helper_methods_reached_from_init_are_carried_over(converted, tmp_path):
    """_initialize_weights (and what it calls) come along, so ModelNew builds, and owns the
    reference's parameters and buffers (the judge loads the reference's weights by name); a
    method only the reference forward would use does not."""
    code = converted["nested"].code
    model_new = code[code.index("class ModelNew"):]
    assert "def _initialize_weights(self)" in model_new and "def _init_scales(self)" in model_new
    assert "_unused_helper" not in model_new and "sigmoid" not in model_new
    for name in PROBLEMS:
        reference = _import(PROBLEMS[name], tmp_path, f"{name}_reference")
        candidate = _import(converted[name].code, tmp_path, f"{name}_candidate")
        init = reference["get_init_inputs"]()
        expected = {k: tuple(v.shape) for k, v in reference["Model"](*init).state_dict().items()}
        assert {k: tuple(v.shape) for k, v in candidate["ModelNew"](*init).state_dict().items()} == expected


def test_forward_keeps_its_signature_and_refuses_values_it_was_not_captured_with(converted, tmp_path):
    import torch

    code = converted["nested"].code
    assert "def forward(self, x: Tensor, y: Tensor, context: Optional[Tensor]=None, scale: float=1.0):" in code
    ns = _import(code, tmp_path, "nested")
    torch.manual_seed(0)
    model = ns["ModelNew"](32)
    x, y = torch.randn(2, 8, 32), torch.randn(2, 8, 24)
    with pytest.raises(ValueError, match="context=None"):
        model(x, y, context=x)
    with pytest.raises(ValueError, match="scale=1.0"):
        model(x, y, scale=2.0)


def test_a_dataclass_config_under_future_annotations_is_captured(captured):
    """Capture failure: the problem ran in a bare exec namespace, where @dataclass cannot find
    its module (the judge loads problems as registered modules)."""
    attempt = captured["config"]["attempts"][0]
    assert attempt["ok"], attempt.get("error")


def test_warnings_and_log_calls_in_forward_do_not_break_the_graph(captured, converted):
    """graph_breaks: warnings.warn and logger.info between two ops split the capture
    into graphs; they are side effects, not compute, and the candidate has none of them. (The
    dry run stops at the first graph's launch, so the graph must hold the ops after the calls.)"""
    attempt = captured["logging"]["attempts"][0]
    assert attempt["ok"] and len(attempt["graphs"]) == 1, attempt.get("error")
    assert "sigmoid" in attempt["graphs"][0]["fx_graph"]
    code = converted["logging"].code
    assert converted["logging"].ok and "warn" not in code and "logger" not in code


def test_a_cache_the_forward_fills_is_computed_not_read(converted):
    """The capture traces an untouched module (the reference output comes from a copy), so the
    cached bias is gathered from the parameter inside the kernels, not read from a cache entry a
    fresh ModelNew lacks."""
    result = converted["cache"]
    assert result.ok, f"{result.reason}: {result.detail}"
    forward = result.code[result.code.index("    def forward"):]
    assert "attention_bias_cache" not in forward and "attention_biases" in forward


def test_graph_input_sources_become_forward_expressions():
    from autotriton.distillation.inductor_module import reference_model

    ref = reference_model(CONFIG.replace("def forward(self, feats", "def forward(self, *feats"))
    cases = {
        "L['self']._modules['pre']._modules['0']._parameters['weight'].size()[0]": "self.pre[0].weight.shape[0]",
        "L['self']._modules['d']._modules['a-b']._buffers['running_mean']": "self.d['a-b'].running_mean",
        "L['self']._modules['norm'].normalized_shape[0]": "self.norm.normalized_shape[0]",
        "L['self'].__dict__['scale']": "self.scale",
        "L['feats'][1].stride()[0]": "feats[1].stride(0)",
        "G['BlockConfig']": "BlockConfig",
    }
    for source, expected in cases.items():
        assert ast.unparse(ref.source_expr(source)) == expected, source
    assert ref.source_expr("L['other']") is None and ref.source_expr("G['get_inputs']") is None
    assert ast.unparse(ref.graph_input_expr({"kind": "input", "input": 1})) == "feats[1]"  # *args


def test_a_parametrization_is_registered_without_calling_the_forward_left_behind(converted, tmp_path):
    code = converted["parametrized"].code
    assert "register_parametrization(self.norm, 'weight', UnitNorm(dim=-1), unsafe=True)" in code
    assert "normalize" not in code[:code.index("class ModelNew")]  # UnitNorm without its forward
    candidate = _import(code, tmp_path, "parametrized")
    assert set(candidate["ModelNew"](32).state_dict()) == {"norm.bias", "norm.parametrizations.weight.original"}


def test_a_decorated_forwards_inputs_are_named_through_the_wrappers_args(converted):
    code = converted["decorated"].code
    forward = code[code.index("    def forward"):]
    assert "self.inv_freq" in forward and "t.shape[0]" in forward
    assert "offset.shape" not in forward and "t.inv_freq" not in forward


def test_real_world_candidates_pass_the_cpu_judge(converted):
    """Under the Triton interpreter, on the reference's weights: correct and within the rules."""
    names = sorted(converted)
    verdicts = assert_cpu_judge_passes(PROBLEMS, converted, names)
    for name, verdict in zip(names, verdicts):
        assert verdict.triton_kernels_launched


def test_recorded_capture_keeps_keyword_only_arguments_and_refuses_a_shadowed_helper():
    """On recorded H200 captures: a keyword-only argument and **kwargs stay in the signature
    (guarded at their captured default); a module-level name of the reference that an inlined
    Inductor helper also needs is refused as name_conflict instead of silently shadowed."""
    from autotriton.distillation.inductor_convert import convert_capture

    fixtures = Path(__file__).parent / "data" / "inductor"
    relu = json.loads((fixtures / "pointwise_relu.json").read_text())
    source = relu["source"].replace("def forward(self, x: torch.Tensor)",
                                    "def forward(self, x: torch.Tensor, *, mode: str = 'relu', **kwargs)")
    result = convert_capture(relu, source)
    assert result.ok, result.detail
    assert "def forward(self, x: torch.Tensor, *, mode: str='relu', **kwargs):" in result.code
    assert "if mode != 'relu':" in result.code

    group_norm = json.loads((fixtures / "welford_group_norm.json").read_text())
    source = group_norm["source"].replace("class Model(nn.Module):", "def welford_combine(a, b):\n    return a\n\n\n"
                                          "class Model(nn.Module):")
    source = source.replace("self.gn = nn.GroupNorm(", "self.merge = welford_combine(1, 2)\n        self.gn = nn.GroupNorm(")
    result = convert_capture(group_norm, source)
    assert not result.ok and result.reason == "name_conflict" and "welford_combine" in result.detail


INHERITED = '''import torch
import torch.nn as nn


class Activation(nn.Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


class Model(Activation):
    def __init__(self):
        super().__init__(inplace=False)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def test_a_forward_inherited_from_a_base_class_of_the_source_is_converted(tmp_path):
    """`class ResNet18(ResNet)`-style modules whose forward is the base's: ModelNew subclasses
    the carried-over base (without its forward) and takes the base forward's signature. Judged on
    the CPU with the recorded H200 ReLU capture."""
    from autotriton.distillation.inductor_convert import convert_capture
    from autotriton.validation import ValidationConfig, validate_candidate

    relu = json.loads((Path(__file__).parent / "data" / "inductor" / "pointwise_relu.json").read_text())
    result = convert_capture(relu, INHERITED)
    assert result.ok, result.detail
    assert "class ModelNew(Activation):" in result.code and "def forward(self, x: torch.Tensor):" in result.code
    base = result.code[result.code.index("class Activation"):result.code.index("@triton.jit")]
    assert "def forward" not in base and "def __init__" in base
    verdict = validate_candidate(INHERITED, result.code, ValidationConfig(device="cpu", trials=2))
    assert verdict.correct and verdict.rule_ok, f"{verdict.status}: {verdict.error} {verdict.violations}"


TEMPLATE_METHOD = '''import math
from typing import Optional

import torch
import torch.nn as nn


class _CachedBase(nn.Module):
    """Its __init__ calls methods only its subclasses define (timm's _RotaryEmbeddingBase)."""

    def __init__(self, dim: int, feat_shape: Optional[list] = None):
        super().__init__()
        self.dim = dim
        self.feat_shape = feat_shape
        self._create_cache(math.prod(feat_shape) if feat_shape is not None else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.feat_shape is not None:
            self._init_cache()

    def _apply(self, fn, *args, **kwargs):  # keeps the cache in float32 under .half()
        module = super()._apply(fn, *args, **kwargs)
        self.cache = self.cache.float()
        return module


class Model(_CachedBase):
    def __init__(self, dim: int, feat_shape: Optional[list] = None):
        super().__init__(dim, feat_shape)

    def _create_cache(self, num_pos: Optional[int]) -> None:
        self.register_buffer("cache", torch.empty(num_pos or 0, self.dim), persistent=False)

    def _init_cache(self) -> None:
        self.cache.fill_(0.5)

    def get_cached(self) -> torch.Tensor:
        return self.cache.sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, [4, 4]]
'''


def test_methods_a_source_base_calls_from_its_init_are_carried_over(tmp_path):
    """A base class of the source whose __init__ calls methods only Model defines (the
    template-method pattern: timm's rotary embeddings, `self._create_cache(...)`): ModelNew, which
    subclasses that base, brings them (and what they call) along, or it cannot even be built
    (H200, 2026-12-02: "'ModelNew' object has no attribute '_create_cache'"); a Model method only
    other code calls stays behind, and so does the base's `_apply` override (MODELNEW-CALL). Judged on the CPU with the recorded H200 ReLU capture."""
    from autotriton.distillation.inductor_convert import convert_capture
    from autotriton.validation import ValidationConfig, validate_candidate

    relu = json.loads((Path(__file__).parent / "data" / "inductor" / "pointwise_relu.json").read_text())
    result = convert_capture(relu, TEMPLATE_METHOD)
    assert result.ok, result.detail
    model_new = result.code[result.code.index("class ModelNew"):]
    assert "def _create_cache(self" in model_new and "def _init_cache(self" in model_new
    assert "get_cached" not in model_new
    assert "def _apply" not in result.code  # nn.Module machinery the judge refuses in ModelNew's bases
    candidate = _import(result.code, tmp_path, "template_method")
    assert candidate["ModelNew"](256, [4, 4]).cache.shape == (16, 256)
    verdict = validate_candidate(TEMPLATE_METHOD, result.code, ValidationConfig(device="cpu", trials=2))
    assert verdict.correct and verdict.rule_ok, f"{verdict.status}: {verdict.error} {verdict.violations}"


def test_a_problem_with_its_parameters_moved_at_harvest_is_converted_and_judged(tmp_path):
    """A module that is the identity at its initial parameters becomes `class Model(InitialModel)`
    whose constructor moves them (harvesting/perturbed.py); ModelNew subclasses the carried
    InitialModel with that constructor, so the reference's parameters load into it. Judged on the CPU
    with the recorded H200 ReLU capture."""
    from autotriton.distillation.inductor_convert import convert_capture
    from autotriton.harvesting.perturbed import perturbed_parameters
    from autotriton.validation import ValidationConfig, validate_candidate

    module = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self, dim: int = 256):\n"
              "        super().__init__()\n        self.g = nn.Parameter(torch.ones(dim))\n\n"
              "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        return torch.relu(x)\n")
    problem = perturbed_parameters(module) + ("\n\ndef get_inputs():\n    return [torch.randn(16, 256)]\n\n\n"
                                              "def get_init_inputs():\n    return []\n")
    relu = json.loads((Path(__file__).parent / "data" / "inductor" / "pointwise_relu.json").read_text())
    result = convert_capture(relu, problem)
    assert result.ok, result.detail
    assert "class ModelNew(InitialModel):" in result.code and "_move_parameters(self)" in result.code
    verdict = validate_candidate(problem, result.code, ValidationConfig(device="cpu", trials=2))
    assert verdict.correct and verdict.rule_ok, f"{verdict.status}: {verdict.error} {verdict.violations}"


@pytest.mark.gpu
def test_real_world_problems_become_validated_pairs_on_gpu():
    """The same problems through the GPU teacher (real capture, autotuned configs) and the GPU judge."""
    from autotriton.distillation.inductor import InductorTeacher
    from autotriton.records import Problem
    from autotriton.validation import ValidationConfig, validate_many

    problems = [Problem(reference_source=s, name=n) for n, s in {**PROBLEMS, "inherited": INHERITED}.items()]
    teacher = InductorTeacher(jobs=3)
    candidates = teacher.generate(problems, samples=1)
    assert all(c.code for c in candidates), teacher.failures
    verdicts = validate_many([(p.reference_source, c.code) for p, c in zip(problems, candidates)],
                             ValidationConfig(device="cuda", trials=3))
    for problem, verdict in zip(problems, verdicts):
        assert verdict.correct and verdict.rule_ok, f"{problem.name}: {verdict.status}: {verdict.error} {verdict.violations}"


"""Synthetic fused-operator problems: KernelBench-level-2-style chains of 2-6 operators.

Two families. `fused` (the default) starts each chain with a GEMM, batched matmul or convolution
head, as KernelBench level 2 does. `pointwise` starts from the input tensor itself (a (B, F)
activation, a (B, C, H, W) feature map or a (B, M, N) sequence) and chains 2-4 operators without a
GEMM or convolution: normalisations, activations, scaling, bias and residual adds, pooling,
softmax and a reduction, the memory-bound fusions real modules are full of. Their kernels are
short (one to three fused Triton kernels), which makes them the first thing a small model can
learn to write. `elementwise` is the step before: 1-3 operators that touch each element once
(activations, clamp, scaling, bias and residual adds), one kernel of a load, a few lines of math
and a store, each operator visible in it. Each family has its own generator version and rng
stream, so adding one changes no problem of another.

`generate_problems(count, seed)` draws each problem from its own `random.Random(f"{seed}:{index}")`,
so problem i of a seed is the same whatever `count` is, on any machine (no torch RNG, no hash
randomisation). A chain starts with a head (GEMM, batched matmul, Conv1d/2d/3d or
ConvTranspose1d/2d/3d) and continues with operators that are legal for the shape it has reached:
activations, scaling, bias and residual adds, Batch/Group/Instance/LayerNorm, pooling, softmax,
and at most one reduction (sum/mean/amax/logsumexp), which ends the chain. Validity is by
construction: every candidate operator is shape-propagated at the problem's own sizes AND at the
sizes the judge's shrink rule gives it (validation/shrink.py's `shrink_value`, the interpreter's
sizes), and dropped when it is illegal at either. Sizes follow KernelBench level 2 (batch 128,
images of 32-64 pixels, 16-128 channels, 512-4096 features); the batch (down to 8), then the output
channels (down to 16), are halved until the inputs plus the output of one call fit `max_io_mb`
and every intermediate tensor fits `max_intermediate_mb` (fp32).

Each problem is standalone KernelBench-format source (`Model`, `get_inputs`, `get_init_inputs`,
module-level size constants the judge can shrink and perturb) with provenance: SourceRef kind
"synthetic", repo "autotriton/synthetic", commit = GENERATOR_VERSION, path "seed=S/index=I".
Change GENERATOR_VERSION whenever a change to this file changes what a (seed, index) produces.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from autotriton.validation import shrink_value

GENERATOR_VERSION = "synthetic-fused-v2"
POINTWISE_VERSION = "synthetic-pointwise-v1"
ELEMENTWISE_VERSION = "synthetic-elementwise-v1"
FAMILIES = {"fused": GENERATOR_VERSION, "pointwise": POINTWISE_VERSION,
            "elementwise": ELEMENTWISE_VERSION}  # family -> its generator version
ELEMENTWISE_OPS = ("activation", "scale", "bias_add", "residual_add")  # what the elementwise family draws
REPO = "autotriton/synthetic"
LICENCE = "Apache-2.0"  # written by this project's generator, under the project's licence

ACTIVATIONS = {  # name -> forward expression of x
    "relu": "torch.relu(x)", "gelu": "torch.nn.functional.gelu(x)", "sigmoid": "torch.sigmoid(x)",
    "tanh": "torch.tanh(x)", "silu": "torch.nn.functional.silu(x)", "mish": "torch.nn.functional.mish(x)",
    "leaky_relu": "torch.nn.functional.leaky_relu(x, negative_slope=0.1)", "hardtanh": "torch.nn.functional.hardtanh(x, -1.0, 1.0)",
    "softplus": "torch.nn.functional.softplus(x)", "elu": "torch.nn.functional.elu(x)", "clamp": "torch.clamp(x, min=-0.5, max=0.5)",
}


class IllegalChain(ValueError):
    """An operator that is not legal for the shape the chain has reached."""


@dataclass
class Shape:
    """The running tensor: kind "dense" (B, F), "seq" (B, M, N) or "conv" (B, C, *spatial)."""

    kind: str
    dims: list[int]  # full shape, batch first
    reduced: bool = False  # a reduction ran: only elementwise operators may follow

    @property
    def nd(self) -> int:
        return len(self.dims) - 2


@dataclass
class Chain:
    """A drawn problem: constants (module-level, in order), the operators, and where it came from."""

    seed: int
    index: int
    consts: dict[str, Any] = field(default_factory=dict)
    ops: list[dict[str, Any]] = field(default_factory=list)
    family: str = "fused"

    @property
    def tags(self) -> list[str]:
        return [op["tag"] for op in self.ops if op["op"] != "input"]


def _input_shape(head: dict[str, Any], c: dict[str, Any]) -> Shape:
    """The running tensor a chain starts from, given its head operator."""
    if head["op"] == "linear":
        return Shape("dense", [c["batch_size"], c["in_features"]])
    if head["op"] == "bmm":
        return Shape("seq", [c["batch_size"], c["m"], c["k"]])
    if head["op"] == "input":  # the pointwise family: the input tensor itself
        if head["kind"] == "dense":
            return Shape("dense", [c["batch_size"], c["features"]])
        if head["kind"] == "seq":
            return Shape("seq", [c["batch_size"], c["seq_len"], c["features"]])
    return Shape("conv", [c["batch_size"], c["in_channels"], *[c[n] for n in head["spatial"]]])


def _conv_out(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


def propagate(chain: Chain, consts: dict[str, Any]) -> list[list[int]]:
    """The shape after every operator under `consts` (the problem's sizes or shrunk ones);
    IllegalChain when an operator cannot run there."""
    c = consts
    shape = _input_shape(chain.ops[0], c)
    shapes: list[list[int]] = []
    residual: list[int] | None = None
    # Dims whose values sum to a constant (softmax, layer norm, group norm of a dense tensor, then
    # only affine steps): a sum or mean over them would make the output input-independent.
    constant_sum: set[int] = set()
    for op in chain.ops:
        name = op["op"]
        if name in ("sum", "mean") and op["dim"] in constant_sum:
            raise IllegalChain(f"{name} over dim {op['dim']} after a normalisation over it is constant")
        shape = _apply(op, shape, c, residual)
        if name == "softmax":
            constant_sum.add(op["dim"])
        elif name == "layer_norm" or (name == "group_norm" and shape.kind != "conv"):
            constant_sum.add(len(shape.dims) - 1 if name == "layer_norm" else 1)
        elif name not in ("scale", "bias_add", "batch_norm"):
            constant_sum.clear()
        if op.get("save_residual"):
            residual = list(shape.dims)
        if any(d < 1 for d in shape.dims):
            raise IllegalChain(f"{op['op']} gives an empty dimension: {shape.dims}")
        shapes.append(list(shape.dims))
    return shapes


def _apply(op: dict[str, Any], s: Shape, c: dict[str, Any], residual: list[int] | None) -> Shape:
    name, dims = op["op"], list(s.dims)
    if name == "linear":
        if s.kind != "dense" or s.reduced:
            raise IllegalChain("linear needs a (batch, features) tensor")
        if dims[1] != c[op["in"]]:
            raise IllegalChain("linear's in_features differ from the tensor's")
        return Shape("dense", [dims[0], c[op["out"]]])
    if name == "bmm":
        return Shape("seq", [dims[0], dims[1], c["n"]])
    if name == "input":
        return s
    if name in ("conv", "conv_transpose"):
        if s.kind != "conv" or dims[1] != c[op["in"]]:
            raise IllegalChain("convolution channels differ from the tensor's")
        k, st, p = op["kernel"], op["stride"], op["padding"]
        if name == "conv":
            spatial = [_conv_out(d, k, st, p) for d in dims[2:]]
            if any(d < k for d in [x + 2 * p for x in dims[2:]]):
                raise IllegalChain("input smaller than the convolution kernel")
        else:
            spatial = [(d - 1) * st - 2 * p + k + op["output_padding"] for d in dims[2:]]
        return Shape("conv", [dims[0], c[op["out"]], *spatial])
    if name in ("activation", "scale", "bias_add"):
        return Shape(s.kind, dims, s.reduced)
    if name == "residual_add":
        if residual != dims:
            raise IllegalChain("residual shape differs")
        return Shape(s.kind, dims, s.reduced)
    if s.reduced:
        raise IllegalChain(f"{name} after a reduction would see a size-1 dimension")
    if name == "batch_norm":
        return s
    if name == "group_norm":
        if dims[1] % op["groups"] or dims[1] // op["groups"] * _prod(dims[2:]) < 2:
            raise IllegalChain("group_norm: channels not divisible by groups, or one value per group")
        return s
    if name == "instance_norm":
        if s.kind != "conv" or _prod(dims[2:]) < 2:
            raise IllegalChain("instance_norm needs more than one spatial value")
        return s
    if name == "layer_norm":
        if s.kind == "conv" or dims[-1] < 2:
            raise IllegalChain("layer_norm over the last dimension of a dense or seq tensor")
        return s
    if name in ("max_pool", "avg_pool"):
        if s.kind != "conv" or any(d < op["kernel"] for d in dims[2:]):
            raise IllegalChain("pooling window larger than the input")
        return Shape("conv", dims[:2] + [(d - op["kernel"]) // op["kernel"] + 1 for d in dims[2:]])
    if name == "softmax":
        if dims[op["dim"]] < 2:
            raise IllegalChain("softmax over a size-1 dimension is constant")
        return s
    if name in ("sum", "mean", "amax", "logsumexp"):
        d = op["dim"]
        if dims[d] < 2:
            raise IllegalChain("reduction over a size-1 dimension")
        dims[d] = 1
        return Shape(s.kind, dims, True)
    raise IllegalChain(f"unknown operator {name}")


def _prod(xs: list[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


def shrunk_consts(consts: dict[str, Any], max_dim: int = 32, max_batch: int = 4) -> dict[str, Any]:
    """The constants as the judge's shrink rule leaves them for the interpreter (validation/shrink.py)."""
    out: dict[str, Any] = {}
    for name, value in consts.items():
        if type(value) is int:
            limit = min(max_dim, max_batch) if "batch" in name.lower() else max_dim
            out[name] = shrink_value(value, limit)
        else:
            out[name] = value
    return out


# ---- drawing a chain --------------------------------------------------------------------------

def _draw_head(rng: random.Random, chain: Chain) -> None:
    c = chain.consts
    c["batch_size"] = 128
    kind = rng.choice(["linear", "linear", "bmm", "conv", "conv", "conv", "conv_transpose", "conv_transpose"])
    if kind == "linear":
        c["in_features"] = rng.choice([512, 1024, 2048, 4096])
        c["out_features"] = rng.choice([512, 1024, 2048, 4096])
        chain.ops.append({"op": "linear", "tag": "gemm", "in": "in_features", "out": "out_features", "bias": rng.random() < 0.8})
        return
    if kind == "bmm":
        c["m"], c["k"], c["n"] = rng.choice([128, 256]), rng.choice([64, 128, 256]), rng.choice([128, 256])
        chain.ops.append({"op": "bmm", "tag": "bmm"})
        return
    nd = rng.choice([1, 2, 2, 2, 3, 3])
    spatial = {1: ["length"], 2: ["height", "width"], 3: ["depth", "height", "width"]}[nd]
    if nd == 1:
        c["length"] = rng.choice([256, 512, 1024])
    elif nd == 2:
        c["height"] = c["width"] = rng.choice([32, 64])
    else:
        c["depth"], c["height"], c["width"] = rng.choice([8, 16]), rng.choice([16, 32]), rng.choice([16, 32])
    c["in_channels"] = rng.choice([3, 8, 16, 32])
    c["out_channels"] = rng.choice([16, 32, 64, 128])
    c["kernel_size"] = rng.choice([3, 3, 5]) if kind == "conv" else rng.choice([3, 4])
    op: dict[str, Any] = {"op": kind, "nd": nd, "spatial": spatial, "in": "in_channels", "out": "out_channels",
                          "kernel": c["kernel_size"], "bias": rng.random() < 0.8}
    if kind == "conv":
        op.update(stride=1, padding=rng.choice([0, c["kernel_size"] // 2]), tag=f"conv{nd}d")
    else:
        stride = rng.choice([1, 2])
        op.update(stride=stride, padding=1, output_padding=1 if stride == 2 and c["kernel_size"] == 3 else 0, tag=f"conv_transpose{nd}d")
    chain.ops.append(op)


def _draw_input(rng: random.Random, chain: Chain) -> None:
    """The pointwise family's head: the input tensor, at sizes where memory traffic dominates."""
    c = chain.consts
    c["batch_size"] = rng.choice([16, 32, 64, 128])
    kind = rng.choice(["dense", "dense", "conv", "conv", "seq"])
    if kind == "dense":
        c["features"] = rng.choice([1024, 2048, 4096, 8192])
        chain.ops.append({"op": "input", "kind": "dense", "tag": "input"})
    elif kind == "seq":
        c["seq_len"], c["features"] = rng.choice([64, 128, 256]), rng.choice([256, 512, 1024])
        chain.ops.append({"op": "input", "kind": "seq", "tag": "input"})
    else:
        c["in_channels"] = rng.choice([16, 32, 64])
        c["height"] = c["width"] = rng.choice([32, 64])
        chain.ops.append({"op": "input", "kind": "conv", "nd": 2, "spatial": ["height", "width"], "tag": "input"})


def _candidates(rng: random.Random, chain: Chain, shape: Shape, residual_ok: bool) -> list[dict[str, Any]]:
    """Operators that may follow, before the legality check (which propagate() makes)."""
    act, act2 = rng.choice(sorted(ACTIVATIONS)), rng.choice(sorted(ACTIVATIONS))  # drawn in this order since v1
    ops: list[dict[str, Any]] = [
        {"op": "activation", "fn": act, "tag": act},
        {"op": "activation", "fn": act2, "tag": act2},
        {"op": "scale", "value": rng.choice([0.5, 2.0, 1.5, 0.1]), "tag": "scale"},
        {"op": "bias_add", "tag": "bias_add"},
    ]
    if residual_ok:
        ops.append({"op": "residual_add", "tag": "residual_add"})
    if shape.reduced or chain.family == "elementwise":
        return ops
    ops += [{"op": "batch_norm", "tag": "batch_norm"}, {"op": "group_norm", "groups": rng.choice([4, 8]), "tag": "group_norm"}]
    if shape.kind == "conv":
        ops += [{"op": "instance_norm", "tag": "instance_norm"},
                {"op": rng.choice(["max_pool", "avg_pool"]), "kernel": 2, "tag": None},
                {"op": "softmax", "dim": 1, "tag": "softmax"}]
        red_dim = rng.choice([1, len(shape.dims) - 1])
    else:
        ops += [{"op": "layer_norm", "tag": "layer_norm"}, {"op": "softmax", "dim": len(shape.dims) - 1, "tag": "softmax"}]
        red_dim = len(shape.dims) - 1
        if shape.kind == "dense" and chain.family == "fused" and not any(o["op"] == "linear" for o in chain.ops[1:]):
            ops.append({"op": "linear", "tag": "gemm", "in": "out_features", "out": "hidden_features", "bias": True})
    red = rng.choice(["sum", "mean", "amax", "logsumexp"])
    ops.append({"op": red, "dim": red_dim, "tag": red})
    for op in ops:
        if op["tag"] is None:
            op["tag"] = op.get("fn") or op["op"]
    return ops


def _bytes(shape: list[int]) -> int:
    return _prod(shape) * 4


def draw_chain(seed: int, index: int, *, max_io_mb: float = 256.0, max_intermediate_mb: float = 512.0,
               family: str = "fused") -> Chain:
    """Problem `index` of `seed` in `family` (module docstring): a legal chain of 2-6 operators
    (pointwise: 2-4 after the input, elementwise: 1-3) whose memory fits the limits."""
    if family not in FAMILIES:
        raise ValueError(f"unknown synthetic family {family!r}: choose one of {', '.join(FAMILIES)}")
    if family == "fused":  # the stream every existing fused problem was drawn from
        rng = random.Random(f"autotriton-synthetic:{seed}:{index}")
    else:
        rng = random.Random(f"autotriton-synthetic-{family}:{seed}:{index}")
    chain = Chain(seed, index, family=family)
    if family == "fused":
        _draw_head(rng, chain)
        target = rng.choice([2, 3, 3, 4, 4, 5, 5, 6])
    else:
        _draw_input(rng, chain)
        target = 1 + (rng.choice([1, 2, 2, 3]) if family == "elementwise" else rng.choice([2, 2, 3, 3, 4]))
    residual_saved = False
    for _ in range(40):  # draws; an illegal draw is dropped and another is tried
        if len(chain.ops) >= target or (chain.ops and chain.ops[-1]["op"] in ("sum", "mean", "amax", "logsumexp")
                                        and len(chain.ops) >= 2):
            break
        shape_dims = propagate(chain, chain.consts)[-1]
        last_kind = _input_shape(chain.ops[0], chain.consts).kind
        reduced = any(o["op"] in ("sum", "mean", "amax", "logsumexp") for o in chain.ops)
        shape = Shape(last_kind, shape_dims, reduced)
        op = rng.choice(_candidates(rng, chain, shape, residual_saved))
        if family != "fused" and op["op"] in ("scale", "bias_add") and chain.ops[-1]["op"] == op["op"]:
            continue  # x * 1.5 * 0.1: one operator written twice, no new kernel work
        if op["op"] == "linear" and "hidden_features" not in chain.consts:
            chain.consts["hidden_features"] = rng.choice([256, 512, 1024])
        trial = Chain(seed, index, chain.consts, chain.ops + [op])
        if not residual_saved and op["op"] not in ("sum", "mean", "amax", "logsumexp") and rng.random() < 0.3:
            op["save_residual"] = True
        try:
            propagate(trial, chain.consts)
            propagate(trial, shrunk_consts(chain.consts))
        except IllegalChain:
            op.pop("save_residual", None)
            continue
        if op.get("save_residual"):
            residual_saved = True
        chain.ops.append(op)
    while len(chain.ops) < (3 if family == "pointwise" else 2):  # every draw was illegal (rare): an activation is always legal
        chain.ops.append({"op": "activation", "fn": "relu", "tag": "relu"})
    # The residual is only worth saving if an add uses it.
    if not any(o["op"] == "residual_add" for o in chain.ops):
        for o in chain.ops:
            o.pop("save_residual", None)
    _fit_batch(chain, max_io_mb, max_intermediate_mb)
    return chain


def memory(chain: Chain, consts: dict[str, Any] | None = None) -> tuple[int, int, int]:
    """(input bytes, output bytes, largest intermediate bytes) of one call, fp32."""
    c = consts or chain.consts
    head = chain.ops[0]
    ins = _bytes(_input_shape(head, c).dims)
    if head["op"] == "bmm":
        ins += _bytes([c["batch_size"], c["k"], c["n"]])
    shapes = propagate(chain, c)
    return ins, _bytes(shapes[-1]), max(_bytes(s) for s in shapes)


def _fit_batch(chain: Chain, max_io_mb: float, max_intermediate_mb: float) -> None:
    """Halve the batch (down to 8), then the output channels (down to 16: group counts of 4 and 8
    still divide them, so every operator stays legal), until one call fits the limits."""
    c = chain.consts

    def fits() -> bool:
        ins, outs, largest = memory(chain)
        return ins + outs <= max_io_mb * 2**20 and largest <= max_intermediate_mb * 2**20

    while not fits() and c["batch_size"] > 8:
        c["batch_size"] //= 2
    while not fits() and c.get("out_channels", 0) > 16:
        c["out_channels"] //= 2


# ---- writing the problem --------------------------------------------------------------------

_NORM_ND = {"batch_norm": "BatchNorm", "instance_norm": "InstanceNorm"}


def problem_source(chain: Chain) -> str:
    """KernelBench-format source of the chain: size constants at module level (so the judge can
    shrink and perturb them), `Model(*get_init_inputs())`, `Model()(*get_inputs())`."""
    head = chain.ops[0]
    kind = _input_shape(head, chain.consts).kind
    nd = head.get("nd", 1)
    # symbolic dims of the running tensor (dim 1 and the last dim are what modules are sized by)
    if head["op"] == "input":
        dims: list[str] = {"dense": ["batch_size", "features"], "seq": ["batch_size", "seq_len", "features"],
                           "conv": ["batch_size", "in_channels", *head.get("spatial", [])]}[kind]
    else:
        dims = (["batch_size", "in_features"] if kind == "dense" else ["batch_size", "m", "k"] if kind == "seq"
                else ["batch_size", "in_channels", *head["spatial"]])
    init: list[str] = []
    fwd: list[str] = []
    used: list[str] = []

    def use(name: str) -> str:
        if name != "1" and name not in used:
            used.append(name)
        return name

    for i, op in enumerate(chain.ops):
        name = op["op"]
        if name == "input":
            continue
        if name == "linear":
            attr = "gemm" if i == 0 else f"gemm{i}"
            init.append(f"self.{attr} = nn.Linear({use(op['in'])}, {use(op['out'])}, bias={op['bias']})")
            fwd.append(f"x = self.{attr}(x)")
            dims[-1] = op["out"]
        elif name == "bmm":
            fwd.append("x = torch.bmm(a, b)")
            dims[-1] = "n"
        elif name in ("conv", "conv_transpose"):
            cls = f"Conv{op['nd']}d" if name == "conv" else f"ConvTranspose{op['nd']}d"
            extra = f", output_padding={op['output_padding']}" if name == "conv_transpose" else ""
            init.append(f"self.conv = nn.{cls}({use('in_channels')}, {use('out_channels')}, {use('kernel_size')}, "
                        f"stride={op['stride']}, padding={op['padding']}{extra}, bias={op['bias']})")
            fwd.append("x = self.conv(x)")
            dims[1] = "out_channels"
        elif name == "activation":
            fwd.append(f"x = {ACTIVATIONS[op['fn']]}")
        elif name == "scale":
            fwd.append(f"x = x * {op['value']}")
        elif name == "bias_add":
            shape = f"({use(dims[1])},{' 1,' * (len(dims) - 2)})" if kind == "conv" else f"({use(dims[-1])},)"
            init.append(f"self.bias{i} = nn.Parameter(torch.randn{shape} * 0.02)")
            fwd.append(f"x = x + self.bias{i}")
        elif name == "residual_add":
            fwd.append("x = x + residual")
        elif name in _NORM_ND:
            d = nd if kind == "conv" else 1
            init.append(f"self.norm{i} = nn.{_NORM_ND[name]}{d}d({use(dims[1])})")
            fwd.append(f"x = self.norm{i}(x)")
        elif name == "group_norm":
            init.append(f"self.norm{i} = nn.GroupNorm({op['groups']}, {use(dims[1])})")
            fwd.append(f"x = self.norm{i}(x)")
        elif name == "layer_norm":
            init.append(f"self.norm{i} = nn.LayerNorm({use(dims[-1])})")
            fwd.append(f"x = self.norm{i}(x)")
        elif name in ("max_pool", "avg_pool"):
            cls = "MaxPool" if name == "max_pool" else "AvgPool"
            init.append(f"self.pool{i} = nn.{cls}{nd}d(kernel_size={op['kernel']})")
            fwd.append(f"x = self.pool{i}(x)")
        elif name == "softmax":
            fwd.append(f"x = torch.softmax(x, dim={op['dim']})")
        elif name in ("sum", "mean", "amax", "logsumexp"):
            fwd.append(f"x = torch.{name}(x, dim={op['dim']}, keepdim=True)")
            dims[op["dim"]] = "1"
        else:  # propagate() rejects unknown operators first
            raise IllegalChain(f"unknown operator {name}")
        if op.get("save_residual"):
            fwd.append("residual = x")
    consts = chain.consts
    ops_text = ", ".join(chain.tags)
    lines = [f'"""Synthetic {chain.family} problem (autotriton {FAMILIES[chain.family]}, seed {chain.seed}, index {chain.index}): '
             f'{ops_text}."""',
             "", "import torch", "import torch.nn as nn", "", "",
             "class Model(nn.Module):", f'    """{ops_text}"""', "",
             f"    def __init__(self{''.join(', ' + u for u in used)}):", "        super().__init__()"]
    lines += [f"        {line}" for line in init] or ["        pass"]
    args = "a, b" if head["op"] == "bmm" else "x"
    lines += ["", f"    def forward(self, {args}):"] + [f"        {line}" for line in fwd] + ["        return x", "", ""]
    lines += [f"{name} = {value!r}" for name, value in consts.items()]
    if head["op"] == "input" and kind != "conv":
        inputs = f"[torch.randn({', '.join(dims[:1] + (['seq_len', 'features'] if kind == 'seq' else ['features']))})]"
    elif kind == "dense":
        inputs = "[torch.randn(batch_size, in_features)]"
    elif kind == "seq":
        inputs = "[torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]"
    else:
        inputs = f"[torch.randn(batch_size, in_channels, {', '.join(head['spatial'])})]"
    lines += ["", "", "def get_inputs():", f"    return {inputs}", "", "",
              "def get_init_inputs():", f"    return [{', '.join(used)}]", ""]
    return "\n".join(lines)


# ---- the harvest source -----------------------------------------------------------------------

def generate_problems(count: int, seed: int, *, start: int = 0, family: str = "fused") -> list[tuple[Chain, str]]:
    """Problems start..start+count-1 of `seed` in `family`, as (chain, KernelBench source)."""
    out = []
    for index in range(start, start + count):
        chain = draw_chain(seed, index, family=family)
        out.append((chain, problem_source(chain)))
    return out


def harvest_synthetic(count: int, seed: int, config: Any = None, *, start: int = 0, probe: Any = None,
                      progress: bool = False, console: Any = None, validation_config: Any = None,
                      family: str = "fused") -> Any:
    """`count` generated problems as a harvest (HarvestResult): one SourceRef per problem (its
    provenance), each problem confirmed in the sandbox like any harvested one (at shrunk sizes on
    the CPU). Problems with the same (seed, index, version) have the same key: storing twice is a no-op."""
    from autotriton.harvesting.config import HarvestConfig
    from autotriton.harvesting.core import Harvester, op_tags
    from autotriton.harvesting.probe_steps import Pending
    from autotriton.harvesting.datasets import _Verbatim
    from autotriton.harvesting.local import HarvestInputError
    from autotriton.records import GENERATED, Problem, SourceRef

    if count < 1:
        raise HarvestInputError(f"--count {count}: pass at least 1 problem to generate")
    if start < 0:
        raise HarvestInputError(f"--start {start}: the first index must be 0 or more")
    config = config or HarvestConfig()
    # No incremental state and no near-duplicate filter: the generator's problems share a template
    # by design (MinHash would call them near-duplicates), and the (seed, index) is their identity.
    harvester = Harvester(config, probe=probe, state=None, progress=progress, console=console, validation_config=validation_config)
    if family not in FAMILIES:
        raise HarvestInputError(f"--family {family}: choose one of {', '.join(FAMILIES)}")
    version = FAMILIES[family]
    prefix = "" if family == "fused" else f"{family}/"  # fused paths stay as they were
    for chain, source in generate_problems(count, seed, start=start, family=family):
        harvester.result.files += 1
        ref = SourceRef(kind=GENERATED, repo=REPO, commit=version, path=f"{prefix}seed={seed}/index={chain.index}",
                        licence=LICENCE)
        harvester.add_source(ref)
        tags = sorted(set(op_tags(source)) | set(chain.tags))
        name = f"synthetic_s{seed}_{chain.index}_" if family == "fused" else f"synthetic_{family}_s{seed}_{chain.index}_"
        problem = Problem(reference_source=source, name=name + "_".join(chain.tags),
                          source_key=ref.key, licence=LICENCE, op_tags=tags, shape_profile="gpu-full")
        harvester.pending.append(Pending(problem, source, [_Verbatim([], [], [], [], label="synthetic")]))
    result = harvester.finish()
    result.extra["generator_version"] = version
    return result

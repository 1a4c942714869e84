"""Write the demo's problem suites: examples/demo/problems.jsonl (training) and eval_problems.jsonl.

The problems are written for autotriton (not taken from KernelBench) in KernelBench format
(`Model`, `get_inputs`, `get_init_inputs`) with small shapes, so the CPU interpreter judges a
candidate in about a second. The two suites share no problem. Run from anywhere:

    python examples/demo/make_suites.py

Each line: id ("demo/train/<name>", "demo/eval/<name>"), level, problem_id, name, source,
origin, license -- the shared suite JSONL form (see ../shared/benchmarks).
"""

from __future__ import annotations

import json
from pathlib import Path

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def _problem(doc: str, forward: list[str], inputs: str, sizes: dict[str, int], *, args: str = "x: torch.Tensor",
             params: str = "", setup: tuple[str, ...] = (), init_inputs: str = "") -> str:
    """A KernelBench-format source: `Model(params)` runs the `setup` lines in __init__ and the
    `forward` lines (the last one returns) on `args`; `sizes` are the module-level shape
    constants that `get_inputs` (returning `[inputs]`) uses; `get_init_inputs` returns `[init_inputs]`."""
    init = "".join(f"        {line}\n" for line in setup)
    body = "".join(f"        {line}\n" for line in forward)
    constants = "".join(f"{name} = {value}\n" for name, value in sizes.items())
    return HEADER + f'''class Model(nn.Module):
    """{doc}"""

    def __init__(self{params}):
        super().__init__()
{init}
    def forward(self, {args}) -> torch.Tensor:
{body}

{constants}

def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return [{init_inputs}]
'''


def _rows(doc: str, forward: str | list[str], rows: int = 16, cols: int = 256, *, cols_name: str = "dim", **kw) -> str:
    """A problem on one (rows, cols) input `x`; `forward` is the returned expression, or the lines."""
    lines = forward if isinstance(forward, list) else [f"return {forward}"]
    return _problem(doc, lines, f"torch.randn(batch_size, {cols_name})", {"batch_size": rows, cols_name: cols}, **kw)


TRAIN: dict[str, str] = {
    "relu": _rows("Applies ReLU element-wise.", "torch.relu(x)"),
    "sigmoid": _rows("Applies the logistic sigmoid element-wise.", "torch.sigmoid(x)"),
    "tanh": _rows("Applies tanh element-wise.", "torch.tanh(x)", rows=8, cols=512),
    "gelu": _rows("Applies the exact (erf) GELU element-wise.", "F.gelu(x)"),
    "silu": _rows("Applies SiLU (x * sigmoid(x)) element-wise.", "F.silu(x)", rows=32, cols=128),
    "leaky_relu": _rows("LeakyReLU with a configurable negative slope.",
                        "F.leaky_relu(x, negative_slope=self.negative_slope)", cols=384,
                        params=", negative_slope: float", setup=("self.negative_slope = negative_slope",),
                        init_inputs="0.1"),
    "bias_relu": _rows("Adds a learned per-feature bias, then applies ReLU.", "torch.relu(x + self.bias)", 32, 128,
                       cols_name="features", params=", features: int",
                       setup=("self.bias = nn.Parameter(torch.randn(features))",), init_inputs="features"),
    "softmax": _rows("Softmax over the last dimension.", "torch.softmax(x, dim=-1)", cols=128),
    "layernorm": _rows("LayerNorm over the last dimension, with learned weight and bias.", "self.ln(x)",
                       cols_name="hidden", params=", normalized_shape: int",
                       setup=("self.ln = nn.LayerNorm(normalized_shape)",), init_inputs="hidden"),
    "rmsnorm": _rows("RMSNorm: x / sqrt(mean(x^2) + eps) * weight, over the last dimension.",
                     ["rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)", "return x * rms * self.weight"],
                     cols_name="hidden", params=", hidden: int, eps: float = 1e-6",
                     setup=("self.weight = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))", "self.eps = eps"),
                     init_inputs="hidden"),
    "row_sum": _rows("Sums each row (reduction over dim 1).", "x.sum(dim=1)", 32, 512),
    "row_max": _rows("Maximum of each row (values only).", "torch.amax(x, dim=-1)", 32, 256),
    "matmul": _problem("A small matrix product C = A @ B.", ["return torch.matmul(a, b)"],
                       "torch.randn(M, K), torch.randn(K, N)", {"M": 64, "K": 64, "N": 32},
                       args="a: torch.Tensor, b: torch.Tensor"),
    "linear_relu": _problem("A linear layer followed by ReLU.", ["return torch.relu(self.linear(x))"],
                            "torch.randn(batch_size, in_features)", {"batch_size": 32, "in_features": 64, "out_features": 32},
                            params=", in_features: int, out_features: int",
                            setup=("self.linear = nn.Linear(in_features, out_features)",),
                            init_inputs="in_features, out_features"),
    "scaled_residual_add": _problem("Residual connection with a fixed scale: x + alpha * y.", ["return x + self.alpha * y"],
                                    "torch.randn(batch_size, dim), torch.randn(batch_size, dim)",
                                    {"batch_size": 16, "dim": 512}, args="x: torch.Tensor, y: torch.Tensor",
                                    params=", alpha: float", setup=("self.alpha = alpha",), init_inputs="0.5"),
    "swiglu_gate": _rows("SwiGLU gating: splits the last dimension in two halves a, b and returns silu(a) * b.",
                         ["a, b = x.chunk(2, dim=-1)", "return F.silu(a) * b"], cols=512),
    "row_mean": _rows("Mean of each row, keeping the reduced dimension.", "x.mean(dim=-1, keepdim=True)", 24, 320),
}

EVAL: dict[str, str] = {
    "elu": _rows("ELU with a configurable alpha.", "F.elu(x, alpha=self.alpha)", params=", alpha: float",
                 setup=("self.alpha = alpha",), init_inputs="1.0"),
    "hardtanh": _rows("Clamps values to [-1, 1] (HardTanh).", "F.hardtanh(x, min_val=-1.0, max_val=1.0)"),
    "log_softmax": _rows("LogSoftmax over dimension 1.", "torch.log_softmax(x, dim=1)"),
    "l2_normalize": _rows("Scales each row to unit L2 norm.", "x / torch.norm(x, p=2, dim=1, keepdim=True)"),
    "row_min": _problem("Minimum over a given dimension.", ["return torch.min(x, dim=self.dim)[0]"],
                        "torch.randn(batch_size, dim1, dim2)", {"batch_size": 16, "dim1": 64, "dim2": 32},
                        params=", dim: int", setup=("self.dim = dim",), init_inputs="1"),
    "linear_gelu": _problem("A linear layer followed by the tanh-approximated GELU.",
                            ['return F.gelu(self.linear(x), approximate="tanh")'],
                            "torch.randn(batch_size, in_features)", {"batch_size": 32, "in_features": 64, "out_features": 64},
                            params=", in_features: int, out_features: int",
                            setup=("self.linear = nn.Linear(in_features, out_features)",),
                            init_inputs="in_features, out_features"),
    "batched_matmul": _problem("Batched matrix product of (B, M, K) and (B, K, N).", ["return torch.bmm(a, b)"],
                               "torch.randn(batch, M, K), torch.randn(batch, K, N)", {"batch": 4, "M": 32, "K": 32, "N": 32},
                               args="a: torch.Tensor, b: torch.Tensor"),
    "mse_loss": _problem("Mean squared error between predictions and targets (a scalar).",
                         ["return torch.mean((predictions - targets) ** 2)"],
                         "torch.randn(batch_size, dim), torch.randn(batch_size, dim)", {"batch_size": 32, "dim": 256},
                         args="predictions: torch.Tensor, targets: torch.Tensor"),
}


def write_suite(path: Path, split: str, problems: dict[str, str]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i, (name, source) in enumerate(problems.items(), start=1):
            row = {"id": f"demo/{split}/{name}", "level": 1, "problem_id": i, "name": name, "source": source,
                   "origin": "autotriton examples", "license": "Apache-2.0"}
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    overlap = set(TRAIN) & set(EVAL)
    assert not overlap, f"train and eval share problems: {overlap}"
    write_suite(here / "problems.jsonl", "train", TRAIN)
    write_suite(here / "eval_problems.jsonl", "eval", EVAL)
    print(f"wrote {len(TRAIN)} training and {len(EVAL)} evaluation problems to {here}")

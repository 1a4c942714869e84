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


def _elementwise(doc: str, expr: str, rows: int = 16, cols: int = 256) -> str:
    return HEADER + f'''class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {expr}


batch_size = {rows}
dim = {cols}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


TRAIN: dict[str, str] = {
    "relu": _elementwise("Applies ReLU element-wise.", "torch.relu(x)"),
    "sigmoid": _elementwise("Applies the logistic sigmoid element-wise.", "torch.sigmoid(x)"),
    "tanh": _elementwise("Applies tanh element-wise.", "torch.tanh(x)", rows=8, cols=512),
    "gelu": _elementwise("Applies the exact (erf) GELU element-wise.", "F.gelu(x)"),
    "silu": _elementwise("Applies SiLU (x * sigmoid(x)) element-wise.", "F.silu(x)", rows=32, cols=128),
    "leaky_relu": HEADER + '''class Model(nn.Module):
    """LeakyReLU with a configurable negative slope."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 16
dim = 384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.1]
''',
    "bias_relu": HEADER + '''class Model(nn.Module):
    """Adds a learned per-feature bias, then applies ReLU."""

    def __init__(self, features: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.bias)


batch_size = 32
features = 128


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
''',
    "softmax": HEADER + '''class Model(nn.Module):
    """Softmax over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


batch_size = 16
dim = 128


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "layernorm": HEADER + '''class Model(nn.Module):
    """LayerNorm over the last dimension, with learned weight and bias."""

    def __init__(self, normalized_shape: int):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
hidden = 256


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
''',
    "rmsnorm": HEADER + '''class Model(nn.Module):
    """RMSNorm: x / sqrt(mean(x^2) + eps) * weight, over the last dimension."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


batch_size = 16
hidden = 256


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
''',
    "row_sum": HEADER + '''class Model(nn.Module):
    """Sums each row (reduction over dim 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


batch_size = 32
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "row_max": HEADER + '''class Model(nn.Module):
    """Maximum of each row (values only)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x, dim=-1)


batch_size = 32
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "matmul": HEADER + '''class Model(nn.Module):
    """A small matrix product C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


M = 64
K = 64
N = 32


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
''',
    "linear_relu": HEADER + '''class Model(nn.Module):
    """A linear layer followed by ReLU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 32
in_features = 64
out_features = 32


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
''',
    "scaled_residual_add": HEADER + '''class Model(nn.Module):
    """Residual connection with a fixed scale: x + alpha * y."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + self.alpha * y


batch_size = 16
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
''',
    "swiglu_gate": HEADER + '''class Model(nn.Module):
    """SwiGLU gating: splits the last dimension in two halves a, b and returns silu(a) * b."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b


batch_size = 16
dim = 512


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "row_mean": HEADER + '''class Model(nn.Module):
    """Mean of each row, keeping the reduced dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=-1, keepdim=True)


batch_size = 24
dim = 320


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
}

EVAL: dict[str, str] = {
    "elu": HEADER + '''class Model(nn.Module):
    """ELU with a configurable alpha."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [1.0]
''',
    "hardtanh": _elementwise("Clamps values to [-1, 1] (HardTanh).", "F.hardtanh(x, min_val=-1.0, max_val=1.0)"),
    "log_softmax": HEADER + '''class Model(nn.Module):
    """LogSoftmax over dimension 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=1)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "l2_normalize": HEADER + '''class Model(nn.Module):
    """Scales each row to unit L2 norm."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
    "row_min": HEADER + '''class Model(nn.Module):
    """Minimum over a given dimension."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=self.dim)[0]


batch_size = 16
dim1 = 64
dim2 = 32


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [1]
''',
    "linear_gelu": HEADER + '''class Model(nn.Module):
    """A linear layer followed by the tanh-approximated GELU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x), approximate="tanh")


batch_size = 32
in_features = 64
out_features = 64


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
''',
    "batched_matmul": HEADER + '''class Model(nn.Module):
    """Batched matrix product of (B, M, K) and (B, K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


batch = 4
M = 32
K = 32
N = 32


def get_inputs():
    return [torch.randn(batch, M, K), torch.randn(batch, K, N)]


def get_init_inputs():
    return []
''',
    "mse_loss": HEADER + '''class Model(nn.Module):
    """Mean squared error between predictions and targets (a scalar)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


batch_size = 32
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''',
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

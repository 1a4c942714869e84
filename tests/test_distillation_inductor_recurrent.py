"""The Inductor teacher on recurrent layers (nn.LSTM / nn.GRU): traced into one graph, through a
cpu-triton dry-run capture (benchmarks/inductor_l1.py cpu_triton_codegen)."""

from __future__ import annotations

from inductor_helpers import capture_on_cpu


RECURRENT = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden_size, 4)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


def get_inputs():
    return [torch.randn(2, 6, 8)]


def get_init_inputs():
    return [8, 16]
'''


def test_a_recurrent_layer_is_traced_into_one_graph_of_per_step_ops(tmp_path):
    """graph_breaks: Dynamo's default stops at nn.GRU / nn.LSTM (a recurrent model gave "0 graphs"
    and no candidate); traced, the recurrence is written out step by step as matmuls and
    pointwise ops (Triton kernels, and GEMM templates on a GPU; the CPU dry run keeps the matmuls
    as extern calls, so conversion is a GPU matter)."""
    attempt = capture_on_cpu({"gru": RECURRENT}, tmp_path, "rnn")["gru"]["attempts"][0]
    assert attempt["ok"] and len(attempt["graphs"]) == 1, attempt.get("error")
    code = attempt["output_code"]
    assert "rnn_layer" not in code and "_VF" not in code  # not one opaque call per layer
    # 2 layers x 6 steps of the hidden-state product (plus the input products, batched or not)
    assert code.count("extern_kernels.mm(") + code.count("extern_kernels.addmm(") >= 12
    assert "@triton.jit" in code  # the gates: sigmoid / tanh / blend as Triton kernels

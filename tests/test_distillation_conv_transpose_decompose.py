"""Transposed convolutions as sub-pixel phases (`inductor_decompose.conv_transpose_as_phases`),
issue 15 item 5: the Inductor teacher used to express a transposed convolution as zero insertion
+ a direct convolution whose im2col it materialised, stride^d times more work than the
convolution itself (conv_transpose3d + sigmoid on the H200: 19 ms against torch.compile's 0.29).

Checked on the CPU: the values against torch over a grid of configurations, the work and the
largest intermediate on a traced graph (meta tensors, no GPU), and a cpu-triton capture through
the teacher's path that comes out pure Triton and passes the CPU judge."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
import torch
import torch.nn.functional as F

from autotriton.distillation.inductor_decompose import convolution_as_matmul, convolution_decompositions

CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _check_against_torch(shape, cout, kernel, stride, padding, output_padding, dilation, groups, bias, seed=0):
    nd = len(kernel)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, dtype=torch.float64, generator=gen)
    w = torch.randn(shape[1], cout // groups, *kernel, dtype=torch.float64, generator=gen)
    b = torch.randn(cout, dtype=torch.float64, generator=gen) if bias else None
    expected = CONV_TRANSPOSE[nd](x, w, b, stride, padding, output_padding, groups, dilation)
    got = convolution_as_matmul(x, w, b, list(stride), list(padding), list(dilation), True, list(output_padding),
                                groups)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected)


# kernel smaller than, equal to and larger than the stride; padding; output_padding below the
# stride or (with dilation 2) below the dilation; groups 1/2/4; with and without bias
GRID_2D = [
    dict(kernel=k, stride=s, padding=p, output_padding=op, dilation=d, groups=g, bias=b)
    for (k, s), d, g, b in itertools.product([((1, 1), (2, 2)), ((2, 2), (2, 2)), ((5, 3), (2, 3)), ((4, 2), (3, 1)),
                                              ((3, 3), (1, 1))], [(1, 1), (2, 1), (2, 2)], [1, 2, 4], [True, False])
    for p in [tuple(min(1, dd * (kk - 1)) for kk, dd in zip(k, d))]
    for op in [tuple(max(ss, dd) - 1 for ss, dd in zip(s, d))]
]


@pytest.mark.parametrize("case", GRID_2D, ids=lambda c: "k{kernel}-s{stride}-d{dilation}-g{groups}".format(**c))
def test_conv_transpose2d_grid_matches_torch(case):
    _check_against_torch((2, 4 * case["groups"], 5, 7), 3 * case["groups"], case["kernel"], case["stride"],
                         case["padding"], case["output_padding"], case["dilation"], case["groups"], case["bias"])


@pytest.mark.parametrize("config", [
    dict(shape=(2, 6, 11), cout=9, kernel=(5,), stride=(3,), padding=(2,), output_padding=(1,), dilation=(2,),
         groups=3),
    dict(shape=(1, 4, 9), cout=8, kernel=(7,), stride=(2,), padding=(5,), output_padding=(0,), dilation=(1,),
         groups=4),
    dict(shape=(2, 8, 13), cout=4, kernel=(2,), stride=(3,), padding=(0,), output_padding=(2,), dilation=(1,),
         groups=1),
    dict(shape=(1, 8, 5, 6, 4), cout=4, kernel=(3, 5, 3), stride=(2, 1, 2), padding=(1, 2, 0), output_padding=(1, 0, 1),
         dilation=(1, 1, 1), groups=2),
    dict(shape=(1, 4, 3, 5, 4), cout=8, kernel=(3, 2, 4), stride=(3, 2, 2), padding=(1, 0, 2), output_padding=(0, 1, 1),
         dilation=(2, 1, 2), groups=4),
    # channels per group >= 16: the phases go through the batched matmul, not multiply + sum
    dict(shape=(2, 32, 5, 7), cout=48, kernel=(3, 4), stride=(2, 3), padding=(1, 1), output_padding=(1, 2),
         dilation=(1, 1), groups=2),
    dict(shape=(1, 16, 3, 4, 5), cout=32, kernel=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1),
         output_padding=(0, 1, 1), dilation=(1, 1, 1), groups=1),
], ids=lambda c: f"{len(c['kernel'])}d-k{c['kernel']}-s{c['stride']}")
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_1d_3d_and_matmul_sizes_match_torch(config, bias):
    _check_against_torch(bias=bias, **config)


def test_random_configurations_match_torch():
    """A seeded sweep over what torch accepts (an empty output it refuses is skipped): 1-3 dims,
    stride 1-3, kernel 1-5, dilation 1-2, padding up to dilation * (k - 1) + stride, output_padding below
    max(stride, dilation), groups 1/2/4, input lengths from 1."""
    rng = random.Random(0)
    checked = 0
    while checked < 120:
        nd, groups = rng.choice([1, 2, 3]), rng.choice([1, 2, 4])
        stride = tuple(rng.randint(1, 3) for _ in range(nd))
        kernel = tuple(rng.randint(1, 5) for _ in range(nd))
        dilation = tuple(rng.randint(1, 2) for _ in range(nd))
        padding = tuple(rng.randint(0, d * (k - 1) + s) for k, d, s in zip(kernel, dilation, stride))
        output_padding = tuple(rng.randint(0, max(s, d) - 1) for s, d in zip(stride, dilation))
        shape = (2, groups * rng.randint(1, 3), *(rng.randint(1, 7 if nd < 3 else 4) for _ in range(nd)))
        out = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1
               for i, s, p, d, k, op in zip(shape[2:], stride, padding, dilation, kernel, output_padding)]
        if min(out) < 1:
            continue  # torch refuses an empty output
        _check_against_torch(shape, groups * rng.randint(1, 3), kernel, stride, padding, output_padding, dilation,
                             groups, rng.random() < 0.5, seed=checked)
        checked += 1


def _traced_profile(fn, *args) -> tuple[int, int]:
    """(largest materialised intermediate in elements, multiply-adds) of fn's aten graph, traced on
    meta tensors. Materialised: the output of an op that does not alias its input (views, unfold,
    permute cost nothing), except a product consumed only by a sum (the multiply + sum form,
    which Inductor fuses into one reduction and never stores). Multiply-adds: mm/bmm
    (batch * m * k * n) plus those fused products' elements."""
    from torch.fx.experimental.proxy_tensor import make_fx

    graph = make_fx(fn)(*args).graph
    largest = macs = 0
    for node in graph.nodes:
        value = node.meta.get("val")
        if node.op != "call_function" or not isinstance(value, torch.Tensor):
            continue
        if node.target in (torch.ops.aten.mm.default, torch.ops.aten.bmm.default):
            macs += node.args[0].meta["val"].numel() * value.shape[-1]
        if node.target == torch.ops.aten.mul.Tensor and all(
                user.target == torch.ops.aten.sum.dim_IntList for user in node.users):
            macs += value.numel()
            continue
        schema = getattr(node.target, "_schema", None)
        if schema is not None and any(ret.alias_info is not None for ret in schema.returns):
            continue
        largest = max(largest, value.numel())
    return largest, macs


EFFICIENCY_CASES = [
    # KernelBench-like: conv_transpose3d N=16, C 32 -> 64, k=3, stride 2, padding 1, input 16x32x32
    dict(shape=(16, 32, 16, 32, 32), cout=64, kernel=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1),
         output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1),
    dict(shape=(8, 64, 30, 34), cout=32, kernel=(4, 5), stride=(2, 3), padding=(1, 2), output_padding=(1, 0),
         dilation=(1, 1), groups=2),
    dict(shape=(4, 64, 200), cout=64, kernel=(7,), stride=(3,), padding=(3,), output_padding=(1,), dilation=(2,),
         groups=4),
    dict(shape=(2, 32, 24, 24), cout=32, kernel=(3, 3), stride=(2, 2), padding=(2, 2), output_padding=(1, 1),
         dilation=(2, 2), groups=1),  # gcd(stride, dilation) = 2: one phase holds every tap, three only the bias
]


@pytest.mark.parametrize("case", EFFICIENCY_CASES, ids=lambda c: f"{len(c['kernel'])}d-s{c['stride']}-d{c['dilation']}")
def test_no_zero_insertion_work_or_stride_fold_intermediate(case):
    """Work within 1.5x of the transposed convolution's own multiply-adds,
    N * C_in * C_out/groups * prod(input spatial) * prod(k); the zero-insertion path does about
    prod(stride) times that (one multiply per tap per zero-inserted position).

    Largest intermediate <= max(cols, slab), where per dim O_d is the uncropped output length
    (in - 1) * s + d * (k - 1) + output_padding + 1 and M_d = ceil(O_d / s) its positions in one
    residue class mod s:
      - cols = N * C_in * prod(M_d) * prod(ceil(k_d / s'_d)), s' = s / gcd(s, d): one phase's
        im2col, each input position and channel once per tap of that phase, and at most
        ceil(k / s') taps land on one residue (taps k with k * d = r mod s are s' apart);
      - slab = N * C_out * prod(s_d * M_d): the phases interleaved, the uncropped output rounded
        up to a multiple of the stride; any decomposition has to write the output once.
    The zero-insertion im2col holds N * C_in * prod(out_d) * prod(k_d), about
    prod(s_d * k_d / ceil(k_d / s_d)) times cols (27x for the 3-D case: 6.3 GiB against 0.5)."""
    n, cin, *spatial = case["shape"]
    cout, groups = case["cout"], case["groups"]
    x = torch.empty(case["shape"], device="meta")
    w = torch.empty(cin, cout // groups, *case["kernel"], device="meta")
    b = torch.empty(cout, device="meta")
    args = [list(case[key]) for key in ("stride", "padding", "dilation")]

    def conv(x, w, b):
        return convolution_as_matmul(x, w, b, *args, True, list(case["output_padding"]), groups)

    largest, macs = _traced_profile(conv, x, w, b)
    own_macs = n * cin * (cout // groups) * math.prod(spatial) * math.prod(case["kernel"])
    assert own_macs <= macs <= 1.5 * own_macs, (macs / own_macs)

    uncropped = [(i - 1) * s + d * (k - 1) + op + 1 for i, s, d, k, op in
                 zip(spatial, case["stride"], case["dilation"], case["kernel"], case["output_padding"])]
    per_phase = [-(-o // s) for o, s in zip(uncropped, case["stride"])]
    taps = [-(-k // (s // math.gcd(s, d))) for k, s, d in zip(case["kernel"], case["stride"], case["dilation"])]
    cols = n * cin * math.prod(per_phase) * math.prod(taps)
    slab = n * cout * math.prod(m * s for m, s in zip(per_phase, case["stride"]))
    assert largest <= max(cols, slab), (largest, cols, slab)


def test_the_decomposition_table_takes_transposed_convolutions_through_the_phases():
    """aten.convolution (what the capture's decomposition table sees) gives torch's values and
    the same bounded work as the direct call."""
    convolution = convolution_decompositions()[torch.ops.aten.convolution.default]
    x = torch.randn(2, 16, 6, 5, dtype=torch.float64)
    w = torch.randn(16, 8, 3, 3, dtype=torch.float64)
    b = torch.randn(16, dtype=torch.float64)
    got = convolution(x, w, b, [2, 2], [1, 1], [1, 1], True, [1, 1], 2)
    torch.testing.assert_close(got, F.conv_transpose2d(x, w, b, 2, 1, 1, 2))
    _, macs = _traced_profile(lambda x, w, b: convolution(x, w, b, [2, 2], [1, 1], [1, 1], True, [0, 0], 1),
                              torch.empty(4, 32, 40, 40, device="meta"), torch.empty(32, 32, 3, 3, device="meta"),
                              torch.empty(32, device="meta"))
    assert macs <= 1.5 * 4 * 32 * 32 * 40 * 40 * 9


CONV_TRANSPOSE_MODULE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.ConvTranspose{nd}d(in_channels, out_channels, kernel_size, stride={stride}, padding=1,
                                         output_padding=1, groups=2)

    def forward(self, x):
        return torch.sigmoid(self.conv(x))

batch_size = 1
in_channels = 4
out_channels = 6
kernel_size = 3

def get_inputs():
    return [torch.randn(batch_size, in_channels, {spatial})]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
'''


@pytest.mark.timeout(900)
@pytest.mark.parametrize("nd,stride,spatial,extra", [
    (1, 3, "9", ()),
    (2, "(2, 3)", "4, 5", ("--dynamic-parameters",)),
])
def test_cpu_triton_capture_of_a_transposed_convolution_is_pure_triton_and_correct(tmp_path, capsys, nd, stride,
                                                                                    spatial, extra):
    """The teacher's capture path on the CPU (cpu-triton dry run, converted, judged under the
    Triton interpreter on its trials): a grouped, strided ConvTranspose{1,2}d + sigmoid comes out
    as Triton kernels only (small per-group products: the multiply + sum form, which the CPU
    lowers to Triton; the matmul template is GPU only), with the reference's values."""
    from autotriton.validation import ValidationConfig, validate_candidate

    from inductor_helpers import load_bench
    from test_distillation_inductor_params import dry_capture

    source = CONV_TRANSPOSE_MODULE.format(nd=nd, stride=stride, spatial=spatial)
    bench = load_bench()
    out = dry_capture(tmp_path, "convt", source, *extra)
    capsys.readouterr()
    record = json.loads((out / "captures" / "dry_convt.json").read_text())
    assert record["attempts"][0]["ok"], record["attempts"][0].get("error")
    assert bench.main(["convert", "--suite", str(tmp_path / "suite-convt.jsonl"), "--out", str(out)]) == 0
    code = (out / "converted" / "dry_convt.py").read_text()
    assert "extern_kernels" not in code and "torch._inductor" not in code
    assert "@triton.jit" in code
    verdict = validate_candidate(source, code, ValidationConfig(device="cpu", trials=2))
    assert verdict.status == "correct", (verdict.error, verdict.trials)
    assert verdict.triton_kernels_launched

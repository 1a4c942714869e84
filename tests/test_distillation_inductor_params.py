"""Inductor teacher, opt-in symbolic parameter shapes (`dynamic_parameters`, benchmark flag
`--dynamic-parameters`): a candidate takes channel counts from `self.<module>.<param>.shape[d]`
instead of the literals a capture otherwise bakes in, so it survives the judge's odd-size trial.

On the H200 (torch 2.11) seven KernelBench L1 convolutions failed that trial: Inductor's
convolution lowering reads the weight's sizes with guard_int_seq, so the Triton conv template
and the host code carry the out-channel count as a constant (the recorded L1/54 capture below).
The option traces every convolution as gathers + matmul instead. The CPU has no Triton conv or
matmul template, so the end-to-end check uses a convolution whose per-group product is small
(the multiply + sum form, pure Triton on the CPU too)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from inductor_helpers import FIXTURES, ROOT, load_bench

def dry_capture(tmp_path: Path, name: str, source: str, *extra: str, out_name: str = "run") -> Path:
    """A cpu-triton dry-run capture of one problem through the L1 benchmark (id `dry/<name>`);
    returns the benchmark's output folder (captures/dry_<name>.json)."""
    bench = load_bench()
    suite = tmp_path / f"suite-{name}.jsonl"
    suite.write_text(json.dumps({"id": f"dry/{name}", "name": name, "source": source}) + "\n")
    out = tmp_path / out_name
    assert bench.main(["capture", "--suite", str(suite), "--out", str(out), "--jobs", "1",
                       "--capture-device", "cpu-triton", *extra]) == 0
    return out


CONV1D = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return torch.relu(self.conv1d(x))

batch_size = 2
in_channels = 1
out_channels = 16
kernel_size = 3
length = 32

def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
'''

DEPTHWISE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, kernel_size):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, groups=in_channels, bias=False)

    def forward(self, x):
        return self.conv2d(x)

batch_size = 2
in_channels = 16
kernel_size = 3
height = 18
width = 20

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, kernel_size]
'''

RELU_TAIL = '''class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(4, 64)]

def get_init_inputs():
    return []
'''


def test_dynamo_switches_for_symbolic_parameter_shapes_exist_and_are_opt_in():
    from autotriton.distillation.inductor_capture import dynamic_parameter_settings, dynamo_settings

    assert dynamic_parameter_settings() == {"force_parameter_static_shapes": False,
                                            "force_nn_module_property_static_shapes": False}
    static = dynamo_settings(False)  # static captures: torch's shape defaults (logging switches aside)
    assert static["specialize_float"] is True and not set(dynamic_parameter_settings()) & set(static)
    assert dynamo_settings(False, dynamic_parameters=True) == {**static, **dynamic_parameter_settings()}
    assert dynamo_settings(True) == dynamo_settings(True, dynamic_parameters=True)


@pytest.mark.parametrize("case", [
    ("conv1d", dict(stride=2, padding=1), (2, 4, 11), (6, 4, 3)),
    ("conv1d", dict(padding="same", dilation=2), (2, 4, 11), (6, 4, 3)),
    ("conv2d", dict(padding="valid", groups=2), (2, 4, 7, 9), (6, 2, 3, 2)),
    ("conv2d", dict(groups=4), (2, 4, 7, 9), (4, 1, 3, 3)),  # depthwise
    ("conv2d", dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)), (1, 3, 8, 8), (20, 3, 3, 3)),
    ("conv3d", dict(padding=1), (1, 2, 5, 6, 4), (5, 2, 3, 3, 3)),
    ("conv_transpose1d", dict(stride=2, padding=1, output_padding=1), (2, 4, 7), (4, 3, 3)),
    ("conv_transpose2d", dict(stride=2, groups=2, dilation=2), (1, 4, 5, 6), (4, 3, 3, 2)),
])
def test_convolutions_traced_as_gathers_and_matmul_compute_what_torch_computes(case):
    import torch
    import torch.nn.functional as F

    from autotriton.distillation.inductor_decompose import symbolic_parameter_convolutions

    name, kwargs, x_shape, w_shape = case
    torch.manual_seed(0)
    x, w = torch.randn(x_shape), torch.randn(w_shape)
    bias_len = w_shape[1] * kwargs.get("groups", 1) if name.startswith("conv_transpose") else w_shape[0]
    b = torch.randn(bias_len)
    original = getattr(F, name)
    expected = original(x, w, b, **kwargs)
    with symbolic_parameter_convolutions():
        swapped = getattr(F, name)
        assert swapped is not original
        actual = swapped(x, w, b, **kwargs)
    assert getattr(F, name) is original  # restored on exit
    assert actual.shape == expected.shape
    torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-4)


def test_without_the_option_the_recorded_h200_convolution_has_its_channel_count_baked_in():
    """L1/54 as captured on the H200 (dynamic shapes, torch 2.11): the weight's sizes are no graph
    input, so the candidate's buffer and launch grid carry out_channels=64 as literals, and the
    judge's odd-size trial (out_channels 64 -> 65) gives it a weight it does not expect."""
    from autotriton.distillation.inductor_convert import convert_capture
    from autotriton.validation.shrink import perturb_sizes

    capture = json.loads((FIXTURES / "template_conv3d_static.json").read_text())
    assert "dynamic_parameters" not in capture["attempts"][0]
    assert not any("size()" in (d.get("source") or "") and "_parameters" in (d.get("source") or "")
                   for d in capture["attempts"][0]["graphs"][0]["inputs"])
    result = convert_capture(capture, capture["source"])
    assert result.ok, result.detail
    assert "weight.shape" not in result.code
    alloc = next(line for line in result.code.splitlines() if "torch.empty_strided(" in line)
    assert re.search(r"\(\w+, 64, ", alloc), alloc
    assert any("out_channels = 65" in variant for variant in perturb_sizes(capture["source"]))


@pytest.mark.timeout(600)
def test_dynamic_parameters_candidate_reads_channels_from_the_weight_and_passes_the_odd_size_trial(tmp_path, capsys):
    """cpu-triton dry run with --dynamic-parameters: the capture lifts the weight's sizes as graph
    inputs, the converter maps them to `self.conv1d.weight.shape[0]`, and the CPU judge passes
    the candidate on its trials including the odd-size one (out_channels 16 -> 17)."""
    from autotriton.validation import ValidationConfig, validate_candidate

    bench = load_bench()
    out = dry_capture(tmp_path, "conv1d", CONV1D, "--dynamic-parameters")
    suite = tmp_path / "suite-conv1d.jsonl"
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["dynamic_parameters"] is True and summary["captured"] == 1
    record = json.loads((out / "captures" / "dry_conv1d.json").read_text())
    first = record["attempts"][0]
    assert first["ok"] and first["dynamic_parameters"] is True, first.get("error")
    sources = [d.get("source") for d in first["graphs"][0]["inputs"]]
    assert "L['self']._modules['conv1d']._parameters['weight'].size()[0]" in sources

    assert bench.main(["convert", "--suite", str(suite), "--out", str(out)]) == 0
    code = (out / "converted" / "dry_conv1d.py").read_text()
    forward = code[code.index("def forward"):]
    assert "self.conv1d.weight.shape[0]" in forward
    assert not re.search(r"\b16\b", forward), forward  # no out-channel literal left in forward
    assert "extern_kernels" not in code and "torch._inductor" not in code

    verdict = validate_candidate(CONV1D, code, ValidationConfig(device="cpu", trials=2))
    assert verdict.status == "correct", verdict.error
    phases = [t.get("phase") for t in verdict.trials]
    assert "odd_sizes" in phases and all(t.get("ok") for t in verdict.trials), verdict.trials


def test_teacher_takes_the_template_cap_and_dynamic_parameters_from_the_config():
    """`autotriton --set distill.inductor_dynamic_parameters=true ...` reaches the teacher; keyword
    arguments still win over the config."""
    from autotriton.distillation.config import DistillConfig
    from autotriton.distillation.inductor import InductorTeacher

    cfg = DistillConfig(teacher="inductor", inductor_dynamic_parameters=True, inductor_max_mm_configs=4)
    teacher = InductorTeacher(cfg, jobs=1)
    assert teacher.dynamic_parameters is True and teacher.max_mm_configs == 4
    assert InductorTeacher(cfg, jobs=1, dynamic_parameters=False).dynamic_parameters is False
    default = InductorTeacher(DistillConfig(teacher="inductor"), jobs=1)
    assert default.dynamic_parameters is False and default.max_mm_configs is None


def test_a_second_sample_is_the_symbolic_parameter_variant_kept_only_when_it_differs(tmp_path, capsys, monkeypatch):
    """Inductor is deterministic: `samples=2` buys the dynamic-parameters capture as a second
    candidate, and nothing for a problem whose variant converts to the same code. The captures
    are real (cpu-triton dry runs of the conv problem, the recorded relu capture), served to the
    teacher in place of its capture subprocess."""
    import autotriton.distillation.inductor as inductor
    from autotriton.distillation.config import DistillConfig
    from autotriton.records import Problem

    conv_captures = {}
    for flag, extra in ((False, []), (True, ["--dynamic-parameters"])):
        out = dry_capture(tmp_path, "conv1d", CONV1D, *extra, out_name=f"run-{flag}")
        conv_captures[flag] = json.loads((out / "captures" / "dry_conv1d.json").read_text())["attempts"][0]
    capsys.readouterr()
    relu_record = json.loads((FIXTURES / "pointwise_relu.json").read_text())
    calls = []

    def fake_capture(source, *, name, dynamic_parameters=False, **_):
        calls.append((name, dynamic_parameters))
        return conv_captures[dynamic_parameters] if name == "conv1d" else relu_record["attempts"][0]

    monkeypatch.setattr(inductor, "capture_in_subprocess", fake_capture)
    teacher = inductor.InductorTeacher(DistillConfig(teacher="inductor"), jobs=2)
    assert teacher.variants(1) == [False] and teacher.variants(2) == [False, True]
    conv = Problem(reference_source=CONV1D, name="conv1d")
    relu = Problem(reference_source=relu_record["source"], name="relu")
    candidates = teacher.generate([conv, relu], samples=2)
    # relu has no convolution: its variant would be the same capture, so it is not compiled twice
    assert sorted(calls) == [("conv1d", False), ("conv1d", True), ("relu", False)]
    assert teacher.counters["variants_skipped"] == 1
    by_problem = {}
    for c in candidates:
        by_problem.setdefault(c.problem_key, []).append(c)
    first, variant = by_problem[conv.key]
    assert first.sampling["dynamic_parameters"] is False and variant.sampling["dynamic_parameters"] is True
    assert first.sampling["capture_s"] == round(conv_captures[False]["elapsed_s"], 3) > 0  # capture time per problem
    assert first.code and variant.code and first.code != variant.code and variant.parse_error is None
    assert "self.conv1d.weight.shape[0]" in variant.code
    assert len(by_problem[relu.key]) == 1 and by_problem[relu.key][0].code
    assert teacher.counters["problems"] == 2 and teacher.counters["variants_converted"] == 1
    assert teacher.counters["converted"] == 2
    assert len(teacher.generate([conv], samples=1)) == 1
    # A variant that converts to the same code is kept once: the conv problem's variant, served
    # the first capture's output, adds nothing.
    calls.clear()
    conv_captures[True] = conv_captures[False]
    same = teacher.generate([Problem(reference_source=CONV1D + "\n# again\n", name="conv1d")], samples=2)
    assert sorted(calls) == [("conv1d", False), ("conv1d", True)] and len(same) == 1


WIDE_SCRIPT = r'''
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("bench", sys.argv[1])
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
bench.cpu_triton_codegen()
cap = bench._load("inductor_capture")
src = "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x) * 2.0\n\ndef get_inputs():\n    return [torch.randn(64, 256)]\n\ndef get_init_inputs():\n    return []\n"
out = {}
for wide in (False, True):
    c = cap.capture_problem(src, name="relu", device="cpu", dynamic=True, max_autotune=False, index_64bit=wide)
    out[str(wide)] = {"ok": c["ok"], "code": c.get("output_code") or "", "flag": c.get("index_64bit")}
print(json.dumps(out))
'''


@pytest.mark.timeout(600)
def test_index_64bit_capture_indexes_in_int64_where_inductor_would_pick_int32():
    """A problem captured at shrunk sizes runs at its own: Inductor's int32 choice (guarded in
    Inductor, unguarded in a standalone candidate) must not be made then. cpu-triton codegen, in a
    subprocess (it replaces Triton's driver)."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", WIDE_SCRIPT, str(ROOT / "benchmarks" / "inductor_l1.py")],
                          capture_output=True, text=True, timeout=600, cwd=str(ROOT),
                          env=dict(os.environ, TRITON_INTERPRET="1"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["False"]["ok"] and out["True"]["ok"]
    assert "int64" not in out["False"]["code"] and out["False"]["flag"] is None
    assert "int64" in out["True"]["code"] and out["True"]["flag"] is True


@pytest.mark.timeout(600)
def test_a_depthwise_convolution_follows_the_channel_count_with_dynamic_parameters(tmp_path, capsys):
    """groups = in_channels is a module attribute Dynamo would bake in (L1/82 and 86 failed the
    odd-size trial on the H200 with the variant for that reason); traced as in_channels //
    weight.shape[1] it stays symbolic and the candidate passes the trial with 17 channels."""
    from autotriton.validation import ValidationConfig, validate_candidate

    out = dry_capture(tmp_path, "depthwise", DEPTHWISE, "--dynamic-parameters")
    assert load_bench().main(["convert", "--suite", str(tmp_path / "suite-depthwise.jsonl"), "--out", str(out)]) == 0
    capsys.readouterr()
    code = (out / "converted" / "dry_depthwise.py").read_text()
    forward = code[code.index("def forward"):]
    assert not re.search(r"\b16\b", forward), forward  # no channel (= group) count left in forward
    verdict = validate_candidate(DEPTHWISE, code, ValidationConfig(device="cpu", trials=2))
    assert verdict.status == "correct", verdict.error
    assert any(t.get("phase") == "odd_sizes" for t in verdict.trials) and all(t.get("ok") for t in verdict.trials)


def test_kernels_near_the_int32_limit_index_in_int64_in_every_capture():
    """Inductor's guarded int32 choice is unguarded in a standalone candidate: every capture keeps
    int32 only with 8x headroom (L1/77's gathered patches, 1.93e9 elements at the given sizes,
    crossed 2^31 at the judge's odd sizes on the H200: illegal memory access)."""
    import sympy
    from torch._inductor.codegen.simd import SIMDScheduling

    from autotriton.distillation.inductor_capture import INT32_HEADROOM, _wide_indexing, int32_fits

    assert int32_fits([2**31 // INT32_HEADROOM - 1, 10]) and not int32_fits([1_930_000_000])
    original = SIMDScheduling.can_use_32bit_indexing
    with _wide_indexing(False):
        assert SIMDScheduling.can_use_32bit_indexing(sympy.Integer(1_930_000_000), []) is False
        assert SIMDScheduling.can_use_32bit_indexing(sympy.Integer(2**29), []) is False
    assert SIMDScheduling.can_use_32bit_indexing is original


CONV_TRANSPOSE_POOL_NORM = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2, padding=1, output_padding=1)
        self.norm = nn.GroupNorm(4, out_channels)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        x = self.conv(x)
        x = self.pool(x)
        x = self.norm(x)
        return torch.tanh(x)

batch_size = 1
in_channels = 16
out_channels = 8
kernel_size = 3
height = 4
width = 4

def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
'''


CONVT_CHECK = r'''
import json, sys, types
import torch
from autotriton.validation.triton_compat import apply_interpreter_fixes
apply_interpreter_fixes()
candidate, reference = types.ModuleType("candidate"), types.ModuleType("reference")
exec(compile(open(sys.argv[1]).read(), "<candidate>", "exec"), candidate.__dict__)
exec(compile(open(sys.argv[2]).read(), "<reference>", "exec"), reference.__dict__)
torch.manual_seed(0)
model = reference.Model(16, 8, 3).eval()
new = candidate.ModelNew(16, 8, 3).eval()
new.load_state_dict(model.state_dict())
x = torch.randn(1, 16, 4, 4)
with torch.no_grad():
    expected, got = model(x), new(x)
print(json.dumps({"shape": list(got.shape) if got.shape == expected.shape else [], "close": bool(torch.allclose(got, expected, atol=1e-4, rtol=1e-4))}))
'''


@pytest.mark.timeout(600)
def test_conv_transpose_pool_norm_chain_keeps_its_output_channels(tmp_path):
    """Issue 15's ConvTranspose + pooling/normalisation class (twice as many channels in as out):
    the dynamic-parameters capture and conversion give out_channels (8), not in_channels (16), and
    the values of the reference (the weight of a transposed convolution is (in, out, k, k))."""
    import os
    import subprocess
    import sys

    bench = load_bench()
    out = dry_capture(tmp_path, "convt", CONV_TRANSPOSE_POOL_NORM, "--dynamic-parameters")
    suite = tmp_path / "suite-convt.jsonl"
    assert bench.main(["convert", "--suite", str(suite), "--out", str(out)]) == 0
    code = (out / "converted" / "dry_convt.py").read_text()
    assert "extern_kernels" not in code
    (tmp_path / "reference.py").write_text(CONV_TRANSPOSE_POOL_NORM)
    # the interpreter must be on before Triton is first imported (its jit helpers are made then),
    # so the candidate runs in its own process, as the judge runs it
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-c", CONVT_CHECK, str(out / "converted" / "dry_convt.py"),
                           str(tmp_path / "reference.py")], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"shape": [1, 8, 4, 4], "close": True}


def test_each_capture_process_gets_its_share_of_the_compile_workers(monkeypatch):
    """Inductor starts a compile pool as large as the machine in every capture process: with
    several captures at once (jobs x batches side by side) the teacher shares the cores out
    instead (`distill.inductor_compile_threads`, 0 = automatic), and the capture process runs
    with it (recorded in the capture)."""
    import os

    import autotriton.distillation.inductor as inductor
    from autotriton.distillation.config import DistillConfig

    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    teacher = inductor.InductorTeacher(DistillConfig(teacher="inductor", concurrent_batches=2), jobs=4)
    assert teacher.compile_threads == 2  # 16 cores over 8 captures at once
    one_each = DistillConfig(teacher="inductor", concurrent_batches=4, batch_problems=1)
    assert inductor.InductorTeacher(one_each, jobs=4).compile_threads == 4  # a batch of one problem: one capture
    assert inductor.InductorTeacher(DistillConfig(teacher="inductor"), jobs=32).compile_threads == 1
    assert inductor.InductorTeacher(DistillConfig(teacher="inductor", inductor_compile_threads=5), jobs=4).compile_threads == 5
    monkeypatch.undo()
    monkeypatch.delenv("TORCHINDUCTOR_COMPILE_THREADS", raising=False)
    source = (FIXTURES / "pointwise_relu.json")
    relu = json.loads(source.read_text())["source"]
    capture = inductor.capture_in_subprocess(relu, name="relu", timeout_s=300, device="cpu", max_autotune=False,
                                             compile_threads=1)
    assert capture["ok"], capture.get("error")
    assert capture["compile_threads"] == 1


POINTWISE = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.proj = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return torch.relu(self.proj(x))

def get_inputs():
    return [torch.randn(2, 16, 6, 5)]

def get_init_inputs():
    return [16, 32]
'''


@pytest.mark.timeout(600)
def test_a_pointwise_convolution_is_one_gemm_on_the_input_where_it_lies(tmp_path):
    """A 1 x 1 convolution of stride 1 is a GEMM per batch item: with symbolic parameter shapes
    it is captured as one bmm that reads the input in place (NCHW), its channel counts the GEMM's
    sizes, then the bias and activation in one pointwise kernel; no implicit-GEMM kernel, gather
    or copy of the input first (the implicit-GEMM kernel ran L1's conv_pointwise_2D at 0.34x
    cuDNN on an H100, its input copied channels-last; torch.matmul would have folded the batch
    into a transposed copy too). The CPU dry run has no Triton GEMM template (on a GPU the bmm
    is Inductor's Triton template): the capture's code is checked here, the rewrite's numbers
    against torch's convolutions below."""
    out = dry_capture(tmp_path, "pointwise", POINTWISE, "--dynamic-parameters")
    capture = json.loads((out / "captures" / "dry_pointwise.json").read_text())
    attempt = capture["attempts"][0]
    assert attempt["ok"] and attempt.get("dynamic_parameters")
    code = attempt["output_code"]
    body = code[code.index("def call"):code.index("def get_args")]
    assert "conv_implicit_gemm" not in code and "unfold" not in body and "convolution" not in body
    calls = [line.strip() for line in body.splitlines() if re.match(r"\s*(extern_kernels\.\w+|\w+\.run)\(", line)]
    assert len(calls) == 2 and calls[0].startswith("extern_kernels.bmm(") and ".run(" in calls[1], calls
    # the input (the last argument, a 4-D tensor) goes straight into the GEMM, viewed as (N, C, H*W)
    assert re.search(r"reinterpret_tensor\(arg9_1, \(s\d+, s\d+, s\d+\*s\d+\)", calls[0]), calls[0]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("with_bias", [True, False])
def test_the_pointwise_rewrite_matches_torchs_convolution(nd, with_bias):
    import torch
    import torch.nn.functional as F

    from autotriton.distillation.inductor_decompose import is_pointwise, pointwise_as_matmul

    torch.manual_seed(nd)
    x = torch.randn(3, 16, *[4 + d for d in range(nd)])
    w = torch.randn(24, 16, *[1] * nd)
    b = torch.randn(24) if with_bias else None
    assert is_pointwise(w, [1] * nd, [0] * nd, 1)
    expected = getattr(F, f"conv{nd}d")(x, w, b)
    torch.testing.assert_close(pointwise_as_matmul(x, w, b), expected, atol=1e-4, rtol=1e-4)
    assert not is_pointwise(w, [2] * nd, [0] * nd, 1) and not is_pointwise(w, [1] * nd, [1] * nd, 1)
    assert not is_pointwise(w, [1] * nd, [0] * nd, 4) and not is_pointwise(torch.randn(24, 16, *[3] * nd), [1] * nd, [0] * nd, 1)
    # channel counts too small for a tensor-core tile keep the multiply + reduction
    assert not is_pointwise(torch.randn(8, 16, *[1] * nd), [1] * nd, [0] * nd, 1)
    assert not is_pointwise(torch.randn(24, 5, *[1] * nd), [1] * nd, [0] * nd, 1)

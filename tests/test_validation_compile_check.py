"""Compile check: kernels compile for sm_90 on this CPU machine, with a resource report; compile
errors name the kernel; kernels over the target's shared memory are rejected. Exercised both with
compiled JITFunctions (this process) and under TRITON_INTERPRET=1 (a subprocess, as the CPU judge's
candidate process runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from validation_rules_helpers import ELEMENTWISE, FUSED_LINEAR_RELU, MATMUL, SOFTMAX, import_candidate

from autotriton.validation.compile_check import (
    SHARED_MEMORY_LIMITS,
    CompileCheckError,
    LaunchRecord,
    compile_check,
    compile_launched,
    launch_record_from_call,
    parse_target,
    signature_type,
)

REPO = Path(__file__).resolve().parent.parent

if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):  # this module tests the compiled path itself
    pytest.skip("run without TRITON_INTERPRET (the interpreter path is tested in a subprocess)", allow_module_level=True)

KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


@triton.jit
def type_error_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.dot(x, x)
    tl.store(out_ptr + offs, y)


@triton.jit
def greedy_smem_kernel(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BN + offs_n[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc)
'''


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory):
    return import_candidate(KERNELS, tmp_path_factory.mktemp("kernels"))


def test_parse_target() -> None:
    for text in ("cuda:90", "cuda:sm_90", "sm_90a", "CUDA:90"):
        t = parse_target(text)
        assert (t.backend, t.arch, t.warp_size) == ("cuda", 90, 32)
    assert parse_target("cuda:80").arch == 80
    for bad in ("", "gpu", "cuda", "cuda:ninety", "rocm:90", "cuda:42", "90"):
        with pytest.raises(CompileCheckError, match="compile target"):
            parse_target(bad)


def test_signature_type_mapping() -> None:
    assert signature_type(torch.empty(2)) == "*fp32"
    assert signature_type(torch.empty(2, dtype=torch.float16)) == "*fp16"
    assert signature_type(torch.empty(2, dtype=torch.bfloat16)) == "*bf16"
    assert signature_type(torch.empty(2, dtype=torch.int32)) == "*i32"
    assert signature_type(torch.empty(2, dtype=torch.int64)) == "*i64"
    assert signature_type(7) == "i32"
    assert signature_type(2**40) == "i64"
    assert signature_type(1) == "constexpr"
    assert signature_type(0.5) == "fp32"
    assert signature_type(True) == "u1"
    assert signature_type(None) == "constexpr"
    with pytest.raises(CompileCheckError):
        signature_type(object())


def test_launch_record_matches_triton_specialisation(kernels) -> None:
    x = torch.randn(1000)
    out = torch.empty_like(x)
    rec = launch_record_from_call(kernels.scale_kernel, (x, out, 1000, 0.5), {"BLOCK": 128, "num_warps": 8},
                                  grid=lambda meta: (triton_cdiv(1000, meta["BLOCK"]),))
    assert isinstance(rec, LaunchRecord)
    assert rec.kernel_name == "scale_kernel"
    assert rec.signature == {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "alpha": "fp32", "BLOCK": "constexpr"}
    assert rec.constexprs == {"BLOCK": 128}
    assert (rec.num_warps, rec.num_stages) == (8, 3)
    assert rec.grid == (8,)
    # fresh allocations are 16-byte aligned, 1000 is divisible by 16 -> Triton's divisibility hints
    assert rec.attrs[(0,)] == [["tt.divisibility", 16]]
    # an int equal to 1 is specialised away as a constexpr, as Triton does
    rec1 = launch_record_from_call(kernels.scale_kernel, (x, out, 1, 0.5), {"BLOCK": 128})
    assert rec1.signature["n"] == "constexpr" and rec1.constexprs["n"] == 1


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def test_launch_record_rejects_unknown_keywords(kernels) -> None:
    x = torch.randn(8)
    with pytest.raises(CompileCheckError, match="scale_kernel.*BLOKC"):
        launch_record_from_call(kernels.scale_kernel, (x, x, 8, 1.0), {"BLOKC": 128})


def test_good_kernel_compiles_for_sm90_with_resources(kernels) -> None:
    x = torch.randn(1000)
    rec = launch_record_from_call(kernels.scale_kernel, (x, torch.empty_like(x), 1000, 0.5), {"BLOCK": 256})
    report = compile_launched([rec, rec], target="cuda:90")  # duplicates compile once
    assert report["ok"] is True and report["error"] is None
    assert report["target"] == "cuda:90" and report["n_variants"] == 1
    entry = report["kernels"]["scale_kernel"]
    assert entry["ok"] and entry["error"] is None
    assert 0 < entry["n_regs"] <= 255
    assert entry["shared"] == 0
    assert entry["spill_stores"] == 0 and entry["spill_loads"] == 0
    assert json.dumps(report)  # JSON-friendly for the verdict


def test_type_error_reports_the_kernel(kernels) -> None:
    x = torch.randn(64)
    rec = launch_record_from_call(kernels.type_error_kernel, (x, torch.empty_like(x), 64), {"BLOCK": 64})
    report = compile_launched([rec])
    assert report["ok"] is False
    error = report["kernels"]["type_error_kernel"]["error"]
    assert "type_error_kernel" in error and "sm_90" in error
    assert "tl.dot(x, x)" in error  # the offending line
    assert "Traceback" not in error and len(error) < 700
    assert report["error"] == error


def test_kernel_over_shared_memory_is_rejected(kernels) -> None:
    a = torch.randn(128, 128, dtype=torch.float16)
    c = torch.empty(128, 128)
    big = launch_record_from_call(kernels.greedy_smem_kernel, (a, a, c, 128),
                                  {"BM": 128, "BN": 128, "BK": 128, "num_stages": 5})
    small = launch_record_from_call(kernels.greedy_smem_kernel, (a, a, c, 128),
                                    {"BM": 32, "BN": 32, "BK": 32, "num_stages": 2})
    report = compile_launched([small, big], target="cuda:90")
    assert report["ok"] is False
    entry = report["kernels"]["greedy_smem_kernel"]
    ok_variant, big_variant = entry["variants"]
    assert ok_variant["ok"] and ok_variant["shared"] <= SHARED_MEMORY_LIMITS[90]
    assert not big_variant["ok"] and big_variant["shared"] > SHARED_MEMORY_LIMITS[90]
    assert "shared memory" in big_variant["error"] and "greedy_smem_kernel" in big_variant["error"]
    assert entry["shared"] == big_variant["shared"]


def test_candidate_kernels_compile_from_a_real_forward(tmp_path: Path) -> None:
    """Launches recorded by the judge's own hook (candidate_runner.install_launch_hooks, as in a
    candidate's process), then compiled for sm_90."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from autotriton.validation import candidate_runner as cr

    module = import_candidate(SOFTMAX, tmp_path)
    originals = (JITFunction.run, InterpretedFunction.run)  # the hook belongs in candidate processes, not here
    cr.STATE.compile_records, cr.STATE.compile_seen, cr.STATE.want_compile_records = [], set(), True
    cr.install_launch_hooks()
    try:
        # No GPU here: the hook records the launch, then Triton's driver refuses to run it.
        with pytest.raises(RuntimeError, match="driver"):
            module.ModelNew()(torch.randn(16, 300))
        records = list(cr.STATE.compile_records)
    finally:
        JITFunction.run, InterpretedFunction.run = originals
        cr.STATE.compile_records, cr.STATE.compile_seen = [], set()
    assert all(isinstance(r, LaunchRecord) for r in records), records  # no record_error entries
    assert [r.kernel_name for r in records] == ["softmax_kernel"]
    assert records[0].constexprs["BLOCK_SIZE"] == 512
    report = compile_launched(records)
    assert report["ok"], report["error"]


INTERPRETER_SCRIPT = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from validation_rules_helpers import import_candidate, {name}
from pathlib import Path
import torch
from autotriton.validation import candidate_runner as cr
from autotriton.validation.compile_check import compile_launched

cr.install_launch_hooks()  # the judge's own hook, as a CPU candidate process installs it (with the interpreter fixes)
cr.STATE.want_compile_records = True

module = import_candidate({name}, Path(sys.argv[2]))
model = module.ModelNew(*{init})
inputs = {inputs}
before = model(*inputs)
records = list(cr.STATE.compile_records)
assert all(not isinstance(r, dict) for r in records), records  # no record_error entries
report = compile_launched(records, target="cuda:90")
after = model(*inputs)  # the interpreter still works after compiling
print(json.dumps({{"ok": report["ok"], "error": report["error"], "kernels": sorted(report["kernels"]),
                  "same": bool(torch.equal(before, after)), "records": len(records),
                  "regs": [k["n_regs"] for k in report["kernels"].values()]}}))
'''


@pytest.mark.parametrize("name,init,inputs", [
    ("ELEMENTWISE", "()", "[torch.randn(1000), torch.randn(1000)]"),
    ("MATMUL", "()", "[torch.randn(40, 24), torch.randn(24, 36)]"),  # runtime loop bound, tl.cdiv
    ("FUSED_LINEAR_RELU", "(24, 20)", "[torch.randn(17, 24)]"),  # autotuned
    ("LINEAR_GELU_AUTOGRAD", "(24, 20)", "[torch.randn(3, 5, 24)]"),  # user @triton.jit helper, str constexpr
])
def test_compile_check_under_the_interpreter(name: str, init: str, inputs: str, tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(INTERPRETER_SCRIPT.format(name=name, init=init, inputs=inputs))
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script), str(REPO / "tests"), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["ok"], result["error"]
    assert result["records"] >= 1 and result["same"]
    assert all(r and 0 < r <= 255 for r in result["regs"])


def test_interpreter_compile_error_names_the_kernel(tmp_path: Path) -> None:
    source = textwrap.dedent('''
        import torch, triton, triton.language as tl

        @triton.jit
        def bad_cast_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            tl.store(out_ptr + offs, x.to(tl.pointer_type(tl.float32)))
    ''')
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(r'''
        import json, sys
        sys.path.insert(0, sys.argv[1])
        from pathlib import Path
        import torch
        from validation_rules_helpers import import_candidate
        from autotriton.validation.compile_check import compile_launched, launch_record_from_call
        mod = import_candidate(Path(sys.argv[3]).read_text(), Path(sys.argv[2]))
        x = torch.randn(16)
        rec = launch_record_from_call(mod.bad_cast_kernel, (x, torch.empty_like(x)), {"BLOCK": 16})
        print(json.dumps(compile_launched([rec])))
    '''))
    (tmp_path / "cand_src.txt").write_text(source)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script), str(REPO / "tests"), str(tmp_path), str(tmp_path / "cand_src.txt")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["ok"] is False
    assert report["kernels"]["bad_cast_kernel"]["error"].startswith("kernel bad_cast_kernel failed to compile for sm_90")


# --------------------------------------------------------------------------------------------
# compile_check(source): the kernels alone, signatures inferred from the source
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [ELEMENTWISE, MATMUL, SOFTMAX, FUSED_LINEAR_RELU], ids=["elementwise", "matmul", "softmax", "autotuned"])
def test_compile_check_from_source(source: str) -> None:
    report = compile_check(source)
    assert report["ok"], report["error"]
    assert report["signature_source"] == "inferred" and report["kernels"]
    for entry in report["kernels"].values():
        assert entry["ok"] and 0 < entry["n_regs"] <= 255


def test_compile_check_infers_pointers_scalars_and_constexprs() -> None:
    report = compile_check(MATMUL)
    variant = report["kernels"]["matmul_kernel"]["variants"][0]
    sig = variant["signature"]
    assert [k for k, v in sig.items() if v == "*fp32"] == ["a_ptr", "b_ptr", "c_ptr"]
    assert sig["stride_am"] == "i32" and sig["K"] == "i32"
    assert variant["constexprs"] == {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}
    assert (variant["num_warps"], variant["num_stages"]) == (4, 2)
    # a block size computed at run time (triton.next_power_of_2) is guessed and says so
    softmax = compile_check(SOFTMAX)
    assert softmax["guessed"] == {"softmax_kernel": ["BLOCK_SIZE"]}


def test_compile_check_names_kernel_and_candidate_line() -> None:
    source = ELEMENTWISE.replace("tl.store(out_ptr + offsets, x + y, mask=mask)", "tl.store(out_ptr + offsets, tl.dot(x, y), mask=mask)")
    line = next(i for i, text in enumerate(source.splitlines(), 1) if "tl.dot(x, y)" in text)
    report = compile_check(source)
    assert report["ok"] is False
    error = report["kernels"]["add_kernel"]["error"]
    assert error.startswith("kernel add_kernel failed to compile for sm_90")
    assert f"at line {line} " in error


def test_compile_check_runs_no_candidate_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = ELEMENTWISE + f"\nopen({str(marker)!r}, 'w').write('module code ran')\n"
    # defaults and annotations are evaluated when a def runs: neither may run candidate code
    source = source.replace("BLOCK_SIZE: tl.constexpr)", f"BLOCK_SIZE: tl.constexpr = open({str(marker)!r}, 'w'))")
    source = source.replace("n_elements,", f"n_elements: open({str(marker)!r}, 'w'),", 1)
    report = compile_check(source)
    assert not marker.exists()
    assert "add_kernel" in report["kernels_found"]


def test_compile_check_with_recorded_launches_uses_them(kernels) -> None:
    x = torch.randn(64)
    rec = launch_record_from_call(kernels.scale_kernel, (x, torch.empty_like(x), 64, 2.0), {"BLOCK": 64})
    report = compile_check("", launches=[rec])
    assert report["ok"] and report["signature_source"] == "launch" and report["kernels_found"] == ["scale_kernel"]


def test_compile_check_rejects_bad_target_and_syntax() -> None:
    with pytest.raises(CompileCheckError, match="compile target"):
        compile_check(ELEMENTWISE, target="cuda:1")
    with pytest.raises(CompileCheckError, match="line 2"):
        compile_check("import triton\ndef broken(:\n")


def test_compile_check_reads_literals_bound_in_the_launching_function() -> None:
    from validation_rules_helpers import TUTORIAL_SOFTMAX

    report = compile_check(TUTORIAL_SOFTMAX)
    assert report["ok"], report["error"]
    variant = report["kernels"]["softmax_kernel"]["variants"][0]
    # num_stages is both a constexpr parameter and the launch option, as in Triton's tutorial
    assert variant["constexprs"]["num_stages"] == 2 and variant["num_stages"] == 2 and variant["num_warps"] == 8
    assert report["guessed"] == {"softmax_kernel": ["BLOCK_SIZE"]}

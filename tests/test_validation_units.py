"""Pure functions of the judge: shrinking, odd sizes, comparison, rewards, the result wire format."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch

from autotriton.records import Verdict
from autotriton.validation import perturb_sizes, shrink_problem
from autotriton.validation.compare import compare_outputs
from autotriton.validation.rewards import combined_reward, exec_reward, rule_reward
from autotriton.validation import wire

TOL = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


def _constants(source: str) -> dict[str, object]:
    return {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(source).body
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, (ast.Constant, ast.Tuple))}


def test_shrink_rule_keeps_structure():
    src = "import torch\nbatch_size = 4096\nM = 1024 * 2\nN = 4095\nK = 393216\nshape = (32768, 3)\nkernel_size = 3\ngroups = M\n" \
          "def get_inputs():\n    return [torch.rand(batch_size, 8192)]\n"
    out = shrink_problem(src, max_dim=32, max_batch=4)
    c = _constants(out)
    assert c["batch_size"] == 4  # batch-like: capped
    assert c["M"] == 32  # powers of two stay powers of two
    assert c["N"] == 33  # odd stays odd
    assert c["K"] == 24  # 3 * 2**17: halved while even and too big, the factor 3 survives
    assert c["shape"] == (32, 3) and c["kernel_size"] == 3
    assert "groups = M" in out  # derived names follow their source
    assert "torch.rand(batch_size, 32)" in out  # literal sizes in get_inputs
    assert shrink_problem(out) == out  # idempotent


def test_perturb_sizes_makes_even_sizes_odd():
    variants = perturb_sizes("a = 32\nb = 7\nc = 64\nd = 2\n")
    assert _constants(variants[0]) == {"a": 33, "b": 7, "c": 65, "d": 2}
    assert len(variants) == 3  # all at once, then one at a time
    assert perturb_sizes("k = 3\n") == []


def test_shrunk_kernelbench_problems_parse_and_fit(kernelbench_l1):
    rows = [json.loads(line) for line in kernelbench_l1.read_text().splitlines()]
    for row in rows:
        out = shrink_problem(row["source"])
        tree = ast.parse(out)  # still valid Python
        for n in tree.body:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and type(n.value.value) is int:
                assert n.value.value <= 33, (row["name"], ast.unparse(n))


def test_compare_tolerances_by_dtype():
    ref = torch.ones(4, 4)
    assert compare_outputs([ref], [ref + 5e-5], tolerances=TOL)["ok"]
    assert not compare_outputs([ref], [ref + 1e-3], tolerances=TOL)["ok"]
    half = torch.ones(4, 4, dtype=torch.float16)
    assert compare_outputs([half], [half + 0.005], tolerances=TOL)["ok"]
    # TF32 dots on a GPU: fp32 outputs are held to the half-precision tolerance
    assert compare_outputs([ref], [ref + 1e-3], tolerances=TOL, tf32_dot=True, tf32_tolerance=1e-2)["ok"]
    ints = torch.arange(6)
    assert not compare_outputs([ints], [ints + (ints == 3)], tolerances=TOL)["ok"]


def test_compare_is_strict_on_shape_dtype_nan_inf_and_constants():
    ref = torch.randn(8, 8)
    r = compare_outputs([ref], [ref.reshape(-1)], tolerances=TOL)
    assert not r["ok"] and "shape" in r["reason"]
    r = compare_outputs([ref], [ref.double()], tolerances=TOL)
    assert not r["ok"] and "dtype" in r["reason"]
    bad = ref.clone()
    bad[0, 0] = float("nan")
    assert not compare_outputs([ref], [bad], tolerances=TOL)["ok"]
    ref_nan = bad.clone()
    assert compare_outputs([ref_nan], [bad], tolerances=TOL)["ok"]  # NaN exactly where the reference has it
    inf = ref.clone()
    inf[1, 1] = float("inf")
    minus = inf.clone()
    minus[1, 1] = float("-inf")
    assert not compare_outputs([inf], [minus], tolerances=TOL)["ok"]
    tiny = torch.randn(8, 8) * 1e-7  # within atol of zero, but zero is a constant answer
    r = compare_outputs([tiny], [torch.zeros(8, 8)], tolerances=TOL)
    assert not r["ok"] and "constant" in r["reason"]
    assert not compare_outputs([ref, ref], [ref], tolerances=TOL)["ok"]


def _answers_across_slices() -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """Reference/candidate pairs whose verdict depends on elements in different slices of 7."""
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(5, 9, generator=g)  # 45 elements: seven slices of 7, the last of 3
    far = ref.clone()
    far[0, 1], far[4, 8] = far[0, 1] + 1.0, far[4, 8] - 2.0  # the first and the last slice
    nans = ref.clone()
    nans[0, 0], nans[3, 3], nans[4, 7] = float("nan"), float("nan"), float("nan")
    some_nans = nans.clone()
    some_nans[3, 3] = ref[3, 3]
    infs = ref.clone()
    infs[2, 2], infs[4, 8] = float("inf"), float("-inf")
    flipped = infs.clone()
    flipped[4, 8] = float("inf")
    level = torch.full((5, 9), 0.25)
    level_ref = level.clone()
    level_ref[2, 0] = 0.25 + 5e-5  # within tolerance, but only a middle slice shows it is not constant
    ints = torch.arange(45).reshape(5, 9)
    return [("same", ref, ref.clone()), ("two far", ref, far), ("NaN placed", nans, nans.clone()),
            ("NaN added", ref, nans), ("NaN missing", nans, some_nans), ("Inf placed", infs, infs.clone()),
            ("Inf flipped", infs, flipped), ("constant", level_ref, level), ("constant both", level, level.clone()),
            ("ints", ints, ints.clone()), ("ints off", ints, ints + (ints % 11 == 0))]


@pytest.mark.parametrize("case", range(11))
def test_compare_slice_by_slice_gives_the_whole_comparisons_verdict(case):
    """Outputs of gigabytes are compared a slice at a time on the judge's device; the verdict,
    the error and the reason must be those of comparing them whole (counts over every slice)."""
    name, ref, got = _answers_across_slices()[case]
    whole = compare_outputs([ref], [got], tolerances=TOL, chunk=10**9)
    sliced = compare_outputs([ref], [got], tolerances=TOL, chunk=7, device="cpu")
    assert sliced == whole or (sliced["max_abs_err"] != sliced["max_abs_err"] and whole["max_abs_err"] != whole["max_abs_err"]
                               and {**sliced, "max_abs_err": 0} == {**whole, "max_abs_err": 0}), name
    expected_ok = name in {"same", "NaN placed", "Inf placed", "constant both", "ints"}
    assert whole["ok"] is expected_ok, (name, whole)
    if name == "two far":
        assert whole["reason"].startswith("output: 2 of 45 element(s)") and whole["max_abs_err"] == pytest.approx(2.0)
    if name == "NaN added":
        assert "(3 element(s))" in whole["reason"]
    if name == "constant":
        assert "constant" in whole["reason"]
    if name == "ints off":
        assert whole["reason"].startswith("output: 5 element(s) differ")


def _verdict(**kw) -> Verdict:
    return Verdict(candidate_key="c", problem_key="p", **kw)


def test_rewards():
    good = _verdict(status="correct", correct=True, rule_ok=True)
    assert (exec_reward(good), rule_reward(good), combined_reward(good)) == (1.0, 1.0, 1.0)
    cheat = _verdict(status="rule_violation", correct=True, rule_ok=False)
    assert (exec_reward(cheat), rule_reward(cheat), combined_reward(cheat)) == (1.0, 0.0, 0.0)
    wrong = _verdict(status="incorrect", correct=False, rule_ok=True)
    assert combined_reward(wrong) == 0.0 and rule_reward(wrong) == 1.0
    fast = _verdict(status="correct", correct=True, rule_ok=True, speedup=4.0)
    assert combined_reward(fast, speedup_bonus=0.5, max_bonus=1.0) == pytest.approx(1.5)  # capped log2 bonus
    assert combined_reward(fast) == 1.0  # no shaping unless asked
    suspect = _verdict(status="correct", correct=True, rule_ok=True, speedup=50.0, timing={"suspect": True})
    assert combined_reward(suspect, speedup_bonus=0.5) == 1.0


def test_wire_round_trip_and_hostile_headers():
    tensors = [torch.randn(3, 4), torch.arange(5), torch.ones(2, dtype=torch.bfloat16), torch.empty(0, 3)]
    header, back = wire.decode_tensors(wire.encode_tensors({"x": 1}, tensors))
    assert header["x"] == 1
    for a, b in zip(tensors, back):
        assert a.dtype == b.dtype and torch.equal(a, b)
    payload = wire.encode_tensors({}, [torch.randn(4)])
    forged = json.loads(payload[8:8 + int.from_bytes(payload[:8], "big")])
    forged["tensors"][0]["shape"] = [1000]  # claims more bytes than it sent
    head = json.dumps(forged).encode()
    with pytest.raises(wire.WireError):
        wire.decode_tensors(len(head).to_bytes(8, "big") + head + payload[8 + int.from_bytes(payload[:8], "big"):])
    forged["tensors"][0].update(shape=[4], dtype="object")
    head = json.dumps(forged).encode()
    with pytest.raises(wire.WireError):
        wire.decode_tensors(len(head).to_bytes(8, "big") + head)
    with pytest.raises(wire.WireError):
        wire.decode_tensors(b"\x00\x00\x00\x00\x00\x00\x00\x05garbage")


def test_timing_trims_outliers_and_flags_suspect_speedups():
    from autotriton.validation.timing import _trimmed_median, speedups

    median, kept = _trimmed_median([1.0] * 20 + [50.0, 0.01])  # one stall, one glitch
    assert median == 1.0 and kept == 20
    ref = {"eager": [{"median_ms": 4.0}, {"median_ms": 8.0}], "compiled": [{"median_ms": 2.0}, {"median_ms": 4.0}]}
    hosted = speedups({"eager": [{"median_ms": 4.0, "host_ms": 0.5}]}, {"sets": [{"median_ms": 2.0, "host_ms": 1.5}]}, 10.0)
    assert hosted["host_ms"] == {"candidate": 1.5, "eager": 0.5}
    out = speedups(ref, {"sets": [{"median_ms": 2.0}, {"median_ms": 4.0}]}, suspect_above=10.0)
    assert out["speedup"] == 2.0 and out["speedup_vs_compile"] == 1.0 and out["suspect"] is False
    out = speedups(ref, {"sets": [{"median_ms": 0.1}, {"median_ms": 0.2}]}, suspect_above=10.0)
    assert out["speedup"] == 40.0 and out["suspect"] is True


def test_wire_frames_travel_without_concatenation_and_decode_in_place():
    import socket
    import threading

    tensors = [torch.randn(300, 7), torch.arange(11, dtype=torch.int16), torch.randn(5, dtype=torch.float64)]
    parts = wire.encode_tensor_parts({"x": 2}, tensors)
    assert wire.payload_size(parts) == len(wire.encode_tensors({"x": 2}, tensors))
    a, b = socket.socketpair()
    sender = threading.Thread(target=wire.send_parts, args=(a, parts))
    sender.start()
    payload = wire.recv_frame(b, max_bytes=1 << 20)
    sender.join()
    assert isinstance(payload, bytearray)
    header, back = wire.decode_tensors(payload)
    assert header["x"] == 2 and all(torch.equal(x, y) for x, y in zip(tensors, back))
    base = torch.frombuffer(payload, dtype=torch.uint8).data_ptr()
    assert all(base <= t.data_ptr() < base + len(payload) for t in back)  # views of the received buffer, no copies
    # a hostile sender's misaligned offset is read by copy, still bounds-checked
    head = json.loads(payload[8:8 + int.from_bytes(payload[:8], "big")])
    head["tensors"] = [{"dtype": "float32", "shape": [2], "offset": 1, "nbytes": 8}]
    raw = json.dumps(head).encode()
    odd = bytearray(len(raw).to_bytes(8, "big") + raw + bytes(range(16)))
    (t,) = wire.decode_tensors(odd)[1]
    assert t.shape == (2,) and t.numpy().tobytes() == bytes(range(1, 9))
    # an announced size over the limit is refused before anything is allocated for it
    a.sendall((1 << 40).to_bytes(8, "big"))
    with pytest.raises(wire.WireError):
        wire.recv_frame(b, max_bytes=1 << 20)
    a.close()
    b.close()


def test_job_tensors_travel_raw_and_come_back_equal():
    import socket
    import threading

    x = torch.randn(64, 33)
    job = {"source": "s", "phases": [{"state_dict": {"w": torch.randn(3, 4), "b": torch.zeros(0)},
                                      "init_inputs": [7, (torch.arange(5), "k")],
                                      "trials": [{"seed": 1, "inputs": [x, x, x.t(), torch.ones(2, dtype=torch.bfloat16)]}]}]}
    a, b = socket.socketpair()
    sender = threading.Thread(target=wire.send_job, args=(a, job))
    sender.start()
    back = wire.recv_job(b)
    sender.join()
    a.close()
    b.close()
    ph, orig = back["phases"][0], job["phases"][0]
    assert torch.equal(ph["state_dict"]["w"], orig["state_dict"]["w"]) and ph["state_dict"]["b"].shape == (0,)
    assert ph["init_inputs"][0] == 7 and torch.equal(ph["init_inputs"][1][0], torch.arange(5)) and ph["init_inputs"][1][1] == "k"
    ins = ph["trials"][0]["inputs"]
    assert ins[0] is ins[1] and torch.equal(ins[0], x)  # one tensor object stays one
    assert torch.equal(ins[2], x.t()) and ins[2].stride() == x.t().stride()  # a non-contiguous view keeps its layout (pickled)
    assert ins[3].dtype == torch.bfloat16 and torch.equal(ins[3], torch.ones(2, dtype=torch.bfloat16))


def test_judge_workers_get_the_gpus_asked_for_as_this_process_sees_them():
    """validation.gpus picks GPUs by this process's indices; each worker's CUDA_VISIBLE_DEVICES
    names the physical id behind it (a parent limited to "2,3" keeps its workers on 2 and 3)."""
    from autotriton.validation.pool import JudgeError, assign_gpus, visible_gpu_ids

    assert visible_gpu_ids(2, {"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    assert visible_gpu_ids(2, {}) == ["0", "1"]
    assert assign_gpus(5, ["2", "3"], []) == ["2", "3", "2", "3", "2"]
    assert assign_gpus(3, ["2", "3"], [1]) == ["3", "3", "3"]  # the judge on its own GPU
    with pytest.raises(JudgeError, match=r"validation.gpus = \[2\]: this process sees 2 GPU"):
        assign_gpus(2, ["0", "1"], [2])
    with pytest.raises(JudgeError, match="no GPU is visible"):
        assign_gpus(2, [], [])


STATE_CFG = {"device": "cpu", "shrink_for_cpu": True, "shrink_max_dim": 32, "seed": 1, "trials": 1, "odd_size_trial": False,
             "max_trial_mb": 512.0, "max_output_mb": 1024.0}

# A reference that runs out of memory while a file says so (another batch holding the GPU).
OOM_WHILE_FULL = """
import os
import torch
import torch.nn as nn

FULL = {full!r}

class Model(nn.Module):
    def forward(self, x):
        if os.path.exists(FULL):
            with open(FULL) as f:
                left = int(f.read())
            if left:
                with open(FULL, "w") as f:
                    f.write(str(left - 1))
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB.")
        return torch.relu(x)

def get_inputs():
    return [torch.randn(4, 32)]

def get_init_inputs():
    return []
"""


def test_a_reference_that_found_the_gpu_full_is_built_again_after_a_wait(tmp_path):
    """Batches judged side by side share the GPU: a reference that ran out of memory once is built
    again after a wait (and the wait is noted), not recorded as a broken problem; one that stays
    out of memory past the waits, or fails for another reason, fails at once as before."""
    from collections import OrderedDict
    from types import SimpleNamespace

    from autotriton.validation import problem_state as ps
    from autotriton.validation.reference_problem import ProblemError

    full = tmp_path / "full"
    source = OOM_WHILE_FULL.format(full=str(full))
    full.write_text("2")  # out of memory twice, then room
    state = ps.problem_state(SimpleNamespace(problems=OrderedDict(), tmp=str(tmp_path)), source, STATE_CFG, waits=(0.01, 0.02, 0.03))
    assert state.notes["oom_retries"] == 2 and state.notes["oom_wait_s"] == pytest.approx(0.03)
    assert full.read_text() == "0" and len(state.main.outputs) == 1

    full.write_text("5")  # still full after every wait: the out-of-memory error, as the problem's failure
    with pytest.raises(ProblemError, match="OutOfMemoryError"):
        ps.problem_state(SimpleNamespace(problems=OrderedDict(), tmp=str(tmp_path)), source, STATE_CFG, waits=(0.01, 0.01))
    assert full.read_text() == "2"  # tried three times: first, and after each of the two waits

    broken = source.replace("return torch.relu(x)", "return x.undefined_method()")
    full.write_text("0")
    with pytest.raises(ProblemError, match="AttributeError"):
        ps.problem_state(SimpleNamespace(problems=OrderedDict(), tmp=str(tmp_path)), broken, STATE_CFG, waits=(60.0,))


def test_trial_inputs_are_the_seeds_draw_and_a_draw_that_cannot_run_on_the_device_is_made_on_the_cpu():
    """On the CPU the trial inputs are get_inputs() under the seed, as before; on another device
    (here meta, whose tensors cannot be copied back) a draw that fails is made on the CPU as the
    problem wrote it, with the same seed (the GPU path itself: tests/test_validation_gpu.py)."""
    import types

    from autotriton.validation.problem_state import draw_inputs

    module = types.SimpleNamespace(get_inputs=lambda: [torch.rand(4, 8), {"scale": torch.randn(3)}, 2])
    torch.manual_seed(5)
    expected = [torch.rand(4, 8), torch.randn(3)]
    for device in ("cpu", "meta"):
        drawn = draw_inputs(module, 5, device)
        assert torch.equal(drawn[0], expected[0]) and torch.equal(drawn[1]["scale"], expected[1]) and drawn[2] == 2
        assert drawn[0].device.type == "cpu"


def test_the_workers_caches_together_hold_at_most_a_quarter_of_the_hosts_memory():
    """Eight GPU judge workers may not cache 16 GiB each on a 128 GiB host (the whole of it):
    each gets its share of a quarter of the host's memory, at most MAX_CACHED_BYTES."""
    from autotriton.validation.problem_state import MAX_CACHED_BYTES, cache_limit

    assert cache_limit({"pool_workers": 8}, host_bytes=128 * 2**30) == 4 * 2**30
    assert cache_limit({"pool_workers": 1}, host_bytes=128 * 2**30) == MAX_CACHED_BYTES
    assert cache_limit({}, host_bytes=24 * 2**30) == 6 * 2**30  # a worker outside a pool: one share
    assert 0 < cache_limit({"pool_workers": 2}) <= MAX_CACHED_BYTES  # this machine's own memory


def test_the_worker_cache_of_problems_is_bounded_by_bytes(monkeypatch):
    """Problems judged at their own sizes can hold GiBs of inputs and reference outputs: the
    worker's cache drops the oldest ones past MAX_CACHED_BYTES (the newest always stays)."""
    from collections import OrderedDict
    from types import SimpleNamespace

    from autotriton.validation import problem_state as ps
    from validation_helpers import problem

    worker = SimpleNamespace(problems=OrderedDict(), tmp="")
    first = ps.problem_state(worker, problem("relu"), STATE_CFG)
    size = first.cached_bytes()
    assert size == 2 * 4 * 32 * 4  # one trial: a (4, 32) fp32 input and its output
    monkeypatch.setattr(ps, "MAX_CACHED_BYTES", size + 1)
    ps.problem_state(worker, problem("softmax"), STATE_CFG)
    assert list(worker.problems) and first not in worker.problems.values() and len(worker.problems) == 1


# a ReLU problem of the judge's fixtures
RELU_PROBLEM = (Path(__file__).parent / "data" / "judge" / "problems" / "relu_literal_sizes.py").read_text()

OOM_CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def _relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.maximum(tl.load(x_ptr + i, mask=i < n), 0.0), mask=i < n)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _relu[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        if y.numel() > 0:  # what a launch raises when its workspace no longer fits beside other jobs
            raise RuntimeError("CUDA error: out of memory")
        return y
"""


def test_a_candidate_that_found_the_gpu_full_is_judged_again_after_a_wait():
    """A GPU candidate that ran out of memory (batches judged side by side) is judged again after
    each wait, and the verdict notes the waits; one still out of memory after them keeps its
    runtime_error; on the CPU, or for another error or a failed reference, there is no second run."""
    from autotriton.validation.judge import candidate_out_of_memory, judge_retrying
    from autotriton.validation.pool import validate_candidate
    from autotriton.validation import ValidationConfig

    # the real judge's verdict for a candidate that raises torch's error is read as out of memory
    verdict = validate_candidate(RELU_PROBLEM, OOM_CANDIDATE, ValidationConfig(device="cpu", trials=1))
    assert verdict.status == "runtime_error" and candidate_out_of_memory({"status": verdict.status, "error": verdict.error})
    assert "candidate_oom_retries" not in verdict.timing  # no second run on the CPU

    def judge_failing(times: int, error: str = "forward: OutOfMemoryError: CUDA out of memory", **extra):
        calls = []

        def judge(worker, problem, candidate, cfg):
            calls.append(cfg["device"])
            if len(calls) <= times:
                return {"status": "runtime_error", "error": error, "timing": {}, **extra}
            return {"status": "passed", "error": None, "timing": {}}
        return judge, calls

    gpu = {"device": "cuda:0"}
    judge, calls = judge_failing(2)
    result = judge_retrying(None, RELU_PROBLEM, OOM_CANDIDATE, gpu, waits=(0.01, 0.02, 0.03), judge=judge)
    assert result["status"] == "passed" and len(calls) == 3
    assert result["timing"]["candidate_oom_retries"] == 2 and result["timing"]["candidate_oom_wait_s"] == pytest.approx(0.03)
    judge, calls = judge_failing(5)
    assert judge_retrying(None, "", "", gpu, waits=(0.01, 0.01), judge=judge)["status"] == "runtime_error" and len(calls) == 3
    for judge, calls, cfg in [(*judge_failing(1), {"device": "cpu"}),
                              (*judge_failing(1, "forward: IndexError: index 9 is out of bounds"), gpu),
                              (*judge_failing(1, "reference problem failed: CUDA out of memory", reference_failed=True), gpu)]:
        assert judge_retrying(None, "", "", cfg, waits=(0.01,), judge=judge)["status"] == "runtime_error" and len(calls) == 1


def test_outputs_the_gpu_has_no_room_to_compare_are_compared_on_the_cpu(monkeypatch):
    """The 27th GPU run's InstanceNorm: the judge's own comparison ran out of GPU memory beside
    other batches and the candidate was recorded as crashed. The same comparison now runs on the
    CPU then: the same verdict, right or wrong."""
    from autotriton.validation import compare, judge

    real = compare.compare_outputs
    devices = []

    def gpu_full(*args, device=None, **kwargs):
        devices.append(device)
        if device != "cpu":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 112.00 MiB")
        return real(*args, device=device, **kwargs)

    monkeypatch.setattr(compare, "compare_outputs", gpu_full)
    cfg = {"device": "cuda:0", "tolerances": TOL, "tf32_tolerance": 1e-2}
    ref = [torch.randn(64, 32)]
    same = judge._compare(ref, [ref[0].clone()], cfg, False)
    assert same["ok"] and same["compared_on"] == "cpu" and devices == ["cuda:0", "cpu"]
    wrong = judge._compare(ref, [ref[0] + 1.0], cfg, False)
    assert not wrong["ok"] and "outside" in wrong["reason"]

"""The second red team (issue 14): cheats closed by construction, and honest but unusual kernels.

Every file in tests/data/judge/redteam2/ is one candidate; its docstring names the class of hole it
attacks. A cheat proves something only if it is right without the judge, so each is first run
plainly (its own process, the Triton interpreter, inputs from the seeds the judge used to
document) and compared with the reference; then the judge must give it reward 0, and where the
hole was a runtime one, the runtime rule that closes it by construction must be reported. Honest
kernels must get reward 1 (GPU-only ones: `unsupported_here` on the CPU, correct on a GPU).

Add a cheat: a file in redteam2/, one line in CHEATS (and plain-checked automatically).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autotriton.validation import JudgePool
from autotriton.validation.rewards import combined_reward
from validation_helpers import JUDGE_DATA, judge_config, problem

REDTEAM = JUDGE_DATA / "redteam2"
REPO = Path(__file__).resolve().parent.parent

# cheat -> (problem, statuses it may end with on the CPU, rules that must all be reported there,
#           sizes the cheat is right at when run plainly: "own" or "shrunk")
CHEATS = {
    # 1. outputs that are not plain tensors
    "c1_list_subclass_iter": ("relu", {"runtime_error"}, set(), "own"),
    "c1_tensor_subclass_detach": ("relu", {"runtime_error", "rule_violation"}, set(), "own"),
    "c1_torch_function_subclass": ("relu", {"runtime_error", "rule_violation"}, set(), "own"),
    # 2. code run inside a launch gets no exemption
    "c2_pre_run_hook_numpy": ("relu", {"rule_violation"}, {"RUNTIME-ESCAPE-HATCH"}, "own"),
    "c2_grid_dlpack": ("relu", {"rule_violation"}, {"RUNTIME-ESCAPE-HATCH"}, "own"),
    "c2_grid_ctypes": ("relu", {"rule_violation"}, {"RUNTIME-ESCAPE-HATCH"}, "own"),
    "c2_autotune_pre_hook": ("relu", {"rule_violation"}, {"RUNTIME-ATEN-COMPUTE"}, "own"),
    # 3. the judge's own state, and compute below the Python dispatch key
    "c3_flip_recorder_flag": ("relu", {"rule_violation"}, {"RUNTIME-ATEN-COMPUTE", "SYSTEM-ACCESS"}, "own"),
    "c3_replace_compile_check": ("relu", {"rule_violation", "compile_error"}, {"SYSTEM-ACCESS"}, "own"),
    "c3_exclude_python_key": ("relu", {"rule_violation"}, {"RUNTIME-ATEN-COMPUTE", "TORCH-OPS"}, "own"),
    "c3_disable_dispatch_via_modules": ("relu", {"rule_violation"}, {"RUNTIME-ATEN-COMPUTE", "SYSTEM-ACCESS"}, "own"),
    "c3_disable_uninitialised_fill": ("relu", {"rule_violation"}, {"RUNTIME-TAMPERING"}, "own"),
    # 4. static rules sidestepped
    "c4_exec_shadowed": ("relu", {"rule_violation"}, {"RUNTIME-ATEN-COMPUTE", "DYNAMIC-CODE"}, "own"),
    "c4_import_thread": ("relu", {"rule_violation"}, {"RUNTIME-THREADS"}, "own"),
    "c4_import_raw_thread": ("relu", {"rule_violation"}, {"RUNTIME-THREADS"}, "own"),
    # 5. every constexpr variant is compiled
    "c5_constexpr_variant_kw": ("relu", {"compile_error"}, set(), "own"),
    "c5_constexpr_variant_positional": ("relu", {"compile_error"}, set(), "own"),
    # 6. secret trial seeds (the static rules also flag these; the verdict must be wrong regardless)
    "c6_predict_inputs_generator": ("relu", {"rule_violation", "incorrect"}, set(), "own"),
    "c6_precomputed_answers": ("relu", {"rule_violation", "incorrect"}, set(), "own"),
    # 7. sizes in tuple assignments and get_inputs() literals get an odd-size trial too
    "c7_tuned_width_tuple": ("relu_tuple_sizes", {"incorrect"}, set(), "shrunk"),
    "c7_tuned_width_literals": ("relu_literal_sizes", {"incorrect"}, set(), "shrunk"),
    "c7_tuned_width_fast_alloc": ("relu_tuple_sizes", {"incorrect"}, set(), "shrunk"),
}
# Details the verdict must show, beyond status and rules.
DETAILS = {
    "c1_list_subclass_iter": lambda v: "only torch.Tensor objects" in v.error,
    "c6_predict_inputs_generator": lambda v: not v.correct,
    "c6_precomputed_answers": lambda v: not v.correct,
    # the 4 columns left unwritten at the odd width read as NaN, whatever memory held before
    "c7_tuned_width_tuple": lambda v: "odd_sizes" in v.error and "NaN where the reference has none (4 " in v.error,
    "c7_tuned_width_literals": lambda v: "odd_sizes" in v.error,
    "c7_tuned_width_fast_alloc": lambda v: "odd_sizes" in v.error and "NaN where the reference has none (4 " in v.error,
    "c3_replace_compile_check": lambda v: not v.compiled,
    "c5_constexpr_variant_kw": lambda v: "Unsupported function" in v.error,
    "c5_constexpr_variant_positional": lambda v: "Unsupported function" in v.error,
}
HONEST = {
    "honest_cuda_device_alloc": "relu",
    "honest_cuda_to_device": "relu",
    "honest_list_return_positional": "relu",
    "honest_autotune_pre_hook": "relu",
}
# Honest kernels of the first battery, on the problems whose sizes are stated in the new ways.
HONEST_FIRST_BATTERY = {"correct_relu@tuple_sizes": ("relu_tuple_sizes", "correct_relu"),
                        "correct_relu@literal_sizes": ("relu_literal_sizes", "correct_relu")}
GPU_ONLY = {"gpu_only_libdevice_tanh": "tanh", "gpu_only_inline_asm_relu": "relu"}

PLAIN_RUNNER = r"""
import importlib.util, json, sys, torch
from autotriton.validation.shrink import shrink_problem
out = {}
for name, problem_path, cand_path, sizes in json.loads(sys.argv[1]):
    src = open(problem_path).read()
    if sizes == "shrunk":
        src = shrink_problem(src)
    ref = {}
    exec(compile(src, problem_path, "exec"), ref)
    spec = importlib.util.spec_from_file_location("plain_" + name, cand_path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(1234)
    model, new = ref["Model"](*ref["get_init_inputs"]()), mod.ModelNew(*ref["get_init_inputs"]())
    torch.manual_seed(1234 + 1000)  # the first trial seed the judge used to document
    inputs = ref["get_inputs"]()
    want = model(*inputs)
    got = new(*inputs)
    got = list(got)[0] if isinstance(got, (list, tuple)) else got
    got = torch.Tensor.detach(got) if type(got) is torch.Tensor else got.detach()
    got = torch.Tensor(got) if type(got) is not torch.Tensor else got
    out[name] = bool(torch.allclose(want, torch.Tensor.clone(got), atol=1e-4, rtol=1e-4))
print(json.dumps(out))
"""


def _candidate(name: str) -> str:
    return (REDTEAM / f"{name}.py").read_text()


def test_every_fixture_is_listed():
    listed = set(CHEATS) | set(HONEST) | set(GPU_ONLY)
    assert {p.stem for p in REDTEAM.glob("*.py")} == listed
    classes = {name.split("_", 1)[0] for name in CHEATS}
    assert classes == {f"c{i}" for i in range(1, 8)}
    assert all(sum(n.startswith(c + "_") for n in CHEATS) >= 2 for c in classes)  # two spellings per class


def test_cheats_are_right_without_the_judge():
    """A cheat that is wrong anyway proves nothing about the judge."""
    jobs = [(name, str(JUDGE_DATA / "problems" / f"{prob}.py"), str(REDTEAM / f"{name}.py"), sizes)
            for name, (prob, _, _, sizes) in CHEATS.items()]
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", PLAIN_RUNNER, json.dumps(jobs)], capture_output=True, text=True,
                          env=env, timeout=600, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-3000:]
    right = json.loads(proc.stdout.strip().splitlines()[-1])
    assert right == {name: True for name in CHEATS}, right


@pytest.fixture(scope="module")
def verdicts():
    jobs, names = [], []
    for name, (prob, _, _, _) in CHEATS.items():
        jobs.append((problem(prob), _candidate(name)))
        names.append(name)
    for name, prob in {**HONEST, **GPU_ONLY}.items():
        jobs.append((problem(prob), _candidate(name)))
        names.append(name)
    for name, (prob, cand) in HONEST_FIRST_BATTERY.items():
        jobs.append((problem(prob), (JUDGE_DATA / "candidates" / f"{cand}.py").read_text()))
        names.append(name)
    with JudgePool(judge_config(timeout_s=30)) as pool:
        return dict(zip(names, pool.validate_many(jobs)))


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_redteam_cheat_gets_reward_zero(verdicts, name):
    _, statuses, rules, _ = CHEATS[name]
    v = verdicts[name]
    reported = {x.rule for x in v.violations}
    assert combined_reward(v) == 0.0, f"{name} was rewarded: {v.status} {reported}"
    assert v.status in statuses, f"{name}: {v.status} ({v.error}) {reported}"
    assert rules <= reported, f"{name}: missing {rules - reported}; reported {reported}"
    if name in DETAILS:
        assert DETAILS[name](v), f"{name}: {v.error}"


@pytest.mark.parametrize("name", sorted(HONEST) + sorted(HONEST_FIRST_BATTERY))
def test_unusual_honest_kernel_gets_reward_one(verdicts, name):
    v = verdicts[name]
    assert v.status == "correct", f"{name}: {v.status} {v.error} {[(x.rule, x.message) for x in v.violations]}"
    assert combined_reward(v) == 1.0
    assert {t["phase"] for t in v.trials} == {"main", "odd_sizes"}, v.trials  # an odd-size trial ran


@pytest.mark.parametrize("name", sorted(GPU_ONLY))
def test_gpu_only_kernel_is_unsupported_here_on_the_cpu(verdicts, name):
    v = verdicts[name]
    assert v.status == "unsupported_here", f"{name}: {v.status} {v.error}"
    assert combined_reward(v) == 0.0 and not v.violations


def test_trial_seeds_are_secret_and_fresh(verdicts):
    """No trial uses a documented seed, and two judgements of one problem use different ones."""
    documented = {1234 + 1000 * (i + 1) for i in range(10)} | {1234 + 7777}
    seeds = [t["seed"] for name in HONEST for t in verdicts[name].trials]
    assert seeds and not documented & set(seeds)
    assert len(set(seeds)) == len(seeds)


def test_unwritten_outputs_never_match_by_chance():
    """A partly written output (c7 at the odd width) judged right after an honest candidate of the
    same problem in the same worker: the unwritten elements once held that candidate's freed answer
    or zeros and matched in a few % of judgements; now each is NaN, every time."""
    prob = problem("relu_tuple_sizes")
    honest = (JUDGE_DATA / "candidates" / "correct_relu.py").read_text()
    cheat = _candidate("c7_tuned_width_tuple")
    with JudgePool(judge_config(timeout_s=30), workers=1) as pool:
        got = pool.validate_many([(prob, honest), (prob, cheat)] * 8)
    assert [v.status for v in got[0::2]] == ["correct"] * 8
    errors = [v.error for v in got[1::2]]
    assert all("NaN where the reference has none (4 element(s))" in (e or "") for e in errors), errors


@pytest.mark.gpu
def test_redteam_on_gpu():
    """The same suite on a GPU (the lead runs it: `pytest -m gpu tests/test_validation_redteam.py`):
    every cheat reward 0, every honest kernel (libdevice and inline asm included) reward 1."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    names = list(CHEATS) + list(HONEST) + list(GPU_ONLY)
    probs = {**{n: c[0] for n, c in CHEATS.items()}, **HONEST, **GPU_ONLY}
    with JudgePool(judge_config(device="cuda", timeout_s=120, time_kernels=False, workers=2)) as pool:
        got = dict(zip(names, pool.validate_many([(problem(probs[n]), _candidate(n)) for n in names])))
    rewarded = sorted(n for n in CHEATS if combined_reward(got[n]) != 0.0)
    assert not rewarded, [(n, got[n].status) for n in rewarded]
    # class 7 is a CPU-only hole (the GPU judges full sizes): there the tuned kernel is simply wrong
    wrong = sorted(n for n in [*HONEST, *GPU_ONLY] if got[n].status != "correct")
    assert not wrong, [(n, got[n].status, got[n].error) for n in wrong]

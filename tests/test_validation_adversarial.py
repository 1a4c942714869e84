"""One test per known cheat: each gets reward 0, with the status and the rule that say why.

Every candidate lives in tests/data/judge/candidates/. Where a cheat is also visible at run time,
the test requires the RUNTIME-* rule too: the runtime anti-cheat must catch it whatever the source
looked like (the static rules are only the first line). One warm JudgePool serves the module.
"""

from __future__ import annotations

import pytest

from autotriton.validation import JudgePool
from autotriton.validation.rewards import combined_reward, exec_reward, rule_reward
from autotriton.validation.pool import pool_processes
from validation_helpers import CORRECT, candidate, judge_config, problem

# cheat -> (problem, expected status, rules that must all be reported)
CHEATS = {
    "cheat_matmul_fallback": ("matmul", "rule_violation", {"RUNTIME-ATEN-COMPUTE", "TORCH-COMPUTE"}),
    "cheat_conv_fallback": ("conv_relu", "rule_violation", {"RUNTIME-ATEN-COMPUTE", "TORCH-COMPUTE"}),
    "cheat_never_launched": ("relu", "rule_violation", {"RUNTIME-NO-TRITON-LAUNCH", "RUNTIME-ATEN-COMPUTE", "TRITON-NOT-LAUNCHED"}),
    "cheat_try_except": ("relu", "rule_violation", {"RUNTIME-NO-TRITON-LAUNCH", "RUNTIME-ATEN-COMPUTE", "TRY-EXCEPT"}),
    "cheat_cached_results": ("relu", "rule_violation", {"RUNTIME-NO-TRITON-LAUNCH"}),
    "cheat_input_mutation": ("relu", "rule_violation", {"RUNTIME-INPUT-MUTATION"}),
    "cheat_thread": ("relu", "rule_violation", {"RUNTIME-THREADS", "CONCURRENCY"}),
    "cheat_side_stream": ("relu", "rule_violation", {"CONCURRENCY"}),
    "cheat_zero_output": ("tiny_scale", "incorrect", set()),
    "cheat_torch_compile": ("relu", "rule_violation", {"RUNTIME-ATEN-COMPUTE", "TORCH-COMPILE"}),
    "cheat_extern_kernels": ("matmul", "rule_violation", {"RUNTIME-ATEN-COMPUTE", "TORCH-COMPILE"}),
    "cheat_aten_ops": ("relu", "rule_violation", {"RUNTIME-ATEN-COMPUTE", "TORCH-OPS"}),
    "cheat_monkeypatch_compare": ("relu", "rule_violation", {"MONKEYPATCH"}),
    # The judge's modules leave sys.modules before candidate code runs (issue 14): the import gets a
    # fresh copy whose patching changes nothing, and the backend-key guard stops the PyTorch compute.
    "cheat_patch_judge": ("relu", "rule_violation", {"RUNTIME-ATEN-COMPUTE", "MONKEYPATCH"}),
    "cheat_import_reference": ("relu", "rule_violation", {"REFERENCE-IMPORT"}),
    "cheat_read_env_files": ("relu", "rule_violation", {"SYSTEM-ACCESS"}),
    "cheat_network": ("relu", "rule_violation", {"SYSTEM-ACCESS"}),
    "cheat_os_exit": ("relu", "crashed", set()),
    "cheat_sys_exit": ("relu", "rule_violation", {"SYSTEM-ACCESS"}),
    "cheat_segfault": ("relu", "crashed", set()),
    "cheat_infinite_loop": ("relu", "timeout", set()),
    "cheat_hang_after_launch": ("relu", "timeout", set()),
    "crash_out_of_bounds_kernel": ("relu", "crashed", set()),
    "cheat_huge_memory": ("relu", "runtime_error", set()),
    "cheat_nan_output": ("relu", "incorrect", set()),
    "cheat_wrong_shape": ("relu", "incorrect", set()),
    "cheat_wrong_dtype": ("relu", "incorrect", set()),
    "cheat_fork_bomb": ("relu", "rule_violation", {"RUNTIME-PROCESSES"}),
    "cheat_huge_output": ("relu", "runtime_error", set()),
    "cheat_numpy_escape": ("relu", "rule_violation", {"RUNTIME-ESCAPE-HATCH"}),
    "cheat_dispatch_escape": ("relu", "rule_violation", {"RUNTIME-ESCAPE-HATCH"}),
    "cheat_grid_compute": ("relu", "rule_violation", {"RUNTIME-ATEN-COMPUTE"}),
}

# Correct kernels checked on the interpreter only (not yet run on a GPU).
CORRECT_CPU_ONLY = {"autotuned_softmax_with_jit_helper": ("softmax", "correct_softmax_autotune")}

# What the verdict must also say, beyond status and rules.
DETAILS = {
    "cheat_cached_results": lambda v: not v.correct,  # the replayed output is wrong for new values
    "cheat_zero_output": lambda v: "constant" in v.error,
    "cheat_monkeypatch_compare": lambda v: not v.correct,  # patching in its own process changes nothing here
    "cheat_import_reference": lambda v: not v.correct,  # the reference is nowhere in its process
    "cheat_os_exit": lambda v: "exited with code 0" in v.error,
    "cheat_segfault": lambda v: "SIGSEGV" in v.error,
    "crash_out_of_bounds_kernel": lambda v: "SIGSEGV" in v.error,
    # ... and the verdict says where it was stuck (the candidate's stack, dumped before the kill)
    "cheat_infinite_loop": lambda v: "process group was killed" in v.error and "in forward" in v.error,
    "cheat_huge_memory": lambda v: "allocate" in v.error,
    "cheat_nan_output": lambda v: "NaN" in v.error,
    "cheat_wrong_shape": lambda v: "shape" in v.error,
    "cheat_wrong_dtype": lambda v: "dtype" in v.error,
    "cheat_huge_output": lambda v: "File too large" in v.error,
}


@pytest.fixture(scope="module")
def verdicts():
    """Judge every cheat and every correct kernel once, through one warm pool."""
    jobs, names = [], []
    for name, (prob, _, _) in CHEATS.items():
        jobs.append((problem(prob), candidate(name)))
        names.append(name)
    for kind, (prob, cand) in {**CORRECT, **CORRECT_CPU_ONLY}.items():
        jobs.append((problem(prob), candidate(cand)))
        names.append(kind)
    with JudgePool(judge_config()) as pool:
        out = dict(zip(names, pool.validate_many(jobs)))
        out["_processes_during"] = pool.processes()
        out["_roles"] = pool.roles()
        out["_pool_id"] = pool.pool_id
    return out


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_cheat_gets_reward_zero(verdicts, name):
    _, status, rules = CHEATS[name]
    v = verdicts[name]
    reported = {x.rule for x in v.violations}
    assert combined_reward(v) == 0.0, f"{name} was rewarded: {v.status} {reported}"
    assert v.status == status, f"{name}: {v.status} ({v.error}) {reported}"
    assert rules <= reported, f"{name}: missing {rules - reported}; reported {reported}"
    if name in DETAILS:
        assert DETAILS[name](v), f"{name}: {v.error}"
    if v.violations:
        assert rule_reward(v) == 0.0


def test_rule_ok_is_no_violation_found_so_timeouts_and_crashes_are_not_rule_failures(verdicts):
    """rule_ok (and so rule_reward and the evaluation's rule_pass) says only whether a rule was broken:
    a hang or a crash is its own status and fails `correct`, never the rules by itself."""
    judged = {name: v for name, v in verdicts.items() if not name.startswith("_")}
    for name, v in judged.items():
        assert v.rule_ok == (not v.violations), (name, v.status, [x.rule for x in v.violations])
    for name, status in (("cheat_hang_after_launch", "timeout"), ("crash_out_of_bounds_kernel", "crashed")):
        v = judged[name]
        assert v.status == status and not v.violations, (name, v.status, [x.rule for x in v.violations])
        assert (exec_reward(v), rule_reward(v), combined_reward(v)) == (0.0, 1.0, 0.0), name
    # The same hang or crash in a candidate that also breaks a rule: the rule, not the end, fails rule_ok.
    hang, crash = judged["cheat_infinite_loop"], judged["cheat_segfault"]
    assert hang.status == "timeout" and {x.rule for x in hang.violations} == {"TRITON-NOT-LAUNCHED"} and not hang.rule_ok
    assert crash.status == "crashed" and "INTROSPECTION" in {x.rule for x in crash.violations} and not crash.rule_ok


@pytest.mark.parametrize("kind", sorted(CORRECT) + sorted(CORRECT_CPU_ONLY))
def test_correct_kernel_gets_reward_one(verdicts, kind):
    v = verdicts[kind]
    assert v.status == "correct", f"{kind}: {v.status} {v.error} {[(x.rule, x.message) for x in v.violations]}"
    assert (exec_reward(v), rule_reward(v), combined_reward(v)) == (1.0, 1.0, 1.0)
    assert v.triton_kernels_launched and v.compiled
    assert v.compile_report.get("ok") is True, v.compile_report  # really compiled for sm_90
    phases = {t["phase"] for t in v.trials}
    assert phases == {"main", "odd_sizes"}, v.trials  # the odd-size trial ran too
    assert len(v.trials) == 3 + 1 and all(t["ok"] for t in v.trials)
    assert v.speedup is None  # no GPU: no timing


def test_no_candidate_process_outlives_its_verdict(verdicts):
    """Fork bombs, hangs and crashes leave nothing behind; the pool itself stopped cleanly."""
    roles = verdicts["_roles"]
    # 2 workers, their 2 templates and (at most) a spare each; nothing else: no stragglers.
    assert sorted(roles.values()).count("worker") == 2 and sorted(roles.values()).count("template") == 2
    assert set(verdicts["_processes_during"]) <= set(roles), (verdicts["_processes_during"], roles)
    assert pool_processes(verdicts["_pool_id"]) == []

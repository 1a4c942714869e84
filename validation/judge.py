"""The worker's side of one judgement: reference, candidate process, comparison, runtime rules.

Runs inside a judge worker (validation/worker.py). Order matters and is the point:
1. the candidate process is forked from the clean template first (it never sees what follows);
2. the worker builds init inputs, reference weights and trial inputs from the problem and
   sends them, with the candidate source, to the candidate process;
3. only then are the reference outputs computed (or taken from this worker's cache), while the
   candidate runs;
4. the candidate's raw outputs and logs come back (no pickle) and are compared here.

Returns a plain dict (the caller turns it into a `Verdict`, adding the static rules).
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

from autotriton.validation import candidate_runner as cr
from autotriton.validation import compare, wire
from autotriton.validation.problem_state import (Phase, ProblemState, after_memory_waits, mentions_out_of_memory,
                                                 problem_state)
from autotriton.validation.timing import full_size_check
from autotriton.validation.trial_budget import _tensor_bytes, trial_bytes  # noqa: F401 (judge.trial_bytes)


def _violation(rule: str, message: str) -> dict[str, Any]:
    return {"rule": rule, "message": message, "line": None}


def _compiled(report: dict[str, Any]) -> tuple[bool | None, str | None]:
    """(all kernels compiled?, first error) from compile_launched's report; None when not checked."""
    if not report or "skipped" in report:
        return None, None
    if "error" in report and isinstance(report["error"], dict):
        return False, f"compile check failed: {report['error'].get('message')}"
    kernels = report.get("kernels", report)
    ok, first = True, None
    if isinstance(kernels, dict):
        items = kernels.items()
    else:
        items = ((k.get("kernel", k.get("name", "?")), k) for k in kernels if isinstance(k, dict))
    for name, entry in items:
        if not isinstance(entry, dict) or "ok" not in entry:
            continue
        if not entry["ok"]:
            ok = False
            first = first or f"kernel {name}: {entry.get('error') or entry.get('reason') or 'did not compile'}"
    if "ok" in report and isinstance(report["ok"], bool) and not report["ok"]:
        ok = False
        first = first or str(report.get("error") or "compile check failed")
    for rec in report.get("_record_errors", []):
        ok = False
        first = first or f"kernel {rec.get('kernel')}: could not describe the launch for the compile check: {rec.get('record_error')}"
    return ok, first


def _collapse(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One violation per rule: its first message, and in how many trials it happened."""
    first: dict[str, dict[str, Any]] = {}
    count: dict[str, int] = {}
    for v in violations:
        first.setdefault(v["rule"], dict(v))
        count[v["rule"]] = count.get(v["rule"], 0) + 1
    out = []
    for rule, v in first.items():
        if count[rule] > 1:
            v["message"] += f" [in {count[rule]} trials]"
        out.append(v)
    return out


def timing_plan(state: ProblemState, cfg: dict[str, Any]) -> dict[str, Any] | None:
    """The candidate's timing job (GPU; the CPU with validation.time_on_cpu). When correctness is
    judged at sizes shrunk for memory, timing still runs at the problem's own sizes: the candidate
    process builds a second ModelNew from the reference's get_init_inputs() and its input sets
    from get_inputs() under the trial seeds, on the GPU (validation/timing.py, full_size_setup);
    those never come back."""
    if not cfg["time_kernels"] or (cfg["device"] == "cpu" and not cfg.get("time_on_cpu")):
        return None
    plan = dict(cfg["timing_job"])
    # (on the CPU, timed only with time_on_cpu: at its own sizes only when shrunk for memory, as on a
    # GPU, not for the interpreter's speed)
    if state.source != state.original_source and (cfg["device"] != "cpu" or (cfg.get("time_on_cpu") and not cfg["shrink_for_cpu"])):
        # one timed call gets a check set drawn from a secret seed; projections of its answer
        # (over elements the secret projection seed draws) are compared with the reference's
        check_seed, projection_seed = secret_seeds(2)
        plan["full_size"] = {"source": state.original_source, "init_seed": cfg["seed"],
                             "seeds": [cfg["seed"] + 1000 * (i + 1) for i in range(plan["input_sets"])],
                             "check_seed": check_seed, "projection_seed": projection_seed}
        plan["check_at"] = secrets.randbelow(plan["runs"])
    else:  # timed on the trials' inputs: one timed call on a trial's exact values, compared with the reference
        # never trial 0 (the first timed call's input set): a cache that kept that call's answer
        # would pass a check on its own values where the scaling cannot show (x / x.norm())
        # (only trials of trial 0's layout: the timed tensors hold one shape)
        from autotriton.validation.timing import same_layout

        trials = [t["inputs"] for t in state.main.trials]
        fits = [k for k in range(1, len(trials)) if same_layout(trials[k], trials[0])] or [0]
        plan["check_trial"] = fits[secrets.randbelow(len(fits))]
        plan["check_at"] = secrets.randbelow(plan["runs"])  # which timed call: no call count tells it apart
    return plan


def secret_seeds(n: int) -> list[int]:
    """Trial seeds for one judgement, from the OS's entropy in the worker: documented defaults
    (base + 1000*(i+1)) let a candidate's __init__ regenerate the inputs and precompute answers."""
    return [int.from_bytes(os.urandom(6), "little") for _ in range(n)]


# Features the Triton interpreter lacks: a candidate that fails on the CPU while using them cannot
# be judged there (status unsupported_here), which is not the same as wrong.
GPU_ONLY_FEATURES = ("libdevice", "inline_asm_elementwise")


def gpu_only_features(candidate_source: str) -> list[str]:
    return [f for f in GPU_ONLY_FEATURES if f in candidate_source]


def _serve_inputs(payload: bytes | bytearray, sock, phases: list[Phase], served: set[int]) -> bool:
    """Answer a candidate's request for a phase's trial inputs (b"INPUTS <i>"); False when the
    payload is not such a request (then it is the candidate's answer). Each phase is served once."""
    if not bytes(payload[:7]) == b"INPUTS ":
        return False
    try:
        index = int(bytes(payload[7:20]).decode())
    except ValueError:
        index = -1
    if 0 <= index < len(phases) and index not in served:
        served.add(index)
        wire.send_job(sock, phases[index].trial_inputs())
    else:
        wire.send_job(sock, None)  # run_job then fails that phase: a runtime error, not a second helping
    return True


def _answer_file(job: dict[str, Any], phases: list[Phase], cfg: dict[str, Any]) -> int | None:
    """The answer file (wire.answer_file) for a problem whose outputs over all trials (and the timed
    check call, when it checks on a trial's inputs) would pass the frame limit `max_output_mb`: sized
    to the reference's outputs plus alignment and header room, so a candidate can never send more
    than the problem's own answer. None otherwise."""
    if not cfg.get("answer_shm", True):
        return None
    outs = [o for p in phases for trial in p.reference_outputs() for o in trial]
    check = (job.get("timing") or {}).get("check_trial")
    if isinstance(check, int) and 0 <= check < len(phases[0].reference_outputs()):
        # timing on the trials' inputs: the timed check call's raw answer comes back with the trials'
        # (timing_plan), one more main-trial answer
        outs += list(phases[0].reference_outputs()[check])
    expected = sum(_tensor_bytes(o) for o in outs)
    if expected <= cfg["max_output_mb"] * 2**20 * 0.9:
        return None
    size = expected + 64 * len(outs) + (1 << 20)  # alignment of every tensor + the JSON header (as recv_frame allows)
    job[wire.ANSWER_SHM_KEY] = size
    return wire.answer_file(size)


# Batches judged side by side share the GPU (distillation/gpu_memory.py reserves per problem, but
# a candidate's allocator slack is not in its books): a candidate that found the GPU full is judged
# again, with fresh secret inputs, after each of these waits. A candidate that raises the error
# itself gains nothing but these re-runs: its verdict stands after the last.
CANDIDATE_OOM_WAITS_S = (5.0, 15.0)


def candidate_out_of_memory(result: dict[str, Any]) -> bool:
    """Did this judgement fail because the candidate's run found the GPU out of memory (torch's
    OutOfMemoryError, or a kernel launch's CUDA "out of memory"), not for its own fault?"""
    return result.get("status") == "runtime_error" and not result.get("reference_failed") \
        and mentions_out_of_memory(result.get("error") or "")


def judge_retrying(worker, problem_source: str, candidate_source: str, cfg: dict[str, Any],
                   waits: tuple[float, ...] = CANDIDATE_OOM_WAITS_S, judge=None) -> dict[str, Any]:
    """judge_one, again after each wait while a GPU candidate runs out of memory; the verdict
    notes how often and how long it waited (timing.candidate_oom_retries, candidate_oom_wait_s)."""
    judge = judge or judge_one
    result, waited = after_memory_waits(lambda: judge(worker, problem_source, candidate_source, cfg),
                                        lambda outcome: cfg["device"] != "cpu" and isinstance(outcome, dict)
                                        and candidate_out_of_memory(outcome), waits)
    if waited:
        result["timing"].update(candidate_oom_retries=len(waited), candidate_oom_wait_s=sum(waited))
    return result


def judge_one(worker, problem_source: str, candidate_source: str, cfg: dict[str, Any]) -> dict[str, Any]:
    start = time.monotonic()
    device = cfg["device"]
    result: dict[str, Any] = {"status": None, "violations": [], "trials": [], "triton_kernels_launched": [], "aten_ops": [],
                              "error": None, "max_abs_err": None, "compile_report": {}, "compiled": False, "timing": {},
                              "device": device}
    # Per-phase wall times of this judgement (validation/README.md, "Where a judgement's time goes").
    clock = {"at": start}

    def lap(name: str) -> None:
        now = time.monotonic()
        result["timing"][f"phase_{name}_s"] = result["timing"].get(f"phase_{name}_s", 0.0) + now - clock["at"]
        clock["at"] = now

    # 1. fork the candidate first: it must not inherit anything below.
    spawned = worker.spawn("candidate", cfg)
    pid, sock, workdir = spawned.pid, spawned.sock, spawned.workdir
    lap("spawn")
    answer_fd: int | None = None
    try:
        try:
            state = problem_state(worker, problem_source, cfg)
        except BaseException as exc:  # noqa: BLE001
            result.update(status="runtime_error", error=f"reference problem failed: {exc}"[:2000], reference_failed=True)
            return result
        phases = state.phases()
        for phase in phases:  # this judgement's own secret inputs (the reference outputs follow them)
            phase.reseed(secret_seeds(len(phase.trials)))
        result["timing"].update({f"problem_{k}": v for k, v in state.notes.items()})
        job = {"source": candidate_source, "path": os.path.join(workdir, "candidate.py"), "device": device,
               "phases": [p.job() for p in phases],
               "compile_target": cfg["target"] if (cfg["compile_check"] and device == "cpu") else None,
               "timing": timing_plan(state, cfg),
               "watchdog_s": max(0.5, min(cfg["timeout_s"] - 2.0, cfg["timeout_s"] * 0.9))}
        answer_fd = _answer_file(job, phases, cfg)
        lap("problem")
        if job["timing"] is not None:
            # Before the job is sent: the reference is never timed while the candidate uses the GPU.
            from autotriton.validation.timing import reference_timing

            try:
                result["timing"]["reference"] = reference_timing(worker, state, cfg, job["timing"])
            except Exception as exc:  # noqa: BLE001 (no speedup then; correctness still judged)
                result["timing"]["reference_error"] = f"{type(exc).__name__}: {exc}"[:500]
            lap("reference_timing")
        deadline = time.monotonic() + cfg["timeout_s"]
        try:
            wire.send_job(sock, job)
            if answer_fd is not None:
                wire.send_fd(sock, answer_fd)
        except OSError:
            pass  # the candidate died before reading its job: the status below says how
        lap("send")
        # 3. reference outputs (cached per problem), while the candidate runs.
        refs = [p.reference_outputs() for p in phases]
        result["timing"]["phase_refs_s"] = time.monotonic() - clock["at"]  # part of phase_wait_s
        # 4. the candidate's answer (serving each phase's inputs when its ModelNew exists).
        try:
            served: set[int] = set()
            while True:
                payload = wire.recv_frame(sock, deadline=deadline, max_bytes=int(cfg["max_output_mb"] * 2**20) + (1 << 20))
                if not _serve_inputs(payload, sock, phases, served):
                    break
            lap("wait")
            header, tensors = wire.decode_tensors(payload)
            if answer_fd is not None and "answer_shm" in header:
                worker.finish(pid, sock, workdir)  # nothing may change the answer's bytes while they are compared
                header, tensors = wire.read_answer_file(answer_fd, int(header["answer_shm"]))
        except TimeoutError:
            tail = worker.output_tail(workdir, 6000)  # several threads' stacks
            result.update(status="timeout", error=f"the candidate did not finish within {cfg['timeout_s']:g} s; its process group was killed"
                          + (f"; where it was shortly before (its Python stacks and last output):\n{tail}" if tail else ""))
            return result
        except (EOFError, ConnectionError, OSError) as exc:
            how = worker.exit_status(pid)
            tail = worker.output_tail(workdir)
            result.update(status="crashed", error=f"the candidate process died without answering ({how or exc})"
                          + (f"; its last output:\n{tail}" if tail else ""))
            return result
        except wire.WireError as exc:
            result.update(status="crashed", error=f"the candidate process sent an unusable answer: {exc}")
            return result
        _assess(result, header, tensors, phases, refs, cfg, state, job["timing"])
        features = gpu_only_features(candidate_source) if device == "cpu" else []
        if result["status"] == "runtime_error" and features:
            result.update(status="unsupported_here", error=f"cannot be judged on the CPU: the candidate uses {', '.join(features)}, "
                          f"which the Triton interpreter lacks; judge it on a GPU. The interpreter's error: {result['error']}"[:3000])
        _candidate_phases(result["timing"], header, spawned.requested)
        lap("assess")
        return result
    finally:
        if "phase_wait_s" not in result["timing"] and "phase_send_s" in result["timing"]:
            lap("wait")  # no usable answer (timeout, crash): the wait ended here
        clock["at"] = time.monotonic()
        worker.finish(pid, sock, workdir)
        if answer_fd is not None:
            os.close(answer_fd)  # the tensors compared above keep their own mapping
        lap("finish")
        result["elapsed_s"] = time.monotonic() - start


def _candidate_phases(timing: dict[str, Any], header: dict[str, Any], spawned_at: float) -> None:
    """The candidate process's own figures, as `candidate_*` keys of Verdict.timing."""
    child = header.get("child_phases") or {}
    if isinstance(child.get("started_at"), (int, float)):
        timing["candidate_fork_s"] = max(0.0, child["started_at"] - spawned_at)  # spawn request -> child running
    for key in ("confine_s", "cuda_warm_s", "recv_job_s", "run_s", "compile_check_s"):
        if isinstance(child.get(key), (int, float)):
            timing[f"candidate_{key}"] = child[key]
    if child.get("cuda_warm_error"):
        timing["candidate_cuda_warm_error"] = child["cuda_warm_error"]
    measures = (header.get("sandbox") or {}).get("times") or {}
    for key in ("session_fds_s", "environment_s", "network_s", "rlimits_s", "privileges_s"):
        if isinstance(measures.get(key), (int, float)):
            timing[f"candidate_confine_{key}"] = measures[key]  # sandbox.confine, measure by measure
    trials = [tr.get("elapsed_s") for ph in header.get("phases", []) for tr in ph.get("trials", [])
              if isinstance(tr.get("elapsed_s"), (int, float))]
    if trials:
        timing["candidate_trials_s"] = sum(trials)
        timing["candidate_first_trial_s"] = trials[0]


def _size_parts(trials: list[dict[str, Any]], phases: list[Phase], compiled: bool | None) -> dict[str, Any]:
    """Correctness at the problem's own sizes (the main phase: KernelBench's definition) and, apart,
    at the odd sizes (None when no odd-size phase ran): each phase's every trial produced outputs
    that matched. Nothing counts when the kernels do not compile for the target."""
    def phase_ok(name: str) -> bool:
        expected = sum(len(p.trials) for p in phases if p.name == name)
        got = [t for t in trials if t.get("phase") == name]
        return compiled is not False and len(got) == expected > 0 and all(t.get("ok") for t in got)

    odd = any(p.name == "odd_sizes" for p in phases)
    return {"correct_own_sizes": phase_ok("main"), "odd_sizes_ok": phase_ok("odd_sizes") if odd else None}


def _compare(ref_outs: Any, outs: list[Any], cfg: dict[str, Any], tf32: bool, ref_paths: list[str] | None = None,
             got_paths: Any = None) -> dict[str, Any]:
    """A candidate's outputs against the reference's, with the judge's tolerances and under the
    same dict keys (trials and the check call among the timed ones alike). The candidate's process
    has ended and its answer is in this (trusted) process: compared on the judge's own device, or
    on the CPU when the GPU, shared with other batches, has no room for the slices (the same
    comparison, slower: a judge that ran out of memory must not cost the candidate its verdict)."""
    def on(device: str) -> dict[str, Any]:
        return compare.compare_outputs(ref_outs, outs, tolerances=cfg["tolerances"], tf32_dot=tf32,
                                       tf32_tolerance=cfg["tf32_tolerance"], ref_paths=ref_paths, got_paths=got_paths,
                                       device=device)  # slice by slice (compare.CHUNK_ELEMENTS)

    if cfg["device"] == "cpu":
        return on("cpu")
    try:
        return on(cfg["device"])
    except torch.OutOfMemoryError:
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        return {**on("cpu"), "compared_on": "cpu"}


def _timing_check(header, tensors, phases, refs, cfg, tf32, plan) -> dict[str, Any] | None:
    """The check call among the timed ones (timing.time_callable): its outputs against the reference's
    outputs of the same main trial. None when no check was asked for or timing did not run; a
    timing that asked for one and came back with times but without it fails."""
    timing = header.get("timing")
    full = (plan or {}).get("full_size") or {}
    if isinstance(timing, dict) and "sets" in timing and full.get("check_seed") is not None:
        return full_size_check(timing.get("check"), full, cfg, tf32)
    asked = (plan or {}).get("check_trial")
    if not isinstance(timing, dict) or "sets" not in timing or asked is None:
        return None
    check = timing.get("check")
    main = next((i for i, p in enumerate(phases) if p.name == "main"), None)
    if not isinstance(check, dict) or check.get("trial") != asked or main is None or main >= len(refs):
        return {"trial": asked, "ok": False, "reason": "timing came back without the check call on the asked trial"}
    try:
        outs = [tensors[i] for i in check.get("outputs", [])]
    except (IndexError, TypeError):
        return {"trial": asked, "ok": False, "reason": "the check call's outputs are missing"}
    cmp = _compare(refs[main][asked], outs, cfg, tf32, phases[main].output_paths[asked], check.get("output_paths"))
    return {"trial": asked, "ok": bool(cmp["ok"]), "reason": cmp["reason"], "max_abs_err": cmp["max_abs_err"]}


def _assess(result, header, tensors, phases, refs, cfg, state, plan=None) -> None:
    result["timing"]["sandbox"] = header.get("sandbox", {})
    if header.get("error"):
        err = header["error"]
        result.update(status="runtime_error", error=f"{err.get('stage')}: {err.get('type')}: {err.get('message')}\n{err.get('traceback', '')}"[-3000:])
        return
    violations_early: list[dict[str, Any]] = []
    if header.get("import_threads"):
        violations_early.append(_violation(cr.RULE_THREADS, f"Python threads left running by the candidate's import: {', '.join(map(str, header['import_threads']))[:200]}"))
    # TF32's looser fp32 tolerance (compare.py): on a GPU, for a trial in which a launch of the
    # candidate's ran a `tl.dot` in TF32, and only where the reference itself multiplies fp32 matrices
    tf32_allowed = cfg["device"] != "cpu" and any(getattr(ph, "fp32_matmuls", False) for ph in phases)
    tf32 = False
    violations: list[dict[str, Any]] = violations_early
    launched: set[str] = set()
    aten_bad: dict[str, int] = {}
    aten_all: set[str] = set()
    worst = 0.0
    runtime_error = None
    incorrect = None
    for phase, ref_outs, ph in zip(phases, refs, header.get("phases", [])):
        if ph.get("error"):
            runtime_error = runtime_error or f"{phase.name} {ph['error'].get('stage')}: {ph['error'].get('type')}: {ph['error'].get('message')}\n{ph['error'].get('traceback', '')}"
        if ph.get("init_threads"):
            violations.append(_violation(cr.RULE_THREADS, f"Python threads running after ModelNew.__init__: {', '.join(map(str, ph['init_threads']))[:200]}"))
        for k, tr in enumerate(ph.get("trials", [])[:len(phase.trials)]):
            tr["seed"] = phase.trials[k]["seed"]  # never sent to the candidate
            rec: dict[str, Any] = {"phase": phase.name, "seed": tr.get("seed"),
                                   "shapes": [list(x.shape) for x in tree_leaves(list(phase.trials[k]["inputs"]))
                                              if isinstance(x, torch.Tensor)]}
            result["trials"].append(rec)
            if "error" in tr:
                e = tr["error"]
                rec.update(ok=False, error=f"{e.get('type')}: {e.get('message')}")
                runtime_error = runtime_error or f"trial {len(result['trials'])} ({phase.name}, seed {tr.get('seed')}) {e.get('stage')}: {e.get('type')}: {e.get('message')}\n{e.get('traceback', '')}"
            errored = "error" in tr  # what it did before failing still counts (a blocked op raises in forward)
            own = [name.split(":", 1)[1] for name in tr.get("launches", []) if name.startswith(cr.CANDIDATE_MODULE + ":")]
            foreign = [name for name in tr.get("launches", []) if not name.startswith(cr.CANDIDATE_MODULE + ":")]
            launched.update(own)
            rec["kernels"] = own
            if not own and (not errored or tr.get("blocked_ops")):  # a failed launch (say, libdevice on the CPU) is not "none"
                violations.append(_violation(cr.RULE_NO_LAUNCH, f"no Triton kernel of the candidate ran during forward ({phase.name} trial, seed {tr.get('seed')})"))
            if foreign:
                violations.append(_violation(cr.RULE_FOREIGN, f"Triton kernels from outside the candidate ran during forward: {', '.join(sorted(foreign))}"))
            ops = dict(tr.get("aten_ops", {}))
            for op in tr.get("blocked_ops", []):  # stopped at the backend kernel (dispatch_guard), maybe unseen above
                ops[f"aten.{op}"] = max(int(ops.get(f"aten.{op}", 0)), 1)
            aten_all.update(ops)
            for op, n in ops.items():
                if op.split(".", 1)[-1].split(".")[0] not in cr.ALLOWED_ATEN_OPS:
                    aten_bad[op] = aten_bad.get(op, 0) + int(n)
            if tr.get("new_threads"):
                violations.append(_violation(cr.RULE_THREADS, f"forward started threads: {', '.join(map(str, tr['new_threads']))[:200]}"))
            if tr.get("forks"):
                violations.append(_violation(cr.RULE_PROCESSES, f"forward forked {tr['forks']} process(es)"))
            if tr.get("escapes"):
                violations.append(_violation(cr.RULE_ESCAPE, f"forward computed where the judge cannot watch: {', '.join(tr['escapes'])}"))
            if tr.get("tampered"):
                violations.append(_violation(cr.RULE_TAMPER, f"the judge's recorders or trial settings were changed: {', '.join(tr['tampered'])}"))
            if tr.get("stream_violation"):
                violations.append(_violation(cr.RULE_STREAM, str(tr["stream_violation"])))
            if errored:
                continue
            if tr.get("input_digest") != phase.trials[k]["digest"]:
                violations.append(_violation("RUNTIME-INPUT-MUTATION", f"forward modified its inputs ({phase.name} trial, seed {tr.get('seed')})"))
            try:
                outs = [tensors[i] for i in tr.get("outputs", [])]
            except (IndexError, TypeError):
                outs = []
            tf32_trial = tf32_allowed and any(name.startswith(cr.CANDIDATE_MODULE + ":") for name in tr.get("tf32_launches", []))
            tf32 = tf32 or tf32_trial
            cmp = _compare(ref_outs[k], outs, cfg, tf32_trial, phase.output_paths[k], tr.get("output_paths"))
            wrong_device = [d for d in tr.get("output_devices", []) if d != cfg["device"]]
            if cmp["ok"] and wrong_device:
                cmp = dict(cmp, ok=False, reason=f"outputs are on {', '.join(wrong_device)}, expected {cfg['device']}")
            rec.update(ok=cmp["ok"], max_abs_err=cmp["max_abs_err"], tolerance=cmp.get("tolerance"), reason=cmp["reason"],
                       elapsed_s=tr.get("elapsed_s"))
            if cmp["max_abs_err"] is not None:
                worst = max(worst, cmp["max_abs_err"]) if worst == worst else worst
            if not cmp["ok"]:
                incorrect = incorrect or f"{phase.name} trial (seed {tr.get('seed')}): {cmp['reason']}"
    if aten_bad:
        listed = ", ".join(f"{op} x{n}" for op, n in sorted(aten_bad.items()))
        violations.append(_violation(cr.RULE_ATEN, f"PyTorch computed during forward, outside the allowlist: {listed}"))
    timing_check = _timing_check(header, tensors, phases, refs, cfg, tf32, plan)
    if timing_check is not None:
        result["timing"]["check"] = timing_check
        if timing_check["ok"] is False:  # (None: the check could not be made; no speedup either)
            violations.append(_violation(cr.RULE_TIMING, "forward's answer after timing differs from the reference's for the "
                                         f"same inputs (trial {timing_check['trial']}): {timing_check['reason']}; a forward "
                                         "must compute every call, not answer repeated inputs from a cache"))
    result["violations"] = _collapse(violations)
    result["triton_kernels_launched"] = sorted(launched)
    result["aten_ops"] = sorted(aten_all)
    result["max_abs_err"] = worst if result["trials"] and any(t.get("max_abs_err") is not None for t in result["trials"]) else None
    result["compile_report"] = header.get("compile_report") or {}
    compiled, compile_error = _compiled(result["compile_report"])
    if cfg["device"] == "cpu" and cfg["compile_check"] and launched and compiled is None:
        # Kernels ran but no compile report came back: never read as "not checked, fine".
        compiled, compile_error = False, "the compile check reported nothing for the launched kernels"
    if cfg["device"] != "cpu":
        compiled = runtime_error is None and bool(launched)  # the real compiler built and ran them
    result["compiled"] = bool(compiled) if compiled is not None else (runtime_error is None)
    result["timing"]["candidate_import_s"] = header.get("import_s")
    result["timing"]["candidate_first_transfer_s"] = header.get("first_transfer_s")
    if "timing" in header:
        result["timing"]["candidate"] = header["timing"]
        checked = (timing_check or {}).get("ok", True) is True
        if "reference" in result["timing"] and "sets" in header["timing"] and checked:
            from autotriton.validation.timing import speedups

            result["timing"].update(speedups(result["timing"]["reference"], header["timing"], cfg["suspect_speedup"]))
            result["timing"]["triton_time_share"] = header["timing"].get("triton_time_share")
    result["timing"]["tf32_tolerance_applied"] = tf32
    result.update(_size_parts(result["trials"], phases, compiled))
    expected_trials = sum(len(p.trials) for p in phases)
    if runtime_error:
        result.update(status="runtime_error", error=runtime_error[-3000:])
    elif compiled is False:
        result.update(status="compile_error", error=compile_error)
    elif incorrect or len(result["trials"]) < expected_trials:
        result.update(status="incorrect", error=incorrect or "not every trial produced outputs")
    else:
        result["status"] = "correct"

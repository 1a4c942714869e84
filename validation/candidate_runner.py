"""What runs inside a candidate's own process: load `ModelNew`, run the trials, report raw facts.

The process was forked from a clean template (it never saw the reference outputs) and confined
(validation/sandbox.py). It receives, over its socket, the candidate source, init inputs, the
reference weights and the trial inputs; it answers with outputs and logs (validation/wire.py,
no pickle), never with a verdict: the worker compares.

While `ModelNew.forward` runs, two recorders watch:
- the Triton launch path (`JITFunction.run` and the interpreter's `InterpretedFunction.run`,
  which `kernel[grid](...)`, autotuners and heuristics all reach): which kernels launched, from
  which module, on which stream, with which arguments (for the sm_90 compile check);
- a TorchDispatchMode: every aten op PyTorch executed outside a Triton launch.

Everything reported here could in principle be forged by code running in this process; the
static rules forbid the monkeypatching that forging needs, and the outputs themselves are
checked against the reference where this process cannot reach.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
import time
import traceback
from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


CANDIDATE_MODULE = "autotriton_candidate"

# aten ops that move, view, allocate or convert data without computing the answer.
ALLOWED_ATEN_OPS = frozenset({
    # allocation and initialisation
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "new_zeros",
    "fill_", "zero_", "resize_", "set_", "lift_fresh", "lift_fresh_copy", "scalar_tensor",
    # views and shape ops
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "permute", "transpose", "transpose_", "t",
    "expand", "expand_as", "squeeze", "squeeze_", "unsqueeze", "unsqueeze_", "flatten", "unflatten", "slice",
    "select", "split", "split_with_sizes", "chunk", "unbind", "narrow", "alias", "detach", "detach_", "view_as",
    "movedim", "contiguous", "view_as_real", "view_as_complex", "unfold",
    # copies needed for layout, device and dtype
    "clone", "copy_", "_to_copy", "to", "_copy_from", "_copy_from_and_resize",
    # metadata
    "size", "stride", "numel", "dim", "is_contiguous", "sym_size", "sym_stride", "sym_numel",
    "is_same_size",
})

RULE_NO_LAUNCH = "RUNTIME-NO-TRITON-LAUNCH"
RULE_ATEN = "RUNTIME-ATEN-COMPUTE"
RULE_THREADS = "RUNTIME-THREADS"
RULE_STREAM = "RUNTIME-SIDE-STREAM"
RULE_FOREIGN = "RUNTIME-FOREIGN-KERNEL"
RULE_ESCAPE = "RUNTIME-ESCAPE-HATCH"
RULE_TAMPER = "RUNTIME-TAMPERING"
RULE_PROCESSES = "RUNTIME-PROCESSES"


class _State:
    recording = False  # inside ModelNew.forward
    in_launch = 0  # inside a Triton launch: numpy/host copies there are the interpreter's, not the candidate's
    in_bench = 0  # inside Triton's autotuner benchmarking (triton.testing's statistics use torch ops)
    launches: list[dict[str, Any]] = []
    compile_records: list[Any] = []
    compile_seen: set = set()
    kernel_info: dict[int, dict[str, Any]] = {}
    stream_violation: str | None = None
    want_compile_records = True  # only when a compile check will use them (CPU interpreter)
    escapes: list[str] = []
    threads: list[str] = []
    forks: int = 0


STATE = _State()


def _kernel_info(jit_fn: Any) -> dict[str, Any]:
    info = STATE.kernel_info.get(id(jit_fn))
    if info is None:
        fn = getattr(jit_fn, "fn", jit_fn)
        src = getattr(jit_fn, "src", None)
        if src is None:
            try:
                import inspect

                src = inspect.getsource(fn)
            except (OSError, TypeError):
                src = ""
        info = {
            "name": getattr(fn, "__name__", repr(fn)),
            "module": getattr(fn, "__module__", ""),
            "uses_dot": "tl.dot" in src or ".dot(" in src,
            "ieee_dot": "ieee" in src or "tf32x3" in src,
        }
        STATE.kernel_info[id(jit_fn)] = info
    return info


def _note_launch(jit_fn: Any, args: tuple, kwargs: dict, grid: Any) -> None:
    """Before a launch: side-stream check and the compile-check record (successful or not)."""
    info = _kernel_info(jit_fn)
    if STATE.recording:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            dev = torch.cuda.current_device()
            if torch.cuda.current_stream(dev) != torch.cuda.default_stream(dev):
                STATE.stream_violation = f"kernel {info['name']} launched on a side stream"
    if not STATE.want_compile_records:
        return
    key = (id(jit_fn), tuple(type(a).__name__ if not hasattr(a, "dtype") else str(a.dtype) for a in args),
           tuple(sorted((k, repr(v)) for k, v in kwargs.items() if not hasattr(v, "dtype"))))
    if key in STATE.compile_seen:
        return
    STATE.compile_seen.add(key)
    try:
        from autotriton.validation.compile_check import launch_record_from_call

        options = {k: kwargs[k] for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if k in kwargs}
        STATE.compile_records.append(launch_record_from_call(jit_fn, args, kwargs, grid, options))
    except Exception as exc:  # noqa: BLE001 (the compile check reports it; the launch itself proceeds)
        STATE.compile_records.append({"kernel": info["name"], "record_error": repr(exc)[:500]})


def _lang_namespaces() -> list[Any]:
    mods = [m for name, m in list(sys.modules.items()) if m is not None and (name == "triton.language" or name.startswith("triton.language."))]
    import triton.language as tl

    return mods + [tl.core.tensor, getattr(tl.core, "tensor_descriptor_base", tl.core.tensor)]


def _snapshot_lang() -> list[tuple[Any, dict[str, Any]]]:
    return [(ns, dict(vars(ns))) for ns in _lang_namespaces()]


def _restore_lang(snapshot: list[tuple[Any, dict[str, Any]]]) -> None:
    """Undo what the interpreter left patched in triton.language.

    Triton 3.6's interpreter patches triton.language for the duration of a launch, but a kernel
    that calls library @jit functions (tl.sum, tl.max, ...) leaves triton.language.core patched
    afterwards, which breaks every later real compile in the process (the sm_90 compile check)
    and makes one candidate's state leak into the next launch. Restore the raw namespaces.
    """
    for ns, before in snapshot:
        now = vars(ns)  # keys the interpreter added (its rewritten library functions' globals) stay
        for key, value in before.items():
            if now.get(key, _MISSING) is not value:
                try:
                    setattr(ns, key, value)
                except (AttributeError, TypeError):
                    pass


_MISSING = object()


def install_launch_hooks() -> None:
    """Wrap the two launch paths of Triton 3.x: compiled JITFunction and the CPU interpreter."""
    from triton.runtime.jit import JITFunction

    targets = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        targets.append(InterpretedFunction)
        # validation-static's shims: numpy >= 2.4 vs the interpreter's int() of scalar arguments,
        # device-call patch leaks, autotune without a GPU driver
        try:
            from autotriton.validation.triton_compat import apply_interpreter_fixes

            apply_interpreter_fixes()
        except ImportError:
            pass
    except ImportError:
        pass
    for cls in targets:
        original = cls.run
        if getattr(original, "_autotriton_hook", False):
            continue
        interpreted = cls is not JITFunction

        def run(self, *args, grid, warmup, __original=original, __interpreted=interpreted, **kwargs):
            if warmup:
                return __original(self, *args, grid=grid, warmup=warmup, **kwargs)
            _note_launch(self, args, kwargs, grid)
            STATE.in_launch += __interpreted  # the interpreter's own host copies are not the candidate's
            lang = _snapshot_lang() if __interpreted else None
            try:
                result = __original(self, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                STATE.in_launch -= __interpreted
                if lang is not None:
                    _restore_lang(lang)
            if STATE.recording:  # only launches that completed count (a failed one computed nothing)
                info = _kernel_info(self)
                STATE.launches.append({"name": info["name"], "module": info["module"]})
            return result

        run._autotriton_hook = True  # type: ignore[attr-defined]
        cls.run = run


def _watch(owner: Any, attr: str, label: str) -> None:
    """Wrap owner.attr so that a call during forward, outside a Triton launch, is recorded."""
    original = getattr(owner, attr, None)
    if original is None or getattr(original, "_autotriton_watch", False):
        return

    def watched(*args, **kwargs):
        if STATE.recording and not STATE.in_launch:
            STATE.escapes.append(label)
        return original(*args, **kwargs)

    watched._autotriton_watch = True  # type: ignore[attr-defined]
    try:
        setattr(owner, attr, watched)
    except (AttributeError, TypeError):
        pass


def install_escape_watch() -> None:
    """Ways to compute without the dispatch mode seeing it: host copies (numpy, lists) and
    switching the dispatch modes off. Used during forward (outside launches), they are violations."""
    import torch.utils._python_dispatch as pd

    for attr in ("numpy", "tolist", "__array__"):
        _watch(torch.Tensor, attr, f"Tensor.{attr}")
    _watch(torch, "from_numpy", "torch.from_numpy")
    for attr in ("_disable_current_modes", "_pop_mode_temporarily"):
        _watch(pd, attr, f"torch.utils._python_dispatch.{attr}")
    for attr in ("_DisableTorchDispatch", "_unset_dispatch_mode", "_pop_torch_dispatch_stack", "_set_dispatch_mode",
                 "_ExcludeDispatchKeyGuard", "_DisableFuncTorch", "_RestorePythonTLSSnapshot"):
        _watch(torch._C, attr, f"torch._C.{attr}")


def _note_fork() -> None:
    if STATE.recording:
        STATE.forks += 1


def install_concurrency_watch() -> None:
    """Record Python threads started and processes forked while forward runs."""
    import _thread

    original_start = threading.Thread.start
    if not getattr(original_start, "_autotriton_watch", False):
        def start(self, *args, **kwargs):
            if STATE.recording:
                STATE.threads.append(self.name)
            return original_start(self, *args, **kwargs)

        start._autotriton_watch = True  # type: ignore[attr-defined]
        threading.Thread.start = start  # type: ignore[method-assign]
        original_new = _thread.start_new_thread

        def start_new_thread(*args, **kwargs):
            if STATE.recording:
                STATE.threads.append("_thread.start_new_thread")
            return original_new(*args, **kwargs)

        _thread.start_new_thread = start_new_thread
        os.register_at_fork(before=_note_fork)


def integrity_snapshot() -> dict[str, int]:
    """Identities of the harness's moving parts; compared after import and after each forward."""
    from triton.runtime.jit import JITFunction

    snap = {"JITFunction.run": id(JITFunction.run), "AtenRecorder.__torch_dispatch__": id(AtenRecorder.__dict__["__torch_dispatch__"]),
            "_note_launch": id(globals()["_note_launch"]), "threading.Thread.start": id(threading.Thread.start), "_kernel_info": id(globals()["_kernel_info"]),
            "STATE": id(globals()["STATE"]), "digest": id(globals()["digest"]), "torch.Tensor.numpy": id(torch.Tensor.numpy),
            "torch.no_grad": id(torch.no_grad), "torch.manual_seed": id(torch.manual_seed)}
    try:
        from triton.runtime.interpreter import InterpretedFunction

        snap["InterpretedFunction.run"] = id(InterpretedFunction.run)
    except ImportError:
        pass
    return snap


def tampered(before: dict[str, int]) -> list[str]:
    after = integrity_snapshot()
    return sorted(k for k in before if after.get(k) != before[k])


def install_autotuner_scope() -> None:
    """Autotuner benchmarking (GPU) summarises its timings with torch ops (triton.testing): not the
    candidate's compute. Only `_bench` is exempt; configs' hooks also run on the real launch path."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    original = getattr(Autotuner, "_bench", None)
    if original is None or getattr(original, "_autotriton_scope", False):
        return

    def _bench(self, *args, **kwargs):
        STATE.in_bench += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            STATE.in_bench -= 1

    _bench._autotriton_scope = True  # type: ignore[attr-defined]
    Autotuner._bench = _bench


class AtenRecorder(TorchDispatchMode):
    """Counts the aten ops executed during forward, Triton launches included (a grid callable or a
    launch hook is candidate code too); only the autotuner's own benchmarking is exempt. The
    interpreter's bookkeeping inside a launch uses allowlisted ops (new_empty, set_, copy_)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not STATE.in_bench:
            self.ops[func._schema.name.replace("::", ".")] += 1
        return func(*args, **(kwargs or {}))


def _flatten_outputs(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        flat: list[torch.Tensor] = []
        for item in out:
            flat.extend(_flatten_outputs(item))
        return flat
    if isinstance(out, (int, float, bool)):
        return [torch.tensor(out)]
    raise TypeError(f"forward returned {type(out).__name__}; expected a tensor or a tuple of tensors")


def digest(tensors: list[Any]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        if isinstance(t, torch.Tensor):
            t = t.detach().to("cpu").contiguous()
            h.update(str((t.dtype, tuple(t.shape))).encode())
            if t.numel():
                h.update(t.reshape(-1).view(torch.uint8).numpy())  # the buffer itself, no bytes copy
        else:
            h.update(repr(t).encode())
    return h.hexdigest()


def _to(obj: Any, device: str) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(o, device) for o in obj)
    return obj


def _error(stage: str, exc: BaseException) -> dict[str, Any]:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"stage": stage, "type": type(exc).__name__, "message": str(exc)[:2000], "traceback": tb[-4000:]}


def load_candidate(source: str, path: str):
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(CANDIDATE_MODULE, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[CANDIDATE_MODULE] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_job(job: dict[str, Any]) -> tuple[dict[str, Any], list[torch.Tensor]]:
    """Run every phase and trial of `job`; returns (header, tensors) for wire.encode_tensors."""
    device = job["device"]
    header: dict[str, Any] = {"phases": [], "error": None}
    tensors: list[torch.Tensor] = []
    STATE.want_compile_records = bool(job.get("compile_target"))
    install_launch_hooks()
    install_escape_watch()
    install_concurrency_watch()
    install_autotuner_scope()
    snapshot = integrity_snapshot()
    import_start = time.perf_counter()
    try:
        module = load_candidate(job["source"], job["path"])
        model_cls = getattr(module, "ModelNew", None)
        if model_cls is None:
            raise AttributeError("the candidate defines no class ModelNew")
    except BaseException as exc:  # noqa: BLE001 (SystemExit included: it is the candidate's doing)
        header["error"] = _error("import", exc)
        return header, tensors
    header["import_s"] = time.perf_counter() - import_start

    model = None
    main_model = None  # the first phase's instance: timing uses its sizes (the odd-size phase's differ)
    for phase in job["phases"]:
        ph: dict[str, Any] = {"name": phase["name"], "trials": [], "weights": None, "error": None}
        header["phases"].append(ph)
        try:
            torch.manual_seed(phase["init_seed"])
            model = model_cls(*phase["init_inputs"])
            ref_state = phase["state_dict"]
            new_state = model.state_dict() if isinstance(model, torch.nn.Module) else {}
            if ref_state and set(new_state) == set(ref_state) and all(
                    tuple(new_state[k].shape) == tuple(ref_state[k].shape) for k in ref_state):
                model.load_state_dict(ref_state)
                ph["weights"] = "loaded from the reference"
            else:
                ph["weights"] = "own initialisation (state_dict keys or shapes differ from the reference)" if ref_state else "no weights"
            if isinstance(model, torch.nn.Module):
                model = model.to(device).eval()
            if main_model is None:
                main_model = model
        except BaseException as exc:  # noqa: BLE001
            ph["error"] = _error("init", exc)
            break
        for trial in phase["trials"]:
            moved = time.perf_counter()
            inputs = _to(trial["inputs"], device)
            header.setdefault("first_transfer_s", time.perf_counter() - moved)  # the first one includes CUDA start-up
            tr: dict[str, Any] = {"seed": trial["seed"]}
            ph["trials"].append(tr)
            threads_before = set(threading.enumerate())
            recorder = AtenRecorder()
            STATE.launches, STATE.escapes, STATE.threads, STATE.forks = [], [], [], 0
            STATE.recording = True
            start = time.perf_counter()
            try:
                with torch.no_grad(), recorder:
                    out = model(*inputs)
                    _sync(device)
            except BaseException as exc:  # noqa: BLE001
                STATE.recording = False
                tr["error"] = _error("forward", exc)
                break
            finally:
                STATE.recording = False
            tr["elapsed_s"] = time.perf_counter() - start
            tr["launches"] = sorted({f"{l['module']}:{l['name']}" for l in STATE.launches})
            tr["n_launches"] = len(STATE.launches)
            tr["aten_ops"] = dict(recorder.ops)
            tr["new_threads"] = sorted(set(STATE.threads) | {t.name for t in set(threading.enumerate()) - threads_before})
            tr["forks"] = STATE.forks
            tr["stream_violation"] = STATE.stream_violation
            tr["escapes"] = sorted(set(STATE.escapes))
            tr["tampered"] = tampered(snapshot)
            try:
                outs = _flatten_outputs(out)
                tr["outputs"] = list(range(len(tensors), len(tensors) + len(outs)))
                tr["output_devices"] = sorted({o.device.type for o in outs})
                tensors.extend(o.detach().to("cpu") for o in outs)
                del out, outs  # the device copies: only the host ones are sent back
                tr["input_digest"] = digest(list(inputs))
            except BaseException as exc:  # noqa: BLE001
                tr["error"] = _error("outputs", exc)
                break
        if any("error" in t for t in ph["trials"]):
            break

    if job.get("timing") and main_model is not None and not header["error"]:
        try:
            header["timing"] = _time(model_cls, main_model, job, device)
        except BaseException as exc:  # noqa: BLE001
            header["timing"] = {"error": _error("timing", exc)}
    if job.get("compile_target"):
        header["compile_report"] = _compile(job["compile_target"])
    header["kernels"] = list(STATE.kernel_info.values())
    return header, tensors


def timing_model_and_inputs(model_cls: Any, main_model: Any, job: dict[str, Any], device: str) -> tuple[Any, list[list[Any]]]:
    """What the candidate is timed on: the trials' model and inputs, or, when correctness ran at
    sizes shrunk for memory (job["timing"]["full_size"]), a ModelNew built from the reference's own
    get_init_inputs() and input sets from its get_inputs(), made here (validation/timing.py)."""
    full = job["timing"].get("full_size")
    if not full:
        return main_model, [_to(t["inputs"], device) for t in job["phases"][0]["trials"]]
    from autotriton.validation.timing import full_size_setup

    _module, init_inputs, sets = full_size_setup(full, device)
    torch.manual_seed(full["init_seed"])
    model = model_cls(*init_inputs)
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    return model, sets


def _time(model_cls: Any, main_model: Any, job: dict[str, Any], device: str) -> dict[str, Any]:
    from autotriton.validation.timing import time_callable

    model, sets = timing_model_and_inputs(model_cls, main_model, job, device)
    out = time_callable(model, sets, job["timing"])
    if job["timing"].get("full_size"):
        out["full_size"] = True
    return out


def _compile(target: str) -> dict[str, Any]:
    records = [r for r in STATE.compile_records if not isinstance(r, dict)]
    failures = [r for r in STATE.compile_records if isinstance(r, dict)]
    try:
        from autotriton.validation.compile_check import compile_launched
    except ImportError as exc:
        return {"skipped": f"compile check unavailable: {exc}"}
    try:
        report = compile_launched(records, target=target) if records else {}
    except BaseException as exc:  # noqa: BLE001
        return {"error": _error("compile", exc)}
    report = dict(report) if isinstance(report, dict) else {"report": report}
    if failures:
        report["_record_errors"] = failures
    return report

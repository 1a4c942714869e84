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

Below both, `dispatch_guard` (installed in the template, inherited here) makes every PyTorch
compute kernel fail while forward runs, whatever the candidate did to the Python dispatch key or
in which thread it computes. What the candidate hands back is checked by exact type (only
`torch.Tensor` objects, in an exact tuple/list) and copied into the judge's own buffers before
the guard is disarmed; nothing the candidate defines runs after forward returns (no iteration of
its objects, gc off, its objects kept alive until the process ends). Before the candidate is
imported the judge's own modules leave `sys.modules`: its state is held in this module's
functions, in candidate_recorders' (the recorders and watches) and in run_job's locals. Trial
inputs arrive only after `ModelNew.__init__` returned (`fetch_inputs`), from seeds the worker
drew for this judgement alone.

Everything reported here could in principle be forged by code running in this process; the
static rules forbid the introspection that forging needs, and the outputs themselves are
checked against the reference where this process cannot reach.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.util
import sys
import threading
import time
import traceback
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves, tree_map

from autotriton.validation import candidate_recorders as recorders
from autotriton.validation.candidate_recorders import (STATE, AtenRecorder, install_autotuner_scope, install_concurrency_watch,
                                                       install_escape_watch, install_launch_hooks)
from autotriton.validation.reference_problem import load_problem_module
from autotriton.validation.wire import PROBLEM_MODULE_PREFIX


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
RULE_TIMING = "RUNTIME-TIMING-MISMATCH"


def integrity_snapshot() -> dict[str, int]:
    """Identities of the harness's moving parts; compared after import and after each forward.
    The hooks' own functions and STATE are looked up where the hooks find them (candidate_recorders)."""
    from triton.runtime.jit import JITFunction

    snap = {"JITFunction.run": id(JITFunction.run), "AtenRecorder.__torch_dispatch__": id(AtenRecorder.__dict__["__torch_dispatch__"]),
            "_note_launch": id(vars(recorders)["_note_launch"]), "threading.Thread.start": id(threading.Thread.start), "_kernel_info": id(vars(recorders)["_kernel_info"]),
            "STATE": id(vars(recorders)["STATE"]), "digest": id(globals()["digest"]), "torch.Tensor.numpy": id(torch.Tensor.numpy),
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


def _flatten_outputs(out: Any, paths: list[str] | None = None, path: str = "") -> list[torch.Tensor]:
    """A trusted forward's output (the reference's, the probed problem's) as tensors in order.
    Dicts are opened only when `paths` is given, which then gets each tensor's dict keys
    (`_key_path`): the judge's reference, whose keys a candidate's answer must have. The probe
    asks for none: a harvested problem returns KernelBench's tensor or tuple of tensors, and its
    error for a dict is what harvesting/structured_outputs.py rewrites."""
    if isinstance(out, torch.Tensor):
        flat = [out]
    elif isinstance(out, (tuple, list)):
        if any(item is None for item in out):
            # `return x, skip` with skip None: the probe's message names the tuple, so that harvesting
            # (structured_outputs.py) keeps its tensors; a bare None has none to keep
            raise TypeError(f"forward returned {type(out).__name__} holding None; expected a tensor or a tuple of tensors")
        return [t for item in out for t in _flatten_outputs(item, paths, path)]
    elif isinstance(out, dict) and paths is not None:
        return [t for key in sorted(out, key=repr) for t in _flatten_outputs(out[key], paths, _key_path(path, key))]
    elif isinstance(out, (int, float, bool)):
        flat = [torch.tensor(out)]
    else:
        raise TypeError(f"forward returned {type(out).__name__}; expected a tensor or a tuple of tensors")
    if paths is not None:
        paths.append(path)
    return flat


def _key_path(path: str, key: Any) -> str:
    """The dict keys leading to an output tensor, `['sentence_embedding']`; list and tuple
    positions are left out, as the judge has always compared nested sequences flattened. Keys
    are taken in sorted order on both sides: a dict's insertion order is not part of the answer."""
    return f"{path}[{key!r}]"


def digest(tensors: list[Any]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        if type(t) is torch.Tensor:  # exactly: a subclass (an input whose class was swapped) would run its own code
            with torch._C.DisableTorchFunction():
                t = torch._C.TensorBase.contiguous(torch._C.TensorBase.to(torch._C.TensorBase.detach(t), "cpu"))
                h.update(str((t.dtype, tuple(t.shape))).encode())
                if t.numel():
                    h.update(torch._C.TensorBase.numpy(t.reshape(-1).view(torch.uint8)))  # the buffer itself, no bytes copy
        elif type(t) in (int, float, bool, str, type(None)):
            h.update(repr(t).encode())
        else:
            h.update(b"<not a plain value>")
    return h.hexdigest()


def _to(obj: Any, device: str) -> Any:
    """The judge's own inputs (trusted: sent by the worker) on `device`, nested lists, tuples and
    dicts (a `features` dict of tensors) opened."""
    return tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, obj)


def input_leaves(inputs: Any) -> list[Any]:
    """The judge's own inputs in order, nested lists, tuples and dicts opened: what the input
    digest covers. Taken before forward, so that a forward which adds a key to a `features` dict
    or rebinds one (as the reference module may) changes no input's bytes; writing into a tensor
    it was given still does."""
    return tree_leaves(list(inputs))


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


_C = torch._C
_TensorBase = torch._C.TensorBase
_current_frames = sys._current_frames  # captured before any candidate code exists in this process
_len_dispatch_modes = torch._C._len_torch_dispatch_stack
_len_function_modes = torch._C._len_torch_function_stack


def _type_name(t: type) -> str:
    """A class's name without running its metaclass (a candidate's could define `__name__`)."""
    return type.__dict__["__name__"].__get__(t, type)


def _plain_outputs(out: Any, paths: list[str] | None = None) -> list[torch.Tensor]:
    """The forward's result as plain tensors, or TypeError; `paths` gets each tensor's dict keys
    as `_flatten_outputs` gives the reference's. Types are compared exactly: a tensor subclass or
    a list subclass could run its own code (`__iter__`, `detach`, `__torch_function__`) when the
    judge reads it; exact `list`/`tuple`/`dict` iterate in C, and a dict's keys must be exact
    `str` or `int`, whose hashing, ordering and repr are Python's own. (Not torch.utils._pytree:
    it would ask the candidate's classes whether they are namedtuples or registered nodes.)"""
    flat: list[torch.Tensor] = []
    where: list[str] = [] if paths is None else paths

    def walk(o: Any, depth: int, path: str) -> None:
        t = type(o)
        if t is torch.Tensor:
            flat.append(o)
            where.append(path)
        elif (t is tuple or t is list) and depth < 4:
            for item in o:
                walk(item, depth + 1, path)
        elif t is dict and depth < 4:
            keys = list(o)
            if not all(type(k) is str or type(k) is int for k in keys):
                raise TypeError("forward returned a dict with keys other than str or int")
            for key in sorted(keys, key=repr):
                walk(o[key], depth + 1, _key_path(path, key))
        elif t is int or t is float or t is bool:
            flat.append(torch.tensor(o))
            where.append(path)
        else:
            raise TypeError(f"forward returned a {_type_name(t)}; only torch.Tensor objects (or an exact tuple, list or "
                            "dict of them) are accepted, no subclasses")

    walk(out, 0, "")
    return flat


def _materialise(flat: list[torch.Tensor]) -> list[torch.Tensor]:
    """Copies of the outputs in fresh host buffers, made through TensorBase's own methods with
    torch functions disabled: nothing of the candidate's can intercept them."""
    with _C.DisableTorchFunction():
        return [_TensorBase.contiguous(_TensorBase.to(_TensorBase.detach(o), "cpu", copy=True)) for o in flat]


def _python_threads(main_ident: int) -> list[str]:
    """Python threads other than the judge's own (sys._current_frames sees _thread ones too)."""
    return sorted(f"thread {ident}" for ident in _current_frames() if ident != main_ident)


class CudaAsCpu(TorchFunctionMode):
    """On the CPU judge, `device="cuda"` (and `.cuda()`, `.to("cuda")`) mean the CPU: kernels
    written for a GPU allocate there, and the interpreter runs them on host memory."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _as_cpu(kwargs["device"])
        name = getattr(func, "__name__", "")
        if name == "cuda" and args and type(args[0]) is torch.Tensor:
            return args[0]
        if name == "to":
            args = tuple(_as_cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
        return func(*args, **kwargs)


class Poison:
    """Memory allocated but never written reads as NaN (integers: their maximum) while the
    correctness trials run, so an output a candidate leaves partly unwritten cannot match the
    reference by what the allocator happened to hold (zeros, or a freed buffer of an earlier
    candidate of the same problem). PyTorch's deterministic mode fills every `torch.empty*` and
    `resize_`; Inductor's fast allocators in `torch._C._dynamo.guards` skip that fill, so they are
    replaced here, before the candidate is imported, by ones that take the filling path while the
    poison is on. Timing runs with it off (PyTorch's defaults, nothing filled)."""

    FAST = ("_empty_strided_cuda", "_empty_strided_cpu")

    def __init__(self) -> None:
        self.on = False
        guards = torch._C._dynamo.guards
        for name, device in zip(self.FAST, ("cuda", "cpu")):
            setattr(guards, name, self._filling(getattr(guards, name), device))

    def _filling(self, fast: Any, device: str) -> Any:
        def allocate(size: Any, stride: Any, dtype: Any) -> torch.Tensor:
            if self.on:
                return torch.empty_strided(size, stride, dtype=dtype, device=device)
            return fast(size, stride, dtype)
        allocate.__name__ = fast.__name__
        return allocate

    def set(self, on: bool) -> None:
        self.on = on
        torch.use_deterministic_algorithms(on, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True

    def intact(self) -> bool:
        """Still filling: the candidate switched neither PyTorch's mode nor the fill off."""
        return (torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
                and torch.utils.deterministic.fill_uninitialized_memory is True)


def _as_cpu(device: Any) -> Any:
    if isinstance(device, str) and device.startswith("cuda"):
        return "cpu"
    if isinstance(device, torch.device) and device.type == "cuda":
        return torch.device("cpu")
    if type(device) is int:
        return "cpu"
    return device


def _preload() -> dict[str, Any]:
    """Everything of the judge that run_job needs later, imported before the candidate is, so that
    the judge's modules can leave sys.modules (and nothing re-imports them)."""
    import functools

    from autotriton.validation import compile_check, timing

    recorders.launch_record_from_call = compile_check.launch_record_from_call  # what the launch hook calls
    return {"compile_launched": compile_check.compile_launched, "time_callable": timing.time_callable,
            "full_size_setup": functools.partial(timing.full_size_setup, load_problem=load_problem_module)}


def _hide_judge_modules() -> None:
    """The judge's candidate-side modules leave sys.modules before candidate code runs: `sys`
    reached through any module's attribute then leads to no judge state (issue 14, class 3)."""
    for name in [n for n in sys.modules if n == "autotriton" or n.startswith("autotriton.")]:
        del sys.modules[name]


def run_job(job: dict[str, Any], guard: Any = None, fetch_inputs: Any = None) -> tuple[dict[str, Any], list[torch.Tensor]]:
    """Run every phase and trial of `job`; returns (header, tensors) for wire.encode_tensors.

    `guard`: dispatch_guard.Guard (installed in the template); `fetch_inputs(i)`: the trial inputs
    of phase i, asked for only once that phase's ModelNew exists (None: they are in the job)."""
    device = job["device"]
    header: dict[str, Any] = {"phases": [], "error": None, "guard": None if guard is None else
                              (guard.unavailable or f"{guard.wrapped} kernels at {','.join(guard.keys)}")}
    tensors: list[torch.Tensor] = []
    keep: list[Any] = []  # the candidate's objects live until the process exits: no __del__ of theirs runs after forward
    STATE.want_compile_records = bool(job.get("compile_target"))
    install_launch_hooks()
    install_escape_watch()
    install_concurrency_watch()
    install_autotuner_scope(guard)
    judge = _preload()
    poison = Poison()
    poison.set(True)
    snapshot = integrity_snapshot()
    main_ident = threading.get_ident()
    cpu_mode = CudaAsCpu() if device == "cpu" else None
    if cpu_mode is not None:
        cpu_mode.__enter__()
        torch.cuda.synchronize = lambda *a, **k: None  # type: ignore[assignment]  (no GPU: nothing to wait for)
    base_modes = (_len_dispatch_modes(), _len_function_modes())
    _hide_judge_modules()
    gc.disable()  # a collection could run a candidate finaliser at any later allocation
    import_start = time.perf_counter()
    try:
        module = load_candidate(job["source"], job["path"])
        keep.append(module)
        model_cls = getattr(module, "ModelNew", None)
        if model_cls is None:
            raise AttributeError("the candidate defines no class ModelNew")
    except BaseException as exc:  # noqa: BLE001 (SystemExit included: it is the candidate's doing)
        header["error"] = _error("import", exc)
        return header, tensors
    header["import_s"] = time.perf_counter() - import_start
    header["import_threads"] = _python_threads(main_ident)  # a thread left running by import computes unwatched

    model = None
    main_model = None  # the first phase's instance: timing uses its sizes (the odd-size phase's differ)
    main_inputs: list[Any] | None = None
    for index, phase in enumerate(job["phases"]):
        ph: dict[str, Any] = {"name": phase["name"], "trials": [], "weights": None, "error": None}
        header["phases"].append(ph)
        try:
            torch.manual_seed(phase["init_seed"])
            model = model_cls(*as_candidates_objects(phase["init_inputs"], model_cls))
            keep.append(model)
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
            # Only now, with ModelNew built, do this phase's inputs exist in this process.
            trial_inputs = fetch_inputs(index) if fetch_inputs is not None else [t["inputs"] for t in phase["trials"]]
        except BaseException as exc:  # noqa: BLE001
            ph["error"] = _error("init", exc)
            break
        if main_model is None:
            main_model, main_inputs = model, trial_inputs
        ph["init_threads"] = _python_threads(main_ident)
        for k, raw_inputs in enumerate(trial_inputs):
            moved = time.perf_counter()
            inputs = _to(raw_inputs, device)
            keep.append(inputs)
            given = input_leaves(inputs)  # before forward: its digest is of what forward was given
            header.setdefault("first_transfer_s", time.perf_counter() - moved)  # the first one includes CUDA start-up
            tr: dict[str, Any] = {"index": k}
            ph["trials"].append(tr)
            threads_before = set(threading.enumerate())
            recorder = AtenRecorder()
            STATE.launches, STATE.escapes, STATE.threads, STATE.forks = [], [], [], 0
            if guard is not None:
                guard.take_blocked()
            outs: list[torch.Tensor] | None = None
            paths: list[str] = []
            modes_ok = True
            STATE.recording = True
            start = time.perf_counter()
            try:
                with torch.no_grad(), recorder:
                    if guard is not None:
                        guard.set_armed(True)
                    try:
                        out = model(*inputs)
                        keep.append(out)
                        _sync(device)
                        # Still armed and recorded: the result is checked and copied into the
                        # judge's buffers before anything is switched off.
                        modes_ok = (_len_dispatch_modes(), _len_function_modes()) == (base_modes[0] + 1, base_modes[1])
                        if modes_ok:
                            outs = _materialise(_plain_outputs(out, paths))
                    finally:
                        if guard is not None:
                            guard.set_armed(False)
            except BaseException as exc:  # noqa: BLE001
                STATE.recording = False
                tr["error"] = _error("forward", exc)
            finally:
                STATE.recording = False
            tr["elapsed_s"] = time.perf_counter() - start
            tr["launches"] = sorted({f"{l['module']}:{l['name']}" for l in STATE.launches})
            tr["n_launches"] = len(STATE.launches)
            tr["tf32_launches"] = sorted({f"{l['module']}:{l['name']}" for l in STATE.launches if l.get("tf32")})
            tr["aten_ops"] = dict(recorder.ops)
            tr["blocked_ops"] = sorted(set(guard.take_blocked())) if guard is not None else []
            tr["new_threads"] = sorted(set(STATE.threads) | {t.name for t in set(threading.enumerate()) - threads_before}
                                       | set(_python_threads(main_ident)))
            tr["forks"] = STATE.forks
            tr["stream_violation"] = STATE.stream_violation
            tr["escapes"] = sorted(set(STATE.escapes))
            tr["tampered"] = tampered(snapshot) + ([] if modes_ok else ["the dispatch/function mode stack"]) \
                + ([] if not gc.isenabled() else ["gc re-enabled"]) \
                + ([] if poison.intact() else ["the fill of uninitialised memory (torch.use_deterministic_algorithms)"])
            if "error" in tr:
                break
            try:
                if outs is None:
                    raise RuntimeError("forward left its own dispatch or function modes active; its outputs were not read")
                tr["outputs"] = list(range(len(tensors), len(tensors) + len(outs)))
                tr["output_paths"] = paths
                tr["output_devices"] = sorted({o.device.type for o in _plain_outputs(out)})
                tensors.extend(outs)
                tr["input_digest"] = digest(given)
            except BaseException as exc:  # noqa: BLE001
                tr["error"] = _error("outputs", exc)
                break
        if any("error" in t for t in ph["trials"]):
            break

    poison.set(False)
    if job.get("timing") and main_model is not None and not header["error"]:
        try:
            header["timing"] = _time(model_cls, main_model, job, device, main_inputs, judge, tensors)
        except BaseException as exc:  # noqa: BLE001
            header["timing"] = {"error": _error("timing", exc)}
    if job.get("compile_target"):
        header["compile_report"] = _compile(job["compile_target"], judge)
    header["kernels"] = list(STATE.kernel_info.values())
    return header, tensors


def timing_model_and_inputs(model_cls: Any, main_model: Any, job: dict[str, Any], device: str,
                            main_inputs: list[Any] | None = None, judge: dict[str, Any] | None = None) -> tuple[Any, list[list[Any]]]:
    """What the candidate is timed on: the trials' model and inputs, or, when correctness ran at
    sizes shrunk for memory (job["timing"]["full_size"]), a ModelNew built from the reference's own
    get_init_inputs() and input sets from its get_inputs(), made here (validation/timing.py)."""
    full = job["timing"].get("full_size")
    if not full:
        if main_inputs is None:
            main_inputs = [t["inputs"] for t in job["phases"][0]["trials"]]
        return main_model, [_to(x, device) for x in main_inputs]
    if judge is None:
        from autotriton.validation.timing import full_size_setup
    else:
        full_size_setup = judge["full_size_setup"]

    _module, init_inputs, sets = full_size_setup(full, device)
    torch.manual_seed(full["init_seed"])
    model = model_cls(*as_candidates_objects(init_inputs, model_cls))
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    return model, sets


def as_candidates_objects(init_inputs: list[Any], model_cls: type) -> list[Any]:
    """Constructor arguments that are instances of a class the problem defines (a Hugging Face
    style `EdsrConfig(scale=2)`), as instances of the candidate's own class of that name: a
    self-contained candidate carries its own copy of the class, and `isinstance(config,
    PretrainedConfig)` in its __init__ failed against the problem's copy (super-image's models,
    twenty-third GPU run). A shallow copy with the candidate's class, made in the candidate's own
    process; everything else (tensors, numbers, torch and library objects, classes the candidate
    does not define) is passed as it is."""
    import copy
    import inspect

    here = sys.modules.get(getattr(model_cls, "__module__", ""), None)
    if here is None:
        return list(init_inputs)

    def convert(obj: Any) -> Any:
        if isinstance(obj, (list, tuple)):
            return type(obj)(convert(o) for o in obj) if type(obj) in (list, tuple) else obj
        if isinstance(obj, dict) and type(obj) is dict:
            return {k: convert(v) for k, v in obj.items()}
        cls = type(obj)
        mine = getattr(here, cls.__name__, None)
        # the problem's classes come pickled by value (wire.send_job), named after its module
        if (not str(cls.__module__).startswith(PROBLEM_MODULE_PREFIX) or not inspect.isclass(mine) or mine is cls
                or not hasattr(obj, "__dict__")):
            return obj
        twin = copy.copy(obj)
        try:
            twin.__class__ = mine
        except TypeError:  # incompatible layouts (slots, builtin bases): left as the problem made it
            return obj
        return twin

    return [convert(x) for x in init_inputs]


def _time(model_cls: Any, main_model: Any, job: dict[str, Any], device: str, main_inputs: list[Any] | None,
          judge: dict[str, Any], tensors: list[torch.Tensor]) -> dict[str, Any]:
    full = job["timing"].get("full_size") or {}
    check_seed = full.get("check_seed")
    if check_seed is not None:  # at the problem's own sizes: the check call's inputs too, from the worker's secret seed
        job = {**job, "timing": {**job["timing"], "full_size": {**full, "seeds": [*full["seeds"], check_seed]}}}
    model, sets = timing_model_and_inputs(model_cls, main_model, job, device, main_inputs, judge)
    check_inputs = sets.pop() if check_seed is not None else None
    names = {info["name"] for info in STATE.kernel_info.values() if info.get("module") == CANDIDATE_MODULE}
    out = judge["time_callable"](model, sets, job["timing"], names, device, check_inputs=check_inputs)
    if job["timing"].get("full_size"):
        out["full_size"] = True
    if "_check_outputs" in out:  # the check call's answer goes back with the trials' outputs
        paths: list[str] = []
        outs = _materialise(_plain_outputs(out.pop("_check_outputs"), paths))
        out["check"]["outputs"] = list(range(len(tensors), len(tensors) + len(outs)))
        out["check"]["output_paths"] = paths
        tensors.extend(outs)
    return out


def _compile(target: str, judge: dict[str, Any] | None = None) -> dict[str, Any]:
    records = [r for r in STATE.compile_records if not isinstance(r, dict)]
    failures = [r for r in STATE.compile_records if isinstance(r, dict)]
    try:
        if judge is None:
            from autotriton.validation.compile_check import compile_launched
        else:
            compile_launched = judge["compile_launched"]
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

"""The recorders and watches the judge installs in a candidate's process (candidate_runner runs the job).

While `ModelNew.forward` runs (`STATE.recording`), they record raw facts for the worker to judge:
- `install_launch_hooks`: both Triton launch paths (`JITFunction.run`, the interpreter's
  `InterpretedFunction.run`): which kernels completed a launch, from which module, on which
  stream, and a `LaunchRecord` per compiled variant for the sm_90 compile check; the
  interpreter's leftover `triton.language` patches are undone after every launch;
- `AtenRecorder`: a TorchDispatchMode counting every aten op (only Triton's own benchmarking,
  `install_autotuner_scope`, is exempt);
- `install_escape_watch`: host escapes (numpy/dlpack/ctypes copies, switching dispatch modes
  off) called from anything but Triton's or PyTorch's own Python;
- `install_concurrency_watch`: threads started and processes forked.
Installed once in the worker's template (inherited by every candidate) and again, idempotently,
by `candidate_runner.run_job`. Their state lives in this module's `STATE` and functions, which
leave `sys.modules` with the rest of the judge before the candidate is imported.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


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


# `tl.dot`'s input precisions; only "tf32" rounds fp32 operands to a 10-bit mantissa ("tf32x3" and
# the bf16 splits recover fp32's accuracy, "ieee" is fp32).
_DOT_PRECISIONS = {"tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"}


def _asks_tf32(info: dict[str, Any], args: tuple, kwargs: dict) -> bool:
    """Whether a launch of a kernel with a `tl.dot` runs it in TF32. A precision passed at the launch
    (a constexpr argument, "ieee" or "tf32") decides: the kernel's text may hold both branches. Else
    the text: a dot that names no precision on fp32 operands is TF32 on a GPU."""
    named = {v for v in (*args, *kwargs.values()) if isinstance(v, str) and v in _DOT_PRECISIONS}
    if named:
        return "tf32" in named
    return not info["ieee_dot"]


def _constexpr_names(jit_fn: Any) -> set[str] | None:
    """Names of a kernel's tl.constexpr parameters (JITFunction or the interpreter's wrapper)."""
    params = getattr(jit_fn, "params", None)
    if params is not None:
        return {p.name for p in params if getattr(p, "is_constexpr", False)}
    fn = getattr(jit_fn, "fn", None)
    ann = getattr(fn, "__annotations__", None)
    if isinstance(ann, dict):
        return {k for k, v in ann.items() if v == "constexpr" or "constexpr" in str(v)}
    return None


def _variant_key(jit_fn: Any, args: tuple, kwargs: dict) -> tuple:
    """What makes a launch a different compiled variant: tensor dtypes, every constexpr's value
    (positional or keyword), the specialisation of other ints (== 1, divisible by 16, 32/64-bit),
    and launch options. Keyed on types alone, a second variant with another constexpr value was
    never compiled (issue 14, class 5)."""
    info = _kernel_info(jit_fn)
    if "constexprs" not in info:
        info["constexprs"] = _constexpr_names(jit_fn)
        names = getattr(jit_fn, "arg_names", None)
        if names is None and getattr(jit_fn, "params", None) is not None:
            names = [p.name for p in jit_fn.params]
        info["arg_names"] = list(names) if names is not None else None
    constexprs, names = info["constexprs"], info["arg_names"]

    def one(name: str | None, value: Any) -> Any:
        if hasattr(value, "dtype") and hasattr(value, "data_ptr"):
            return str(value.dtype)
        if type(value) is int and constexprs is not None and name is not None and name not in constexprs:
            return ("int", value == 1, value % 16 == 0, -2**31 <= value < 2**31)
        return (type(value).__name__, repr(value)[:200])

    pos = tuple(one(names[i] if names and i < len(names) else None, a) for i, a in enumerate(args))
    kw = tuple(sorted((k, one(k, v)) for k, v in kwargs.items()))
    return (id(jit_fn), pos, kw)


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
    key = _variant_key(jit_fn, args, kwargs)
    if key in STATE.compile_seen:
        return
    STATE.compile_seen.add(key)
    try:
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

    global launch_record_from_call
    from autotriton.validation.compile_check import launch_record_from_call  # bound before any candidate runs

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
                STATE.launches.append({"name": info["name"], "module": info["module"],
                                       "tf32": info["uses_dot"] and _asks_tf32(info, args, kwargs)})
            return result

        run._autotriton_hook = True  # type: ignore[attr-defined]
        cls.run = run


# Calls made by Triton's own code (the interpreter reads tensors with numpy) or by PyTorch's own
# Python (a mode's __exit__ pops the dispatch stack) are not the candidate's.
_JUDGED_FROM_DIRS = tuple(os.path.dirname(os.path.abspath(__import__(m).__file__)) + os.sep for m in ("triton", "torch"))
_WATCHED: dict[int, Any] = {}  # id(original) -> its watched replacement (for re-exports, see _rebind_aliases)


def _watch(owner: Any, attr: str, label: str) -> None:
    """Wrap owner.attr so that a call during forward is recorded, unless Triton's own code made
    it (the interpreter reads tensors with numpy). There is no exemption for "inside a launch":
    grid callables, pre-run hooks and autotuner hooks are candidate code run by the launch."""
    original = getattr(owner, attr, None)
    if original is None or getattr(original, "_autotriton_watch", False):
        return
    getframe = sys._getframe

    def watched(*args, **kwargs):
        if STATE.recording and not getframe(1).f_code.co_filename.startswith(_JUDGED_FROM_DIRS):
            STATE.escapes.append(label)
        return original(*args, **kwargs)

    watched._autotriton_watch = True  # type: ignore[attr-defined]
    try:
        setattr(owner, attr, watched)
        _WATCHED[id(original)] = (original, watched)
    except (AttributeError, TypeError):
        pass


def _rebind_aliases() -> None:
    """Point every module-level re-export of a watched function at its watched version
    (`torch.utils.dlpack.to_dlpack` is `torch._C._to_dlpack`): a watch holds whatever name the
    candidate reaches it by."""
    if not _WATCHED:
        return
    for module in list(sys.modules.values()):
        space = getattr(module, "__dict__", None)
        if not isinstance(space, dict):
            continue
        for name, value in list(space.items()):
            hit = _WATCHED.get(id(value))
            if hit is not None and hit[0] is value:
                try:
                    space[name] = hit[1]
                except TypeError:
                    pass


def install_escape_watch() -> None:
    """Ways to compute without the dispatch mode seeing it: host copies (numpy, lists) and
    switching the dispatch modes off. Used during forward (outside launches), they are violations."""
    import torch.utils._python_dispatch as pd

    if getattr(install_escape_watch, "_done", False):
        return
    for attr in ("numpy", "tolist", "__array__", "__dlpack__", "__array_interface__"):
        _watch(torch.Tensor, attr, f"Tensor.{attr}")
    _watch(torch, "from_numpy", "torch.from_numpy")
    _watch(torch, "frombuffer", "torch.frombuffer")
    _watch(torch, "from_dlpack", "torch.from_dlpack")
    _watch(torch._C, "_to_dlpack", "torch._C._to_dlpack")
    _watch(torch._C, "_from_dlpack", "torch._C._from_dlpack")
    # Host memory read or written behind PyTorch's back: numpy views of raw buffers, ctypes.
    import numpy as np

    for attr in ("from_dlpack", "frombuffer"):
        _watch(np, attr, f"numpy.{attr}")
    try:
        import numpy.ctypeslib as npc

        _watch(npc, "as_array", "numpy.ctypeslib.as_array")
    except ImportError:
        pass
    import ctypes

    for attr in ("cast", "memmove", "memset", "string_at", "wstring_at", "pointer", "addressof", "byref"):
        _watch(ctypes, attr, f"ctypes.{attr}")
    for attr in ("_disable_current_modes", "_pop_mode_temporarily"):
        _watch(pd, attr, f"torch.utils._python_dispatch.{attr}")
    for attr in ("_DisableTorchDispatch", "_unset_dispatch_mode", "_pop_torch_dispatch_stack", "_set_dispatch_mode",
                 "_ExcludeDispatchKeyGuard", "_DisableFuncTorch", "_RestorePythonTLSSnapshot"):
        _watch(torch._C, attr, f"torch._C.{attr}")
    _rebind_aliases()
    install_escape_watch._done = True  # type: ignore[attr-defined]


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


def install_autotuner_scope(guard: Any = None) -> None:
    """Triton's benchmarker (`triton.testing.do_bench`, GPU autotuning) summarises its timings with
    torch ops: not the candidate's compute, so neither recorder counts them. The benchmarked
    callable itself (the kernel and the configs' pre/post hooks, candidate code) is watched as
    everywhere else: the exemption is switched off again around each call of it."""
    try:
        import triton.testing as tt
    except ImportError:
        return
    for attr in ("do_bench", "do_bench_cudagraph"):
        original = getattr(tt, attr, None)
        if original is None or getattr(original, "_autotriton_scope", False):
            continue

        def bench(fn, *args, __original=original, **kwargs):
            armed = STATE.recording

            def watched_fn(*a, **k):
                STATE.in_bench -= 1
                if guard is not None and armed:
                    guard.set_armed(True)
                try:
                    return fn(*a, **k)
                finally:
                    if guard is not None and armed:
                        guard.set_armed(False)
                    STATE.in_bench += 1

            STATE.in_bench += 1
            if guard is not None and armed:
                guard.set_armed(False)
            try:
                return __original(watched_fn, *args, **kwargs)
            finally:
                STATE.in_bench -= 1
                if guard is not None and armed:
                    guard.set_armed(True)

        bench._autotriton_scope = True  # type: ignore[attr-defined]
        setattr(tt, attr, bench)


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

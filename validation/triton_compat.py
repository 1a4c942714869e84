"""Compatibility shims for the Triton interpreter in this environment (judge-side code only).

Triton 3.6's interpreter converts a kernel's scalar arguments with `int(handle.data)`, where the
data is a one-element 1-D numpy array; numpy >= 2.4 refuses that ("only 0-dimensional arrays can
be converted to Python scalars", triton-lang/triton#9171, fixed upstream after 3.6). Every kernel
whose loop bound is a runtime argument (`for k in range(0, K, BLOCK)`: reductions, matmuls) then
fails under TRITON_INTERPRET=1. `apply_interpreter_fixes()` applies the upstream fix (squeeze the
array first) in the current process; call it in the candidate process before candidate code runs.
It is idempotent and a no-op where the interpreter is already fixed or absent.

A second fix: when interpreted code calls another @triton.jit function (a helper, or one of
triton.language's own jit'd functions such as tl.cdiv or tl.sigmoid), Triton 3.6 patches
triton.language for the interpreter and never restores it. The interpreter does not mind, but
the real compiler run afterwards in the same process (the judge's sm_90 compile check) then
builds IR through interpreter stubs and fails. The fixed call restores its patches on return.

A third: `@triton.autotune` with several configs benchmarks them through the GPU driver, which
does not exist on a CPU machine ("0 active drivers"), so every autotuned candidate would crash
under the interpreter. There, timings are meaningless anyway: the fixed autotuner picks the first
config that survives pruning, deterministically, without benchmarking.

Imports: triton and numpy only.
"""

from __future__ import annotations

from typing import Any

_APPLIED = False


def _needs_index_fix() -> bool:
    import numpy as np

    try:
        int(np.zeros((1,), dtype=np.int32))
    except TypeError:
        return True
    return False


def apply_interpreter_fixes() -> bool:
    """Patch triton.runtime.interpreter (see the module docstring); True when patches are in place."""
    global _APPLIED
    if _APPLIED:
        return True
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - Triton without an interpreter
        return False
    _fix_device_calls(interpreter)
    _fix_autotuner_without_driver()
    if not _needs_index_fix():
        _APPLIED = True
        return True
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_autotriton_numpy24", False):
        _APPLIED = original is not None
        return _APPLIED

    def _patch_lang_tensor(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        # the scope restores in reverse order, so this override is undone with the rest
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    _patch_lang_tensor._autotriton_numpy24 = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = _patch_lang_tensor
    _APPLIED = True
    return True


def _fix_device_calls(interpreter: Any) -> None:
    cls = getattr(interpreter, "InterpretedFunction", None)
    if cls is None or getattr(cls.__call__, "_autotriton_restores", False):
        return
    if not hasattr(interpreter, "_patch_lang") or not hasattr(interpreter, "InterpreterError"):
        return  # a Triton whose interpreter changed shape: leave it alone

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        scope = interpreter._patch_lang(self.fn)
        try:
            fn = self.rewrite()
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                raise interpreter.InterpreterError(repr(e)) from e
        finally:
            if scope is not None and hasattr(scope, "restore"):
                scope.restore()

    __call__._autotriton_restores = True  # type: ignore[attr-defined]
    cls.__call__ = __call__


def _fix_autotuner_without_driver() -> None:
    try:
        from triton import knobs
        from triton.runtime.autotuner import Autotuner
    except ImportError:  # pragma: no cover
        return
    original = getattr(Autotuner, "_bench", None)
    if original is None or getattr(original, "_autotriton_first_config", False):
        return

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> list[float]:
        if not knobs.runtime.interpret:
            return original(self, *args, config=config, **meta)
        try:
            rank = float(self.configs.index(config))
        except ValueError:
            rank = float(len(self.configs))
        return [rank, rank, rank]

    _bench._autotriton_first_config = True  # type: ignore[attr-defined]
    Autotuner._bench = _bench

"""Describing a Triton launch for the compile check: `LaunchRecord` and `launch_record_from_call`.

Called from the judge's launch hook inside the candidate process (candidate_runner), so it
must be cheap and import nothing of torch: argument types the way Triton itself specialises
them (`signature_type`), tl.constexpr parameters, divisibility attributes, launch options; and
the compilable `JITFunction` behind whatever the launch path holds (`as_jit_function`: the
interpreter's `InterpretedFunction`, autotuner/heuristics chains). compile_target.py compiles
the records. Triton and the standard library only.

Under TRITON_INTERPRET=1, importing this module (and so compile_check) applies
`triton_compat.apply_interpreter_fixes()` (the interpreter otherwise leaves triton.language
patched, which breaks compiling in the same process).
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

#: Triton's CUDA defaults (triton.backends.nvidia.compiler.CUDAOptions).
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
#: Launch options a kernel call may carry besides its parameters (forwarded to triton.compile).
COMPILE_OPTION_NAMES = frozenset({
    "num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid", "launch_pdl",
    "max_num_imprecise_acc_default", "default_dot_input_precision",
})
#: Keyword arguments the launch path adds itself; never part of a kernel's signature or options.
_IGNORED_KWARGS = frozenset({"debug", "instrumentation_mode", "warmup", "grid", "stream", "device", "device_type"})

_TORCH_DTYPE_TO_TRITON = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "i1",
    "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
}


if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    from autotriton.validation.triton_compat import apply_interpreter_fixes

    apply_interpreter_fixes()


class CompileCheckError(ValueError):
    """A bad target string or an argument the compile check cannot describe."""


@dataclass
class LaunchRecord:
    """One kernel launch, as much as `triton.compile` needs to reproduce it for another target."""

    kernel_name: str
    fn: Any  # a triton.runtime.jit.JITFunction (rebuilt from the interpreter's wrapper if needed)
    signature: dict[str, str]  # param -> '*fp32', 'i32', 'fp32', 'u1', 'constexpr', ...
    constexprs: dict[str, Any]  # param (or 'param[i]' inside tuples) -> value
    num_warps: int = DEFAULT_NUM_WARPS
    num_stages: int = DEFAULT_NUM_STAGES
    grid: tuple[int, ...] | None = None
    options: dict[str, Any] = field(default_factory=dict)  # other compile options (num_ctas, maxnreg, ...)
    attrs: dict[tuple[int, ...], Any] = field(default_factory=dict, repr=False)  # Triton's specialisation attrs
    constexpr_paths: dict[tuple[int, ...], Any] = field(default_factory=dict, repr=False)

    def dedup_key(self) -> tuple:
        return (
            id(self.fn), self.kernel_name, tuple(sorted(self.signature.items())),
            tuple(sorted((str(k), _value_repr(v)) for k, v in self.constexpr_paths.items())),
            tuple(sorted((str(k), repr(v)) for k, v in self.attrs.items())),
            self.num_warps, self.num_stages, tuple(sorted((k, repr(v)) for k, v in self.options.items())),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly description (no function object)."""
        return {
            "kernel": self.kernel_name, "signature": dict(self.signature),
            "constexprs": {k: _value_repr(v) for k, v in self.constexprs.items()},
            "num_warps": self.num_warps, "num_stages": self.num_stages,
            "grid": list(self.grid) if self.grid is not None else None,
            "options": {k: _jsonable(v) for k, v in self.options.items()},
        }


def _value_repr(v: Any) -> Any:
    if isinstance(v, (int, float, bool, str)) or v is None:
        return v
    name = getattr(v, "__name__", None) or getattr(getattr(v, "fn", None), "__name__", None)
    return f"<{type(v).__name__} {name}>" if name else repr(v)


def _jsonable(v: Any) -> Any:
    return v if isinstance(v, (int, float, bool, str)) or v is None else repr(v)


# --------------------------------------------------------------------------------------------
# JITFunction from whatever the launch path holds
# --------------------------------------------------------------------------------------------

# InterpretedFunction -> JITFunction; weak, so long-lived processes (a warm worker, a distillation
# run calling compile_check) do not keep every candidate's kernels alive
_JIT_CACHE: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def as_jit_function(kernel: Any) -> Any:
    """A compilable JITFunction for a JITFunction, an interpreter wrapper, or an autotuner/heuristics chain."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(kernel, JITFunction) and not _is_interpreted(kernel) and hasattr(kernel, "fn") and seen < 16:
        kernel = kernel.fn  # Autotuner / Heuristics wrap the kernel in .fn
        seen += 1
    if isinstance(kernel, JITFunction):
        return kernel
    if _is_interpreted(kernel):
        return _jit_from_interpreted(kernel)
    raise CompileCheckError(f"{kernel!r} is not a Triton kernel (expected a @triton.jit function)")


def _interpret_mode() -> bool:
    try:
        from triton import knobs

        return bool(knobs.runtime.interpret)
    except (ImportError, AttributeError):  # pragma: no cover
        return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _is_interpreted(obj: Any) -> bool:
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover - every supported Triton has it
        return False
    return isinstance(obj, InterpretedFunction)


def _jit_from_interpreted(kernel: Any) -> Any:
    """The JITFunction Triton would have built for this function without TRITON_INTERPRET (memoised).

    Its @triton.jit helpers (and triton.language's own jit'd library functions) are still
    interpreter objects in the globals it reads; `_compiler_view` swaps them for JITFunctions
    while compiling."""
    from triton.runtime.jit import JITFunction

    hit = _JIT_CACHE.get(kernel)
    if hit is not None:
        return hit
    kw = getattr(kernel, "kwargs", {}) or {}
    jit = JITFunction(kernel.fn, **{k: v for k, v in kw.items() if k in (
        "version", "do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline")})
    _JIT_CACHE[kernel] = jit
    return jit


def _wrapped_interpreted(value: Any) -> Any:
    """The InterpretedFunction behind triton's tensor-member wrapper (`x.sum()`), else None."""
    for cell in getattr(value, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        if _is_interpreted(inner):
            return inner
    return None


# --------------------------------------------------------------------------------------------
# Describing a launch
# --------------------------------------------------------------------------------------------

_BACKEND: Any = None
# id(JITFunction) -> (weak ref, binder). Not a WeakKeyDictionary: JITFunction hashes by its
# cache_key, which walks the kernel's globals (and fails on interpreter-wrapped helpers).
_BINDERS: dict[int, tuple[Any, Any]] = {}


def _backend_option_names() -> frozenset[str]:
    try:
        import dataclasses

        from triton.backends.nvidia.compiler import CUDAOptions

        return frozenset(f.name for f in dataclasses.fields(CUDAOptions))
    except (ImportError, TypeError):  # pragma: no cover
        return frozenset()


def _backend() -> Any:
    global _BACKEND
    if _BACKEND is None:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend

        _BACKEND = make_backend(GPUTarget("cuda", 90, 32))  # specialisation rules are the same for every sm
    return _BACKEND


def _binder(jit: Any) -> Any:
    hit = _BINDERS.get(id(jit))
    if hit is not None and hit[0]() is jit:
        return hit[1]
    from triton.runtime.jit import create_function_from_signature

    binder = create_function_from_signature(jit.signature, jit.params, _backend())
    key = id(jit)
    _BINDERS[key] = (weakref.ref(jit), binder)
    weakref.finalize(jit, _BINDERS.pop, key, None)
    return binder


def signature_type(value: Any) -> str:
    """Triton's signature type for one runtime argument (the documented fallback mapping)."""
    if value is None:
        return "constexpr"
    if isinstance(value, bool):
        return "u1"
    if isinstance(value, int):
        if value == 1:
            return "constexpr"  # Triton specialises ints equal to 1
        if -(2**31) <= value < 2**31:
            return "i32"
        if 2**31 <= value < 2**32:
            return "u32"
        if -(2**63) <= value < 2**63:
            return "i64"
        return "u64"
    if isinstance(value, float):
        return "fp32"
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "data_ptr"):
        name = str(dtype).replace("torch.", "")
        if name not in _TORCH_DTYPE_TO_TRITON:
            raise CompileCheckError(f"tensor of dtype {dtype} has no Triton pointer type")
        return "*" + _TORCH_DTYPE_TO_TRITON[name]
    raise CompileCheckError(f"cannot describe a kernel argument of type {type(value).__name__} for the compile check")


def launch_record_from_call(jit_fn: Any, args: Sequence[Any], kwargs: dict[str, Any], grid: Any = None,
                            options: dict[str, Any] | None = None) -> LaunchRecord:
    """Describe one launch `jit_fn[grid](*args, **kwargs)` for `compile_launched`.

    `kwargs` may mix kernel parameters and launch options (num_warps, num_stages, ...), as the
    launch path receives them; `options` (if given) overrides the options found in `kwargs`.
    Raises CompileCheckError when an argument has no Triton type.
    """
    jit = as_jit_function(jit_fn)
    param_names = [p.name for p in jit.params]
    params_kw = {k: v for k, v in kwargs.items() if k in param_names}
    # like Triton: a keyword that names both a parameter and an option (the tutorial's num_stages) is both
    opts = {k: v for k, v in kwargs.items() if k in COMPILE_OPTION_NAMES}
    opts.update({k: v for k, v in (options or {}).items() if k in COMPILE_OPTION_NAMES})
    # any other backend option (ir_override, sanitize_overflow, ...) is legal at launch but not forwarded
    known = COMPILE_OPTION_NAMES | _IGNORED_KWARGS | _backend_option_names()
    unknown = [k for k in kwargs if k not in param_names and k not in known]
    if unknown:
        raise CompileCheckError(f"kernel {jit.__name__} launched with unknown keyword argument(s) {', '.join(unknown)}")
    args = [_unwrap_interpreted_arg(a) for a in args]
    params_kw = {k: _unwrap_interpreted_arg(v) for k, v in params_kw.items()}
    try:
        bound, specialization, _ = _binder(jit)(*args, **params_kw)
        _, signature, constexpr_paths, attrs = jit._pack_args(_backend(), dict(params_kw, **opts), bound, specialization, {})
    except (AttributeError, ImportError) as exc:  # Triton internals moved: use the documented mapping
        signature, constexpr_paths, attrs, bound = _manual_binding(jit, args, params_kw, exc)
    except TypeError as exc:
        raise CompileCheckError(f"kernel {jit.__name__}: arguments do not match its parameters: {exc}") from None
    except Exception as exc:  # e.g. a tensor of a dtype Triton has no pointer type for
        raise CompileCheckError(f"kernel {jit.__name__}: cannot describe the launch: {type(exc).__name__}: {exc}") from None
    constexprs = {_path_name(param_names, p): v for p, v in constexpr_paths.items()}
    return LaunchRecord(
        kernel_name=jit.__name__, fn=jit, signature=dict(signature), constexprs=constexprs,
        num_warps=int(opts.pop("num_warps", DEFAULT_NUM_WARPS) or DEFAULT_NUM_WARPS),
        num_stages=int(opts.pop("num_stages", DEFAULT_NUM_STAGES) or DEFAULT_NUM_STAGES),
        grid=_grid_tuple(grid, bound), options=opts, attrs=dict(attrs), constexpr_paths=dict(constexpr_paths),
    )


def _unwrap_interpreted_arg(v: Any) -> Any:
    """Constexpr arguments may themselves be kernels (an activation passed as tl.constexpr)."""
    return _jit_from_interpreted(v) if _is_interpreted(v) else v


def _path_name(names: list[str], path: tuple[int, ...]) -> str:
    base = names[path[0]] if path and path[0] < len(names) else str(path)
    return base + "".join(f"[{i}]" for i in path[1:])


def _manual_binding(jit: Any, args: Sequence[Any], kwargs: dict[str, Any], why: Exception) -> tuple[dict, dict, dict, dict]:
    import inspect

    bound_sig = jit.signature.bind(*args, **kwargs)
    bound_sig.apply_defaults()
    signature: dict[str, str] = {}
    constexprs: dict[tuple[int, ...], Any] = {}
    for i, p in enumerate(jit.params):
        value = bound_sig.arguments.get(p.name, inspect.Parameter.empty)
        if p.is_constexpr:
            signature[p.name] = "constexpr"
            constexprs[(i,)] = value
            continue
        ty = signature_type(value)
        signature[p.name] = ty
        if ty == "constexpr":
            constexprs[(i,)] = value
    return signature, constexprs, {}, dict(bound_sig.arguments)


def _grid_tuple(grid: Any, bound: Any) -> tuple[int, ...] | None:
    if grid is None:
        return None
    try:
        if callable(grid):
            grid = grid(dict(bound))
        if isinstance(grid, int):
            return (int(grid),)
        return tuple(int(g) for g in grid)
    except Exception:  # a grid lambda needing meta the record does not have: informational only
        return None

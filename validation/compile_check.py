"""Compile check: compile each launched Triton kernel for a real GPU target, with no GPU needed.

The CPU judge runs candidates through the Triton interpreter, which accepts programs the real
compiler rejects (type errors it never checks, shared memory it never allocates). So every kernel
the candidate actually launched is also compiled for the configured target (default sm_90) with
the signature it was launched with, through `triton.compile` and the ptxas bundled in the wheel.

- `launch_record_from_call(jit_fn, args, kwargs, grid=None, options=None) -> LaunchRecord`
  describes one launch (called from the judge's launch hook, inside the candidate process):
  argument types the way Triton itself specialises them (tensor -> '*fp32'/'*fp16'/..., int ->
  'i32'/'i64' by range, int 1 -> constexpr, float -> 'fp32', bool -> 'u1', None -> constexpr),
  tl.constexpr parameters as constexprs, divisibility-by-16 attributes, num_warps/num_stages.
  Works for a compiled `JITFunction` and for the interpreter's `InterpretedFunction`
  (TRITON_INTERPRET=1), which is rebuilt as a JITFunction (helpers it calls included).
- `compile_launched(records, target="cuda:90") -> dict` compiles each distinct
  (kernel, signature, constexprs, options) once and reports, per kernel: ok, a concise error
  naming the kernel, registers, shared memory, spills (from the cubin via the bundled cuobjdump,
  ptxas -v when spilling is suspected). A kernel over the target's shared memory per block
  (sm_90: 232448 bytes) or over 255 registers per thread is rejected.
- `parse_target("cuda:90") -> GPUTarget`.

Imports: torch is not needed here; triton and the standard library only. Under TRITON_INTERPRET=1,
importing this module applies `triton_compat.apply_interpreter_fixes()` (the interpreter otherwise
leaves triton.language patched, which breaks compiling in the same process).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

#: Dynamic shared memory a single block may use, by compute capability (bytes; CUDA programming
#: guide, "Technical Specifications per Compute Capability").
SHARED_MEMORY_LIMITS: dict[int, int] = {
    75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448,
    100: 232448, 101: 232448, 103: 232448, 110: 232448, 120: 101376, 121: 101376,
}
#: Registers one thread may use on every architecture above.
MAX_REGISTERS = 255
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


__all__ = [
    "LaunchRecord", "launch_record_from_call", "compile_launched", "compile_check", "parse_target", "signature_type",
    "as_jit_function", "shared_memory_limit", "CompileCheckError", "SHARED_MEMORY_LIMITS", "MAX_REGISTERS",
    "GUESSED_BLOCK_SIZE",
]

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
# Targets
# --------------------------------------------------------------------------------------------

_TARGET_RE = re.compile(r"^(?:cuda:)?(?:sm_?)?(\d{2,3})a?$")


def parse_target(target: str) -> Any:
    """'cuda:90' (also 'cuda:sm_90', 'sm_90a') -> triton GPUTarget('cuda', 90, 32)."""
    from triton.backends.compiler import GPUTarget

    text = (target or "").strip().lower()
    m = _TARGET_RE.match(text)
    if m is None or (not text.startswith("cuda:") and not text.startswith("sm")):
        raise CompileCheckError(
            f"bad compile target {target!r}: expected 'cuda:<compute capability>', e.g. 'cuda:90' (H100/H200), "
            f"'cuda:80' (A100), 'cuda:89' (L4/L40), 'cuda:100' (B200); set validation.target accordingly"
        )
    cc = int(m.group(1))
    if cc not in SHARED_MEMORY_LIMITS:
        raise CompileCheckError(
            f"unsupported compile target {target!r}: compute capability {cc} is not one of "
            f"{', '.join(str(c) for c in sorted(SHARED_MEMORY_LIMITS))}"
        )
    return GPUTarget("cuda", cc, 32)


def shared_memory_limit(target: Any) -> int:
    return SHARED_MEMORY_LIMITS[int(target.arch)]


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


@contextlib.contextmanager
def _compiler_view(globals_dicts: Sequence[dict]) -> Any:
    """While compiling under TRITON_INTERPRET=1: every interpreter-wrapped jit function visible to
    the code generator (kernel globals, transitively; triton.language modules; tensor member
    functions) temporarily becomes a JITFunction, as it would be without the interpreter.
    Without this, the code generator would call interpreter objects, which patch triton.language
    for the interpreter and break compilation. Everything is restored on exit."""
    import sys

    try:
        from triton.runtime.interpreter import InterpretedFunction  # noqa: F401
    except ImportError:  # pragma: no cover
        yield
        return
    changes: list[tuple[Any, str, Any, bool]] = []  # (dict or class, name, original, is_class)
    todo = [m.__dict__ for name, m in list(sys.modules.items()) if m is not None and name.startswith("triton.language")]
    todo += list(globals_dicts)
    seen: set[int] = set()
    try:
        while todo:
            d = todo.pop()
            if id(d) in seen:
                continue
            seen.add(id(d))
            for name, value in list(d.items()):
                if _is_interpreted(value):
                    changes.append((d, name, value, False))
                    d[name] = _jit_from_interpreted(value)
                    todo.append(value.fn.__globals__)
        import triton.language as tl

        for cls in (tl.core.tensor,):
            for name, value in list(vars(cls).items()):
                inner = value if _is_interpreted(value) else _wrapped_interpreted(value)
                if inner is not None:
                    changes.append((cls, name, value, True))
                    setattr(cls, name, _jit_from_interpreted(inner))
                    if id(inner.fn.__globals__) not in seen:
                        todo.append(inner.fn.__globals__)
        while todo:  # globals reached through tensor members
            d = todo.pop()
            if id(d) in seen:
                continue
            seen.add(id(d))
            for name, value in list(d.items()):
                if _is_interpreted(value):
                    changes.append((d, name, value, False))
                    d[name] = _jit_from_interpreted(value)
                    todo.append(value.fn.__globals__)
        yield
    finally:
        for target, name, original, is_class in reversed(changes):
            if is_class:
                setattr(target, name, original)
            else:
                target[name] = original


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


# --------------------------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------------------------


def compile_launched(records: Sequence[LaunchRecord], target: str = "cuda:90", *, max_variants: int = 32) -> dict[str, Any]:
    """Compile each distinct launched kernel for `target`; report per kernel.

    Returns {"target", "arch", "ok", "error", "n_variants", "n_skipped", "kernels": {name: {
    "ok", "error", "n_regs", "shared", "spill_stores", "spill_loads", "local_bytes", "compile_s",
    "variants": [...]}}}. `ok` is False when any variant failed to compile, uses more shared
    memory than the target allows per block, or more than 255 registers per thread.
    """
    gpu = parse_target(target)
    limit = shared_memory_limit(gpu)
    distinct: dict[tuple, LaunchRecord] = {}
    for r in records:
        if isinstance(r, LaunchRecord):
            distinct.setdefault(r.dedup_key(), r)
    todo = list(distinct.values())
    skipped = max(0, len(todo) - max_variants)
    todo = todo[:max_variants]
    kernels: dict[str, dict[str, Any]] = {}
    variants = []
    view = _compiler_view([r.fn.fn.__globals__ for r in todo]) if (len(_JIT_CACHE) or _interpret_mode()) else contextlib.nullcontext()
    with view:
        for rec in todo:
            variants.append((rec, _compile_one(rec, gpu, limit)))
    for rec, variant in variants:
        entry = kernels.setdefault(rec.kernel_name, {
            "ok": True, "error": None, "n_regs": None, "shared": None, "spill_stores": None, "spill_loads": None,
            "local_bytes": None, "compile_s": 0.0, "variants": [],
        })
        entry["variants"].append(variant)
        entry["compile_s"] = round(entry["compile_s"] + variant["compile_s"], 4)
        if not variant["ok"]:
            entry["ok"] = False
            entry["error"] = entry["error"] or variant["error"]
        for k in ("n_regs", "shared", "spill_stores", "spill_loads", "local_bytes"):
            if variant.get(k) is not None:
                entry[k] = max(entry[k] or 0, variant[k])
    first_error = next((e["error"] for e in kernels.values() if not e["ok"]), None)
    return {
        "target": f"cuda:{gpu.arch}", "arch": f"sm_{gpu.arch}", "ok": first_error is None, "error": first_error,
        "n_variants": len(todo), "n_skipped": skipped, "shared_limit": limit, "kernels": kernels,
    }


def _compile_one(rec: LaunchRecord, gpu: Any, limit: int) -> dict[str, Any]:
    import triton
    from triton.compiler import ASTSource

    out: dict[str, Any] = rec.to_dict()
    out.update({"ok": False, "error": None, "n_regs": None, "shared": None, "spill_stores": None,
                "spill_loads": None, "local_bytes": None, "stack_bytes": None})
    t0 = time.perf_counter()
    options = {"num_warps": rec.num_warps, "num_stages": rec.num_stages, **rec.options}
    sink = io.StringIO()
    try:
        src = ASTSource(fn=rec.fn, signature=rec.signature, constexprs=rec.constexpr_paths, attrs=rec.attrs)
        # make_cubin prints the whole PTX to stdout when ptxas fails: keep it out of the candidate's output
        with contextlib.redirect_stdout(sink):
            compiled = triton.compile(src, target=gpu, options=options)
    except Exception as exc:  # noqa: BLE001 - every compiler failure becomes a report entry
        out["error"] = _concise_error(rec.kernel_name, gpu, exc, rec.fn)
        out["compile_s"] = round(time.perf_counter() - t0, 4)
        return out
    shared = int(getattr(compiled.metadata, "shared", 0) or 0)
    out["shared"] = shared
    usage = _resource_usage(compiled, gpu)
    out.update(usage)
    out["compile_s"] = round(time.perf_counter() - t0, 4)
    problems = []
    if shared > limit:
        problems.append(
            f"needs {shared} bytes of shared memory per block, over sm_{gpu.arch}'s limit of {limit} "
            f"({limit // 1024} KiB); lower its block sizes or num_stages"
        )
    if out.get("n_regs") is not None and out["n_regs"] > MAX_REGISTERS:
        problems.append(f"uses {out['n_regs']} registers per thread, over the limit of {MAX_REGISTERS}")
    if problems:
        out["error"] = f"kernel {rec.kernel_name} " + "; ".join(problems)
    else:
        out["ok"] = True
    return out


def _source_line(jit: Any, kernel_line: int) -> int | None:
    """Line in the candidate's file of line `kernel_line` of a kernel (1 = its def line)."""
    raw = getattr(jit, "raw_src", None)
    start = getattr(jit, "starting_line_number", None)
    if not raw or not isinstance(start, int):
        return None
    for i, text in enumerate(raw):
        if text.lstrip().startswith("def "):
            return start + i + kernel_line - 1
    return None


def _concise_error(kernel: str, gpu: Any, exc: BaseException, jit: Any = None) -> str:
    """One or two lines: the kernel, where, and what — never the whole traceback or PTX."""
    kind = type(exc).__name__
    msg = getattr(exc, "error_message", None)
    node = getattr(exc, "node", None)
    if msg is not None or node is not None:  # triton CompilationError
        where = ""
        if node is not None and hasattr(node, "lineno"):
            src_lines = (getattr(exc, "src", None) or "").split("\n")
            line = src_lines[node.lineno - 1].strip() if 0 < node.lineno <= len(src_lines) else ""
            file_line = _source_line(jit, node.lineno)
            where = (f" at line {file_line} (kernel line {node.lineno})" if file_line else f" at kernel line {node.lineno}")
            where += f" `{line[:80]}`" if line else ""
        detail = (msg or "").strip().splitlines()
        detail_text = " ".join(d.strip() for d in detail[:3])[:400] if detail else ""
        cause = exc.__cause__
        if not detail_text and cause is not None:
            detail_text = f"{type(cause).__name__}: {str(cause).strip().splitlines()[0][:400] if str(cause).strip() else ''}"
        return f"kernel {kernel} failed to compile for sm_{gpu.arch}{where}: {kind}: {detail_text}".rstrip(": ")
    text = str(exc).strip()
    if "ptxas" in text.lower():
        errs = [ln.strip() for ln in text.splitlines() if "error" in ln.lower() and "repro" not in ln.lower()]
        text = " ".join(errs[:3]) or text.splitlines()[0]
    else:
        text = " ".join(text.splitlines()[:2])
    return f"kernel {kernel} failed to compile for sm_{gpu.arch}: {kind}: {text[:500]}"


_RESOURCE_RE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
_SPILL_RE = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS_RE = re.compile(r"Used (\d+) registers")


def _tool(name: str) -> str | None:
    try:
        import triton.backends.nvidia as nv

        path = os.path.join(os.path.dirname(nv.__file__), "bin", name)
        return path if os.access(path, os.X_OK) else None
    except ImportError:  # pragma: no cover
        return None


def _resource_usage(compiled: Any, gpu: Any) -> dict[str, Any]:
    """Registers / local memory from the cubin (bundled cuobjdump); exact spills from ptxas -v
    only when local memory suggests spilling. Missing tools leave the fields None."""
    out: dict[str, Any] = {}
    cubin = compiled.asm.get("cubin") if hasattr(compiled, "asm") else None
    cuobjdump = _tool("cuobjdump")
    if not cubin or cuobjdump is None:
        return out
    with tempfile.TemporaryDirectory(prefix="autotriton-cc-") as tmp:
        path = os.path.join(tmp, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            res = subprocess.run([cuobjdump, "--dump-resource-usage", path], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return out
        m = _RESOURCE_RE.search(res.stdout)
        if m is None:
            return out
        out["n_regs"], out["stack_bytes"], static_shared, out["local_bytes"] = (int(g) for g in m.groups())
        out["spill_stores"], out["spill_loads"] = 0, 0
        if out["local_bytes"] or out["stack_bytes"]:
            out.update(_ptxas_spills(compiled, gpu, tmp))
    return out


def _ptxas_spills(compiled: Any, gpu: Any, tmp: str) -> dict[str, Any]:
    ptx = compiled.asm.get("ptx")
    try:
        from triton.backends.nvidia.compiler import get_ptxas, sm_arch_from_capability

        ptxas = get_ptxas(gpu.arch).path
        arch = sm_arch_from_capability(gpu.arch)
    except Exception:  # noqa: BLE001
        return {}
    if not ptx:
        return {}
    src = os.path.join(tmp, "k.ptx")
    with open(src, "w") as f:
        f.write(ptx)
    try:
        res = subprocess.run([ptxas, "-v", f"--gpu-name={arch}", src, "-o", os.path.join(tmp, "k.o")],
                             capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return {}
    m = _SPILL_RE.search(res.stderr)
    return {"spill_stores": int(m.group(1)), "spill_loads": int(m.group(2))} if m else {}


# --------------------------------------------------------------------------------------------
# Static entry point: compile a candidate's kernels straight from its source
# --------------------------------------------------------------------------------------------

#: Modules whose imports are kept when a candidate's kernels are loaded on their own.
_KERNEL_IMPORT_PREFIXES = ("triton", "math", "torch._inductor.runtime.triton_helpers", "torch._inductor.runtime.triton_compat")
#: Scalar parameter names that are floats by convention (the rest default to i32).
_FLOAT_PARAM_HINTS = re.compile(
    r"^(eps|epsilon|alpha|beta|gamma_val|scale|scaling|momentum|slope|negative_slope|lambd|lambda_|threshold|"
    r"min_val|max_val|margin|delta|temperature|dropout_p|p|value|fill_value|inv_.*|.*_scale|.*_eps|.*_alpha|.*_beta)$"
)
#: Block size assumed for a constexpr computed at run time (e.g. triton.next_power_of_2(n)).
GUESSED_BLOCK_SIZE = 64
_POINTER_FUNCS = ("load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
                  "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor")


def compile_check(candidate_source: str, target: str = "cuda:90", *, launches: Sequence[LaunchRecord] | None = None,
                  max_variants: int = 32) -> dict[str, Any]:
    """Compile every launched @triton.jit kernel of a candidate for `target`, from its source alone.

    With `launches` (LaunchRecords recorded while the candidate ran) this is `compile_launched`.
    Without, nothing of the candidate runs: its kernels (plus the triton/math imports and literal
    module constants they read, with decorators, annotations and defaults reduced to literals) are
    loaded on their own, and each kernel launched in the source (`kernel[grid](...)`) is compiled
    with an inferred signature: pointer parameters (the bases of tl.load/tl.store addresses)
    '*fp32', float-named scalars ('eps', 'alpha', ...) or float literals at the launch 'fp32',
    other scalars 'i32'; constexprs from literal launch arguments, module constants, defaults or
    the first triton.Config; a block size computed at run time (used as a tl.arange bound or a
    tl.zeros shape) is guessed as GUESSED_BLOCK_SIZE and listed under "guessed"; a kernel with
    another constexpr of unknown value is listed under "skipped". Inferred signatures are an
    approximation (dtypes above all): the launch-recorded path is the authoritative one. The
    report is `compile_launched`'s plus "signature_source" ("launch" or "inferred"), "skipped",
    "guessed" and "kernels_found".
    """
    import ast

    if launches is not None:
        report = compile_launched(launches, target=target, max_variants=max_variants)
        report.update(signature_source="launch", skipped={}, guessed={}, kernels_found=sorted({r.kernel_name for r in launches}))
        return report
    gpu = parse_target(target)  # fail early on a bad target, before touching the source
    try:
        tree = ast.parse(candidate_source)
    except SyntaxError as e:
        raise CompileCheckError(f"candidate source line {e.lineno}: syntax error: {e.msg}") from None
    plan = _StaticPlan(tree, candidate_source)
    if not plan.kernels:
        return {"target": f"cuda:{gpu.arch}", "arch": f"sm_{gpu.arch}", "ok": True, "error": None, "n_variants": 0,
                "n_skipped": 0, "shared_limit": shared_memory_limit(gpu), "kernels": {}, "signature_source": "inferred",
                "skipped": {}, "guessed": {}, "kernels_found": []}
    with tempfile.TemporaryDirectory(prefix="autotriton-kernels-") as tmp:
        module = plan.load(tmp)
        records: list[LaunchRecord] = []
        skipped: dict[str, str] = {}
        guesses: dict[str, list[str]] = {}
        for name, variants in plan.variants().items():
            jit = as_jit_function(getattr(module, name))
            for v in variants:
                if isinstance(v, str):
                    skipped[name] = v
                    continue
                signature, constexprs, num_warps, num_stages, guessed = v
                names = [p.name for p in jit.params]
                records.append(LaunchRecord(
                    kernel_name=name, fn=jit, signature=signature, constexprs=constexprs,
                    num_warps=num_warps, num_stages=num_stages,
                    constexpr_paths={(names.index(k),): val for k, val in constexprs.items()},
                ))
                if guessed:
                    guesses.setdefault(name, sorted(set(guesses.get(name, [])) | set(guessed)))
        try:
            report = compile_launched(records, target=target, max_variants=max_variants)
        finally:
            sys.modules.pop(module.__name__, None)
    report.update(signature_source="inferred", skipped=skipped, kernels_found=sorted(plan.kernels), guessed=guesses)
    return report


class _StaticPlan:
    """What compile_check needs from a candidate's AST: kernels, constants, launch sites."""

    def __init__(self, tree: Any, source: str):
        import ast

        self.ast = ast
        self.tree = tree
        self.lines = source.splitlines()
        self.aliases: dict[str, str] = {}
        self.constants: dict[str, Any] = {}
        self.kernels: dict[str, Any] = {}  # name -> FunctionDef
        self.configs: dict[str, list[dict[str, Any]]] = {}  # kernel -> literal triton.Config dicts
        self.imports: list[Any] = []
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self._import(node)
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = self._literal(node.value)
                if value is not _NO_VALUE:
                    self.constants[node.targets[0].id] = value
            elif isinstance(node, ast.FunctionDef) and self._is_kernel(node):
                self.kernels[node.name] = node
        self.launches = self._launch_sites()

    # ---- names ---------------------------------------------------------------------------------
    def _import(self, node: Any) -> None:
        ast = self.ast
        if isinstance(node, ast.Import):
            kept = [a for a in node.names if a.name.startswith(_KERNEL_IMPORT_PREFIXES)]
            for a in kept:
                self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            if kept:
                self.imports.append(ast.Import(names=kept))
        elif node.module and not node.level:
            kept = [a for a in node.names if f"{node.module}.{a.name}".startswith(_KERNEL_IMPORT_PREFIXES)]
            for a in kept:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            if kept:
                self.imports.append(ast.ImportFrom(module=node.module, names=kept, level=0))

    def _dotted(self, node: Any) -> str | None:
        ast = self.ast
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        head, *rest = list(reversed(parts))
        head = self.aliases.get(head, head)
        return ".".join([head, *rest])

    def _literal(self, node: Any) -> Any:
        ast = self.ast
        if isinstance(node, ast.Call) and self._dotted(node.func) in ("triton.language.constexpr", "triton.language.core.constexpr") and len(node.args) == 1:
            node = node.args[0]
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return _NO_VALUE
        return value if isinstance(value, (int, float, bool, str)) or value is None else _NO_VALUE

    def _is_kernel(self, fn: Any) -> bool:
        ast = self.ast
        is_jit = False
        for dec in fn.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            name = self._dotted(target) or ""
            if name in ("triton.jit", "triton.runtime.jit.jit"):
                is_jit = True
            elif name in ("triton.autotune", "triton.runtime.autotune") and isinstance(dec, ast.Call):
                self.configs[fn.name] = self._configs(dec)
        return is_jit

    def _configs(self, dec: Any) -> list[dict[str, Any]]:
        ast = self.ast
        nodes = list(dec.args[:1]) + [k.value for k in dec.keywords if k.arg == "configs"]
        out = []
        for seq in nodes:
            if not isinstance(seq, (ast.List, ast.Tuple)):
                continue
            for call in seq.elts:
                if not (isinstance(call, ast.Call) and (self._dotted(call.func) or "").endswith("Config") and call.args):
                    continue
                kwargs = self._literal(call.args[0]) if not isinstance(call.args[0], ast.Dict) else None
                cfg: dict[str, Any] = {}
                if isinstance(call.args[0], ast.Dict):
                    for k, v in zip(call.args[0].keys, call.args[0].values):
                        key, val = self._literal(k) if k is not None else _NO_VALUE, self._literal(v)
                        if isinstance(key, str) and val is not _NO_VALUE:
                            cfg[key] = val
                elif isinstance(kwargs, dict):
                    cfg.update(kwargs)
                for kw in call.keywords:
                    val = self._literal(kw.value)
                    if kw.arg in ("num_warps", "num_stages") and isinstance(val, int):
                        cfg["__" + kw.arg] = val
                out.append(cfg)
        return out

    # ---- launch sites --------------------------------------------------------------------------
    def _launch_sites(self) -> dict[str, list[Any]]:
        """kernel -> launch calls; each call's enclosing function's single literal assignments
        (`num_stages = 2` before `kernel[grid](..., num_stages=num_stages)`) are kept in self.site_env."""
        ast = self.ast
        sites: dict[str, list[Any]] = {}
        self.site_env: dict[int, dict[str, Any]] = {}
        scopes = [self.tree] + [n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for scope in scopes:
            env: dict[str, Any] = {}
            counts: dict[str, int] = {}
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            counts[t.id] = counts.get(t.id, 0) + 1
                            env[t.id] = self._literal(node.value)
            env = {k: v for k, v in env.items() if counts[k] == 1 and v is not _NO_VALUE}
            for node in ast.walk(scope):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name):
                    if node.func.value.id in self.kernels:
                        if id(node) not in self.site_env:
                            sites.setdefault(node.func.value.id, []).append(node)
                        if scope is not self.tree or id(node) not in self.site_env:
                            self.site_env[id(node)] = env  # the innermost scope is walked last
        return sites

    def _site_value(self, site: Any, node: Any) -> Any:
        value = self._literal(node)
        if value is _NO_VALUE and isinstance(node, self.ast.Name):
            value = self.site_env.get(id(site), {}).get(node.id, _NO_VALUE)
        return value

    def variants(self) -> dict[str, list[Any]]:
        """kernel -> [(signature, constexprs, num_warps, num_stages) | reason it is skipped]."""
        launched = set(self.launches)
        if not launched:  # no launch in the source: compile the kernels no other kernel calls
            called = {n.func.id for k in self.kernels.values() for n in self.ast.walk(k)
                      if isinstance(n, self.ast.Call) and isinstance(n.func, self.ast.Name)}
            launched = {k for k in self.kernels if k not in called}
        out: dict[str, list[Any]] = {}
        for name in sorted(launched):
            fn = self.kernels[name]
            sites = self.launches.get(name) or [None]
            configs = self.configs.get(name) or [{}]
            for site in sites:
                out.setdefault(name, []).append(self._variant(fn, site, configs[0]))
        return out

    def _variant(self, fn: Any, site: Any, config: dict[str, Any]) -> Any:
        ast = self.ast
        params = fn.args.posonlyargs + fn.args.args
        defaults = dict(zip([p.arg for p in params][len(params) - len(fn.args.defaults):], fn.args.defaults))
        given: dict[str, Any] = {}
        options = {"num_warps": DEFAULT_NUM_WARPS, "num_stages": DEFAULT_NUM_STAGES}
        if site is not None:
            for i, arg in enumerate(site.args):
                if isinstance(arg, ast.Starred):
                    break
                if i < len(params):
                    given[params[i].arg] = self._site_value(site, arg)
            for kw in site.keywords:
                if kw.arg in ("num_warps", "num_stages"):  # an option, and a parameter too if the kernel has one
                    val = self._site_value(site, kw.value)
                    if isinstance(val, int):
                        options[kw.arg] = val
                if kw.arg is not None and (kw.arg not in ("num_warps", "num_stages") or kw.arg in {p.arg for p in params}):
                    given[kw.arg] = self._site_value(site, kw.value)
        for key in ("num_warps", "num_stages"):
            if "__" + key in config:
                options[key] = config["__" + key]
        pointers = self._pointer_params(fn)
        guessed: list[str] = []
        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        for p in params:
            ann = self._dotted(p.annotation) if p.annotation is not None else None
            is_constexpr = bool(ann and ann.endswith("constexpr")) or (isinstance(p.annotation, ast.Constant) and p.annotation.value == "constexpr")
            value = given.get(p.arg, _NO_VALUE)
            if value is _NO_VALUE and p.arg in config:
                value = config[p.arg]
            if value is _NO_VALUE and p.arg in defaults:
                value = self._literal(defaults[p.arg])
            if is_constexpr:
                if value is _NO_VALUE:
                    if p.arg not in self._block_params(fn):
                        return f"constexpr {p.arg} has no value in the source (computed at run time); compile from recorded launches instead"
                    value = GUESSED_BLOCK_SIZE
                    guessed.append(p.arg)
                signature[p.arg] = "constexpr"
                constexprs[p.arg] = value
            elif p.arg in pointers:
                signature[p.arg] = "*fp32"
            elif isinstance(value, bool) or value is None and p.arg in given:
                signature[p.arg] = "constexpr" if value is None else "u1"
                if value is None:
                    constexprs[p.arg] = None
            elif isinstance(value, float) or (value is _NO_VALUE and _FLOAT_PARAM_HINTS.match(p.arg)):
                signature[p.arg] = "fp32"
            elif isinstance(value, int) and value == 1:
                signature[p.arg] = "constexpr"
                constexprs[p.arg] = 1
            elif isinstance(value, int) and not -(2**31) <= value < 2**31:
                signature[p.arg] = "i64"
            else:
                signature[p.arg] = "i32"
        return signature, constexprs, options["num_warps"], options["num_stages"], guessed

    def _block_params(self, fn: Any) -> set[str]:
        """Parameters used as tl.arange bounds or tl.zeros/tl.full shape entries."""
        ast = self.ast
        out: set[str] = set()
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            name = self._dotted(node.func) or ""
            if name == "triton.language.arange":
                out.update(a.id for a in node.args if isinstance(a, ast.Name))
            elif name in ("triton.language.zeros", "triton.language.full") and node.args:
                shape = node.args[0]
                elts = shape.elts if isinstance(shape, (ast.Tuple, ast.List)) else [shape]
                out.update(e.id for e in elts if isinstance(e, ast.Name))
        return out

    def _pointer_params(self, fn: Any) -> set[str]:
        """Parameters that are the base of an address given to tl.load/tl.store/atomics/block pointers
        (followed through local assignments), or whose `.dtype` is read."""
        ast = self.ast
        params = {p.arg for p in fn.args.posonlyargs + fn.args.args}
        assigns: dict[str, list[Any]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        assigns.setdefault(t.id, []).append(node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
                assigns.setdefault(node.target.id, []).append(node.value)
        roots: list[Any] = []
        found: set[str] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                name = self._dotted(node.func) or ""
                if name.rsplit(".", 1)[-1] in _POINTER_FUNCS and name.startswith("triton.language"):
                    if node.args:
                        roots.append(node.args[0])
                    roots += [k.value for k in node.keywords if k.arg in ("pointer", "base", "ptr")]
            elif isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name) and node.value.id in params:
                found.add(node.value.id)
        seen: set[str] = set()
        while roots:
            expr = roots.pop()
            for term in self._additive_terms(expr):
                if isinstance(term, ast.Name):
                    if term.id in params:
                        found.add(term.id)
                    elif term.id in assigns and term.id not in seen:
                        seen.add(term.id)
                        roots += assigns[term.id]
        return found

    def _additive_terms(self, expr: Any) -> list[Any]:
        """The operands of a chain of +/- (through parentheses, subscripts like ptrs[:, None] and tl.where)."""
        ast = self.ast
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            return self._additive_terms(expr.left) + self._additive_terms(expr.right)
        if isinstance(expr, ast.Subscript):
            return self._additive_terms(expr.value)
        if isinstance(expr, ast.Call) and (self._dotted(expr.func) or "").startswith("triton.language") and expr.args:
            name = (self._dotted(expr.func) or "").rsplit(".", 1)[-1]
            if name == "where" and len(expr.args) == 3:
                return self._additive_terms(expr.args[1]) + self._additive_terms(expr.args[2])
            if name in ("broadcast_to", "reshape", "view", "expand_dims", "multiple_of", "max_contiguous", "advance"):
                return self._additive_terms(expr.args[0])
        return [expr]

    # ---- loading ---------------------------------------------------------------------------------
    def load(self, directory: str) -> Any:
        """Import a module holding only the kernels, their imports and literal constants."""
        import importlib.util
        import sys
        import uuid

        ast = self.ast
        lines = [""] * len(self.lines)

        def put(lineno: int, text: str) -> None:
            while len(lines) < lineno:
                lines.append("")
            lines[lineno - 1] = text

        header: list[str] = []
        for imp in self.imports:
            header.append(ast.unparse(imp))
        for name, value in self.constants.items():
            header.append(f"{name} = {value!r}")
        for fn in self.kernels.values():
            body_start = fn.body[0].lineno
            params = []
            for p in fn.args.posonlyargs + fn.args.args:
                ann = self._dotted(p.annotation) if p.annotation is not None else None
                constexpr = bool(ann and ann.endswith("constexpr")) or (isinstance(p.annotation, ast.Constant) and p.annotation.value == "constexpr")
                params.append(f"{p.arg}: 'constexpr'" if constexpr else p.arg)
            # the def line sits right above the body so kernel line numbers match the candidate's
            for ln in range(fn.lineno, body_start):
                put(ln, "")
            put(body_start - 1, f"def {fn.name}({', '.join(params)}):")
            for ln in range(body_start, fn.end_lineno + 1):
                put(ln, self.lines[ln - 1])
        jit_lines = [f"{name} = triton.jit({name})" for name in self.kernels]
        text = "\n".join(lines) + "\n\nimport triton\n" + "\n".join(jit_lines) + "\n"
        prelude = "\n".join(header)
        # the prelude goes on line 1 only if it fits in lines nobody uses; else after everything
        # (constants are read at compile time, not at definition time, so order does not matter)
        text = text + "\n" + prelude + "\n"
        name = f"autotriton_kernels_{uuid.uuid4().hex[:12]}"
        path = os.path.join(directory, f"{name}.py")
        with open(path, "w") as f:
            f.write(text)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001
            raise CompileCheckError(f"the candidate's kernels cannot be loaded on their own: {type(exc).__name__}: {exc}") from None
        return module


_NO_VALUE = object()

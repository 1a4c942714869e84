"""Compiling recorded launches for a real GPU target, and the resource report: `compile_launched`.

Each distinct (kernel, signature, constexprs, options) of a list of `LaunchRecord`s
(compile_launch.py) is compiled once through `triton.compile` and the ptxas bundled in the
wheel, no GPU needed; per kernel: ok, a concise error naming the kernel, registers, shared
memory, spills (cuobjdump on the cubin, ptxas -v when spilling is suspected). Over the target's
shared memory per block or over 255 registers per thread is a failure. `parse_target` turns
'cuda:90' into Triton's GPUTarget. Triton and the standard library only.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import tempfile
import time
from typing import Any, Sequence

from autotriton.validation.compile_launch import (_JIT_CACHE, CompileCheckError, LaunchRecord, _interpret_mode, _is_interpreted,
                                                  _jit_from_interpreted, _wrapped_interpreted)

#: Dynamic shared memory a single block may use, by compute capability (bytes; CUDA programming
#: guide, "Technical Specifications per Compute Capability").
SHARED_MEMORY_LIMITS: dict[int, int] = {
    75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448,
    100: 232448, 101: 232448, 103: 232448, 110: 232448, 120: 101376, 121: 101376,
}
#: Registers one thread may use on every architecture above.
MAX_REGISTERS = 255


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

"""Turn Inductor's generated output code into a clean, standalone Triton candidate (`ModelNew`).

Input: a capture from `distillation/inductor_capture.py` (the output code module Inductor wrote,
what each graph input is, the launch configs autotuning chose) and the problem's reference source.
Output: one Python module that imports `torch`, `torch.nn`, `triton` and `triton.language`
(plus `triton.language.extra.libdevice` for the few math functions with no `tl` equivalent, and
whatever of the reference's own imports its class needs) and defines:

- every `@triton.jit` kernel Inductor generated, renamed after the ops it fuses
  (`triton_poi_fused_add_relu_0` -> `add_relu_kernel`), with the `@triton_heuristics.*`
  decorators dropped, `triton_helpers.maximum/minimum/max2/min2` rewritten to `tl.maximum`,
  `tl.minimum`, `tl.max`, `tl.min`, other helpers (welford, argmax combine, ...) inlined from
  Inductor's helper library as plain `@triton.jit` functions, `libdevice`/`tl_math` calls
  rewritten to `tl` where an equivalent exists, and assignments nobody reads removed;
- `ModelNew`: built from the reference's own source by inductor_module.py (its imports,
  helpers and submodule classes, `__init__` and the methods it calls, forward's full signature;
  the same parameters and buffers by name and shape, so the judge can load the reference
  weights), with a `forward` that is Inductor's `call()` rewritten: buffers from
  `torch.empty_strided`, views from `Tensor.as_strided`, and each kernel launched as
  `kernel[grid](..., XBLOCK=..., num_warps=..., num_stages=...)` with the chosen config baked in
  and the grid computed in Python with plain integer ceil-divisions (inductor_forward.py says why).

Output that still needs Inductor's runtime is refused with a reason, never half converted:
`extern_kernels` (cuBLAS/cuDNN calls), `aten_fallback` (an ATen op Inductor did not generate),
`graph_breaks`, `unsupported_grid`, `unsupported_call`, `unknown_graph_input`, `name_conflict`, ... Pure text/AST
work: standard library only, so it runs and is tested on machines without a GPU.

The steps, one file each (the public names stay importable from here):
    inductor_kernels.py   reading the output code: kernels parsed, renamed, rewritten to plain tl; call()
    inductor_forward.py   call() -> forward(): buffers, views, launches with baked configs; its refusals
    inductor_module.py    ModelNew's class and module-level statements, from the reference's source
    inductor_carried.py   the source's classes it carries over (bases, submodule classes, parametrizations)
    inductor_convert.py   (this file) assembling the candidate module, `convert_capture`
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConversionResult", "ConversionError", "convert_capture", "convert_output_code", "readable_kernel_name"]


def _sibling(module: str) -> Any:
    """autotriton.distillation.<module>; loaded from its file when the package's __init__ needs
    more than this machine has (a bare GPU image: benchmarks/inductor_l1.py loads this file so)."""
    import sys
    from pathlib import Path

    try:
        return importlib.import_module(f"autotriton.distillation.{module}")
    except ImportError:
        name = f"autotriton.distillation.{module}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{module}.py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod


_sibling("inductor_carried")  # the source's classes ModelNew carries over, which inductor_module imports
_module = _sibling("inductor_module")  # ModelNew's class and module-level statements
ConversionError = _module.ConversionError
# The converter's steps, loaded the same way and in this order: each imports the ones before it,
# which sys.modules then holds even where the package's __init__ cannot be imported.
_sibling("inductor_kernels")
_sibling("inductor_forward")
_sibling("inductor_eager")  # step 0 of the pruning, which inductor_prune imports
_prune = _sibling("inductor_prune")  # what only the reference forward needed and the rules forbid

from autotriton.distillation.inductor_forward import _convert_call, _rank_generic_sizes, _rename_sizes  # noqa: E402
from autotriton.distillation.inductor_kernels import (  # noqa: E402
    _HELPER_RENAMES, _find_call, _find_kernels, _inductor_helpers, _inline_single_use, _KernelRewriter, renumber,
    _remove_dead_assignments, name_size_params, readable_kernel_name,
)


@dataclass
class ConversionResult:
    ok: bool
    code: str = ""
    reason: str | None = None  # stable failure category (None when ok)
    detail: str = ""
    kernels: list[str] = field(default_factory=list)  # readable kernel names, launch order
    notes: list[str] = field(default_factory=list)  # e.g. "libdevice kept: pow"

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "reason": self.reason, "detail": self.detail, "kernels": self.kernels, "notes": self.notes}


HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"


def convert_output_code(
    output_code: str,
    reference_source: str,
    graph_inputs: list[dict[str, Any]],
    *,
    kernel_configs: dict[str, dict[str, Any]] | None = None,
    output: dict[str, Any] | None = None,
    captured_inputs: list[Any] | None = None,
    state_names: list[str] | None = None,
    forward_signature: list[Any] | None = None,
) -> ConversionResult:
    """Convert one Inductor output module into a standalone ModelNew (never raises).
    `captured_inputs`: the capture's `input_shapes` (shapes of tensors, reprs of other values
    forward was called with), for the guards on values the graph was specialised on.
    `state_names`: every parameter and buffer name of the captured model (None: unknown), so that
    reference code holding no state, which the rules forbid, can be left out (inductor_prune.py).
    `forward_signature`: the captured forward's parameters, for a Model whose forward is a torch
    layer's (inductor_module.reference_model)."""
    notes: list[str] = []
    try:
        code, kernels = _convert(output_code, reference_source, graph_inputs, kernel_configs or {}, output, notes,
                                 captured_inputs or [], state_names, forward_signature)
    except ConversionError as exc:
        return ConversionResult(ok=False, reason=exc.reason, detail=exc.detail, notes=notes)
    except (SyntaxError, ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        return ConversionResult(ok=False, reason="converter_error", detail=f"{type(exc).__name__}: {exc}", notes=notes)
    return ConversionResult(ok=True, code=code, kernels=kernels, notes=notes)


def _convert(output_code: str, reference_source: str, graph_inputs: list[dict[str, Any]],
             configs: dict[str, dict[str, Any]], output: dict[str, Any] | None, notes: list[str],
             captured_inputs: list[Any], state_names: list[str] | None = None,
             forward_signature: list[Any] | None = None) -> tuple[str, list[str]]:
    try:
        module = ast.parse(output_code)
    except SyntaxError as exc:
        raise ConversionError("parse_error", f"output code does not parse: {exc}") from exc
    kernels = _find_kernels(module)
    call = _find_call(module)
    ref = _module.reference_model(reference_source, forward_signature)
    ref.state_names = set(state_names) if state_names is not None else None
    # unique readable names, none shadowing a module-level name of the reference
    taken = set(ref.top_level)
    for k in kernels.values():
        base, n = k.name, 0
        while k.name in taken:
            n += 1
            k.name = base.replace("_kernel", f"_{n}_kernel")
        taken.add(k.name)
    forward_body, launched = _convert_call(call, kernels, graph_inputs, ref, output, configs, notes)
    forward_fn = ast.FunctionDef(name="forward", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                                 kw_defaults=[], defaults=[]), body=forward_body, decorator_list=[], lineno=0)
    _remove_dead_assignments(forward_fn)
    _rename_sizes(forward_fn)
    ranks = {}
    for desc in graph_inputs:
        expr = ref.graph_input_expr(desc) if desc.get("kind") == "input" and "shape" in desc else None
        if isinstance(expr, ast.Name):
            ranks[expr.id] = len(desc["shape"])
    _rank_generic_sizes(forward_fn, ranks)
    forward_src = "\n".join(ast.unparse(s) for s in forward_fn.body)
    for k in kernels.values():  # triton_poi_fused_add_relu_0_xnumel -> add_relu_xnumel
        forward_src = forward_src.replace(f"{k.inductor_name}_", f"{k.name.removesuffix('_kernel')}_")
    forward_src = renumber(forward_src, ("buf",)) if forward_src else forward_src
    notes += _prune.prune_reference(ref, state_names, forward_src, _module.HEADER_BINDINGS)
    # only kernels actually launched are emitted
    launched_kernels = [k for k in kernels.values() if k.name in launched]
    helpers = _inductor_helpers()
    rewriter = _KernelRewriter(set(helpers))
    kernel_srcs = []
    launches: dict[str, list[list[ast.expr]]] = {}  # kernel name -> each launch's positional arguments
    for node in ast.walk(ast.parse(forward_src or "pass")):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name):
            launches.setdefault(node.func.value.id, []).append(node.args)
    for k in launched_kernels:
        fn = rewriter.visit(k.fn)
        fn.name = k.name
        _remove_dead_assignments(fn)
        _inline_single_use(fn)
        name_size_params(fn, launches.get(k.name, []))
        extra = [rewriter.visit(f) for f in k.extra_defs]
        kernel_srcs.extend(ast.unparse(f) for f in extra)
        kernel_srcs.append(renumber(ast.unparse(fn), ("tmp",)))
    forward_src = _merge_identical_kernels(kernel_srcs, forward_src)
    # helper closure (helpers may call each other)
    helper_srcs: dict[str, str] = {}
    rewriter._inside_helper = True
    pending = sorted(rewriter.needed_helpers)
    while pending:
        name = pending.pop()
        if name in helper_srcs:
            continue
        node = ast.parse(ast.unparse(helpers[name])).body[0]
        node.decorator_list = [ast.parse("triton.jit", mode="eval").body]
        node.name = _HELPER_RENAMES.get(name, name)
        before = set(rewriter.needed_helpers)
        node = rewriter.visit(node)
        helper_srcs[name] = ast.unparse(node)
        pending.extend(sorted(rewriter.needed_helpers - before - set(helper_srcs)))
    header = HEADER
    if rewriter.kept_libdevice:
        header += "from triton.language.extra import libdevice\n"
        notes.append("libdevice kept (no tl equivalent): " + ", ".join(sorted(rewriter.kept_libdevice)))
    statements = ref.module_statements(set())  # `from __future__` imports first, as Python wants them
    generated = {_HELPER_RENAMES.get(n, n) for n in helper_srcs} | {f.name for k in launched_kernels for f in k.extra_defs}
    clash = ref.conflicts(generated)
    header += _math_import(ref, forward_src, statements)
    if clash:
        raise ConversionError("name_conflict", f"the reference defines {', '.join(sorted(clash))}, "
                              "which Inductor's helpers also need as names")
    forward_lines = forward_src.splitlines() or ["pass"]
    used = _module._loaded_names(ast.parse(forward_src or "pass"))
    passed = len(captured_inputs)
    guards = ref.guards(passed, captured_inputs, used)
    if guards:
        notes.append(f"forward specialised on: {', '.join(g.split()[1] for g in guards)}")
    forward_lines = [line for g in guards for line in g.splitlines()] + forward_lines
    parts = [p for p in statements if p.startswith("from __future__")] + [header]
    parts += [p for p in statements if not p.startswith("from __future__")]
    parts += [helper_srcs[n] for n in sorted(helper_srcs, key=lambda n: _helper_order(n, helper_srcs))]
    parts += kernel_srcs
    source = "\n\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n\n\n" + ref.class_source(forward_lines)
    for banned in ("torch._inductor", "triton_helpers", "triton_heuristics", "async_compile", "extern_kernels",
                   "empty_strided_cuda", "tl_math"):
        if banned in source:
            raise ConversionError("inductor_runtime_left", f"`{banned}` still referenced after conversion")
    compile(source, "<converted>", "exec")
    return source, launched


def _math_import(ref: Any, forward_src: str, statements: list[str]) -> str:
    """`import math` for forward's size arithmetic (`math.ceil(float(s0) / 2)`, inductor_forward
    _SIZE_MATH), unless the reference's carried statements already import it; a reference that
    binds `math` to something else where forward would read it is refused."""
    if "math" not in _module._loaded_names(ast.parse(forward_src or "pass")):
        return ""
    if "math" in ref.names:
        raise ConversionError("name_conflict", "forward has a parameter named `math`; its size arithmetic needs the module")
    if "import math" in statements:
        return ""
    if "math" in ref.carried:
        raise ConversionError("name_conflict", "the reference binds `math` to something other than the math module, "
                              "which forward's size arithmetic needs")
    return "import math\n"


def _helper_order(name: str, srcs: dict[str, str]) -> tuple[int, str]:
    # helpers used by other helpers first (readability only; jit resolves names lazily)
    used_by = sum(1 for other, src in srcs.items() if other != name and re.search(rf"\b{name}\(", src))
    return (-used_by, name)


def _indent(src: str, n: int) -> str:
    return "\n".join((" " * n + line) if line.strip() else "" for line in src.splitlines())


def _forward_signature(attempt: dict[str, Any], recorded: dict[str, Any]) -> list[Any] | None:
    """The captured forward's parameters: the recorded signature, or (captures before it was
    recorded) the parameter names forward was called with, positionally."""
    for record in (attempt, recorded):
        if record.get("forward_signature"):
            return record["forward_signature"]
    names = attempt.get("forward_args") or recorded.get("forward_args")
    passed = attempt.get("input_shapes")
    if not names:
        return None
    return list(names[:len(passed)] if passed is not None else names)


def _merge_identical_kernels(kernel_srcs: list[str], forward_src: str) -> str:
    """One definition for kernels that differ only by name (a user-defined kernel Inductor wrote
    once per specialisation, e.g. a transposed convolution's phases): the later ones are dropped
    from `kernel_srcs` (in place) and their launches renamed; returns the forward's source."""
    first: dict[str, str] = {}
    for src in list(kernel_srcs):
        tree = ast.parse(src).body[0]
        if not isinstance(tree, ast.FunctionDef):
            continue
        name, tree.name = tree.name, "_"
        if not re.search(rf"\b{re.escape(name)}\[", forward_src):
            continue  # a helper the kernels call by name (`_triton_helper_fn_add0`), not a launched kernel
        body = ast.unparse(tree)
        if body not in first:
            first[body] = name
            continue
        kernel_srcs.remove(src)
        forward_src = re.sub(rf"\b{re.escape(name)}\[", f"{first[body]}[", forward_src)
    return forward_src


def convert_capture(capture: dict[str, Any], reference_source: str | None = None) -> ConversionResult:
    """Convert the best attempt of a capture record (benchmarks/inductor_l1.py format, or a single
    `capture_problem` dict). An attempt without extern kernels is preferred."""
    attempts = capture.get("attempts") or [capture]
    source = reference_source or capture.get("source")
    if source is None:
        return ConversionResult(ok=False, reason="bad_capture", detail="capture holds no reference source")
    results = []
    for att in attempts:
        if not att.get("output_codes"):
            results.append(ConversionResult(ok=False, reason="capture_failed",
                                            detail=str(att.get("error") or "no output code")[:500]))
            continue
        graphs = att.get("graphs") or []
        if len(graphs) != 1:
            results.append(ConversionResult(ok=False, reason="graph_breaks",
                                            detail=f"{len(graphs)} graphs (torch.compile split the forward)"))
            continue
        # autotuning may compile helper subgraphs; the model's own module is the last one written
        code = att.get("output_code") or att["output_codes"][-1]
        recorded = att if "parameters" in att or "buffers" in att else capture
        state = None if "parameters" not in recorded and "buffers" not in recorded else \
            [*(recorded.get("parameters") or {}), *(recorded.get("buffers") or {})]
        res = convert_output_code(code, source, graphs[0]["inputs"], kernel_configs=att.get("kernel_configs"),
                                  output=att.get("output"), captured_inputs=att.get("input_shapes"),
                                  state_names=state, forward_signature=_forward_signature(att, recorded))
        res.notes.insert(0, f"dynamic={att.get('dynamic')}")
        if res.ok:
            return res
        results.append(res)
    # the most informative failure: a conversion reason beats a capture failure
    for res in results:
        if res.reason != "capture_failed":
            return res
    return results[0] if results else ConversionResult(ok=False, reason="bad_capture", detail="no attempts")

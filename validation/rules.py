"""Static rule checks on a candidate's source (libcst): the judge's first, cheapest line of defence.

`check_rules(candidate_source) -> list[Violation]` never runs the candidate. It answers: is there a
`ModelNew(nn.Module)` whose `forward` reaches a real `kernel[grid](...)` launch, and does the code on
that path stay away from PyTorch compute, fallbacks, the reference, the judge's process and the
outside world? Every finding is a `Violation(rule, message, line)` with a stable rule id from
`RULES`; `validation/RULES.md` says what each rule catches and why.

The allowlists are plain data (`ALLOWED_IMPORTS`, `ALLOWED_TORCH_CALLS`, `ALLOWED_TENSOR_METHODS`,
`FORBIDDEN_NAMES`, ...) so the runtime anti-cheat and the docs can share them.

Design notes
- Static analysis can be fooled by sufficiently dynamic code; rules therefore also forbid the
  dynamic escape hatches themselves (getattr on modules, eval/exec, introspection, dispatcher
  subclassing). The runtime checks (launch hook, dispatch mode) are the second line.
- Types are inferred, flow-insensitively, just enough to tell tensor arithmetic (`x * y`, a
  violation) from shape arithmetic (`n = x.shape[0] * 2`, fine): `forward` arguments are tensors,
  so are results of allocations, views and tensor-valued calls; `.shape`, `.size()`, `.numel()` are
  not. Tensor-ness flows into helper functions through their call sites.
- Lines are resolved only when something is reported (PositionProvider is the slowest part of
  libcst), so correct candidates, the common case in an RL loop, pay only for parsing and one walk.

Where each part lives (all in validation/):
- `rules_tables.py`: the rule ids and messages (`RULES`) and every allow/deny list;
- `rules_cst.py`: libcst helpers (the read-only walk, dotted names, literals, parameters);
- `rules_structure.py`: the module model (`_Checker`: imports, classes, kernels, constants) and
  the reporting of violations;
- `rules_safety.py`: pass A, forbidden modules/names/builtins and monkeypatching anywhere;
- `rules_kernels.py`: pass C, Triton constraints inside kernels and on launch options;
- `rules_facts.py`, `rules_callgraph.py`, `rules_forward.py`: pass B, ModelNew.forward's call
  graph and what the code on it must not do;
- `rules_modelnew.py`: how ModelNew is defined and called (MODELNEW-CALL, REFERENCE-USE).
This file keeps the entry point and re-exports the public tables, so
`autotriton.validation.rules.<name>` works as it always did.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from autotriton.records import Violation
from autotriton.validation.rules_cst import _walk
from autotriton.validation.rules_forward import _ForwardAnalysis
from autotriton.validation.rules_kernels import _check_kernel, _resolve_stored_params, _writes_memory
from autotriton.validation.rules_modelnew import _check_call_machinery, _check_modelnew_rebinding, _report_reference_in_class
from autotriton.validation.rules_safety import _SafetyVisitor
from autotriton.validation.rules_structure import _Checker
from autotriton.validation.rules_tables import (ALLOWED_IMPORTS, ALLOWED_TENSOR_METHODS, ALLOWED_TORCH_CALLS, FORBIDDEN_ATTRIBUTES,
                                                FORBIDDEN_BARE_NAMES, FORBIDDEN_BUILTIN_CALLS, FORBIDDEN_NAMES,
                                                INDUCTOR_RUNTIME_ALLOWLIST, RULES, TENSOR_COMPUTE_METHODS, TOLERATED_IMPORTS)

__all__ = [
    "check_rules", "RULES", "ALLOWED_IMPORTS", "ALLOWED_TORCH_CALLS", "ALLOWED_TENSOR_METHODS", "TENSOR_COMPUTE_METHODS",
    "FORBIDDEN_NAMES", "FORBIDDEN_BUILTIN_CALLS", "FORBIDDEN_BARE_NAMES", "FORBIDDEN_ATTRIBUTES",
    "INDUCTOR_RUNTIME_ALLOWLIST", "TOLERATED_IMPORTS",
]


def check_rules(candidate_source: str) -> list[Violation]:
    """Static rule violations of a candidate (empty list: the source passes every rule).

    Never executes the candidate. Violations are sorted by line; each has a rule id from RULES.
    """
    # CPython first: its messages and lines are the most precise, and libcst accepts a few
    # programs CPython rejects (e.g. `return` outside a function).
    try:
        compile(candidate_source, "<candidate>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return [Violation(rule="SYNTAX", message=f"syntax error: {e.msg}", line=e.lineno)]
    except (ValueError, RecursionError, MemoryError) as e:
        return [Violation(rule="SYNTAX", message=f"the source cannot be parsed: {type(e).__name__}: {e}", line=None)]
    try:
        module = cst.parse_module(candidate_source)
    except cst.ParserSyntaxError as e:
        return [Violation(rule="SYNTAX", message=f"syntax error: {e.message}", line=e.raw_line)]
    except (RecursionError, MemoryError):
        return [Violation(rule="SYNTAX", message="the source is too deeply nested to parse", line=None)]

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    c = _Checker(module, wrapper)
    c.collect()
    for info in list(c.kernels.values()):
        _check_kernel(c, info)
    _resolve_stored_params(c)
    safety = _SafetyVisitor(c)
    _walk(module, safety)
    safety.finish()

    model = c.classes.get("ModelNew")
    if model is None:
        c.report("MODELNEW-MISSING", "no class ModelNew at module level: the judge instantiates ModelNew(*get_init_inputs())", None)
    else:
        if "Model" in model.bases:
            c.report("REFERENCE-USE", "ModelNew subclasses the reference Model", model.node)
        if not c.is_nn_module_class("ModelNew"):
            unresolved = [b for b in model.bases if "." in b and not c.is_import_rooted(b) and b.split(".")[0] not in c.classes]
            hint = f" ('{unresolved[0].split('.')[0]}' is not imported: import torch.nn as nn)" if unresolved else ""
            c.report("MODELNEW-BASE", f"ModelNew subclasses {', '.join(model.bases) or 'nothing'}, not torch.nn.Module{hint}", model.node)
        _report_reference_in_class(c, model)
    if not c.kernels:
        c.report("TRITON-NO-KERNEL", "no @triton.jit kernel is defined: the computation must run in Triton", None)
    if model is not None:
        if c.method_of("ModelNew", "forward") is None:
            c.report("MODELNEW-FORWARD", "ModelNew defines no forward method", model.node)
        else:
            launches = _ForwardAnalysis(c, model).run()
            if c.kernels and not launches:
                names = ", ".join(sorted(c.kernels))
                c.report("TRITON-NOT-LAUNCHED", f"kernel(s) {names} defined but never launched (kernel[grid](...)) from ModelNew.forward's call graph", c.method_of("ModelNew", "forward")[1])  # type: ignore[index]
            for kernel in sorted({k for k, _ in launches if k in c.kernels}):
                if not _writes_memory(c, kernel, set()):
                    c.report("TRITON-NO-STORE", f"kernel {kernel} is launched from forward but writes no memory (no tl.store or atomic): it cannot produce the output", c.kernels[kernel].node)
        _check_call_machinery(c, model)
    _check_modelnew_rebinding(c)
    return c.violations()

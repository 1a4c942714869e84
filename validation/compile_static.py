"""`compile_check(candidate_source, target)`: compile a candidate's kernels from its source alone.

Nothing of the candidate runs: its kernels (with the triton/math imports and literal constants
they read) are loaded on their own and compiled with signatures inferred from the source
(`_StaticPlan`); given recorded launches instead, it is `compile_target.compile_launched`.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from typing import Any, Sequence

from autotriton.validation.compile_launch import (DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS, CompileCheckError, LaunchRecord,
                                                  as_jit_function)
from autotriton.validation.compile_target import compile_launched, parse_target, shared_memory_limit

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

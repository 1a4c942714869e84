"""Pass B of the static rules: what ModelNew.forward and everything it reaches must not do.

`_ForwardAnalysis` (over `rules_callgraph._CallGraph`, which finds the functions and the
tensors) checks each reached function: PyTorch compute (calls, operators, indexed writes,
element-by-element host reads), silent fallbacks (try/except), results kept across calls,
the reference, uninitialised outputs; and records the kernel launches (INPUT-MUTATION,
launch options, block sizes).
"""

from __future__ import annotations

import libcst as cst

from autotriton.validation.rules_callgraph import _CallGraph, _Ctx, _Frame
from autotriton.validation.rules_cst import (_allowlisted_internal, _dotted, _eval_int, _int_literal, _is_pow2,
                                             _lambda_as_function, _NameFinder, _param_names, _params, _positional_params,
                                             _prefix_lookup, _self_attr, _str_literal, _walk)
from autotriton.validation.rules_facts import _FactCollector
from autotriton.validation.rules_kernels import _check_launch_options
from autotriton.validation.rules_tables import (_BUILTIN_TENSOR_COMPUTE, _CACHE_DECORATORS, _PY_COMMON_METHODS,
                                                ALLOWED_TENSOR_METHODS, ALLOWED_TORCH_CALLS, FORBIDDEN_NAMES,
                                                TENSOR_COMPUTE_METHODS)

_MUTATING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "__setitem__", "appendleft"})


def _string_key(target: cst.Subscript) -> bool:
    """`features["sentence_embedding"] = ...`: a key written into a dict (a forward input the
    call graph takes for a tensor), not an indexed write into a tensor, which no string indexes."""
    elements = target.slice
    return len(elements) == 1 and isinstance(elements[0].slice, cst.Index) and _str_literal(elements[0].slice.value) is not None


def _single_literals(facts: _FactCollector) -> dict[str, int]:
    counts: dict[str, int] = {}
    values: dict[str, int | None] = {}
    for target, value in facts.assigns:
        if isinstance(target, cst.Name):
            counts[target.value] = counts.get(target.value, 0) + 1
            values[target.value] = _int_literal(value)
    for aug in facts.aug:
        if isinstance(aug.target, cst.Name):
            counts[aug.target.value] = counts.get(aug.target.value, 0) + 2
    return {k: v for k, v in values.items() if counts[k] == 1 and v is not None}


class _ForwardAnalysis(_CallGraph):
    """Walks ModelNew.forward and everything it can reach; reports compute, fallbacks, launches."""

    # ---- one function ------------------------------------------------------------------------
    def analyse(self, fr: _Frame) -> None:
        facts = _FactCollector()
        _walk(fr.node.body, facts)
        for dec in fr.node.decorators:
            expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
            name = self.c.resolve_node(expr)
            if name in _CACHE_DECORATORS and fr.tensor_params:  # memoising shape arithmetic is fine
                self.c.report("RESULT-CACHE", f"{fr.key} is memoised with {name}: results would be reused across calls", dec)
        tensors = set(fr.tensor_params)
        shadowed = facts.local_params  # lambda / nested def params shadow outer names
        launchers: set[str] = set()
        # flow-insensitive tensor inference
        for _ in range(4):
            before = len(tensors) + len(launchers)
            for target, value in facts.assigns:
                if isinstance(value, cst.Subscript) and self._kernel_ref(value.value, fr) and isinstance(target, cst.Name):
                    launchers.add(target.value)
                self._bind(target, value, tensors, fr)
            for target, it in facts.for_targets:
                if self.is_tensor(it, _Ctx(fr, tensors, set())) and isinstance(target, cst.Name):
                    tensors.add(target.value)
            if len(tensors) + len(launchers) == before:
                break
        ctx = _Ctx(fr, tensors, launchers, self._input_aliases(fr, facts), _single_literals(facts))

        local_names = {t.value for t, _ in facts.assigns if isinstance(t, cst.Name)} | set(_param_names(fr.node)) | facts.local_params
        for node in facts.tries:
            self.c.report("TRY-EXCEPT", f"try statement in {fr.key}: the forward path must not catch errors (a silent fallback)", node)
        for item in facts.withs:
            expr = item.item.func if isinstance(item.item, cst.Call) else item.item
            name = self.c.resolve_node(expr)
            if name in ("contextlib.suppress",):
                self.c.report("TRY-EXCEPT", f"contextlib.suppress in {fr.key}: the forward path must not swallow errors", item)
        for g in facts.globals:
            self.c.report("RESULT-CACHE", f"global statement in {fr.key}: module state must not carry results between calls", g)

        for call in facts.calls:
            self.check_call(call, ctx)
        for op in facts.ops:
            self.check_op(op, ctx)
        for aug in facts.aug:
            if self.is_tensor(aug.target, ctx) or self.is_tensor(aug.value, ctx):
                self.c.report("TORCH-COMPUTE", f"in-place tensor arithmetic `{self._code(aug)}` in {fr.key} runs in PyTorch", aug)
        for call in facts.calls:
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value in _MUTATING_METHODS:
                base = f.value
                if (isinstance(base, cst.Name) and base.value in self.c.module_names and base.value not in local_names) or _self_attr(base):
                    self.c.report("RESULT-CACHE", f"`{self._code(call)}` in {fr.key} fills a container that outlives the call", call)
        for target, value in facts.subscript_stores:
            base = target.value
            if self._module_rooted(base, local_names):
                self.c.report("RESULT-CACHE", f"`{self._code(target)} = ...` in {fr.key} stores into the module-level '{base.value}' (results kept across calls)", target)
                continue
            if self.is_tensor(target.value, ctx) and not _string_key(target):
                self.c.report("TORCH-COMPUTE", f"indexed write `{self._code(target)} = ...` in {fr.key} runs in PyTorch; write outputs from a kernel", target)
            elif _self_attr(target.value):
                self.c.report("RESULT-CACHE", f"`{self._code(target)} = ...` in {fr.key} stores into module state during forward", target)
        if fr.node.name.value != "__init__":
            for target, value in facts.attr_stores:
                if _self_attr(target) and self.is_tensor(value, ctx) and not self._is_allocation(value):
                    self.c.report("RESULT-CACHE", f"`{self._code(target)} = {self._code(value)}` in {fr.key} keeps a tensor on the module across calls", target)
                elif self.is_tensor(target.value, ctx):
                    self.c.report("TORCH-COMPUTE", f"`{self._code(target)} = ...` in {fr.key} rebinds a tensor's storage or metadata in PyTorch", target)
                elif self._module_rooted(target, local_names):
                    self.c.report("RESULT-CACHE", f"`{self._code(target)} = ...` in {fr.key} stores on a module-level object (kept across calls)", target)
        # tensors read element by element into Python, in a comprehension or a loop that launches
        # nothing: the computation happens on the host, invisible to the dispatcher
        for call, in_comprehension, loop in facts.scalar_reads:
            target = call.func.value if isinstance(call.func, cst.Attribute) else call.args[0].value
            if not self.is_tensor(target, ctx) and not (isinstance(call.func, cst.Attribute) and in_comprehension):
                continue
            if not in_comprehension and loop is not None and any(self._is_launch(c, ctx) for c in facts.loop_calls.get(id(loop), [])):
                continue  # per-slice launches with a scalar argument
            self.c.report("TORCH-COMPUTE", f"`{self._code(call)}` in {fr.key} reads tensor elements into Python one by one (host compute)", call)
        # an uninitialised allocation returned untouched (KernelBench's result-reuse cheat)
        self._check_unwritten_outputs(fr, facts)
        # mutable default arguments outlive the call: a cache in disguise
        for p in _params(fr.node):
            if p.default is not None and isinstance(p.default, (cst.Dict, cst.List, cst.Set, cst.Call)):
                self.c.report("RESULT-CACHE", f"parameter {p.name.value} of {fr.key} has a mutable default, which persists across calls", p)
        # torch compute functions passed around instead of called (f = torch.relu; apply(F.gelu, x))
        for attr in facts.attributes:
            if id(attr) in {id(c.func) for c in facts.calls}:
                continue
            d = _dotted(attr)
            if d is None or not self.c.is_import_rooted(d):
                continue
            r = self.c.resolve(d)
            last = r.rsplit(".", 1)[-1]
            if (r.startswith("torch.nn.functional.") or r.startswith(("torch.special.", "torch.linalg.", "torch.fft."))
                    or (r.count(".") == 1 and r.startswith("torch.") and last in TENSOR_COMPUTE_METHODS)
                    or (r.startswith("torch.Tensor.") and last in TENSOR_COMPUTE_METHODS)):
                self.c.report("TORCH-COMPUTE", f"{fr.key} refers to {r}, a PyTorch compute function", attr)
        # lambdas and nested functions called with tensors: their bodies compute on those tensors
        for call in facts.calls:
            fn = call.func
            target = facts.local_defs.get(fn.value) if isinstance(fn, cst.Name) else fn if isinstance(fn, cst.Lambda) else None
            if target is None:
                continue
            tensor_args = [self.is_tensor(a.value, ctx) for a in call.args if a.keyword is None and not a.star]
            if not any(tensor_args):
                continue
            node = target if isinstance(target, cst.FunctionDef) else _lambda_as_function(target)
            params = [p.name.value for p in _positional_params(node)]
            tensors = {p for p, t in zip(params, tensor_args) if t} | ctx.tensors
            self.enqueue(f"{fr.key}.<locals>.{node.name.value}", node, fr.owner, tensors, set(fr.kernel_params))
        # references (not calls) to in-file functions and methods: they may be called indirectly
        called_funcs = {id(c.func) for c in facts.calls}
        for name in facts.names:
            if id(name) in called_funcs or name.value in shadowed:
                continue
            v = name.value
            if v == "Model" or v in ("get_inputs", "get_init_inputs"):
                self.c.report("REFERENCE-USE", f"{fr.key} uses the reference '{v}'", name)
            elif v in self.c.functions and v not in self.c.kernels:
                self.follow_function(v, [], {}, ctx, all_tensor=False)
        for attr in facts.attributes:
            if id(attr) in called_funcs:
                continue
            if isinstance(attr.value, cst.Name) and attr.value.value == "self" and fr.owner:
                m = self.c.method_of(fr.owner, attr.attr.value)
                if m is not None:
                    self.enqueue(f"{m[0]}.{attr.attr.value}", m[1], m[0], set())

    # ---- checks ------------------------------------------------------------------------------
    def _code(self, node: cst.CSTNode) -> str:
        try:
            text = self.c.module.code_for_node(node)
        except Exception:  # a synthesised node
            return "..."
        text = " ".join(text.split())
        return text if len(text) <= 60 else text[:57] + "..."

    def check_op(self, op: cst.CSTNode, ctx: "_Ctx") -> None:
        if isinstance(op, cst.BinaryOperation):
            operands = [op.left, op.right]
        elif isinstance(op, cst.UnaryOperation):
            if isinstance(op.operator, cst.Not):
                return
            operands = [op.expression]
        else:
            assert isinstance(op, cst.Comparison)
            if all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in op.comparisons):
                return
            operands = [op.left] + [t.comparator for t in op.comparisons]
        # report the outermost tensor expression only (nested operands report themselves otherwise)
        if any(self.is_tensor(o, ctx) and not isinstance(o, (cst.BinaryOperation, cst.UnaryOperation)) for o in operands):
            self.c.report("TORCH-COMPUTE", f"tensor arithmetic `{self._code(op)}` in {ctx.fr.key} runs in PyTorch; compute it in a Triton kernel", op)

    def check_call(self, call: cst.Call, ctx: "_Ctx") -> None:
        fr = ctx.fr
        func = call.func
        # launches ------------------------------------------------------------------------------
        if isinstance(func, cst.Subscript):
            k = self._kernel_ref(func.value, fr)
            if k is not None:
                if self._empty_grid(func, ctx):
                    self.c.report("TRITON-NOT-LAUNCHED", f"{k} is launched with an empty grid (a 0 dimension): no program runs", call)
                    return
                self.record_launch(k, call, ctx)
                return
        if isinstance(func, cst.Name) and func.value in ctx.launchers:
            self.launches.append((func.value, call))
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "run":
            k = self._kernel_ref(func.value, fr)
            if k is not None and any(a.keyword is not None and a.keyword.value == "grid" for a in call.args):
                self.record_launch(k, call, ctx)
                return
        if isinstance(func, cst.Call) and isinstance(func.func, cst.Name) and func.func.value == "getattr" and len(func.args) >= 2:
            attr = _str_literal(func.args[1].value)
            if attr is not None and (attr in TENSOR_COMPUTE_METHODS) and (self.is_tensor(func.args[0].value, ctx) or attr not in _PY_COMMON_METHODS):
                self.c.report("TORCH-COMPUTE", f"`{self._code(call)}` in {fr.key}: getattr(..., {attr!r}) is a PyTorch compute call", call)
            return
        callee = self.c.resolve_node(func)
        args_tensor = any(self._has_tensor(a.value, ctx) for a in call.args)
        if isinstance(func, cst.Call) and args_tensor:
            inner = self.c.resolve_node(func.func)
            if inner is not None and self.c.is_import_rooted(_dotted(func.func) or "") and not inner.startswith("triton."):
                first = func.args[0].value if func.args else None
                local_partial = inner == "functools.partial" and isinstance(first, cst.Name) and (first.value in self.c.functions or first.value in self.c.kernels)
                if not local_partial:
                    self.c.report("TORCH-COMPUTE", f"`{self._code(call)}` in {fr.key} applies what {inner}() returns to tensors", call)
            return
        # module-level names ----------------------------------------------------------------------
        if callee is not None and self.c.is_import_rooted(_dotted(func) or ""):
            self._check_library_call(callee, call, ctx, args_tensor)
            return
        if isinstance(func, cst.Name):
            name = func.value
            if name in ("Model",):
                self.c.report("REFERENCE-USE", f"{fr.key} instantiates the reference Model", call)
                return
            if name in self.c.functions and name not in self.c.kernels:
                self.follow_function(name, call.args, {}, ctx, all_tensor=False)
            elif name in self.c.classes:
                self.follow_class_call(name, call, ctx)
            elif name in _BUILTIN_TENSOR_COMPUTE and args_tensor:
                self.c.report("TORCH-COMPUTE", f"builtin {name}() over tensors in {fr.key} runs in PyTorch", call)
            elif name == "super":
                pass
            return
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        base = func.value
        # super().method(...)
        if isinstance(base, cst.Call) and isinstance(base.func, cst.Name) and base.func.value == "super" and fr.owner:
            cls = self.c.classes.get(fr.owner)
            for b in cls.bases if cls else []:
                if b == "Model":
                    self.c.report("REFERENCE-USE", f"{fr.key} calls the reference Model through super()", call)
                m = self.c.method_of(b, method)
                if m is not None:
                    self.enqueue(f"{m[0]}.{method}", m[1], m[0], self._param_tensors(m[1], call.args, skip_self=True, ctx=ctx))
            return
        # self.method(...), self.attr(...)
        if isinstance(base, cst.Name) and base.value == "self" and fr.owner:
            m = self.c.method_of(fr.owner, method)
            if m is not None:
                self.enqueue(f"{m[0]}.{method}", m[1], m[0], self._param_tensors(m[1], call.args, skip_self=True, ctx=ctx),
                             self._param_kernels(m[1], call.args, skip_self=True, fr=fr),
                             self._param_inputs(m[1], call.args, skip_self=True, ctx=ctx))
                return
            kind = self.c.class_attr(fr.owner, method) or ""
            self._call_attr_kind(kind, f"self.{method}", call, ctx)
            return
        # self.attr.method(...)
        if _self_attr(base) and fr.owner:
            kind = self.c.class_attr(fr.owner, base.attr.value) or ""  # type: ignore[union-attr]
            if kind.startswith("helper:"):
                cls = kind[7:]
                m = self.c.method_of(cls, method)
                if m is not None:
                    self.enqueue(f"{m[0]}.{method}", m[1], m[0], self._param_tensors(m[1], call.args, skip_self=True, ctx=ctx))
                return
            if kind == "torch_module":
                self.c.report("TORCH-COMPUTE", f"{fr.key} calls {self._code(func)}() of a torch.nn module", call)
                return
            if kind in ("tensor",) and method in TENSOR_COMPUTE_METHODS:
                self.c.report("TORCH-COMPUTE", f"`{self._code(call)}` in {fr.key} computes in PyTorch", call)
            return
        # LocalClass.apply(...) / LocalClass.method(...)
        if isinstance(base, cst.Name) and base.value in self.c.classes:
            cls = base.value
            if method == "apply" and self.c.is_autograd_function(cls):
                m = self.c.method_of(cls, "forward")
                if m is not None:
                    self.enqueue(f"{m[0]}.forward", m[1], m[0], self._param_tensors(m[1], call.args, skip_self=True, ctx=ctx),
                                 self._param_kernels(m[1], call.args, skip_self=True, fr=fr),
                                 self._param_inputs(m[1], call.args, skip_self=True, ctx=ctx))
                return
            m = self.c.method_of(cls, method)
            if m is not None:
                self.enqueue(f"{m[0]}.{method}", m[1], m[0], self._param_tensors(m[1], call.args, skip_self=False, ctx=ctx))
            return
        # tensor methods
        if self.is_tensor(base, ctx):
            if method in TENSOR_COMPUTE_METHODS:
                self.c.report("TORCH-COMPUTE", f"`{self._code(call)}` in {fr.key}: Tensor.{method} computes in PyTorch", call)
            return
        if method in TENSOR_COMPUTE_METHODS and method not in _PY_COMMON_METHODS and not self._is_scalar_expr(base, ctx):
            self.c.report("TORCH-COMPUTE", f"`{self._code(call)}` in {fr.key}: .{method}() looks like PyTorch compute", call)

    _EMPTY_ALLOCATORS = frozenset({"torch.empty", "torch.empty_like", "torch.empty_strided",
                                   "torch._C._dynamo.guards._empty_strided_cuda", "torch._C._dynamo.guards._empty_strided_cpu"})

    def _is_empty_allocation(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            if self.c.resolve_node(node.func) in self._EMPTY_ALLOCATORS:
                return True
            return isinstance(node.func, cst.Attribute) and node.func.attr.value in ("new_empty", "new_empty_strided")
        return False

    def _check_unwritten_outputs(self, fr: _Frame, facts: "_FactCollector") -> None:
        bound: dict[str, list[cst.CSTNode]] = {}
        for target, value in facts.assigns:
            if isinstance(target, cst.Name):
                bound.setdefault(target.value, []).append(value)
        in_returns: dict[str, int] = {}
        for value in facts.returns:
            finder = _NameFinder(frozenset(bound))
            _walk(value, finder)
            for n in finder.found:
                in_returns[n.value] = in_returns.get(n.value, 0) + 1
        total: dict[str, int] = {}
        for n in facts.names:
            total[n.value] = total.get(n.value, 0) + 1
        for name, values in bound.items():
            if not in_returns.get(name) or not all(self._is_empty_allocation(v) for v in values):
                continue
            # referenced only where it is bound and where it is returned: nothing can have written it
            if total.get(name, 0) <= len(values) + in_returns[name]:
                self.c.report("OUTPUT-UNWRITTEN", f"{fr.key} returns '{name}', a torch.empty* allocation that no kernel or call ever receives", values[0])

    def _empty_grid(self, sub: cst.Subscript, ctx: "_Ctx") -> bool:
        """`k[(0,)]`, `k[0, 1]`, `k[(n, 0)]`: a literal 0 (or a name bound once to 0) in the grid."""
        elems: list[cst.CSTNode] = []
        for el in sub.slice:
            value = el.slice.value if isinstance(el.slice, cst.Index) else None
            if isinstance(value, (cst.Tuple, cst.List)):
                elems += [e.value for e in value.elements]
            elif value is not None:
                elems.append(value)
        env = dict(self.c.constants)
        env.update(ctx.literals)
        return any(_eval_int(e, env) == 0 for e in elems)

    def _is_launch(self, call: cst.Call, ctx: "_Ctx") -> bool:
        f = call.func
        if isinstance(f, cst.Subscript) and self._kernel_ref(f.value, ctx.fr) is not None:
            return True
        if isinstance(f, cst.Name) and f.value in ctx.launchers:
            return True
        return isinstance(f, cst.Attribute) and f.attr.value == "run" and self._kernel_ref(f.value, ctx.fr) is not None

    def _module_rooted(self, node: cst.CSTNode, local_names: set[str]) -> bool:
        """`NAME` or `NAME.attr...` where NAME is a module-level binding (global, class, function)."""
        while isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        if not isinstance(node, cst.Name) or node.value in local_names:
            return False
        n = node.value
        return n in self.c.module_names or n in self.c.classes or n in self.c.functions

    def _has_tensor(self, node: cst.CSTNode, ctx: "_Ctx") -> bool:
        """A tensor, or a list/tuple/dict holding one (functools.reduce(operator.add, [x, y]))."""
        if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
            return any(self._has_tensor(e.value, ctx) for e in node.elements)
        return self.is_tensor(node, ctx)

    def _is_scalar_expr(self, node: cst.CSTNode, ctx: "_Ctx") -> bool:
        return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))

    def _check_library_call(self, callee: str, call: cst.Call, ctx: "_Ctx", args_tensor: bool) -> None:
        fr = ctx.fr
        if _allowlisted_internal(callee) or callee in ALLOWED_TORCH_CALLS:
            return
        if _prefix_lookup(callee, FORBIDDEN_NAMES) is not None:
            return  # pass A reports it
        root = callee.partition(".")[0]
        if root == "torch":
            if callee.startswith("torch.Tensor."):
                m = callee.rsplit(".", 1)[1]
                if m in ALLOWED_TENSOR_METHODS:
                    return
            self.c.report("TORCH-COMPUTE", f"{fr.key} calls {callee}(), which is PyTorch compute (not an allocation/view/shape op)", call)
        elif root in ("numpy", "math", "cmath", "operator", "functools", "itertools") and args_tensor:
            self.c.report("TORCH-COMPUTE", f"{fr.key} calls {callee}() on tensors: host/PyTorch compute instead of a Triton kernel", call)

    def _call_attr_kind(self, kind: str, label: str, call: cst.Call, ctx: "_Ctx") -> None:
        fr = ctx.fr
        if kind == "torch_module":
            self.c.report("TORCH-COMPUTE", f"{fr.key} calls the torch.nn module {label}: its forward computes in PyTorch", call)
        elif kind.startswith("helper:"):
            self.follow_class_call(kind[7:], call, ctx, instance=True)
        elif kind.startswith("function:"):
            self.follow_function(kind[9:], call.args, {}, ctx, all_tensor=False)
        elif kind.startswith("method:") and fr.owner:
            m = self.c.method_of(fr.owner, kind[7:])
            if m is not None:
                self.enqueue(f"{m[0]}.{kind[7:]}", m[1], m[0], self._param_tensors(m[1], call.args, skip_self=True, ctx=ctx))

    def record_launch(self, kernel: str, call: cst.Call, ctx: "_Ctx") -> None:
        self.launches.append((kernel, call))
        info = self.c.kernels.get(kernel)
        _check_launch_options(self.c, call, call.args, kernel=kernel, env=ctx.literals)
        if info is None:
            return
        params = _params(info.node)
        for i, a in enumerate(call.args):
            if a.star:
                break
            pname = a.keyword.value if a.keyword is not None else (params[i].name.value if i < len(params) else None)
            if pname in info.stored_params and self._aliases_input(a.value, ctx.inputs):
                self.c.report("INPUT-MUTATION", f"launch of {kernel} passes the forward input `{self._code(a.value)}` as {pname}, which the kernel stores into", a)
        env = dict(self.c.constants)
        env.update(ctx.literals)
        i = 0
        for a in call.args:
            if a.star:
                break
            if a.keyword is not None:
                pname = a.keyword.value
            else:
                pname = params[i].name.value if i < len(params) else None
                i += 1
            if pname in info.block_params:
                v = _eval_int(a.value, env)
                if v is not None and not _is_pow2(v):
                    self.c.report("TRITON-BLOCK-POW2", f"launch of {kernel} passes {pname}={v}, not a power of two", a)

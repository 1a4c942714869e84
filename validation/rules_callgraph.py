"""ModelNew.forward's call graph for the static rules: what forward reaches, and which names are tensors.

`_CallGraph` is the worklist half of the forward analysis (rules_forward._ForwardAnalysis is
the other): one `_Frame` per reached function (ModelNew.forward, the methods, helpers, nested
functions and submodule forwards it can reach), each re-analysed when a call site brings it
new tensor, kernel or input parameters; plus the flow-insensitive type inference that tells
tensor arithmetic from shape arithmetic, and which names alias forward()'s inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import libcst as cst

from autotriton.validation.rules_cst import _CallNameFinder, _params, _positional_params, _scalar_param, _self_attr, _walk
from autotriton.validation.rules_facts import _FactCollector
from autotriton.validation.rules_structure import _Checker, _ClassInfo
from autotriton.validation.rules_tables import _ALL_TENSOR_METHODS, _TENSOR_VALUED_ATTRS, _TORCH_MODULE_TENSOR_ATTRS


@dataclass
class _Frame:
    key: str
    node: cst.FunctionDef
    owner: str | None  # class the function is a method of
    tensor_params: set[str]
    kernel_params: set[str]
    input_params: set[str] = field(default_factory=set)  # params bound to forward()'s inputs (or views)


@dataclass
class _Ctx:
    fr: _Frame
    tensors: set[str]
    launchers: set[str]
    inputs: set[str] = field(default_factory=set)  # names that are forward()'s inputs or views of them
    literals: dict[str, int] = field(default_factory=dict)  # names bound exactly once, to an int literal


class _CallGraph:
    """The functions ModelNew.forward can reach, analysed one by one (`analyse`: rules_forward)."""

    MAX_ANALYSES = 200

    def __init__(self, checker: _Checker, model: _ClassInfo):
        self.c = checker
        self.model = model
        self.frames: dict[str, _Frame] = {}
        self.queue: list[str] = []
        self.launches: list[tuple[str, cst.Call]] = []
        self.analyses = 0

    # ---- worklist ----------------------------------------------------------------------------
    def enqueue(self, key: str, node: cst.FunctionDef, owner: str | None, tensors: set[str], kernels: set[str] | None = None,
                inputs: set[str] | None = None) -> None:
        kernels = kernels or set()
        inputs = inputs or set()
        fr = self.frames.get(key)
        if fr is None:
            self.frames[key] = _Frame(key, node, owner, set(tensors), set(kernels), set(inputs))
            self.queue.append(key)
        elif not tensors <= fr.tensor_params or not kernels <= fr.kernel_params or not inputs <= fr.input_params:
            fr.tensor_params |= tensors
            fr.kernel_params |= kernels
            fr.input_params |= inputs
            if key not in self.queue:
                self.queue.append(key)

    def run(self) -> list[tuple[str, cst.Call]]:
        fwd = self.c.method_of(self.model.name, "forward")
        assert fwd is not None
        owner, node = fwd
        tensors = set()
        for p in _params(node)[1:]:
            if not _scalar_param(p):
                tensors.add(p.name.value)
        self.enqueue(f"{owner}.forward", node, owner, tensors, inputs=set(tensors))
        # submodules built in __init__ (also inside nn.ModuleList/Sequential, comprehensions or
        # factory functions) are called from forward in ways too dynamic to follow call by call
        # (`for blk in self.blocks: x = blk(x)`): their forward counts as reached
        for cls in sorted(self._submodule_classes()):
            m = self.c.method_of(cls, "forward") or self.c.method_of(cls, "__call__")
            if m is not None and self.c.is_nn_module_class(cls):
                params = [p for p in _params(m[1])[1:] if not _scalar_param(p)]
                self.enqueue(f"{m[0]}.{m[1].name.value}", m[1], m[0], {p.name.value for p in params})
        while self.queue and self.analyses < self.MAX_ANALYSES:
            key = self.queue.pop(0)
            self.analyses += 1
            self.analyse(self.frames[key])
        return self.launches

    def _submodule_classes(self) -> set[str]:
        """In-file classes instantiated by ModelNew.__init__, transitively (their own __init__,
        and functions those call)."""
        found: set[str] = set()
        seen_funcs: set[int] = set()
        todo: list[cst.FunctionDef] = []
        init = self.c.method_of(self.model.name, "__init__")
        if init is not None:
            todo.append(init[1])
        while todo:
            fn = todo.pop()
            if id(fn) in seen_funcs:
                continue
            seen_funcs.add(id(fn))
            finder = _CallNameFinder()
            _walk(fn.body, finder)
            for name in finder.names:
                if name in self.c.classes and name != self.model.name and name not in found:
                    found.add(name)
                    sub_init = self.c.method_of(name, "__init__")
                    if sub_init is not None:
                        todo.append(sub_init[1])
                elif name in self.c.functions and name not in self.c.kernels:
                    todo.append(self.c.functions[name])
        return found

    def analyse(self, fr: _Frame) -> None:
        raise NotImplementedError  # rules_forward._ForwardAnalysis: the checks of one function

    # views and same-dtype conversions return the input itself (or share its storage)
    _ALIASING_METHODS = frozenset({
        "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t", "contiguous", "flatten", "unflatten",
        "unsqueeze", "squeeze", "expand", "expand_as", "narrow", "select", "as_strided", "movedim", "swapaxes",
        "detach", "to", "float", "half", "bfloat16", "double", "type_as", "cuda", "cpu", "unfold", "T", "mT", "data",
    })

    def _aliases_input(self, value: cst.CSTNode, inputs: set[str]) -> bool:
        while True:
            if isinstance(value, cst.Name):
                return value.value in inputs
            if isinstance(value, cst.Subscript):
                value = value.value
            elif isinstance(value, cst.Attribute) and value.attr.value in ("T", "mT", "data"):
                value = value.value
            elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in self._ALIASING_METHODS:
                value = value.func.value
            else:
                return False

    def _input_aliases(self, fr: _Frame, facts: "_FactCollector") -> set[str]:
        """Names bound only to forward()'s inputs or views of them (flow-insensitive: a name that is
        ever bound to something else, e.g. a fresh allocation, is not counted)."""
        inputs = set(fr.input_params)
        other: set[str] = set()
        for _ in range(3):
            before = len(inputs)
            for target, value in facts.assigns:
                if isinstance(target, cst.Name):
                    if self._aliases_input(value, inputs):
                        inputs.add(target.value)
                    else:
                        other.add(target.value)
            if len(inputs) == before:
                break
        return inputs - other

    # ---- type inference ----------------------------------------------------------------------
    def _bind(self, target: cst.CSTNode, value: cst.CSTNode, tensors: set[str], fr: _Frame) -> None:
        ctx = _Ctx(fr, tensors, set())
        if isinstance(target, cst.Name):
            if self.is_tensor(value, ctx):
                tensors.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements):
                for t, v in zip(target.elements, value.elements):
                    self._bind(t.value, v.value, tensors, fr)
            elif self._is_tensor_sequence(value, ctx):
                for t in target.elements:
                    if isinstance(t.value, cst.Name):
                        tensors.add(t.value.value)

    def _is_tensor_sequence(self, value: cst.CSTNode, ctx: "_Ctx") -> bool:
        """`a, b = x.chunk(2)`, `a, b = torch.split(x, ...)`, `q, k = helper(x)`, `for row in x`."""
        if isinstance(value, cst.Call):
            if isinstance(value.func, cst.Attribute) and value.func.attr.value in ("chunk", "split", "unbind", "tensor_split", "split_with_sizes"):
                return self.is_tensor(value.func.value, ctx)
            callee = self.c.resolve_node(value.func)
            if callee in ("torch.split", "torch.chunk", "torch.unbind", "torch.tensor_split"):
                return True
            return self.is_tensor(value, ctx)
        if isinstance(value, cst.Subscript):
            return self.is_tensor(value.value, ctx)
        return False

    def is_tensor(self, node: cst.CSTNode, ctx: "_Ctx") -> bool:
        if isinstance(node, cst.Name):
            return node.value in ctx.tensors
        if isinstance(node, cst.Attribute):
            attr = node.attr.value
            if isinstance(node.value, cst.Name) and node.value.value == "self" and ctx.fr.owner:
                return self.c.class_attr(ctx.fr.owner, attr) == "tensor"
            if attr in _TENSOR_VALUED_ATTRS:
                return self.is_tensor(node.value, ctx)
            if isinstance(node.value, cst.Attribute) and _self_attr(node.value) and ctx.fr.owner:
                kind = self.c.class_attr(ctx.fr.owner, node.value.attr.value)
                if kind == "torch_module":
                    return any(t in attr for t in _TORCH_MODULE_TENSOR_ATTRS) or attr.startswith("running_")
            return False
        if isinstance(node, cst.Subscript):
            return self.is_tensor(node.value, ctx)
        if isinstance(node, (cst.BinaryOperation,)):
            return self.is_tensor(node.left, ctx) or self.is_tensor(node.right, ctx)
        if isinstance(node, cst.UnaryOperation):
            return not isinstance(node.operator, cst.Not) and self.is_tensor(node.expression, ctx)
        if isinstance(node, cst.Comparison):
            return self.is_tensor(node.left, ctx) or any(self.is_tensor(t.comparator, ctx) for t in node.comparisons)
        if isinstance(node, cst.IfExp):
            return self.is_tensor(node.body, ctx) or self.is_tensor(node.orelse, ctx)
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute):
                m = func.attr.value
                if self.is_tensor(func.value, ctx):
                    return m in _ALL_TENSOR_METHODS and m not in ("size", "stride", "numel", "nelement", "dim", "ndimension", "element_size", "storage_offset", "data_ptr", "const_data_ptr", "is_contiguous", "is_floating_point", "is_complex", "is_signed", "get_device", "item", "tolist", "dim_order", "is_pinned", "is_same_size", "is_set_to", "is_inference", "untyped_storage")
            callee = self.c.resolve_node(func)
            if callee is not None:
                if callee.startswith("torch.") and not callee.startswith("torch.cuda.") and callee not in (
                    "torch.device", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.is_floating_point",
                    "torch.is_complex", "torch.get_default_dtype", "torch.promote_types", "torch.result_type", "torch.can_cast",
                    "torch.Size", "torch.numel", "torch.broadcast_shapes", "torch.no_grad", "torch.inference_mode",
                    "torch.enable_grad", "torch.set_grad_enabled", "torch.is_grad_enabled",
                ) and not callee.startswith("torch._C._dynamo.guards.assert"):
                    return True
                if callee.startswith("numpy."):
                    return False
            # calls into the file's own code: tensor in, tensor out
            if self._is_local_callable(func, ctx):
                return any(self.is_tensor(a.value, ctx) for a in node.args)
            return False
        return False

    def _is_local_callable(self, func: cst.CSTNode, ctx: "_Ctx") -> bool:
        if isinstance(func, cst.Name):
            return func.value in self.c.functions or func.value in self.c.classes
        if isinstance(func, cst.Attribute):
            base = func.value
            if isinstance(base, cst.Name) and base.value == "self":
                return True
            if isinstance(base, cst.Name) and base.value in self.c.classes:
                return True
            if _self_attr(base) and ctx.fr.owner:
                kind = self.c.class_attr(ctx.fr.owner, base.attr.value) or ""
                return kind.startswith("helper:")
        return False

    def _is_allocation(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            callee = self.c.resolve_node(node.func)
            if callee in ("torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like", "torch.ones", "torch.ones_like", "torch.full", "torch.full_like"):
                return True
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided"):
                return True
        return False

    def _kernel_ref(self, node: cst.CSTNode, fr: _Frame) -> str | None:
        k = self.c.kernel_of(node)
        if k is not None:
            return k
        if isinstance(node, cst.Name) and node.value in fr.kernel_params:
            return node.value
        if _self_attr(node) and fr.owner:
            kind = self.c.class_attr(fr.owner, node.attr.value) or ""  # type: ignore[union-attr]
            if kind.startswith("kernel:"):
                return kind[7:]
        return None

    def follow_function(self, name: str, args: Sequence[cst.Arg], _kw: dict, ctx: "_Ctx", all_tensor: bool) -> None:
        fn = self.c.functions[name]
        self.enqueue(name, fn, None, self._param_tensors(fn, args, skip_self=False, ctx=ctx), self._param_kernels(fn, args, skip_self=False, fr=ctx.fr),
                     self._param_inputs(fn, args, skip_self=False, ctx=ctx))

    def _param_inputs(self, fn: cst.FunctionDef, args: Sequence[cst.Arg], skip_self: bool, ctx: "_Ctx") -> set[str]:
        params = _positional_params(fn)
        if skip_self and params:
            params = params[1:]
        out: set[str] = set()
        for i, a in enumerate(args):
            if a.star:
                break
            if not self._aliases_input(a.value, ctx.inputs):
                continue
            if a.keyword is not None:
                out.add(a.keyword.value)
            elif i < len(params):
                out.add(params[i].name.value)
        return out

    def follow_class_call(self, cls: str, call: cst.Call, ctx: "_Ctx", instance: bool = False) -> None:
        if not instance:
            init = self.c.method_of(cls, "__init__")
            if init is not None:
                self.enqueue(f"{init[0]}.__init__", init[1], init[0], set())
            return
        for meth in ("forward", "__call__"):
            m = self.c.method_of(cls, meth)
            if m is not None:
                self.enqueue(f"{m[0]}.{meth}", m[1], m[0], self._param_tensors(m[1], call.args, skip_self=True, ctx=ctx),
                             None, self._param_inputs(m[1], call.args, skip_self=True, ctx=ctx))

    def _param_tensors(self, fn: cst.FunctionDef, args: Sequence[cst.Arg], skip_self: bool, ctx: "_Ctx") -> set[str]:
        params = _positional_params(fn)
        if skip_self and params:
            params = params[1:]
        by_name = {p.name.value: p for p in _params(fn)}
        out: set[str] = set()
        i = 0
        for a in args:
            is_t = self.is_tensor(a.value, ctx) or (a.star == "*" and self._is_tensor_sequence(a.value, ctx))
            if a.keyword is not None:
                if is_t and a.keyword.value in by_name:
                    out.add(a.keyword.value)
                continue
            if a.star == "*":
                if is_t:
                    out.update(p.name.value for p in params[i:])
                    if isinstance(fn.params.star_arg, cst.Param):
                        out.add(fn.params.star_arg.name.value)
                continue
            if a.star:
                continue
            if i < len(params):
                if is_t:
                    out.add(params[i].name.value)
            elif is_t and isinstance(fn.params.star_arg, cst.Param):
                out.add(fn.params.star_arg.name.value)
            i += 1
        for p in _params(fn):
            ann = p.annotation.annotation if p.annotation is not None else None
            if ann is not None and (self.c.resolve_node(ann) or "").endswith("Tensor"):
                out.add(p.name.value)
        return out

    def _param_kernels(self, fn: cst.FunctionDef, args: Sequence[cst.Arg], skip_self: bool, fr: _Frame) -> set[str]:
        params = _positional_params(fn)
        if skip_self and params:
            params = params[1:]
        out: set[str] = set()
        i = 0
        for a in args:
            if a.keyword is not None:
                if self._kernel_ref(a.value, fr):
                    out.add(a.keyword.value)
                continue
            if a.star:
                continue
            if i < len(params) and self._kernel_ref(a.value, fr):
                out.add(params[i].name.value)
            i += 1
        return out

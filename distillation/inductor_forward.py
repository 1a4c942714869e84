"""Rewriting Inductor's `call(args)` into the body of `ModelNew.forward`.

Buffers come from `torch.empty_strided`, views from `Tensor.as_strided` (Inductor's
`reinterpret_tensor`), each kernel is launched as `kernel[grid](..., XBLOCK=..., num_warps=...,
num_stages=...)` with the config autotuning chose baked in (or a fallback config when none was
recorded) and the grid computed in Python as plain integer ceil-divisions, `(n + 511) // 512`
(not `triton.cdiv`: in Triton 3.6 that is a ConstexprFunction costing ~3.5 us per host call on a
2-core dev CPU, several per launch, on every forward); Inductor's size symbols get readable names.
Size arithmetic stays plain Python on ints: `max`/`min`/`abs`, `math.ceil/floor/trunc/sqrt`, and
Inductor's SymInt-safe spellings rewritten (`torch.sym_float(s0)` -> `float(s0)`,
`torch._sym_sqrt` -> `math.sqrt`; inductor_convert imports math for them). What still needs
Inductor's runtime is refused here with a `ConversionError`:
`extern_kernels`, `aten_fallback`, `unsupported_grid`, `unsupported_call`, `unknown_graph_input`,
`unsupported_output`, `unsupported_config`. Standard library only, like the converter.
"""

from __future__ import annotations

import ast
import re
from typing import Any

# Loaded by inductor_convert._sibling after inductor_module and inductor_kernels, so these
# imports also work where the package's __init__ cannot be imported (sys.modules holds them).
from autotriton.distillation.inductor_kernels import _Kernel, _inline_math
from autotriton.distillation.inductor_module import ConversionError


# ---------------------------------------------------------------- launch configs
def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _int_value(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    return None


def _fallback_config(kernel: _Kernel, numels: dict[str, int | None]) -> dict[str, Any]:
    """A sound launch config when the capture did not record autotuning's choice."""
    xn = numels.get("xnumel") or 1 << 20
    rn = numels.get("r0_numel") or numels.get("rnumel") or 1024
    kwargs: dict[str, int] = {}
    want = set(kernel.constexpr_params)
    kind = kernel.decorator
    if kind == "pointwise":
        if "YBLOCK" in want:
            kwargs["YBLOCK"] = min(32, _next_pow2(numels.get("ynumel") or 32))
            kwargs["XBLOCK"] = min(32, _next_pow2(xn))
        elif "XBLOCK" in want:
            kwargs["XBLOCK"] = min(1024, _next_pow2(xn))
    elif kind == "persistent_reduction":
        rblock = kernel.body_constexprs.get("R0_BLOCK", _next_pow2(rn))
        rblock = rblock if isinstance(rblock, int) else _next_pow2(rn)
        if "XBLOCK" in want:
            kwargs["XBLOCK"] = max(1, min(_next_pow2(xn), 4096 // max(1, rblock), 64))
    elif kind == "reduction":
        hint = str(kernel.decorator_kwargs.get("reduction_hint", "DEFAULT"))
        if "OUTER" in hint:
            kwargs.update({"XBLOCK": 64, "R0_BLOCK": 8})
        else:
            kwargs.update({"XBLOCK": 1, "R0_BLOCK": min(2048, _next_pow2(rn))})
        kwargs = {k: v for k, v in kwargs.items() if k in want}
    for k in want - set(kwargs):
        if k in ("XBLOCK", "YBLOCK", "ZBLOCK"):
            kwargs[k] = 1 if k != "XBLOCK" else min(1024, _next_pow2(xn))
        elif k.endswith("_BLOCK") or k == "RBLOCK":
            kwargs[k] = min(2048, _next_pow2(rn))
    elems = 1
    for v in kwargs.values():
        elems *= v
    num_warps = kernel.decorator_kwargs.get("num_warps") or (8 if elems >= 2048 else 4 if elems >= 256 else 2)
    num_stages = kernel.decorator_kwargs.get("num_stages") or 1
    return {"kwargs": kwargs, "num_warps": int(num_warps), "num_stages": int(num_stages), "recorded": False}


# ---------------------------------------------------------------- call() -> forward()
_SKIP_CALLS = {"assert_size_stride", "assert_alignment", "torch.cuda.set_device", "args.clear", "get_raw_stream"}


def _dotted(node: ast.expr) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001
        return ""


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, ast.expr]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.mapping:
            return ast.parse(ast.unparse(self.mapping[node.id]), mode="eval").body
        return node


def _flatten_with(body: list[ast.stmt]) -> list[ast.stmt]:
    out = []
    for stmt in body:
        if isinstance(stmt, ast.With):
            out.extend(_flatten_with(stmt.body))
        else:
            out.append(stmt)
    return out


def _convert_call(call: ast.FunctionDef, kernels: dict[str, _Kernel], graph_inputs: list[dict[str, Any]],
                  ref: Any, output: dict[str, Any] | None, configs: dict[str, dict[str, Any]],
                  notes: list[str]) -> tuple[list[ast.stmt], list[str]]:
    body = _flatten_with(call.body)
    mapping: dict[str, ast.expr] = {}
    scalars: set[str] = set()  # graph inputs that are Python numbers in forward (sizes, attributes)
    device_expr: str | None = None
    foreign: set[str] = set()  # tensors the model does not own (module-level, plain attributes): moved to DEVICE
    out: list[ast.stmt] = []
    launched: list[str] = []
    for stmt in body:
        # arg0_1, arg1_1 = args
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name) and stmt.value.id == "args":
            target = stmt.targets[0]
            names = [e.id for e in target.elts] if isinstance(target, ast.Tuple) else [target.id]
            if len(names) != len(graph_inputs):
                raise ConversionError("unknown_graph_input", f"call() takes {len(names)} arguments but the capture "
                                      f"describes {len(graph_inputs)} graph inputs")
            for name, desc in zip(names, graph_inputs):
                expr = ref.graph_input_expr(desc)
                if expr is None:
                    raise ConversionError("unknown_graph_input", f"graph input {desc.get('position')} "
                                          f"({desc.get('source')}, {desc.get('kind')}) names neither a parameter, "
                                          "buffer, input, size, attribute nor module-level value of the reference")
                mapping[name] = expr
                argument = desc.get("kind") == "input" or ("shape" in desc and str(desc.get("source")).startswith("L[")
                                                           and desc.get("kind") not in ("param", "buffer")
                                                           and not str(desc.get("source")).startswith(("L['self']", "L['fn']")))
                if argument and device_expr is None:  # a forward argument's tensor, also one inside a list
                    device_expr = f"{ast.unparse(expr)}.device"
                if desc.get("kind") not in ("param", "buffer", "input"):
                    if "shape" in desc and str(desc.get("source")).startswith(("G[", "L['self']")):
                        foreign.add(name)
                    elif "shape" in desc:
                        pass  # a tensor inside a forward argument (a list of tensors)
                    else:
                        scalars.add(name)
            continue
        if isinstance(stmt, (ast.Delete, ast.Pass)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            fname = _dotted(stmt.value.func)
            if fname in _SKIP_CALLS:
                continue
            if fname.endswith(".run") and fname[:-4] in kernels:
                launch = _launch(stmt.value, kernels[fname[:-4]], configs, notes)
                launched.append(kernels[fname[:-4]].name)
                out.extend(launch if isinstance(launch, list) else [launch])
                continue
            _refuse_call(stmt.value)
            raise ConversionError("unsupported_call", f"statement `{ast.unparse(stmt)[:200]}` in call()")
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            fname = _dotted(stmt.value.func)
            if fname == "get_raw_stream":
                continue
            if fname in ("empty_strided_cuda", "empty_strided_cpu", "empty_strided"):
                a = stmt.value.args
                if len(a) < 3:
                    raise ConversionError("unsupported_call", f"{ast.unparse(stmt)[:200]}")
                new = ast.parse(f"torch.empty_strided({ast.unparse(a[0])}, {ast.unparse(a[1])}, "
                                f"dtype={ast.unparse(a[2])}, device=DEVICE)", mode="eval").body
                out.append(ast.Assign(targets=stmt.targets, value=new, lineno=0))
                continue
        if isinstance(stmt, ast.Assign) and _only_shape_calls(stmt.value):
            out.append(stmt)  # sizes, views of buffers: bufN = bufM, s0 = x.size()[0], ...
            continue
        if isinstance(stmt, ast.Return):
            out.append(_return(stmt, output))
            continue
        raise ConversionError("unsupported_call", f"statement `{ast.unparse(stmt)[:200]}` in call()")
    if device_expr is None:
        owned = [n for n, d in zip(mapping, graph_inputs) if d.get("kind") in ("param", "buffer")]
        first = (owned or sorted(foreign) or [None])[0]
        if first is None:
            raise ConversionError("unknown_graph_input", "no tensor input to take the device from")
        device_expr = ast.unparse(mapping[first]) + ".device"
    for name in foreign:
        if device_expr != ast.unparse(mapping[name]) + ".device":
            mapping[name] = ast.parse(f"{ast.unparse(mapping[name])}.to({device_expr})", mode="eval").body
    mapping["DEVICE"] = ast.parse(device_expr, mode="eval").body
    # reinterpret_tensor(buf, size, stride, offset) -> buf.as_strided(size, stride[, offset])
    fixed = []
    for stmt in out:
        stmt = _ScalarItemRewriter(scalars).visit(stmt)
        stmt = _Renamer(mapping).visit(stmt)
        stmt = _ReinterpretRewriter().visit(stmt)
        stmt = _HostCdivRewriter().visit(stmt)
        stmt = _SizeMathRewriter().visit(stmt)
        fixed.append(stmt)
    for node in ast.walk(ast.Module(body=fixed, type_ignores=[])):
        if isinstance(node, ast.Call):
            _refuse_call(node)
    return fixed, launched


_SHAPE_METHODS = {"size", "stride", "storage_offset", "numel", "dim", "as_strided", "item"}


_SHAPE_FUNCS = {"reinterpret_tensor", "max", "min", "int", "abs", "triton.cdiv", "float", "round",
                *(f"math.{f}" for f in ("ceil", "floor", "trunc", "sqrt")),
                *(f"torch.{f}" for f in ("sym_float", "sym_int", "sym_max", "sym_min", "_sym_sqrt", "sym_sqrt"))}

# Inductor's printer writes size arithmetic on symbolic ints with SymInt-safe torch functions
# (torch/utils/_sympy/printers.py: ToFloat -> torch.sym_float, sqrt -> torch._sym_sqrt); in forward
# the sizes are plain Python ints, so plain Python does the same and nothing looks like tensor compute.
_SIZE_MATH = {"torch.sym_float": "float", "torch.sym_int": "int", "torch.sym_max": "max", "torch.sym_min": "min",
              "torch._sym_sqrt": "math.sqrt", "torch.sym_sqrt": "math.sqrt"}


def _only_shape_calls(value: ast.expr) -> bool:
    """True when every call in `value` only reads sizes or makes views (no computation)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            _refuse_call(node)
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr in _SHAPE_METHODS:
                continue
            if _dotted(fn) in _SHAPE_FUNCS:
                continue
            return False
    return True


class _ScalarItemRewriter(ast.NodeTransformer):
    """`arg0_1.item()` -> `arg0_1` for graph inputs that are plain numbers in forward()."""

    def __init__(self, scalars: set[str]):
        self.scalars = scalars

    def visit_Call(self, node: ast.Call) -> ast.AST:
        inlined = _inline_math(self, node)
        if inlined is not None:
            return inlined
        self.generic_visit(node)
        fn = node.func
        if isinstance(fn, ast.Attribute) and fn.attr == "item" and isinstance(fn.value, ast.Name) \
                and fn.value.id in self.scalars and not node.args:
            return fn.value
        return node


def _refuse_call(node: ast.Call) -> None:
    name = _dotted(node.func)
    if name.startswith("extern_kernels."):
        raise ConversionError("extern_kernels", f"{name} (a library kernel, not Triton)")
    if name.startswith(("torch.ops.aten.", "aten.", "torch.ops.prims.", "torch.ops.")):
        raise ConversionError("aten_fallback", f"{name.split('.')[-2] if name.count('.') >= 2 else name} "
                              "runs as an ATen fallback, not a generated kernel")


class _ReinterpretRewriter(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        inlined = _inline_math(self, node)
        if inlined is not None:
            return inlined
        self.generic_visit(node)
        if _dotted(node.func) == "reinterpret_tensor" and len(node.args) >= 3:
            base, size, stride = node.args[:3]
            offset = node.args[3] if len(node.args) > 3 else ast.Constant(0)
            if isinstance(offset, ast.Constant) and offset.value == 0:
                src = f"{ast.unparse(base)}.as_strided({ast.unparse(size)}, {ast.unparse(stride)})"
            else:
                src = (f"{ast.unparse(base)}.as_strided({ast.unparse(size)}, {ast.unparse(stride)}, "
                       f"{ast.unparse(base)}.storage_offset() + {ast.unparse(offset)})")
            return ast.parse(src, mode="eval").body
        return node


class _HostCdivRewriter(ast.NodeTransformer):
    """`triton.cdiv(a, b)` in forward -> `(a + b - 1) // b` (the same formula Triton's cdiv runs,
    on Python ints), folded when b is a literal: grids cost no Triton host call per launch."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _dotted(node.func) != "triton.cdiv" or len(node.args) != 2 or node.keywords:
            return node
        a, b = (ast.unparse(x) for x in node.args)
        divisor = _int_value(node.args[1])
        if divisor == 1:
            return node.args[0]
        src = f"({a} + {divisor - 1}) // {divisor}" if divisor is not None and divisor > 1 else f"({a} + ({b}) - 1) // ({b})"
        return ast.parse(src, mode="eval").body


class _SizeMathRewriter(ast.NodeTransformer):
    """Size arithmetic as plain Python on ints: `torch.sym_float(s0)` -> `float(s0)`,
    `torch._sym_sqrt(x)` -> `math.sqrt(x)`, ... (_SIZE_MATH). The judge's rules count any other
    torch call in forward as PyTorch compute; inductor_convert imports math when forward uses it."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        plain = _SIZE_MATH.get(_dotted(node.func))
        if plain is None:
            return node
        return ast.Call(func=ast.parse(plain, mode="eval").body, args=node.args, keywords=node.keywords)


def _outputs_rebuilt(values: list[ast.expr], items: list[dict[str, Any]]) -> list[ast.expr]:
    """forward's returned items from call()'s values, which hold each computed tensor once: an
    item returned twice (`same_as`) repeats the earlier one, a constant (`other`: `return freqs,
    1.`) is written as its literal, and a nested tuple, list or torch.Size (`return x, x.shape[-2:]`,
    a Size as a plain tuple) is rebuilt from the values Dynamo flattened it into (a size's ints are call() values: symbolic
    sizes). An input returned unchanged is refused (its expression is not known here)."""
    fresh = iter(values)

    def take() -> ast.expr:
        value = next(fresh, None)
        if value is None:
            raise ConversionError("unsupported_output", f"call() returns {len(values)} values, fewer than forward's")
        return value

    def rebuild(items: list[dict[str, Any]], sizes: bool) -> list[ast.expr]:
        out: list[ast.expr] = []
        for item in items:
            kind = item.get("kind")
            if kind == "same_as":
                out.append(out[item["index"]])
            elif kind in ("tuple", "list", "Size") and "items" in item:
                elts = rebuild(item["items"], sizes=kind == "Size")
                # a torch.Size as a plain tuple of its ints: the judge takes exact tuples and lists only
                out.append(ast.List(elts=elts, ctx=ast.Load()) if kind == "list" else ast.Tuple(elts=elts, ctx=ast.Load()))
            elif kind == "other" and sizes:
                out.append(take())
            elif kind == "other":
                try:
                    ast.literal_eval(item.get("repr", ""))
                except (ValueError, SyntaxError):
                    raise ConversionError("unsupported_output", f"forward returns {item.get('repr', '')[:60]!r}, not a literal") from None
                out.append(ast.parse(item["repr"], mode="eval").body)
            elif kind == "input":
                raise ConversionError("unsupported_output", f"forward returns its input {item.get('index')} unchanged")
            else:
                out.append(take())
        return out

    return rebuild(items, sizes=False)


def _return(stmt: ast.Return, output: dict[str, Any] | None) -> ast.Return:
    value = stmt.value
    if isinstance(value, ast.Tuple) and output and output.get("kind") == "tensor":
        if len(value.elts) < 1:
            raise ConversionError("unsupported_output", "call() returns nothing")
        return ast.Return(value=value.elts[0])
    if isinstance(value, ast.Tuple) and output and output.get("kind") in ("tuple", "list"):
        items = output.get("items", [])
        if any(i.get("kind") in ("same_as", "other", "input", "tuple", "list", "Size") for i in items):
            return ast.Return(value=ast.Tuple(elts=_outputs_rebuilt(value.elts, items), ctx=ast.Load()))
        n = len(items)
        if len(value.elts) < n:
            raise ConversionError("unsupported_output", f"call() returns {len(value.elts)} values, forward {n}")
        return ast.Return(value=ast.Tuple(elts=value.elts[:n], ctx=ast.Load()))
    if isinstance(value, ast.Tuple) and len(value.elts) >= 1:
        return ast.Return(value=value.elts[0])
    return stmt


def _launch(call: ast.Call, kernel: _Kernel, configs: dict[str, dict[str, Any]], notes: list[str]) -> ast.stmt | list[ast.stmt]:
    meta = kernel.decorator_kwargs.get("inductor_meta", {}) or {}
    tmeta = kernel.decorator_kwargs.get("triton_meta", {}) or {}
    constants = dict(tmeta.get("constants", {}) or {})
    runtime = [p for p in kernel.params if p not in kernel.constexpr_params]
    args = list(call.args)
    if any(isinstance(a, ast.Starred) for a in args):
        raise ConversionError("unsupported_call", f"starred launch of {kernel.inductor_name}")
    extra_names = list(meta.get("extra_launcher_args", []) or [])
    if len(args) != len(runtime) + len(extra_names):
        raise ConversionError("unsupported_call", f"{kernel.inductor_name}.run got {len(args)} arguments, "
                              f"kernel takes {len(runtime)} (+{len(extra_names)} launcher args)")
    bound = dict(zip(runtime, args[:len(runtime)]))
    extra = dict(zip(extra_names, args[len(runtime):]))
    numels = {k: _int_value(v) for k, v in bound.items() if k.endswith("numel")}
    cfg = configs.get(kernel.inductor_name)
    own = kernel.decorator_kwargs.get("configs") or []
    if cfg and cfg.get("kwargs") is not None:
        cfg = {"kwargs": dict(cfg["kwargs"]), "num_warps": cfg.get("num_warps") or 4,
               "num_stages": cfg.get("num_stages") or 1, "recorded": True}
    elif kernel.decorator == "user_autotune" and len(own) == 1 and isinstance(own[0], dict):
        # a user-defined kernel launched with one config: the launch's own (constexprs are in
        # triton_meta's constants, num_warps/num_stages here)
        cfg = {"kwargs": dict(own[0].get("kwargs") or {}), "num_warps": own[0].get("num_warps") or 4,
               "num_stages": own[0].get("num_stages") or 1, "recorded": True}
    else:
        cfg = _fallback_config(kernel, numels)
        if kernel.decorator != "template":
            notes.append(f"{kernel.name}: launch config chosen by the converter (autotuning's choice not recorded)")
    missing = [p for p in kernel.constexpr_params if p not in cfg["kwargs"] and p not in constants]
    if missing:
        raise ConversionError("unsupported_config", f"{kernel.inductor_name}: no value for constexpr {missing}")

    def block(name: str) -> str:
        if name in cfg["kwargs"]:
            return str(cfg["kwargs"][name])
        if name in kernel.body_constexprs:
            return str(kernel.body_constexprs[name])
        return "1"

    def numel(name: str) -> str:
        if name not in bound:
            raise ConversionError("unsupported_grid", f"{kernel.inductor_name}: grid needs {name}")
        return ast.unparse(bound[name])

    grid_type = meta.get("grid_type", "Grid1D" if kernel.decorator != "template" else "FixedGrid")
    pre: list[str] = []
    if grid_type == "Grid1D":
        grid = f"(triton.cdiv({numel('xnumel')}, {block('XBLOCK')}),)"
    elif grid_type == "Grid2D":
        grid = f"(triton.cdiv({numel('xnumel')}, {block('XBLOCK')}), triton.cdiv({numel('ynumel')}, {block('YBLOCK')}))"
    elif grid_type == "Grid3D":
        grid = (f"(triton.cdiv({numel('xnumel')}, {block('XBLOCK')}), triton.cdiv({numel('ynumel')}, "
                f"{block('YBLOCK')}), triton.cdiv({numel('znumel')}, {block('ZBLOCK')}))")
    elif grid_type == "Grid2DWithYZOverflow":
        # y blocks beyond CUDA's 65535 limit spill into z (the kernel recombines program_id(1), (2))
        y_raw = f"triton.cdiv({numel('ynumel')}, {block('YBLOCK')})"
        pre = [f"y_blocks = {y_raw}", "y_splits = triton.cdiv(y_blocks, 65535)"]
        grid = f"(triton.cdiv({numel('xnumel')}, {block('XBLOCK')}), triton.cdiv(y_blocks, y_splits), y_splits)"
    elif grid_type == "FixedGrid":
        fixed = meta.get("fixed_grid", ["_grid_0", "_grid_1", "_grid_2"])
        parts = []
        for item in fixed:
            if isinstance(item, str) and item in extra:
                parts.append(ast.unparse(extra[item]))
            elif isinstance(item, int):
                parts.append(str(item))
            else:
                raise ConversionError("unsupported_grid", f"{kernel.inductor_name}: fixed grid entry {item!r}")
        while len(parts) > 1 and parts[-1] == "1":
            parts.pop()
        grid = "(" + ", ".join(parts) + ",)"
    else:
        raise ConversionError("unsupported_grid", f"{kernel.inductor_name}: grid type {grid_type}")
    kw = [f"{k}={v!r}" for k, v in cfg["kwargs"].items() if k in kernel.constexpr_params]
    kw += [f"{k}={v!r}" for k, v in constants.items() if k in kernel.constexpr_params and k not in cfg["kwargs"]]
    kw.append(f"num_warps={int(cfg['num_warps'])}")
    kw.append(f"num_stages={int(cfg['num_stages'])}")
    arg_src = [ast.unparse(a) for a in args[:len(runtime)]]
    src = f"{kernel.name}[{grid}]({', '.join(arg_src + kw)})"
    launch = ast.Expr(value=ast.parse(src, mode="eval").body)
    if pre:
        return [*ast.parse("\n".join(pre)).body, launch]
    return launch


def _rename_sizes(fn: ast.FunctionDef) -> None:
    """Readable size names in forward(): `s77 = x.shape[0]` -> `x_dim0`; `arg1_1_size = self.bias.size()`
    -> `bias_size`, and `s27 = bias_size[0]` -> `bias_dim0`. Only names that are assigned exactly once."""
    assigned: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned[node.id] = assigned.get(node.id, 0) + 1
    taken = set(assigned) | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    renames: dict[str, str] = {}

    def base(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return renames.get(expr.id, expr.id).removesuffix("_size")
        if isinstance(expr, ast.Attribute):
            return expr.attr
        return None

    for stmt in fn.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        old, value = stmt.targets[0].id, stmt.value
        if assigned.get(old) != 1:
            continue
        new = None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size" \
                and not value.args and re.fullmatch(r"arg\d+_\d+_size", old):
            b = base(value.func.value)
            new = f"{b}_size" if b else None
        elif isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and \
                isinstance(value.slice.value, int) and re.fullmatch(r"[su]\d+", old):
            target = value.value
            if isinstance(target, ast.Attribute) and target.attr == "shape":
                b = base(target.value)
            elif isinstance(target, ast.Name):
                b = base(target)
            else:
                b = None
            new = f"{b}_dim{value.slice.value}" if b else None
        if new and new not in taken:
            renames[old] = new
            taken.add(new)
    if not renames:
        return

    class _Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in renames:
                return ast.copy_location(ast.Name(id=renames[node.id], ctx=node.ctx), node)
            return node

    _Rename().visit(fn)


def _factors(expr: ast.expr) -> list[ast.expr]:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return _factors(expr.left) + _factors(expr.right)
    return [expr]


def _names_product(expr: ast.expr) -> list[str] | None:
    """The names a pure product of names multiplies, sorted (None when anything else is in it)."""
    factors = _factors(expr)
    if not all(isinstance(f, ast.Name) for f in factors):
        return None
    return sorted(f.id for f in factors)  # type: ignore[attr-defined]


def _rank_generic_sizes(fn: ast.FunctionDef, ranks: dict[str, int]) -> None:
    """Sizes written so that forward does not depend on an input's rank, where it need not: an output
    allocated contiguously with every dimension of an input, in order, becomes `torch.empty(x.shape,
    ...)`, the product of every dimension of an input `x.numel()`, and the `x_dimK = x.shape[K]` lines
    left unused go. A model trained on such pairs has nothing to copy that names four dimensions of a
    two-dimensional input (the eighth H200 run: 29 of the 41 SFT answers that ran raised IndexError so).
    `ranks`: forward's tensor arguments and their ranks."""
    assigned: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned[node.id] = assigned.get(node.id, 0) + 1
    dims: dict[str, dict[int, str]] = {}
    size_of: dict[str, str] = {}  # `x_size = x.size()`: x_size -> x
    for stmt in fn.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and assigned.get(stmt.targets[0].id) == 1):
            continue
        value = stmt.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size"
                and not value.args and isinstance(value.func.value, ast.Name) and value.func.value.id in ranks):
            size_of[stmt.targets[0].id] = value.func.value.id
            continue
        if not (isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and type(value.slice.value) is int):
            continue
        of = value.value
        if isinstance(of, ast.Attribute) and of.attr == "shape" and isinstance(of.value, ast.Name) and of.value.id in ranks:
            dims.setdefault(of.value.id, {})[value.slice.value] = stmt.targets[0].id
        elif isinstance(of, ast.Name) and of.id in size_of:
            dims.setdefault(size_of[of.id], {})[value.slice.value] = stmt.targets[0].id
    full = {x: [d[k] for k in range(ranks[x])] for x, d in dims.items() if ranks[x] >= 2 and set(d) == set(range(ranks[x]))}
    if not full:
        return
    products = {tuple(sorted(names)): x for x, names in full.items()}

    def contiguous(strides: ast.expr, names: list[str]) -> bool:
        if not isinstance(strides, ast.Tuple) or len(strides.elts) != len(names):
            return False
        *outer, last = strides.elts
        if not (isinstance(last, ast.Constant) and last.value == 1):
            return False
        return all(_names_product(s) == sorted(names[i + 1:]) for i, s in enumerate(outer))

    class _Generic(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if _dotted(node.func) == "torch.empty_strided" and len(node.args) == 2 and isinstance(node.args[0], ast.Tuple):
                sizes = node.args[0].elts
                for x, names in full.items():
                    if [getattr(s, "id", None) for s in sizes] == names and contiguous(node.args[1], names):
                        shape = ast.Attribute(value=ast.Name(id=x, ctx=ast.Load()), attr="shape", ctx=ast.Load())
                        return ast.copy_location(ast.Call(func=ast.parse("torch.empty", mode="eval").body, args=[shape],
                                                          keywords=node.keywords), node)
            return node

        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            names = _names_product(node)
            x = products.get(tuple(names)) if names else None
            if x is not None:
                return ast.copy_location(ast.parse(f"{x}.numel()", mode="eval").body, node)
            self.generic_visit(node)
            return node

    _Generic().visit(fn)
    for candidates in ({name for names in full.values() for name in names}, set(size_of)):  # dims, then x.size()
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        dropped = candidates - used
        fn.body = [s for s in fn.body if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                                              and isinstance(s.targets[0], ast.Name) and s.targets[0].id in dropped)]

"""Reading Inductor's output code: the kernels it generated and its `call()`.

Each `@triton.jit` kernel is parsed from the source string Inductor embeds, renamed after the ops
it fuses (`readable_kernel_name`), and rewritten by `_KernelRewriter` into plain Triton: the
`triton_helpers` functions with a `tl` builtin become that builtin, the others are inlined from
Inductor's helper library, `libdevice`/`tl_math` calls become `tl` where an equivalent exists,
and assignments nobody reads are removed. inductor_convert.py assembles the result; call() is
rewritten into `forward` by inductor_forward.py. Standard library only, like the converter.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Loaded by inductor_convert._sibling after inductor_module, so this import also works where the
# package's __init__ cannot be imported (sys.modules already holds it).
from autotriton.distillation.inductor_module import ConversionError


# ---------------------------------------------------------------- math and helper rewrites
# tl equivalents of libdevice / tl_math functions (the interpreter has no libdevice).
_TL_MATH = {
    "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "sqrt": "sqrt", "rsqrt": "rsqrt",
    "abs": "abs", "fabs": "abs", "floor": "floor", "ceil": "ceil", "sin": "sin", "cos": "cos",
    "erf": "erf", "fma": "fma", "sigmoid": "sigmoid", "maximum": "maximum", "minimum": "minimum",
}


# Functions with no tl builtin, written inline in tl terms ({x} is the argument).
_MATH_INLINE = {
    "tanh": "(2.0 / (1.0 + tl.exp(-2.0 * ({x}))) - 1.0)",
    "expm1": "(tl.exp({x}) - 1.0)",
    "log1p": "tl.log(1.0 + ({x}))",
    "isnan": "(({x}) != ({x}))",
    "reciprocal": "(1.0 / ({x}))",
}


# triton_helpers functions with a direct tl builtin.
_HELPER_TO_TL = {"maximum": "tl.maximum", "minimum": "tl.minimum", "max2": "tl.max", "min2": "tl.min"}


# Inlined helpers that would shadow Python builtins or tl names get another name.
_HELPER_RENAMES = {"any": "any_nonzero", "exp": "exp_maybe_fast", "prod": "prod_reduce", "math": "tl"}


def _inline_math(visitor: ast.NodeTransformer, node: ast.Call) -> ast.AST | None:
    """`libdevice.f(x)` / `tl_math.f(x)` / `math.f(x)` for f in _MATH_INLINE, written out as plain
    tl expressions (argument visited first); None for any other call."""
    fn = node.func
    if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and \
            fn.value.id in ("libdevice", "tl_math", "math") and fn.attr in _MATH_INLINE and \
            len(node.args) == 1 and not node.keywords:
        arg = visitor.visit(node.args[0])
        return ast.parse(_MATH_INLINE[fn.attr].format(x=ast.unparse(arg)), mode="eval").body
    return None


@lru_cache(maxsize=1)
def _inductor_helpers() -> dict[str, ast.FunctionDef]:
    """The @triton.jit functions of Inductor's helper library, parsed from its source file."""
    spec = importlib.util.find_spec("torch._inductor.runtime.triton_helpers")
    if spec is None or spec.origin is None:
        return {}
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(_is_jit_decorator(d) for d in node.decorator_list):
            out[node.name] = node
    return out


def _is_jit_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return isinstance(target, ast.Attribute) and target.attr == "jit" and isinstance(target.value, ast.Name) \
        and target.value.id == "triton"


class _KernelRewriter(ast.NodeTransformer):
    """Rewrites helper/libdevice/tl_math references inside kernel and helper bodies."""

    def __init__(self, helper_names: set[str]):
        self.helper_names = helper_names  # inlinable Inductor helpers
        self.needed_helpers: set[str] = set()
        self.kept_libdevice: set[str] = set()

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.value, ast.Name):
            return node
        owner, name = node.value.id, node.attr
        if owner == "triton_helpers":
            if name in _HELPER_TO_TL:
                return ast.parse(_HELPER_TO_TL[name], mode="eval").body
            if name in self.helper_names:
                self.needed_helpers.add(name)
                return ast.Name(id=_HELPER_RENAMES.get(name, name), ctx=ast.Load())
            raise ConversionError("unsupported_helper", f"triton_helpers.{name} has no plain-Triton form")
        if owner in ("libdevice", "tl_math", "math"):
            if name in _TL_MATH:
                return ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr=_TL_MATH[name], ctx=ast.Load())
            if owner == "tl_math" or owner == "math":
                return ast.Attribute(value=ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()), attr="math",
                                                         ctx=ast.Load()), attr=name, ctx=ast.Load())
            self.kept_libdevice.add(name)
            return node
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        inlined = _inline_math(self, node)
        if inlined is not None:
            return inlined
        self.generic_visit(node)
        # Python's min/max on block values: the compiler maps them to tl.minimum/tl.maximum,
        # the interpreter does not
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and len(node.args) == 2 \
                and not node.keywords:
            node.func = ast.Attribute(value=ast.Name(id="tl", ctx=ast.Load()),
                                      attr="minimum" if node.func.id == "min" else "maximum", ctx=ast.Load())
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        # bare references between helpers (max2 -> maximum, welford -> welford_combine)
        if node.id in self.helper_names and isinstance(node.ctx, ast.Load) and self._inside_helper:
            if node.id in _HELPER_TO_TL:
                return ast.parse(_HELPER_TO_TL[node.id], mode="eval").body
            self.needed_helpers.add(node.id)
            return ast.Name(id=_HELPER_RENAMES.get(node.id, node.id), ctx=ast.Load())
        return node

    _inside_helper = False


def _remove_dead_assignments(fn: ast.FunctionDef) -> None:
    """Drop `name = <pure expr>` whose name is never read anywhere in the function (to a fixpoint)."""
    while True:
        loads = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        removed = False

        def prune(body: list[ast.stmt]) -> list[ast.stmt]:
            nonlocal removed
            kept = []
            for stmt in body:
                for attr in ("body", "orelse", "finalbody"):
                    if hasattr(stmt, attr) and isinstance(getattr(stmt, attr), list) and not isinstance(stmt, ast.FunctionDef):
                        pruned = prune(getattr(stmt, attr))
                        # an emptied body needs `pass`; an emptied else/finally must stay empty
                        setattr(stmt, attr, pruned or ([ast.Pass()] if attr == "body" else []))
                target = None
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    target, value = stmt.targets[0].id, stmt.value
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                    target, value = stmt.target.id, stmt.value
                if target is not None and target not in loads and _is_pure(value):
                    removed = True
                    continue
                kept.append(stmt)
            return kept

        fn.body = prune(fn.body) or [ast.Pass()]
        if not removed:
            return


_IMPURE_CALLS = {"store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg", "debug_barrier",
                 "device_assert", "device_print", "static_print", "static_assert"}


def _is_pure(value: ast.expr) -> bool:
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in _IMPURE_CALLS:
                return False
    return True


_TEMP = re.compile(r"tmp\d+$")
#: calls whose value depends on where they run: a load (another statement may store to the same
#: place), atomics and the like; what reads them stays a named temporary
_PLACED_CALLS = _IMPURE_CALLS | {"load", "atomic_and", "atomic_or", "atomic_xor", "rand", "randn", "randint", "program_id"}
_INLINED_LINE = 140  # longest statement an inlining may make (unparsed characters)


def _placed(value: ast.expr) -> bool:
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            fn = node.func
            if (fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")) in _PLACED_CALLS:
                return True
    return False


class _Substitute(ast.NodeTransformer):
    """Every read of `name` replaced by `value` (_inline_single_use: there is exactly one)."""

    def __init__(self, name: str, value: ast.expr):
        self.name, self.value = name, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.value if node.id == self.name and isinstance(node.ctx, ast.Load) else node


def _inline_single_use(fn: ast.FunctionDef) -> None:
    """Inductor's SSA temporaries (`tmp7 = tmp5 + tmp6`) that are assigned once and read once,
    written into the statement that reads them when it follows in the same block: kernels read
    as expressions, not counters (a small model trained on `tmp0..tmp100` chains continues them
    past where they end; the eighth H200 run). Loads and atomics stay named, nothing moves into a
    loop, and nothing is inlined past an assignment to a name it reads or into a line longer than
    _INLINED_LINE characters."""
    stores: dict[str, int] = {}
    loads: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name):
            counts = stores if isinstance(n.ctx, ast.Store) else loads
            counts[n.id] = counts.get(n.id, 0) + 1

    def inline_once(body: list[ast.stmt]) -> bool:
        for i, stmt in enumerate(body):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name, value = stmt.targets[0].id, stmt.value
            if not _TEMP.match(name) or stores.get(name) != 1 or loads.get(name) != 1 or _placed(value):
                continue
            reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            for j in range(i + 1, len(body)):
                later = body[j]
                if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(later)):
                    if any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in reads for n in ast.walk(later)):
                        break  # a name the value reads changes before the use
                    continue
                if isinstance(later, (ast.For, ast.While, ast.If, ast.With, ast.FunctionDef)):
                    break  # into a loop or a branch: not the same evaluation
                candidate = _Substitute(name, value).visit(copy.deepcopy(later))
                if len(ast.unparse(candidate)) > _INLINED_LINE:
                    break
                body[j] = candidate
                del body[i]
                return True
        return False

    def block(body: list[ast.stmt]) -> None:
        for stmt in body:
            for attr in ("body", "orelse"):
                inner = getattr(stmt, attr, None)
                if isinstance(inner, list) and not isinstance(stmt, ast.FunctionDef):
                    block(inner)
        while inline_once(body):
            pass

    block(fn.body)


_COUNTED = re.compile(r"(?P<under>_?)(?P<stem>[A-Za-z]+?)(?P<n>\d+)(?P<suffix>_[A-Za-z]\w*)?$")


def renumber(source: str, stems: tuple[str, ...]) -> str:
    """`source` with Inductor's numbered names of `stems` (`tmp`, `buf`) counted densely from 0 in
    the order they are first bound: after fusion and inlining `tmp0, tmp2, tmp10, _tmp16` remain,
    a sequence nobody can continue; renumbered, the next name is always the last one plus one. A
    name and its accumulators (`tmp16`, `_tmp16`, `tmp16_mean`) keep one number. A stem is left alone where a
    name of it is read before any binding (it comes from outside the code: a parameter, a global).
    Pure renaming: the code computes exactly what it did."""
    tree = ast.parse(source)
    names = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name)), key=lambda n: (n.lineno, n.col_offset))
    numbers: dict[str, dict[str, int]] = {stem: {} for stem in stems}
    outside: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):  # parameters of defs inside the source are bound from outside
        if isinstance(node, ast.arg):
            m = _COUNTED.match(node.arg)
            if m and m["stem"] in numbers:
                outside.add(m["stem"])
    for node in names:
        m = _COUNTED.match(node.id)
        if not m or m["stem"] not in numbers:
            continue
        if isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif node.id not in bound:
            outside.add(m["stem"])
        numbers[m["stem"]].setdefault(m["n"], len(numbers[m["stem"]]))
    renamed = 0
    for node in names:
        m = _COUNTED.match(node.id)
        if m and m["stem"] in numbers and m["stem"] not in outside:
            new = f"{m['under']}{m['stem']}{numbers[m['stem']][m['n']]}{m['suffix'] or ''}"
            renamed += new != node.id
            node.id = new
    return ast.unparse(tree) if renamed else source


_SIZE_PARAM = re.compile(r"ks\d+$")


def name_size_params(fn: ast.FunctionDef, launches: list[list[ast.expr]]) -> dict[str, str]:
    """Rename `fn`'s size parameters (Inductor's `ks0, ks1, ...`) after the forward locals every
    launch passes them (`ks0` -> `x_dim3` when each launch's argument in that place is the name
    `x_dim3`): the kernel's signature then reads like forward's size line, and nobody has to
    continue an unbounded counter. A parameter keeps its name where launches disagree, an argument
    is not a plain name, or the name is already used in the kernel or chosen for another
    parameter. `launches`: each launch's positional arguments, in the order of `fn`'s parameters.
    Pure renaming inside `fn` (Triton binds arguments by position); returns {old: new}."""
    params = [a.arg for a in fn.args.args]
    used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | set(params)
    renames: dict[str, str] = {}
    for i, param in enumerate(params):
        if not _SIZE_PARAM.match(param) or not launches:
            continue
        args = {a[i].id if i < len(a) and isinstance(a[i], ast.Name) else None for a in launches}
        new = args.pop() if len(args) == 1 else None
        if new is None or new in used or new in renames.values():
            continue
        renames[param] = new
    if renames:
        for node in ast.walk(fn):
            if isinstance(node, ast.arg) and node.arg in renames:
                node.arg = renames[node.arg]
            elif isinstance(node, ast.Name) and node.id in renames:
                node.id = renames[node.id]
    return renames


# ---------------------------------------------------------------- kernel names
_KERNEL_NAME = re.compile(r"^triton_(?P<kind>poi|red|per|tem|sca|for|mix)_(?:fused_)?(?P<ops>.*?)_?(?P<index>\d+)$")


_KIND_SUFFIX = {"poi": "", "red": "reduce", "per": "reduce", "tem": "", "sca": "scan", "for": "", "mix": "reduce"}


_NOISE_OPS = {"view", "unsqueeze", "squeeze", "permute", "t", "expand", "clone", "to_copy", "unsafe_view", "split",
              "prepare_softmax_online", "default", "reshape", "transpose", "slice", "select", "alias", "copy"}


def readable_kernel_name(inductor_name: str) -> str:
    """`triton_poi_fused_add_relu_0` -> `add_relu_kernel`; `triton_tem_fused_addmm_relu_t_0` -> `addmm_relu_kernel`."""
    m = _KERNEL_NAME.match(inductor_name)
    if not m:
        return re.sub(r"^triton_", "", inductor_name) + "_kernel"
    # Inductor joins op names with "_" and keeps their own underscores; known multi-word names
    # (native_layer_norm, ...) are kept whole, view-like ops dropped
    parts: list[str] = []
    for op in _split_ops(m.group("ops").strip("_")):
        op = op.strip("_")
        if op and op not in _NOISE_OPS and op not in parts:
            parts.append(op)
    parts = parts[:4] or [{"poi": "pointwise", "tem": "template"}.get(m.group("kind"), "fused")]
    suffix = _KIND_SUFFIX[m.group("kind")]
    if suffix and suffix not in parts[-1]:
        parts.append(suffix)
    return "_".join(parts) + "_kernel"


_MULTIWORD = sorted([
    "native_layer_norm", "native_group_norm", "native_batch_norm_legit_no_training", "native_batch_norm_legit",
    "linalg_vector_norm", "max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool1d_with_indices",
    "avg_pool2d", "avg_pool3d", "avg_pool1d", "prepare_softmax_online", "leaky_relu", "log_softmax",
    "unsafe_view", "to_copy", "scalar_tensor", "constant_pad_nd", "binary_cross_entropy", "smooth_l1_loss",
    "mse_loss", "huber_loss", "nll_loss", "index_select", "masked_fill", "where_self", "bitwise_and",
    "bitwise_or", "logical_not", "hardsigmoid", "hardtanh", "hardswish", "rsub", "full_like", "zeros_like",
    "ones_like", "new_zeros", "cumsum", "cumprod", "mean", "sum",
], key=len, reverse=True)


def _split_ops(words: str) -> list[str]:
    out = []
    rest = words
    while rest:
        rest = rest.lstrip("_")
        if not rest:
            break
        for multi in _MULTIWORD:
            if rest.startswith(multi) and (len(rest) == len(multi) or rest[len(multi)] == "_"):
                out.append(multi)
                rest = rest[len(multi):]
                break
        else:
            head, _, rest = rest.partition("_")
            out.append(head)
    return out


# ---------------------------------------------------------------- parsing the output module
@dataclass
class _Kernel:
    inductor_name: str
    name: str
    fn: ast.FunctionDef
    extra_defs: list[ast.FunctionDef]
    decorator: str  # pointwise, reduction, persistent_reduction, template, ...
    decorator_kwargs: dict[str, Any]
    params: list[str]
    constexpr_params: list[str]
    body_constexprs: dict[str, Any]  # `XBLOCK: tl.constexpr = 1` lines inside the body


class _Enumish:
    def __getattr__(self, name: str) -> str:
        return name


def _eval_literal(node: ast.expr) -> Any:
    """Evaluate a decorator argument (dict literals with DeviceProperties(...), set(), enums)."""
    code = compile(ast.Expression(node), "<inductor decorator>", "eval")
    namespace = {"__builtins__": {}, "set": set, "dict": dict, "list": list, "tuple": tuple, "True": True,
                 "False": False, "None": None, "DeviceProperties": lambda **kw: kw, "ReductionHint": _Enumish(),
                 "TileHint": _Enumish(), "AutotuneHint": _Enumish(), "torch": _Enumish(), "tl": _Enumish()}
    return eval(code, namespace)  # noqa: S307 - our own compiler output, no builtins


def _parse_kernel(inductor_name: str, src: str) -> _Kernel:
    try:
        tree = ast.parse(src)
    except SyntaxError as exc:
        raise ConversionError("parse_error", f"kernel {inductor_name} does not parse: {exc}") from exc
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    main = next((f for f in fns if f.name == inductor_name), None)
    if main is None:
        raise ConversionError("parse_error", f"kernel source has no function {inductor_name}")
    decorator, kwargs = "", {}
    for deco in main.decorator_list:
        if isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and \
                isinstance(deco.func.value, ast.Name) and deco.func.value.id == "triton_heuristics":
            decorator = deco.func.attr
            for kw in deco.keywords:
                if kw.arg in ("size_hints", "triton_meta", "inductor_meta", "num_warps", "num_stages",
                              "reduction_hint", "num_ctas", "min_elem_per_thread", "configs"):
                    try:
                        kwargs[kw.arg] = _eval_literal(kw.value)
                    except Exception:  # noqa: BLE001 - unknown decorator content is not needed
                        pass
    main.decorator_list = [ast.parse("triton.jit", mode="eval").body]
    params = [a.arg for a in main.args.args]
    constexpr_params = [a.arg for a in main.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]
    body_constexprs = {}
    for stmt in main.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and \
                "constexpr" in ast.unparse(stmt.annotation) and stmt.value is not None:
            try:
                body_constexprs[stmt.target.id] = ast.literal_eval(stmt.value)
            except ValueError:
                body_constexprs[stmt.target.id] = ast.unparse(stmt.value)
    extra = [f for f in fns if f is not main]
    for f in extra:
        f.decorator_list = [d for d in f.decorator_list if _is_jit_decorator(d)] or [ast.parse("triton.jit", mode="eval").body]
    return _Kernel(inductor_name, readable_kernel_name(inductor_name), main, extra, decorator, kwargs, params,
                   constexpr_params, body_constexprs)


def _find_kernels(module: ast.Module) -> dict[str, _Kernel]:
    kernels = {}
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            fn = call.func
            if isinstance(fn, ast.Attribute) and fn.attr == "triton" and isinstance(fn.value, ast.Name) \
                    and fn.value.id == "async_compile" and len(call.args) >= 2:
                name = ast.literal_eval(call.args[0])
                src = ast.literal_eval(call.args[1])
                kernel = _parse_kernel(name, src)
                var = stmt.targets[0].id
                if var != name:
                    # a user-defined kernel (torch.library.triton_op, e.g. conv_kernels.py): one
                    # `def` name, a variable per specialisation (`conv_implicit_gemm_0`, `_1`); named
                    # by its variable, so that launches and size names find their own kernel
                    kernel.inductor_name = var
                    kernel.name = re.sub(r"_\d+$", "", var) + "_kernel"
                kernels[var] = kernel
    return kernels


def _find_call(module: ast.Module) -> ast.FunctionDef:
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "call":
            return stmt
        if isinstance(stmt, ast.ClassDef):  # graph partitions: class Runner: def call(self, args)
            raise ConversionError("unsupported_layout", "output code uses graph partitions (class Runner); "
                                  "capture with torch._inductor.config.graph_partition=False")
    raise ConversionError("parse_error", "output code has no `def call(args)`")

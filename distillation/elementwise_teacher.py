"""The elementwise teacher: one readable Triton kernel per forward, written statement by statement.

Inductor's kernels are correct and fast, but they are a compiler's: operators decomposed and
renumbered (`tmp0 ... tmp7`), common subexpressions merged, constants folded. A small model
trained on them learned the shape of a kernel and not its arithmetic (benchmarks/RESULTS.md,
sixteenth H200 run: held-out elementwise problems compiled 72.5 %, correct 0 %; for
`x = sigmoid(x); residual = x; x = x + residual` it stored `tl.sigmoid(x)` alone). This teacher
writes, for a forward made of elementwise statements, the kernel a person would write: the same
statements in the same order under the same names, each torch operator as its Triton expression:

    x = x + self.bias1                  ->  x = x + bias1            (bias1 loaded, broadcast)
    x = torch.nn.functional.mish(x)     ->  x = x * (2.0 * tl.sigmoid(2.0 * tl.where(...)) - 1.0)
    residual = x                        ->  residual = x
    return x                            ->  tl.store(out_ptr + offsets, x, mask=mask)

What it translates (anything else is left to other teachers: `failures` says why, `not_elementwise`):
- inputs: forward's tensors, of one shape (get_inputs builds them with the same size arguments);
- `__init__`: carried into ModelNew with what it needs, as the Inductor converter carries it
  (inductor_module.reference_model), so the reference's weights load; its parameters and
  buffers (`nn.Parameter(torch.randn(C, 1, 1))`, `register_buffer`) with shapes written out, read
  broadcast against the input (their non-1 axes one block, aligned right), scalar attributes
  (`self.scale = 1.5`) passed to the kernel, activation layers (`nn.GELU()`, `nn.LeakyReLU(0.2)`),
  BatchNorm layers (eval mode: running statistics and affine parameters loaded per channel);
- forward: assignments to names and one `return`; `+ - * /`, unary minus, integer powers,
  numbers; torch / F / tensor-method activations and math (relu, gelu, silu, mish, elu, selu,
  leaky_relu, hardtanh, relu6, softplus, sigmoid, tanh, hardsigmoid, hardswish, clamp, exp, log,
  sqrt, rsqrt, abs, sin, cos, neg), and view-free no-ops (`contiguous`, `clone`, dropout in eval);
- 2-D pooling layers (nn.MaxPool2d / nn.AvgPool2d with square integer windows): a kernel over the
  pooled output, each element loading its window; the statements after it go on in that kernel;
- row operations, each a statement of its own (elementwise_rows.py): softmax / log_softmax along
  an axis, logsumexp / sum / mean / amax / amin along an axis (keepdim or not), LayerNorm,
  GroupNorm and InstanceNorm layers. The kernel then runs one program per row and the
  statements around the operation apply to the row; where the row changes (another axis, or
  one value per row after a reduction) the kernel stores its tensor and the next kernel reads it:

    x = x + self.bias1                  ->  kernel 1, rows of GroupNorm's groups: x = x + bias1
    x = self.norm2(x)                   ->    mean, diff, var of the row; x = diff / tl.sqrt(...) * w + b
    x = torch.sum(x, dim=1, keepdim=True) -> kernel 2, rows along axis 1: x = tl.sum(...); one value a row

The code is a pure function of the problem's source (no GPU, nothing run), so the teacher works
anywhere; the judge decides, as for every teacher, whether it is right.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from autotriton.distillation.elementwise_ops import (_BATCH_NORM, _LAYERS, _RESERVED, NotElementwise, _arguments,
                                                    _dotted, _expr, _kernel_name, _Operand, _Plan, _tensor)
from autotriton.distillation.elementwise_rows import Rows, RowOp, norm_layer, pool_lines, pool_op, row_op, row_value
from autotriton.distillation.inductor_convert import HEADER
from autotriton.distillation.inductor_module import ConversionError, reference_model
from autotriton.distillation.teacher import TeacherSpec
from autotriton.records import Candidate, Problem

__all__ = ["ElementwiseTeacher", "NotElementwise", "translate", "TEACHER", "VERSION"]

VERSION = "elementwise-v2"  # v2: row operations
BLOCK_SIZE = 1024


def translate(source: str) -> str:
    """The ModelNew source for a problem whose forward is elementwise statements and row
    operations: one kernel, or one per row (module docstring). Raises NotElementwise saying what
    it does not translate."""
    tree = ast.parse(source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise NotElementwise("no class Model")
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    forward, init = methods.get("forward"), methods.get("__init__")
    if forward is None:
        raise NotElementwise("Model has no forward")
    args = forward.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
        raise NotElementwise("forward takes more than plain tensor inputs")
    inputs = [a.arg for a in args.args[1:]]
    if not inputs:
        raise NotElementwise("forward takes no input")
    rank = _check_input_shapes(tree, len(inputs))
    catalogue = _Plan(inputs=inputs, taken={n.id for n in ast.walk(forward) if isinstance(n, ast.Name)})
    rename = {n: _kernel_var(n) for n in inputs}
    for name in inputs[1:]:
        catalogue.operands[name] = _Operand(rename[name], name, None)
    attributes = _read_init(init, catalogue) if init is not None else {}
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        raise NotElementwise("forward does not end in one return of a tensor")
    input_names = dict(rename)
    stages = [_Stage(_stage_plan(catalogue, inputs), inputs[0], rename[inputs[0]])]
    for stmt in body:
        if isinstance(stmt, ast.Return):
            target = None
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
        else:
            raise NotElementwise(f"line {stmt.lineno}: only assignments to a name are translated")
        stage = stages[-1]
        pool = pool_op(stmt.value, catalogue.layers, rank)
        if pool is not None:
            rename = _pool(stages, pool, target, rename, attributes, catalogue)
            if target is None:
                break
            continue
        op = row_op(stmt.value, catalogue.layers, rank)
        if op is None:
            inner = next((n for n in ast.walk(stmt.value) if row_op(n, catalogue.layers, rank) is not None
                          or pool_op(n, catalogue.layers, rank) is not None), None)
            if inner is not None:
                raise NotElementwise(f"line {stmt.lineno}: `{ast.unparse(inner)}` inside an expression "
                                     "(a row operation is translated as a statement of its own)")
            value = _expr(stmt.value, stage.plan, rename, attributes)  # before the name exists: `y = y + 1` with no y is refused
        else:
            operand = _expr(op.arg, stage.plan, rename, attributes)  # `self.norm(x + self.bias)`: x + bias first
            if (stage.rows is not None and stage.rows != op.rows) or stage.window is not None:
                # another row: this kernel ends storing what the operation reads, the next reads that
                rename = _close(stages, operand, _read_name(op.arg, target), rename, catalogue)
                stage, operand = stages[-1], stages[-1].var
            stage.rows = op.rows
            value = row_value(op, operand, stage.plan)
        if target is None:
            stage.result = value
            stage.reduction = op if op is not None and op.reduces else None
            break
        rename.setdefault(target, _kernel_var(target))
        stage.plan.lines.append(f"{rename[target]} = {value}")
        if op is not None and op.reduces:
            # one value per row from here on: this kernel stores it, the next reads that tensor
            stage.reduction = op
            rank -= 0 if op.keepdim else op.rows.last - op.rows.first + 1
            rename = _close(stages, rename[target], target, rename, catalogue)
    if len(stages) > 1 and not stages[-1].plan.ops and stages[-1].result == stages[-1].var:
        stages.pop()  # the return reads what the kernel before stored
    if not any(stage.plan.ops for stage in stages):
        raise NotElementwise("forward computes nothing")
    if len(stages) == 1 and stages[0].rows is None and stages[0].window is None:
        return _render(source, stages[0].plan, rename, stages[0].result)
    return _render_stages(source, stages, list(input_names))


@dataclass
class _Stage:
    """One kernel: its plan, the host tensor it reads, the row it works on (None: flat blocks),
    the reduction it ends in, if any (one value per row) and the value it stores."""

    plan: _Plan
    source: str  # the host tensor
    var: str  # its name in the kernel
    rows: Rows | None = None
    reduction: RowOp | None = None  # the reduction it ends in (one value per row stored)
    window: tuple[str, dict[str, Any]] | None = None  # a 2-D pooling layer's (kind, window): it starts the kernel
    result: str = ""


def _pool(stages: list[_Stage], pool: tuple[str, ast.expr, dict[str, Any]], target: str | None,
          rename: dict[str, str], attributes: dict[str, str], catalogue: _Plan) -> dict[str, str]:
    """A 2-D pooling layer starts a kernel over the pooled output: each element loads its window
    of the tensor the kernel before stored (or forward's input); statements after it go on in
    the same kernel. Returns the rename table from there on."""
    kind, arg, window = pool
    stage = stages[-1]
    operand = _expr(arg, stage.plan, rename, attributes)
    if stage.plan.lines or stage.rows is not None or stage.window is not None:
        rename = _close(stages, operand, _read_name(arg, target), rename, catalogue)
        stage = stages[-1]
    elif operand != stage.var:
        raise NotElementwise(f"`{ast.unparse(arg)}`: a pooling layer reading another input than the first")
    stage.plan.operands = {k: v for k, v in stage.plan.operands.items() if v.shape is not None or v.channels_of}
    stage.window = (kind, window)
    name = target or "pooled"
    out = rename.setdefault(name, _kernel_var(name))
    stage.plan.lines.extend(pool_lines(kind, window, stage.var, out))
    stage.plan.ops.append(kind)
    if target is None:
        stage.result = out
    return rename


def _stage_plan(catalogue: _Plan, inputs: list[str]) -> _Plan:
    """A kernel's plan: the operands, scalars and layers __init__ made, none of its statements."""
    return _Plan(inputs=inputs, operands=dict(catalogue.operands), scalars=dict(catalogue.scalars),
                 layers=dict(catalogue.layers), taken=set(catalogue.taken))


def _kernel_var(name: str) -> str:
    """Forward's name `name` in a kernel (renamed where it would shadow the kernel's own names)."""
    return name + "_v" if name in _RESERVED else name


def _read_name(arg: ast.expr, target: str | None) -> str:
    """The forward name a kernel's input gets when a row or pooling operation reading `arg` starts
    the kernel: `arg`'s own when it is a name, else the statement's target's."""
    return arg.id if isinstance(arg, ast.Name) else (target or "x")


def _close(stages: list[_Stage], value: str, name: str, rename: dict[str, str], catalogue: _Plan) -> dict[str, str]:
    """End the last kernel storing `value`; the next reads it as forward's `name`. Only that
    tensor crosses: the new rename table holds it alone."""
    var = rename.get(name) or _kernel_var(name)
    stages[-1].result = value
    if not stages[-1].plan.ops:
        raise NotElementwise(f"a kernel would compute nothing before `{name}`")
    host = f"out{len(stages)}"
    plan = _stage_plan(catalogue, [host])
    plan.operands = {k: v for k, v in plan.operands.items() if v.shape is not None or v.channels_of}  # inputs stay behind
    stages.append(_Stage(plan, host, var))
    return {name: var}


def _check_input_shapes(tree: ast.Module, count: int) -> int:
    """get_inputs() must build `count` tensors of one shape (the kernel indexes them alike): their rank."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    ret = next((n for n in ast.walk(fn) if isinstance(n, ast.Return)), None) if fn is not None else None
    if ret is None or not isinstance(ret.value, (ast.List, ast.Tuple)) or len(ret.value.elts) != count:
        raise NotElementwise("get_inputs() does not return one literal list of forward's inputs")
    shapes = set()
    for elt in ret.value.elts:
        if not (isinstance(elt, ast.Call) and _dotted(elt.func) in ("torch.randn", "torch.rand")):
            raise NotElementwise(f"input `{ast.unparse(elt)}` is not a torch.randn/rand tensor")
        if elt.keywords:
            raise NotElementwise(f"input `{ast.unparse(elt)}` sets a dtype or device")
        shapes.add(tuple(ast.unparse(a) for a in elt.args))
    if len(shapes) != 1:
        raise NotElementwise("forward's inputs have different shapes")
    (shape,) = shapes
    if any(a.startswith("*") for a in shape):
        raise NotElementwise("an input's rank is not written out")
    return len(shape)


def _read_init(init: ast.FunctionDef, plan: _Plan) -> dict[str, str]:
    """What each `self.<attr>` of __init__ is: "tensor" (a parameter/buffer with its shape read),
    "scalar", or "layer"; the operand, scalar and layer entries of `plan` filled."""
    kinds: dict[str, str] = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and _dotted(node.func) == "self.register_buffer" and node.args:
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and len(node.args) > 1:
                _tensor(plan, kinds, name.value, node.args[1])
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
            continue
        attr, value = target.attr, node.value
        called = _dotted(value.func) if isinstance(value, ast.Call) else ""
        if called in ("nn.Parameter", "torch.nn.Parameter", "Parameter") and value.args:
            _tensor(plan, kinds, attr, value.args[0])
        elif re.fullmatch(r"(torch\.)?nn\.BatchNorm[123]d", called):
            plan.layers[attr] = ("batch_norm", _arguments(value, _BATCH_NORM, skip=0, as_written=("num_features", "momentum")))
            kinds[attr] = "layer"
        elif norm_layer(called, value) is not None:
            plan.layers[attr] = norm_layer(called, value)
            kinds[attr] = "layer"
        elif called.rsplit(".", 1)[-1] in _LAYERS and called.split(".")[0] in ("nn", "torch"):
            fn, params = _LAYERS[called.rsplit(".", 1)[-1]]
            plan.layers[attr] = (fn, _arguments(value, params, skip=0))
            kinds[attr] = "layer"
        elif isinstance(value, (ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp)) and not isinstance(value, ast.Call):
            if isinstance(value, ast.Constant) and not isinstance(value.value, (int, float)):
                continue
            kinds[attr] = "scalar"
            plan.scalars[attr] = attr if attr not in _RESERVED else attr + "_s"
    return kinds


def _render(source: str, plan: _Plan, rename: dict[str, str], result: str) -> str:
    """One flat kernel over every element (forward without row operations)."""
    first = plan.inputs[0]
    kernel, name, host = _kernel(_Stage(plan, first, rename[first], result=result), "out", _kernel_name(plan.ops))
    forward_lines = [f"{n} = {n}.contiguous()" for n in plan.inputs] + host + ["return out"]
    return _module(source, [kernel], [name], forward_lines)


def _render_stages(source: str, stages: list[_Stage], inputs: list[str]) -> str:
    """One kernel per stage, each reading the tensor the one before stored."""
    kernels, names, forward_lines = [], [], [f"{n} = {n}.contiguous()" for n in inputs]
    for i, stage in enumerate(stages):
        out = stages[i + 1].source if i + 1 < len(stages) else "out"
        name = _kernel_name(stage.plan.ops)
        name = name if name not in names else name.replace("_kernel", f"_{i + 1}_kernel")
        kernel, name, host = _kernel(stage, out, name)
        kernels.append(kernel)
        names.append(name)
        forward_lines += host
    return _module(source, kernels, names, forward_lines + ["return out"])


def _kernel(stage: _Stage, out: str, kernel: str) -> tuple[str, str, list[str]]:
    """(kernel source, its name, the host statements that allocate `out` and launch it) for the
    stage's kernel reading host tensor `first` as `x`: flat blocks of every element, one row a
    program, or flat blocks of the pooled output each loading its window."""
    plan, x, first, result, rows, reduction = stage.plan, stage.var, stage.source, stage.result, stage.rows, stage.reduction
    ref = out if stage.window else first  # the tensor whose elements `offsets` numbers
    text = "\n".join(plan.lines + [result])
    operands = [op for op in plan.operands.values() if re.search(rf"\b{re.escape(op.name)}\b", text)]
    scalars = [(attr, arg) for attr, arg in plan.scalars.items() if re.search(rf"\b{re.escape(arg)}\b", text)]
    geometry = ["n_elements"] if rows is None else ["n_cols", "col_stride"]
    geometry += ["in_h", "in_w", "out_h", "out_w"] if stage.window else []
    params = [f"{x}_ptr"] + [f"{op.name}_ptr" for op in operands] + ["out_ptr", *geometry]
    host_args = [first] + [op.host for op in operands] + [out, *geometry]
    other = "" if rows is None else ", other=0.0"
    loads = [] if stage.window else [f"    {x} = tl.load({x}_ptr + offsets, mask=mask{other})"]
    host_sizes: list[str] = []
    for op in operands:
        if op.channels_of:  # axis 1 of the input: one statistic per channel
            size, inner = "channels", "inner"  # every per-channel statistic reads axis 1 of the one shape
            loads.append(f"    {op.name} = tl.load({op.name}_ptr + (offsets // {inner}) % {size}, mask=mask)")
            if size not in params:
                params += [size, inner]
                host_args += [size, inner]
                host_sizes += [f"{size} = {ref}.shape[1]", f"{inner} = {ref}.numel() // ({ref}.shape[0] * {ref}.shape[1])"]
            continue
        if op.shape is None:
            loads.append(f"    {op.name} = tl.load({op.name}_ptr + offsets, mask=mask)")
            continue
        rank, lo, hi = op.block()
        if lo < 0:
            loads.append(f"    {op.name} = tl.load({op.name}_ptr)")
            continue
        trailing = rank - 1 - hi  # the input's axes after the operand's block
        index = f"offsets % {op.name}_size"
        params.append(f"{op.name}_size")
        host_args.append(f"{op.name}_size")
        host_sizes.append(f"{op.name}_size = {op.host}.numel()")
        if trailing:
            index = f"(offsets // {op.name}_inner) % {op.name}_size"
            params.append(f"{op.name}_inner")
            host_args.append(f"{op.name}_inner")
            host_sizes.append(f"{op.name}_inner = " + " * ".join(f"{ref}.shape[{-k}]" for k in range(trailing, 0, -1)))
        loads.append(f"    {op.name} = tl.load({op.name}_ptr + {index}, mask=mask)")
    params += [arg for _, arg in scalars]
    host_args += [f"self.{attr}" for attr, _ in scalars]
    head = ["@triton.jit", f"def {kernel}({', '.join(params)}, BLOCK_SIZE: tl.constexpr):"]
    body = [*loads, *(f"    {line}" for line in plan.lines)]
    if rows is None:
        lines = head + ["    pid = tl.program_id(0)", "    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
                        "    mask = offsets < n_elements", *body, f"    tl.store(out_ptr + offsets, {result}, mask=mask)"]
        alloc = [f"{out} = torch.empty_like({first})"]
        if stage.window:
            k, s, p = (stage.window[1][n] for n in ("kernel_size", "stride", "padding"))
            pad = f" + {2 * p}" if p else ""
            alloc = [f"in_h = {first}.shape[2]", f"in_w = {first}.shape[3]", f"out_h = (in_h{pad} - {k}) // {s} + 1",
                     f"out_w = (in_w{pad} - {k}) // {s} + 1",
                     f"{out} = {first}.new_empty(({first}.shape[0], {first}.shape[1], out_h, out_w))"]
        host = [*alloc, f"n_elements = {ref}.numel()", *host_sizes,
                f"grid = (triton.cdiv(n_elements, {BLOCK_SIZE}),)",
                f"{kernel}[grid]({', '.join(host_args)}, BLOCK_SIZE={BLOCK_SIZE})"]
        return "\n".join(lines), kernel, host
    # one program per row: its n_cols elements, col_stride apart, loaded whole
    store = f"    tl.store(out_ptr + row, {result})" if reduction else f"    tl.store(out_ptr + offsets, {result}, mask=mask)"
    lines = head + ["    row = tl.program_id(0)", "    cols = tl.arange(0, BLOCK_SIZE)", "    mask = cols < n_cols",
                    "    offsets = (row // col_stride) * n_cols * col_stride + row % col_stride + cols * col_stride",
                    *body, store]
    alloc = f"{first}.new_empty({rows.reduced_shape(first, reduction.keepdim)})" if reduction else f"torch.empty_like({first})"
    host = [f"{out} = {alloc}", *rows.host(first), *host_sizes, f"n_rows = {first}.numel() // n_cols",
            "BLOCK_SIZE = triton.next_power_of_2(n_cols)",
            f"{kernel}[(n_rows,)]({', '.join(host_args)}, BLOCK_SIZE=BLOCK_SIZE)"]
    return "\n".join(lines), kernel, host


def _module(source: str, kernels: list[str], names: list[str], forward_lines: list[str]) -> str:
    """ModelNew's file: the class around forward as the Inductor converter builds it from the
    reference (__init__ and what it reaches, the module-level imports, constants and helpers it
    needs, Model -> ModelNew), the kernels before it."""
    try:
        ref = reference_model(source)
        statements = ref.module_statements(set())
    except ConversionError as exc:
        raise NotElementwise(f"ModelNew's class: {exc.detail}") from exc
    if ref.conflicts(set(names)):
        raise NotElementwise(f"the reference defines {', '.join(names)}, a kernel's name")
    parts = [p for p in statements if p.startswith("from __future__")] + [HEADER.rstrip("\n")]
    parts += [p for p in statements if not p.startswith("from __future__")]
    parts += kernels
    return "\n\n\n".join(parts) + "\n\n\n" + ref.class_source(forward_lines)


class ElementwiseTeacher:
    """Problems in, readable one-kernel candidates out (see the module docstring)."""

    name = "elementwise"
    version = VERSION

    def __init__(self, config: Any = None):
        self.counters: Counter = Counter()
        self.failures: dict[str, str] = {}

    def generate(self, problems: list[Problem], samples: int) -> list[Candidate]:
        out = []
        for problem in problems:
            self.counters["problems"] += 1
            try:
                code = translate(problem.reference_source)
            except (NotElementwise, SyntaxError) as exc:
                self.counters["not_elementwise"] += 1
                self.failures[problem.key] = f"not_elementwise: {exc}"[:1000]
                continue
            self.counters["translated"] += 1
            self.failures.pop(problem.key, None)
            # One candidate whatever `samples` asks: the translation is deterministic.
            out.append(Candidate(problem_key=problem.key, code=code, generator=self.name, generator_version=self.version,
                                 prompt_version="", sampling={"block_size": BLOCK_SIZE}, raw_output=code))
        return out


TEACHER = TeacherSpec(name="elementwise", description="readable kernels for elementwise forwards, softmax, reductions along an axis, norms and 2-D pooling, no GPU needed",
                      build=ElementwiseTeacher)

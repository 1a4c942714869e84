"""Deterministic instruction and reasoning for a (problem, candidate) pair, with no LLM.

Core, not a stage: teachers (distillation), training rows and evaluation prompts all state a
problem in these words, and a model must be trained on the task statement it is evaluated with.
`problem_instruction(problem)` is the one place that turns a problem into its instruction;
problems carry it (`Problem.instruction`, computed when they are made: `with_instruction`).

Compiler teachers (Inductor, replay of its output) produce code but no words. A training pair
still needs an instruction (the task as a user states it) and reasoning (the plan an engineer
writes before the code). `describe_problem` builds both from static analysis (Python's `ast`,
never executing the problem or the candidate):

- the reference: module-level size constants, the layers `Model.__init__` creates, the
  operations `forward` performs in order (torch / F calls, layer calls, tensor methods,
  arithmetic operators), and input shapes and dtypes from `get_inputs()`;
- the candidate (when given): every `@triton.jit` kernel with its loads, stores, `tl.dot`,
  reductions, loops and math, which reference operations it covers (fusion), and how
  `ModelNew.forward` launches it (grid and constexpr block sizes).

The text is the same for the same inputs, so re-running distillation gives the same rows.
"""

from __future__ import annotations

import ast
import copy
import operator
from dataclasses import dataclass, field
from typing import Any

from autotriton.kernel_facts import _BINOPS, CandidateSummary, KernelSummary, _dotted, analyze_candidate

__all__ = ["describe_problem", "default_instruction", "problem_instruction", "instruction_for", "with_instruction", "analyze_problem", "analyze_candidate", "ProblemSummary", "KernelSummary", "CandidateSummary"]

# Tensor methods / functions that only reshape or move data: not "computation" worth listing.
_SHAPE_OPS = {
    "view", "reshape", "permute", "transpose", "contiguous", "unsqueeze", "squeeze", "flatten", "expand",
    "size", "dim", "to", "float", "half", "bfloat16", "t", "narrow", "chunk", "split", "unbind", "numel",
    "expand_as", "view_as", "clone", "detach", "stride", "type", "cpu", "cuda",
}
_SAFE_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
                ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow, ast.Mod: operator.mod}
_TENSOR_FACTORIES = {"randn", "rand", "randint", "zeros", "ones", "empty", "full", "randn_like", "rand_like", "tensor", "arange"}

# Which Triton features implement which reference operation (to say what got fused where).
_OP_FEATURES: dict[str, set[str]] = {
    "relu": {"maximum", "where"}, "leaky_relu": {"where"}, "gelu": {"erf", "tanh", "exp"}, "silu": {"exp", "sigmoid"},
    "sigmoid": {"exp", "sigmoid"}, "tanh": {"exp", "tanh"}, "softmax": {"exp", "max", "sum"},
    "log_softmax": {"exp", "log", "max", "sum"}, "matmul": {"dot"}, "mm": {"dot"}, "bmm": {"dot"}, "linear": {"dot"},
    "conv2d": {"dot", "mul"}, "conv1d": {"dot", "mul"}, "conv3d": {"dot", "mul"}, "sum": {"sum"}, "mean": {"sum"},
    "max": {"max", "maximum"}, "min": {"min", "minimum"}, "exp": {"exp"}, "log": {"log"}, "sqrt": {"sqrt", "rsqrt"},
    "add": {"add"}, "sub": {"sub"}, "mul": {"mul"}, "div": {"div"}, "pow": {"pow", "mul"}, "abs": {"abs"},
    "layer_norm": {"sum", "rsqrt", "sqrt"}, "rms_norm": {"sum", "rsqrt", "sqrt"}, "norm": {"sum", "sqrt"},
    "clamp": {"maximum", "minimum", "clamp"}, "hardtanh": {"maximum", "minimum", "clamp"},
    "argmax": {"argmax", "max"}, "argmin": {"argmin", "min"}, "cumsum": {"cumsum"}, "cumprod": {"cumprod"},
}


@dataclass
class ProblemSummary:
    constants: dict[str, Any] = field(default_factory=dict)
    layers: list[tuple[str, str, str]] = field(default_factory=list)  # (attribute, type, constructor args)
    ops: list[str] = field(default_factory=list)  # computation in forward, in order
    inputs: list[dict[str, Any]] = field(default_factory=list)  # {"name", "shape": list|None, "dtype", "factory"}
    init_inputs: list[Any] = field(default_factory=list)
    forward_args: list[str] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)  # forward's statements as written (short forwards only)
    returns: str = ""  # what a short forward returns, its statements substituted into one expression


# ---- the reference ----------------------------------------------------------------------------
def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    """Evaluate constant arithmetic over known names; raises ValueError for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _SAFE_BINOPS:
        left, right = _eval(node.left, env), _eval(node.right, env)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) and abs(right) < 1e6:
            return _SAFE_BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, env)
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_eval(e, env) for e in node.elts]
    raise ValueError(ast.dump(node)[:80])


def _op_name(call: ast.Call, layers: dict[str, str]) -> str | None:
    func = call.func
    name = _dotted(func)
    if name.startswith("self.") and name.count(".") == 1:
        layer = layers.get(name[5:])
        return _snake(layer) if layer else None
    last = name.rsplit(".", 1)[-1] if name else ""
    if not last:
        return None
    if name.startswith(("torch.", "F.", "nn.functional.", "torch.nn.functional.")) or (isinstance(func, ast.Attribute) and name):
        if last in _SHAPE_OPS or last in _TENSOR_FACTORIES or last in {"super", "__init__"}:
            return None
        return last
    return None


def _snake(class_name: str) -> str:
    known = {"Linear": "linear", "ReLU": "relu", "GELU": "gelu", "SiLU": "silu", "Sigmoid": "sigmoid", "Tanh": "tanh",
             "Softmax": "softmax", "LogSoftmax": "log_softmax", "LayerNorm": "layer_norm", "RMSNorm": "rms_norm",
             "Conv1d": "conv1d", "Conv2d": "conv2d", "Conv3d": "conv3d", "BatchNorm1d": "batch_norm",
             "BatchNorm2d": "batch_norm", "Dropout": "dropout", "Embedding": "embedding", "MaxPool2d": "max_pool2d",
             "AvgPool2d": "avg_pool2d", "LeakyReLU": "leaky_relu", "Hardtanh": "hardtanh", "GroupNorm": "group_norm"}
    if class_name in known:
        return known[class_name]
    out = "".join("_" + ch.lower() if ch.isupper() else ch for ch in class_name).lstrip("_")
    return out


def analyze_problem(source: str) -> ProblemSummary:
    """Static summary of a KernelBench-format problem (never executes it)."""
    summary = ProblemSummary()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return summary
    env: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                env[node.targets[0].id] = _eval(node.value, env)
            except (ValueError, ZeroDivisionError, OverflowError, TypeError):
                pass
    summary.constants = {k: v for k, v in env.items() if isinstance(v, (int, float, list))}
    layer_types: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    for sub in ast.walk(item):
                        if (isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Attribute)
                                and _dotted(sub.targets[0]).startswith("self.") and isinstance(sub.value, ast.Call)):
                            ctor = _dotted(sub.value.func).rsplit(".", 1)[-1]
                            if ctor and ctor[0].isupper():
                                attr = sub.targets[0].attr
                                layer_types[attr] = ctor
                                args = ", ".join(ast.unparse(a) for a in sub.value.args)
                                kws = ", ".join(f"{k.arg}={ast.unparse(k.value)}" for k in sub.value.keywords if k.arg)
                                summary.layers.append((attr, ctor, ", ".join(x for x in (args, kws) if x)))
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    summary.forward_args = [a.arg for a in item.args.args[1:]]
                    summary.ops = _forward_ops(item, layer_types)
                    summary.statements = _forward_statements(item)
                    summary.returns = _composed_return(item) if summary.statements else ""
        elif isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            summary.inputs = _input_specs(node, env)
        elif isinstance(node, ast.FunctionDef) and node.name == "get_init_inputs":
            for sub in ast.walk(node):
                if isinstance(sub, ast.Return) and sub.value is not None:
                    try:
                        summary.init_inputs = list(_eval(sub.value, env))
                    except (ValueError, TypeError, ZeroDivisionError):
                        summary.init_inputs = []
    # Inputs returned directly from get_inputs() have no name there: use forward's parameter names.
    if len(summary.inputs) == len(summary.forward_args):
        for spec, arg in zip(summary.inputs, summary.forward_args):
            if spec["name"].startswith(("input", "arg")) and spec["name"][-1].isdigit():
                spec["name"] = arg
    return summary


def _forward_ops(fn: ast.FunctionDef, layers: dict[str, str]) -> list[str]:
    """Operations in evaluation order (post-order: arguments before the call that uses them)."""
    ops: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            visit(child)
        if isinstance(node, ast.Call):
            name = _op_name(node, layers)
            if name:
                ops.append(name)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            ops.append(_BINOPS[type(node.op)])
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BINOPS:
            ops.append(_BINOPS[type(node.op)])

    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        visit(stmt)
    return ops


# A forward is quoted statement by statement only when it is short: a small model copies the
# statements (their constants, `x * 1.5`) into its plan right before the kernel that computes them.
MAX_QUOTED_STATEMENTS = 12
MAX_QUOTED_CHARS = 600


def _forward_statements(fn: ast.FunctionDef) -> list[str]:
    """forward's top-level statements as source text, one line each (docstring left out); empty
    for a forward with a compound statement (loop, branch, with) or longer than the limits above."""
    out: list[str] = []
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            return []
        out.append(ast.unparse(stmt))
    if len(out) > MAX_QUOTED_STATEMENTS or sum(len(s) for s in out) > MAX_QUOTED_CHARS or any("\n" in s for s in out):
        return []
    return out


MAX_COMPOSED_CHARS = 240


class _Inline(ast.NodeTransformer):
    def __init__(self, env: dict[str, ast.expr]):
        self.env = env

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self.env.get(node.id, node) if isinstance(node.ctx, ast.Load) else node


def _composed_return(fn: ast.FunctionDef) -> str:
    """forward's returned expression with its local assignments substituted (`x = torch.sigmoid(x);
    residual = x; x = x + residual; return x` -> `torch.sigmoid(x) + torch.sigmoid(x)`): the value
    the kernels must store, in one line; empty when a statement is not a plain assignment, when
    nothing was substituted, or past MAX_COMPOSED_CHARS."""
    env: dict[str, ast.expr] = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            env[stmt.targets[0].id] = _Inline(env).visit(copy.deepcopy(stmt.value))
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            left = env.get(stmt.target.id, ast.Name(stmt.target.id, ast.Load()))
            env[stmt.target.id] = ast.BinOp(left, stmt.op, _Inline(env).visit(copy.deepcopy(stmt.value)))
        elif isinstance(stmt, ast.Return) and stmt.value is not None and env:
            text = ast.unparse(_Inline(env).visit(copy.deepcopy(stmt.value)))
            return text if len(text) <= MAX_COMPOSED_CHARS and text != ast.unparse(stmt.value) else ""
        else:
            return ""
    return ""


def _input_specs(fn: ast.FunctionDef, env: dict[str, Any]) -> list[dict[str, Any]]:
    local = dict(env)
    specs: dict[str, dict[str, Any]] = {}
    order: list[str] = []

    def spec_of(call: ast.Call) -> dict[str, Any] | None:
        name = _dotted(call.func)
        factory = name.rsplit(".", 1)[-1]
        if not name.startswith("torch.") or factory not in _TENSOR_FACTORIES:
            return None
        dims = call.args
        if factory == "randint":
            dims = call.args[2:3] if len(call.args) >= 3 else [k.value for k in call.keywords if k.arg == "size"]
        shape: list[Any] | None = []
        try:
            for d in dims:
                value = _eval(d, local)
                shape.extend(value if isinstance(value, list) else [value])  # type: ignore[union-attr]
        except (ValueError, TypeError, ZeroDivisionError):
            shape = None
        dtype = next((_dotted(k.value).replace("torch.", "") for k in call.keywords if k.arg == "dtype"), None)
        return {"shape": shape, "dtype": dtype or ("int64" if factory == "randint" else "float32"), "factory": factory}

    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            if isinstance(stmt.value, ast.Call) and (spec := spec_of(stmt.value)):
                specs[target] = {"name": target, **spec}
            else:
                try:
                    local[target] = _eval(stmt.value, local)
                except (ValueError, TypeError, ZeroDivisionError):
                    pass
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.List, ast.Tuple)):
            for i, elt in enumerate(stmt.value.elts):
                if isinstance(elt, ast.Name) and elt.id in specs:
                    order.append(elt.id)
                elif isinstance(elt, ast.Call) and (spec := spec_of(elt)):
                    specs[f"input{i}"] = {"name": f"input{i}", **spec}
                    order.append(f"input{i}")
                else:
                    try:
                        value = _eval(elt, local)
                        specs[f"arg{i}"] = {"name": f"arg{i}", "shape": None, "dtype": type(value).__name__, "factory": "scalar", "value": value}
                        order.append(f"arg{i}")
                    except (ValueError, TypeError, ZeroDivisionError):
                        pass
    return [specs[name] for name in order]


# ---- the text ---------------------------------------------------------------------------------
def _shape_text(spec: dict[str, Any]) -> str:
    if spec.get("factory") == "scalar":
        return f"a scalar {spec['name']} = {spec.get('value')!r}"
    shape = spec.get("shape")
    dims = "[" + ", ".join(str(d) for d in shape) + "]" if shape is not None else "[?]"
    return f"{spec['name']}: {dims} {spec.get('dtype') or 'float32'}"


def _unique(seq: list[str]) -> list[str]:
    seen: list[str] = []
    for item in seq:
        if item not in seen:
            seen.append(item)
    return seen


def _plan(ops: list[str]) -> list[str]:
    """A generic plan from the kinds of operations, used when no candidate code is given."""
    kinds = set(ops)
    steps = []
    if kinds & {"matmul", "mm", "bmm", "linear", "einsum"}:
        steps.append("Tile the matrix product: each program computes one BLOCK_M x BLOCK_N output tile, looping over K in "
                     "BLOCK_K steps with tl.dot and an fp32 accumulator; mask the edges so sizes need not be multiples of the blocks.")
    if kinds & {"conv1d", "conv2d", "conv3d", "conv_transpose2d", "conv_transpose1d", "conv_transpose3d"}:
        steps.append("Compute the convolution as an implicit GEMM: each program owns a block of output positions and "
                     "channels and accumulates input-window x weight products over input channels and kernel taps.")
    reductions = kinds & {"sum", "mean", "max", "min", "softmax", "log_softmax", "layer_norm", "rms_norm", "norm", "argmax",
                          "argmin", "cumsum", "cumprod", "var", "std", "prod", "logsumexp", "batch_norm", "group_norm"}
    if reductions:
        steps.append(f"Reduce ({', '.join(sorted(reductions))}) along the reduced dimension: one program per output row, "
                     "loading the row in power-of-two blocks with a mask and combining with tl.sum / tl.max in fp32.")
    pools = {o for o in kinds if "pool" in o}
    if pools:
        steps.append(f"Pool ({', '.join(sorted(pools))}): each program computes a block of output positions, loading each "
                     "window with masks for padding and edges and combining with tl.maximum, or a sum divided by the window size.")
    elementwise = [o for o in _unique(ops) if o not in reductions and o not in pools
                   and o not in {"matmul", "mm", "bmm", "linear", "einsum"} and not o.startswith("conv")]
    if elementwise:
        steps.append(f"Fuse the elementwise work ({', '.join(elementwise)}) into the same kernel's epilogue where it follows "
                     "another op, or into one flat kernel over all elements, so each value is read and written once.")
    steps.append("Launch with grid = triton.cdiv(size, BLOCK) programs per dimension and allocate the output with torch.empty.")
    return steps


def _outputs_text(trace: dict[str, Any] | None) -> str:
    outs = (trace or {}).get("outputs") or []
    texts = ["[" + ", ".join(str(d) for d in o["shape"]) + "] " + o["dtype"] for o in outs if "shape" in o]
    return "; ".join(texts)


# Every reasoning `describe_problem` writes opens with these words (an LLM's or a person's does not):
# how `is_described` tells the describer's words, which a newer describer may rewrite, from others.
DESCRIBED_OPENING = "The reference forward"


def is_described(reasoning: str) -> bool:
    """Whether `reasoning` is describe_problem's text (of any version), not an explainer's words."""
    return reasoning.startswith(DESCRIBED_OPENING + "(")


def describe_problem(problem_source: str, candidate_code: str | None = None, trace: dict[str, Any] | None = None) -> tuple[str, str]:
    """(instruction, reasoning) for a problem and optionally the candidate that solves it.

    `trace` is what `autotriton.distillation.trace.trace_problems` found for the problem (aten
    ops and output shapes from a meta-device run in a child process); without it the text rests
    on static analysis alone. Deterministic: the same inputs always give the same text. Never
    executes either source itself.
    """
    p = analyze_problem(problem_source)
    ops = _unique(p.ops)
    op_text = ", ".join(ops) if ops else "the operations in its forward"
    shapes = "; ".join(_shape_text(s) for s in p.inputs) if p.inputs else "the inputs from get_inputs()"
    instruction = (
        f"Write a Triton implementation of the PyTorch module `Model` below as `ModelNew` "
        f"(same constructor arguments, same outputs). Its forward computes {op_text} "
        f"on {shapes}"
        + (f" and returns {_outputs_text(trace)}" if _outputs_text(trace) else "")
        + ". Do the computation in @triton.jit kernels."
    )

    lines: list[str] = []
    lines.append(f"{DESCRIBED_OPENING}({', '.join(p.forward_args)}) performs, in order: " + (" -> ".join(p.ops) if p.ops else "(no recognised torch operations)") + ".")
    if p.statements:
        # the ops with their constants and operands, as the reference writes them (RESULTS.md fifteenth run: the plan
        # named `mul -> add` and the kernel computed another problem's arithmetic)
        lines.append("Statement by statement: " + "; ".join(f"`{s}`" for s in p.statements) + ".")
        if p.returns:
            # one expression, as the kernel computes it (the sixteenth run's model dropped `x + residual`)
            lines.append(f"Substituted, forward returns `{p.returns}`.")
    if p.inputs:
        lines.append("Inputs: " + "; ".join(_shape_text(s) for s in p.inputs) + ".")
    if trace and trace.get("aten_ops"):
        lines.append("Traced on the meta device, forward dispatches the aten ops: "
                     + " -> ".join(f"aten.{op}" for op in trace["aten_ops"]) + ".")
    if _outputs_text(trace):
        lines.append(f"Output: {_outputs_text(trace)}.")
    if p.layers:
        lines.append("Parameters owned by the module: " + "; ".join(f"self.{a} = {t}({args})" for a, t, args in p.layers)
                     + ". ModelNew must create the same submodules/parameters so the reference weights load into it.")
    if p.init_inputs:
        lines.append(f"Constructor arguments: {p.init_inputs}.")

    summary = analyze_candidate(candidate_code) if candidate_code else None
    if summary is None or not summary.kernels:
        lines.append("Plan:")
        lines.extend(f"{i}. {s}" for i, s in enumerate(_plan(p.ops), start=1))
        return instruction, "\n".join(lines)

    # The sizes forward reads come before the kernels: a small model wrote the plan's size line right
    # and then `x.shape[2]` of a 2-D input, taking a kernel signature from a memorised 4-D example
    # (RESULTS.md thirteenth run); stated first, with the names the launches pass on, they lead.
    sizes = _size_reads_text(summary.size_reads, p.inputs, summary.size_names)
    if sizes:
        lines.append(sizes)
    # @triton.jit functions only other kernels call (Inductor's welford helpers): named, not planned as kernels
    called = set().union(*(k.names for k in summary.kernels))
    helpers = [k.name for k in summary.kernels if not k.launches and k.name in called]
    launched = [k for k in summary.kernels if k.name not in helpers]
    count = len(launched)
    lines.append(f"Plan: {count} Triton kernel{'s' if count != 1 else ''}.")
    if helpers:
        lines.append("Helper @triton.jit functions the kernels call: " + ", ".join(f"`{h}`" for h in helpers) + ".")
    covered: set[str] = set()
    # Kernels whose names are nothing but the ops they compute (the elementwise teacher's
    # `add_group_norm_kernel`, `sum_kernel`) are taken at their names: the sum kernel's index
    # arithmetic (`+`) does not make it an add. Otherwise (Inductor's `fused_reduce_kernel`,
    # `silu_reduce_kernel` computing half a softmax) a kernel's features count too.
    by_name = bool(launched) and all(_spelled_by_ops(k.name, ops) for k in launched)
    for i, k in enumerate(launched, start=1):
        fused = [op for op in ops if _names_op(k.name, op) or (not by_name and _OP_FEATURES.get(op, set()) & k.features)]
        if count == 1:
            fused = ops  # one kernel does all of forward's computation
        covered.update(fused)
        parts = [f"{i}. `{k.name}`"]
        if fused:
            parts.append(f"computes {' + '.join(fused)}" + (" fused in one pass" if len(fused) > 1 else ""))
        body = [f"{k.loads} tl.load{'s' if k.loads != 1 else ''}", f"{k.stores} tl.store{'s' if k.stores != 1 else ''}"]
        if k.dots:
            body.append(f"{k.dots} tl.dot (tiled matrix product, fp32 accumulation)")
        if k.reductions:
            body.append("reductions " + ", ".join(f"tl.{r}" for r in k.reductions))
        if k.math:
            body.append("math " + ", ".join(f"tl.{m}" for m in k.math))
        if k.loops:
            body.append(f"{k.loops} loop{'s' if k.loops != 1 else ''} over blocks (of K or of the reduced dimension)")
        if k.atomics:
            body.append(f"{k.atomics} atomic update{'s' if k.atomics != 1 else ''}")
        parts.append("with " + ", ".join(body))
        if k.constexprs:
            parts.append("compile-time block parameters " + ", ".join(k.constexprs))
        if k.fixed:
            parts.append("fixed tile sizes " + ", ".join(f"{n}={v}" for n, v in k.fixed.items()))
        for launch in k.launches[:2]:
            parts.append(f"launched on grid {launch['grid']}" + _launch_arguments_text(k, launch))
        lines.append(parts[0] + " " + "; ".join(parts[1:]) + ".")
    rest = [op for op in ops if op not in covered]
    if rest and count > 1:
        lines.append(f"The remaining operations ({', '.join(rest)}) are index arithmetic or handled inside the kernels above.")
    lines.append("Each kernel masks out-of-range lanes so sizes need not be multiples of the block sizes; "
                 "ModelNew.forward only allocates outputs with torch.empty and launches the kernels.")
    return instruction, "\n".join(lines)


def _spelled_by_ops(kernel_name: str, ops: list[str]) -> bool:
    """Whether `kernel_name` is `<op>_<op>..._kernel` (a number may end the ops) with every word
    one of `ops`' words, in runs that make whole ops: `add_group_norm_2_kernel`, not
    `native_group_norm_reduce_kernel`."""
    words = kernel_name.lower().split("_")
    if len(words) < 2 or words[-1] != "kernel":
        return False
    words = words[:-2] if len(words) > 2 and words[-2].isdigit() else words[:-1]
    spelled = [op.lower().split("_") for op in ops]
    reach = {0}  # word positions a run of whole ops reaches
    for i in range(len(words) + 1):
        if i in reach:
            reach |= {i + len(w) for w in spelled if words[i:i + len(w)] == w}
    return bool(words) and len(words) in reach


def _names_op(kernel_name: str, op: str) -> bool:
    """Whether a kernel's name spells `op` as whole words (Inductor names its kernels after the
    ops they fuse: `mul_native_group_norm_kernel` computes group_norm; `logsumexp_...` not exp)."""
    words, op_words = kernel_name.lower().split("_"), op.lower().split("_")
    return any(words[i:i + len(op_words)] == op_words for i in range(len(words) - len(op_words) + 1))


def _launch_arguments_text(k: KernelSummary, launch: dict[str, Any]) -> str:
    """" with in_ptr0=x (read), out_ptr0=buf0 (written), xnumel=n, XBLOCK=1024": every argument
    bound to its parameter, in the kernel's parameter order, pointers marked with what the kernel
    does through them (a small model passed inputs where kernels store: RESULTS.md twelfth run)."""
    def role(p: str) -> str:
        r = " and ".join(w for w, s in (("read", k.loaded), ("written", k.stored)) if p in s)
        return f" ({r})" if r else ""

    args = [f"{p}={v}{role(p)}" for p, v in launch.get("args", [])]
    named = {p for p, _ in launch.get("args", [])}
    args += [f"{n}={v}" for n, v in launch["constexprs"].items() if n not in named and (n.isupper() or n in k.constexprs)]
    return f" with {', '.join(args)}" if args else ""


def _size_reads_text(reads: dict[str, list[Any]], inputs: list[dict[str, Any]],
                     names: dict[tuple[str, Any], str] | None = None) -> str:
    """"ModelNew.forward reads x_dim0 = x.shape[0], x_dim1 = x.shape[1] (x is 2-D: [16, 1024])":
    the sizes the code reads (with the local each is kept in), next to each input's rank, so the
    plan fixes how many dimensions forward unpacks before any kernel is written."""
    specs = {s["name"]: s for s in inputs}
    names = names or {}
    parts = []
    for name, indices in reads.items():
        def read(i: Any) -> str:
            text = f"{name}.shape" if i == "*" else f"{name}.shape[...]" if i == "?" else f"{name}.shape[{i}]"
            return f"{names[(name, i)]} = {text}" if (name, i) in names and i not in ("*", "?") else text
        reads_text = ", ".join(read(i) for i in indices)
        shape = (specs.get(name) or {}).get("shape")
        rank = f" ({name} is {len(shape)}-D: [{', '.join(str(d) for d in shape)}])" if isinstance(shape, list) else ""
        parts.append(reads_text + rank)
    return ("ModelNew.forward reads " + "; ".join(parts) + ".") if parts else ""


# --------------------------------------------------------------------------------------------
# A problem's instruction: computed once, when the problem is made, and stored with it


def default_instruction(problem: Any) -> str:
    """The task in words for a problem with no teacher-written instruction: `describe_problem`,
    what teachers were shown (training and evaluation must phrase it alike).

    A problem that cannot be described is an error naming it: a generic sentence in its place would
    silently train or evaluate on a different task statement.
    """
    try:
        instruction, _reasoning = describe_problem(problem.reference_source)
    except Exception as exc:  # noqa: BLE001 (re-raised with the problem named)
        raise ValueError(f"problem {problem.name!r} (key {problem.key}): describe_problem failed ({type(exc).__name__}: "
                         f"{exc}); fix its reference source or give its candidate an instruction") from exc
    if not instruction.strip():
        raise ValueError(f"problem {problem.name!r} (key {problem.key}): describe_problem gave an empty instruction")
    return instruction


def problem_instruction(problem: Any) -> str:
    """The instruction a prompt for `problem` states: the one stored with it (`Problem.instruction`),
    else computed now (`default_instruction`, which raises naming a problem it cannot describe): a
    problem built by hand, or one read from a warehouse row that holds none."""
    return problem.instruction if problem.instruction.strip() else default_instruction(problem)


def instruction_for(reference_source: str) -> str:
    """The instruction to store with a problem made from `reference_source` ("" when it cannot be
    described: a rejected or unparseable source; a prompt for it then fails naming the problem)."""
    try:
        instruction, _reasoning = describe_problem(reference_source)
    except Exception:  # noqa: BLE001 (stored empty; problem_instruction raises with the problem named)
        return ""
    return instruction if instruction.strip() else ""


def with_instruction(problem: Any) -> Any:
    """Give `problem` its instruction in place when it has none (once its reference source is
    final: harvesting rewrites the source while it probes inputs); returns the problem."""
    if not problem.instruction:
        problem.instruction = instruction_for(problem.reference_source)
    return problem

"""TritonBench-T (thunlp/TritonBench, the PyTorch-aligned channel) converted to KernelBench-format problems.

TritonBench-T's data, as published (`data/` of the repository):

* `TritonBench_T_v1.json` (also shipped as `.jsonl`, but one JSON array either way): one record per
  operator with `name` (e.g. `torch.div`, `relu_sqrt`), `func_inputs` (the wrapper's signature and
  argument docs), `description`, `math`, `example`, `torch_code`, `torch_cnt`, `other`,
  `difficulty` (1-5), `params_cnt` and `file` (the operator file's name).
* `TritonBench_T_v1/<file>.py`: the PyTorch reference function (named after the file), then a line
  of 146 `#` characters, then the test code: `def test_<name>():` builds inputs (`device='cuda'`),
  calls the function once per test case into a `results` dict, and `test_results = test_<name>()`.

A record becomes a problem whose `Model.forward` calls the reference function exactly as one of its
test cases does: tensors built by that test case become `get_inputs()` (device arguments dropped:
the judge places inputs), scalar and other constant arguments stay in the call. Test cases whose
inputs are all random (`torch.randn`, ...) are preferred, since the judge's trials draw fresh
inputs with fresh seeds; calls with `out=` or `inplace=True` are skipped (the judge rejects input
mutation). The conversion is static (AST only): no benchmark code runs here. What cannot be
converted is reported per record (`ConversionError`: record, file, line, message); pass
`probe=True` to also run every converted problem in the judge's sandbox and report those that do
not run (e.g. dropout with `training=True` is nondeterministic).

TritonBench-T's `difficulty` is used as the level: suite ids are `tritonbench-t/level<d>/<file stem>`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotriton.evaluation.suite_entries import SuiteEntry, write_suite_jsonl

BENCHMARK = "tritonbench-t"
SEPARATOR = re.compile(r"^#{20,}\s*$", re.MULTILINE)  # TritonBench uses a line of 146 '#'

# torch functions that build a tensor from sizes or data: what a test case's inputs are made of.
TENSOR_FACTORIES = {
    "randn", "rand", "randint", "randperm", "tensor", "as_tensor", "from_numpy", "ones", "zeros", "full", "empty",
    "arange", "linspace", "logspace", "eye", "randn_like", "rand_like", "randint_like", "ones_like", "zeros_like",
    "full_like", "empty_like", "normal", "bernoulli", "multinomial", "stack", "cat", "tril", "triu", "diag",
    "complex", "polar", "poisson",
}
RANDOM_FACTORIES = {"randn", "rand", "randint", "randperm", "randn_like", "rand_like", "randint_like", "normal",
                    "bernoulli", "multinomial", "poisson"}
# Keyword arguments dropped from input construction: the judge decides device and autograd.
DROPPED_KWARGS = {"device", "requires_grad", "pin_memory", "generator"}
# Names every generated problem may use without defining them.
KNOWN_GLOBALS = {"torch", "F", "nn", "math", "np", "True", "False", "None", "float", "int", "len", "range", "tuple", "list",
                 "abs", "min", "max"}


@dataclass
class ConversionError:
    """Why one TritonBench-T record could not become a problem."""

    record: str  # the operator's name (or file stem)
    file: str  # the operator file, as given
    message: str  # what is wrong and what would fix it
    line: int | None = None  # line in `file` when one statement is at fault

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.record} ({where}): {self.message}"


@dataclass
class ConversionResult:
    entries: list[SuiteEntry] = field(default_factory=list)
    errors: list[ConversionError] = field(default_factory=list)

    @property
    def problems(self):
        return [e.to_problem() for e in self.entries]


class _Skip(Exception):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


# ----------------------------------------------------------------------------------------------
# Locating records and files


def _read_statistics(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        # Tolerate a real JSON-lines variant too.
        try:
            data = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        except json.JSONDecodeError:
            raise ValueError(f"{path}: not JSON ({exc.msg}, line {exc.lineno}); expected TritonBench-T statistics "
                             "(a JSON array of records with `name` and `file`).") from exc
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ValueError(f"{path}: expected a JSON array of TritonBench-T records (objects with `name` and `file`).")
    return data


def _operator_dir_for(stats: Path) -> Path | None:
    stem = stats.name.split(".")[0]
    for candidate in (stats.with_name(stem), stats.parent / "TritonBench_T_v1", stats.parent):
        if candidate.is_dir() and any(candidate.glob("*.py")):
            return candidate
    return None


def _statistics_for_dir(folder: Path) -> Path | None:
    for suffix in (".json", ".jsonl"):
        candidate = folder.with_name(folder.name + suffix)
        if candidate.is_file():
            return candidate
    return None


def convert_tritonbench_t(path: str | Path, *, probe: bool = False, validation_config: Any = None) -> ConversionResult:
    """Convert TritonBench-T data at `path` into KernelBench-format suite entries.

    `path` is the statistics file (`TritonBench_T_v1.json`, operator files looked up in the folder of
    the same stem beside it), the folder of operator files (statistics read from `<folder>.json`
    beside it when present), or a single operator file. Returns the converted entries (in record
    order) and one `ConversionError` per record that could not be converted. With `probe=True`
    every converted problem is also run by `autotriton.validation.probe_many` (in the sandbox) and
    those that do not run become errors too.
    """
    path = Path(path)
    result = ConversionResult()
    records: list[tuple[dict[str, Any], Path | None]] = []
    if path.is_file() and path.suffix == ".py":
        records.append(({"name": path.stem, "file": path.name}, path))
    elif path.is_dir():
        stats_path = _statistics_for_dir(path)
        if stats_path is None and (path / "TritonBench_T_v1.json").is_file():
            stats_path = path / "TritonBench_T_v1.json"
        if stats_path is not None:
            return convert_tritonbench_t(stats_path, probe=probe, validation_config=validation_config)
        for file in sorted(path.glob("*.py")):
            records.append(({"name": file.stem, "file": file.name}, file))
        if not records:
            raise ValueError(f"{path}: no TritonBench-T operator files (*.py) in this folder.")
    elif path.is_file():
        stats = _read_statistics(path)
        folder = _operator_dir_for(path)
        for index, record in enumerate(stats):
            file_name = record.get("file")
            if not isinstance(file_name, str) or not file_name:
                result.errors.append(ConversionError(str(record.get("name", f"record {index}")), str(path),
                                                     f"record {index} has no `file` field naming its operator file."))
                continue
            records.append((record, folder / file_name if folder else None))
    else:
        raise ValueError(f"{path}: not found. Pass TritonBench-T's statistics JSON, its folder of operator files, or one operator file.")

    seen: set[str] = set()
    for record, file in records:
        name = str(record.get("name") or (file.stem if file else "?"))
        shown = str(file) if file else str(record.get("file"))
        if file is None or not file.is_file():
            result.errors.append(ConversionError(name, shown, "operator file not found; put the TritonBench_T_v1/ folder "
                                                 "beside the statistics file (same stem)."))
            continue
        try:
            entry = convert_operator_file(file.read_text(encoding="utf-8"), file=file, record=record)
        except _Skip as exc:
            result.errors.append(ConversionError(name, shown, str(exc), exc.line))
            continue
        except SyntaxError as exc:
            result.errors.append(ConversionError(name, shown, f"not valid Python: {exc.msg}", exc.lineno))
            continue
        if entry.id in seen:
            result.errors.append(ConversionError(name, shown, f"duplicate operator id {entry.id!r}; kept the first."))
            continue
        seen.add(entry.id)
        result.entries.append(entry)

    if probe and result.entries:
        from autotriton.validation import probe_many

        probes = probe_many([e.source for e in result.entries], validation_config)
        kept = []
        for entry, pr in zip(result.entries, probes):
            if getattr(pr, "ok", False):
                kept.append(entry)
            else:
                reason = getattr(pr, "reason", "failed")
                detail = (getattr(pr, "detail", "") or "").strip().splitlines()
                result.errors.append(ConversionError(entry.name, entry.origin,
                                                     f"converted problem does not run in the judge: {reason}"
                                                     + (f" ({detail[-1][:200]})" if detail else "")))
        result.entries = kept
    return result


# ----------------------------------------------------------------------------------------------
# One operator file


def _split(text: str) -> tuple[str, str, int]:
    """(reference part, test part, first line number of the test part)."""
    match = None
    for match in SEPARATOR.finditer(text):
        pass  # the last separator: TritonBench's own evaluator splits on it the same way
    if match is None:
        raise _Skip("no test section: TritonBench-T files separate the reference from its tests with a line of '#' characters.")
    return text[: match.start()], text[match.end():], text[: match.end()].count("\n") + 1


def _entry_function(ref_tree: ast.Module, test_tree: ast.Module, stem: str, record_name: str) -> ast.FunctionDef:
    functions = {n.name: n for n in ref_tree.body if isinstance(n, ast.FunctionDef)}
    if not functions:
        raise _Skip("the reference part defines no function.")
    for wanted in (stem, record_name.split(".")[-1]):
        if wanted in functions:
            return functions[wanted]
    called = {n.func.id for n in ast.walk(test_tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    hits = [f for name, f in functions.items() if name in called]
    if len(hits) == 1:
        return hits[0]
    raise _Skip(f"cannot tell which function is the operator: none is named {stem!r} and the tests call "
                f"{', '.join(sorted(n for n in functions if n in called)) or 'none'} of {', '.join(functions)}.")


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _assigned(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        out = []
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                out.append(target.id)
            elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
                out.extend(e.id for e in target.elts)  # type: ignore[union-attr]
        return out
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return [stmt.target.id]
    return []


def _root_call_name(node: ast.AST) -> str | None:
    """`torch.randn(...)` -> 'randn'; `torch.randn(...).cuda()` -> 'randn'."""
    while True:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch":
                return func.attr
            if isinstance(func, ast.Attribute):
                node = func.value  # a method on something: look at what it is called on
                continue
            return None
        if isinstance(node, ast.Attribute):
            node = node.value
            continue
        return None


def _is_constant_expr(node: ast.AST, constants: set[str]) -> bool:
    """Literals, dtype attributes (torch.float16), torch.Size([...]) and arithmetic on known constants."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in constants or node.id in {"True", "False", "None"}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_constant_expr(e, constants) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is None or _is_constant_expr(k, constants) for k in node.keys) and all(_is_constant_expr(v, constants) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return _is_constant_expr(node.operand, constants)
    if isinstance(node, ast.BinOp):
        return _is_constant_expr(node.left, constants) and _is_constant_expr(node.right, constants)
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id in {"torch", "math"}  # torch.float32, math.pi
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch" and func.attr in {"Size", "device", "finfo", "iinfo"}:
            return all(_is_constant_expr(a, constants) for a in node.args)
        if isinstance(func, ast.Name) and func.id in {"tuple", "list", "int", "float", "range"}:
            return all(_is_constant_expr(a, constants) for a in node.args)
    return False


def _is_tensor_expr(node: ast.AST, tensors: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in tensors
    root = _root_call_name(node)
    if root in TENSOR_FACTORIES:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _is_tensor_expr(node.func.value, tensors)  # x.cuda(), x.t(), x.float()
    if isinstance(node, ast.Attribute):
        return _is_tensor_expr(node.value, tensors)  # x.T, x.mT
    if isinstance(node, ast.BinOp):
        return _is_tensor_expr(node.left, tensors) or _is_tensor_expr(node.right, tensors)
    if isinstance(node, ast.UnaryOp):
        return _is_tensor_expr(node.operand, tensors)
    if isinstance(node, ast.Subscript):
        return _is_tensor_expr(node.value, tensors)
    return False


class _DeviceStripper(ast.NodeTransformer):
    """Drops device/requires_grad keywords and `.cuda()` / `.to('cuda')` / `.to(device)` hops."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        node.keywords = [k for k in node.keywords if k.arg not in DROPPED_KWARGS]
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in {"cuda", "requires_grad_"} and not node.args:
                return func.value
            if func.attr == "to" and len(node.args) == 1 and not node.keywords:
                arg = node.args[0]
                is_device = (isinstance(arg, ast.Constant) and isinstance(arg.value, str)) or (
                    isinstance(arg, ast.Name) and "device" in arg.id.lower()) or (
                    isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "device")
                if is_device:
                    return func.value
            if func.attr == "to" and not node.args and not node.keywords:
                return func.value  # `.to(device=...)` with the keyword dropped above
        return node


@dataclass
class _Plan:
    call: ast.Call
    tensors: list[str]  # forward parameters, in first-use order
    constants: list[ast.stmt]  # module-level constant statements
    tensor_stmts: list[ast.stmt]  # get_inputs body
    random_inputs: bool


def _plan_call(call: ast.Call, body: list[ast.stmt], index: int, entry: str, line_offset: int) -> _Plan:
    line = (call.lineno or 0) + line_offset - 1
    for kw in call.keywords:
        if kw.arg == "out":
            raise _Skip("the call writes into `out=`", line)
        if kw.arg == "inplace" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
            raise _Skip("the call is in-place (inplace=True)", line)
        if kw.arg is None:
            raise _Skip("the call unpacks **kwargs", line)
    if any(isinstance(a, ast.Starred) for a in call.args):
        raise _Skip("the call unpacks *args", line)
    # Definitions visible at the call: the last simple assignment of each name before it.
    defs: dict[str, ast.stmt] = {}
    for stmt in body[:index]:
        for name in _assigned(stmt):
            defs[name] = stmt
    needed_stmts: list[ast.stmt] = []
    pending = sorted(_names(call))
    resolved: set[str] = set()
    while pending:
        name = pending.pop()
        if name in resolved or name == entry or name in KNOWN_GLOBALS:
            continue
        resolved.add(name)
        stmt = defs.get(name)
        if stmt is None:
            raise _Skip(f"argument name {name!r} is not assigned by a plain statement before the call", line)
        if stmt not in needed_stmts:
            needed_stmts.append(stmt)
            value = stmt.value  # type: ignore[attr-defined]
            pending.extend(_names(value))
    needed_stmts.sort(key=lambda s: body.index(s))
    constants: set[str] = set()
    tensors: set[str] = set()
    const_stmts: list[ast.stmt] = []
    tensor_stmts: list[ast.stmt] = []
    random_inputs = True
    for stmt in needed_stmts:
        value = stmt.value  # type: ignore[attr-defined]
        names = _assigned(stmt)
        if _is_constant_expr(value, constants):
            constants.update(names)
            const_stmts.append(stmt)
        elif _is_tensor_expr(value, tensors) and len(names) == 1:
            root = _root_call_name(value)
            derived = root is None and bool(_names(value) & tensors)  # e.g. y = x.abs() of a random x
            if root not in RANDOM_FACTORIES and not derived:
                random_inputs = False
            tensors.update(names)
            tensor_stmts.append(stmt)
        else:
            raise _Skip(f"cannot tell what {', '.join(names)} is (neither a constant nor a tensor built by torch): "
                        f"`{ast.unparse(value)[:80]}`", (stmt.lineno or 0) + line_offset - 1)
    # Forward parameters: the tensors the call itself uses, in order of appearance in the call.
    used = []
    for node in list(call.args) + [k.value for k in call.keywords]:
        for name in [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]:
            if name in tensors and name not in used:
                used.append(name)
    if not used:
        raise _Skip("the call takes no tensor argument", line)
    return _Plan(call, used, const_stmts, tensor_stmts, random_inputs)


def _effective_argument(call: ast.Call, fn: ast.FunctionDef, name: str) -> ast.AST | None:
    """The expression `name` takes in this call of `fn`: a keyword, a positional, or the default."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if name in params:
        index = params.index(name)
        if index < len(call.args):
            return call.args[index]
        defaults = fn.args.defaults
        first_default = len(params) - len(defaults)
        return defaults[index - first_default] if index >= first_default else None
    kwonly = [a.arg for a in fn.args.kwonlyargs]
    if name in kwonly:
        return fn.args.kw_defaults[kwonly.index(name)]
    return None


def _deterministic(plan: _Plan, fn: ast.FunctionDef) -> bool:
    """False when the case runs the operator in training mode (dropout draws random masks, so the
    reference would not match itself); True when it does not, or when that cannot be told."""
    for name in ("training", "train"):
        value = _effective_argument(plan.call, fn, name)
        if value is None:
            continue
        if isinstance(value, ast.Name):  # a constant assigned in the test case
            stmt = next((s for s in plan.constants if value.id in _assigned(s)), None)
            value = stmt.value if stmt is not None else value  # type: ignore[attr-defined]
        try:
            return not bool(ast.literal_eval(value))
        except ValueError:
            return True
    return True


def _indent(code: str, spaces: int = 4) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else line for line in code.splitlines())


def _reference_code(ref_tree: ast.Module, ref_text: str) -> str:
    """The reference part: imports, defs, classes and plain assignments (top-level prints and demos dropped)."""
    keep = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)
    lines = ref_text.splitlines()
    out = ""
    previous_import = False
    for node in ref_tree.body:
        if isinstance(node, keep):
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            is_import = isinstance(node, (ast.Import, ast.ImportFrom))
            sep = "" if not out else ("\n" if is_import and previous_import else "\n\n")
            out += sep + "\n".join(lines[start - 1: node.end_lineno])
            previous_import = is_import
    return out


def convert_operator_file(text: str, *, file: Path | str = "<operator>", record: dict[str, Any] | None = None) -> SuiteEntry:
    """One TritonBench-T operator file (+ its statistics record) -> a suite entry; raises _Skip/SyntaxError."""
    record = record or {}
    file = Path(file)
    ref_text, test_text, test_line = _split(text)
    ref_tree = ast.parse(ref_text)
    test_tree = ast.parse(test_text)
    entry_fn = _entry_function(ref_tree, test_tree, file.stem, str(record.get("name") or file.stem))
    entry = entry_fn.name
    tests = [n for n in test_tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
    if not tests:
        raise _Skip("the test part defines no `def test_...()` function.", test_line)
    plans: list[_Plan] = []
    reasons: list[str] = []
    for test in tests:
        body = test.body
        for index, stmt in enumerate(body):
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry:
                    try:
                        plans.append(_plan_call(node, body, index, entry, test_line))
                    except _Skip as exc:
                        reasons.append(f"line {exc.line}: {exc}")
    if not plans:
        why = "; ".join(reasons[:3]) if reasons else f"the tests never call `{entry}`"
        raise _Skip(f"no test case can become get_inputs(): {why}.", test_line)
    # Prefer a deterministic case (dropout off), then one whose inputs are all random; else the first.
    best = max(range(len(plans)), key=lambda i: (_deterministic(plans[i], entry_fn), plans[i].random_inputs, -i))
    plan = plans[best]

    stripper = _DeviceStripper()
    const_code = "\n".join(ast.unparse(stripper.visit(s)) for s in plan.constants)
    tensor_code = "\n".join(ast.unparse(stripper.visit(s)) for s in plan.tensor_stmts)
    call_code = ast.unparse(plan.call)
    difficulty = record.get("difficulty")
    level = int(difficulty) if isinstance(difficulty, int) or (isinstance(difficulty, str) and difficulty.isdigit()) else None
    description = " ".join(str(record.get("description") or "").split())
    doc = f"TritonBench-T operator `{record.get('name') or entry}`" + (f": {description}" if description else ".")
    doc = doc.replace('"""', "'''").replace("\\", "\\\\")
    params = ", ".join(plan.tensors)
    source = (
        f"{_reference_code(ref_tree, ref_text).rstrip()}\n\n"
        "import torch\nimport torch.nn as nn\n\n"
        + (f"{const_code}\n\n" if const_code else "")
        + "\nclass Model(nn.Module):\n"
        f'    """{doc}"""\n\n'
        "    def __init__(self):\n        super().__init__()\n\n"
        f"    def forward(self, {params}):\n        return {call_code}\n\n\n"
        "def get_inputs():\n"
        + (_indent(tensor_code) + "\n" if tensor_code else "")
        + f"    return [{params}]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    ast.parse(source)  # the generated problem must at least be valid Python
    sid = f"{BENCHMARK}/level{level}/{file.stem}" if level is not None else f"{BENCHMARK}/{file.stem}"
    return SuiteEntry(id=sid, level=level, problem_id=file.stem, name=file.stem, source=source,
                      origin=f"TritonBench-T:{file.name}", license=record.get("license"))


def convert_to_suite_file(path: str | Path, out: str | Path, *, probe: bool = False, validation_config: Any = None) -> ConversionResult:
    """Convert TritonBench-T data and write the converted problems as a suite JSONL file."""
    result = convert_tritonbench_t(path, probe=probe, validation_config=validation_config)
    write_suite_jsonl(result.entries, out)
    return result


__all__: Sequence[str] = ["convert_tritonbench_t", "convert_operator_file", "convert_to_suite_file", "ConversionError", "ConversionResult"]

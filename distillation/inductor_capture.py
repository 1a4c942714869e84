"""Capture what torch.compile (Inductor) generates for a problem: the GPU half of the Inductor teacher.

`capture_problem(source)` runs a KernelBench-format problem's `Model` through `torch.compile`
with Triton-only autotuning (Triton templates for matmul and convolution, no cuBLAS/cuDNN
`extern_kernels` when Inductor has a template for the op), and records everything the converter
(`distillation/inductor_convert.py`, plain text work that runs anywhere) needs to turn the
output into a standalone `ModelNew`:

- `output_code`: Inductor's generated Python module (kernels as source strings + `call(args)`);
- `graph_inputs`: what each argument of `call(args)` is (a parameter or buffer of the model by
  name, the i-th forward input, or a symbolic size read from an input's shape);
- `kernel_configs`: the launch config autotuning chose for each kernel (XBLOCK/R0_BLOCK/...,
  num_warps, num_stages), which the converter bakes into plain `kernel[grid](...)` launches;
- the eager-vs-compiled error and what went wrong when it did.

`capture_problem` needs torch + triton + stdlib only (the benchmarks load this file alone on bare GPU
machines), and a CUDA device; `main`, the product's capture subprocess, also imports
autotriton.site_paths to put the problem's dependency environment on the path.
The torch.compile switches a capture sets (Inductor and Dynamo config, the math attention path,
64-bit indexing, TF32 templates) are in inductor_switches.py; their names stay importable here.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import math
import re
import time
import traceback
from typing import Any

__all__ = ["capture_problem", "inductor_settings", "dynamo_settings", "CAPTURE_FORMAT",
           "dynamic_parameter_settings", "INT32_HEADROOM", "int32_fits", "tf32_backends", "tf32_state", "force_tf32",
           "tf32_matmuls"]


CAPTURE_FORMAT = 3  # bump when the capture dict changes shape or meaning (3: "tf32", TF32 GEMM/conv templates)

_SYM_SOURCE = re.compile(r"^L\['(?P<arg>[A-Za-z_][A-Za-z0-9_]*)'\]\.size\(\)\[(?P<dim>\d+)\]$")
_TENSOR_SOURCE = re.compile(r"^L\['(?P<arg>[A-Za-z_][A-Za-z0-9_]*)'\]$")
_ARGS_SOURCE = re.compile(r"^L\['args'\]\[(?P<index>\d+)\]$")


def _source_name(node: Any) -> str | None:
    grapharg = node.meta.get("grapharg") if hasattr(node, "meta") else None
    source = getattr(grapharg, "source", None)
    if source is None:
        return None
    name = getattr(source, "name", None)
    try:
        name = name() if callable(name) else name
    except Exception:  # noqa: BLE001 - a source we cannot name is described by identity instead
        return None
    return str(name) if name is not None else None


def _sibling(module: str) -> Any:
    """A module of this folder, imported without `autotriton.distillation.__init__` (whose
    imports a bare GPU machine may lack)."""
    import importlib.util
    import sys
    from pathlib import Path

    name = f"autotriton.distillation.{module}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{module}.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# Loaded like every sibling (without the package's __init__, which a bare GPU machine may not
# import); sys.modules then holds it, so the import below works in both cases.
_sibling("inductor_switches")
from autotriton.distillation.inductor_switches import (  # noqa: E402
    INT32_HEADROOM, _math_attention, _wide_indexing, _wide_indexing_available, dynamic_parameter_settings, dynamo_settings,
    force_tf32, inductor_settings, int32_fits, tf32_backends, tf32_matmuls, tf32_state,
)


def _hint(value: Any) -> Any:
    """An int for a size without adding a guard (int(SymInt) would specialise the symbol)."""
    import torch

    if isinstance(value, torch.SymInt):
        hint = getattr(value.node, "hint", None)
        return int(hint) if hint is not None else str(value)
    return int(value)


def _describe_inputs(gm: Any, example_inputs: list[Any], model: Any, inputs: list[Any], arg_names: list[str]) -> list[dict[str, Any]]:
    """Say what each graph input is: param/buffer (by name), forward input (by index), a size, or
    (kind "unknown") something only its Dynamo source names, e.g. `L['self'].alpha`.

    Careful: example inputs may carry symbolic sizes; anything that converts them to ints or
    compares them adds a guard and specialises the compiled code, so only hints are read."""
    import torch

    by_id = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
    by_id.update({id(b): n for n, b in model.named_buffers(remove_duplicate=False)})
    param_names = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    input_ids = {id(t): j for j, t in enumerate(inputs)}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    described = []
    for i, ex in enumerate(example_inputs):
        node = placeholders[i] if i < len(placeholders) else None
        src = _source_name(node) if node is not None else None
        entry: dict[str, Any] = {"position": i, "source": src, "placeholder": node.name if node is not None else None}
        if isinstance(ex, (torch.SymInt, int)) and not isinstance(ex, bool):
            entry["kind"] = "size"
            entry["value"] = _hint(ex)
            m = _SYM_SOURCE.match(src or "")
            if m and m.group("arg") in arg_names:
                entry["input"] = arg_names.index(m.group("arg"))
                entry["dim"] = int(m.group("dim"))
        elif isinstance(ex, torch.Tensor):
            entry["shape"] = [_hint(d) for d in ex.shape]
            entry["dtype"] = str(ex.dtype).replace("torch.", "")
            name = by_id.get(id(ex))
            if name is not None:
                entry["kind"] = "param" if name in param_names else "buffer"
                entry["name"] = name
            elif id(ex) in input_ids:
                entry["kind"], entry["input"] = "input", input_ids[id(ex)]
            else:
                m = _TENSOR_SOURCE.match(src or "")
                a = _ARGS_SOURCE.match(src or "")
                if m and m.group("arg") in arg_names:
                    entry["kind"], entry["input"] = "input", arg_names.index(m.group("arg"))
                elif a:
                    entry["kind"], entry["input"] = "input", int(a.group("index"))
                else:
                    entry["kind"] = "unknown"
        else:
            entry["kind"] = "unknown"
            entry["value"] = repr(ex)[:200]
        described.append(entry)
    return described


class _LaunchRecorder:
    """Records the config each Inductor kernel actually launched with (autotuning's choice).

    Wraps CachingAutotuner.run for the duration of a capture; the model's real run comes after
    all autotuning benchmarks, so the last launch of each kernel name is the kept config."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, Any]] = {}
        self._original = None

    def __enter__(self) -> "_LaunchRecorder":
        from torch._inductor.runtime import triton_heuristics as th

        self._cls = th.CachingAutotuner
        self._original = self._cls.run
        recorder = self

        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            result = recorder._original(tuner, *args, **kwargs)
            try:
                recorder.record(tuner)
            except Exception:  # noqa: BLE001 - recording must never break the model's run
                pass
            return result

        self._cls.run = run
        return self

    def __exit__(self, *exc: Any) -> None:
        self._cls.run = self._original

    def record(self, tuner: Any) -> None:
        launchers = getattr(tuner, "launchers", None) or []
        if not launchers:
            return
        cfg = getattr(launchers[0], "config", None)
        if cfg is None:
            return
        name = getattr(getattr(tuner, "fn", None), "__name__", None) or (tuner.inductor_meta or {}).get("kernel_name")
        if not name:
            return
        self.configs[name] = {
            "kwargs": _jsonable(dict(getattr(cfg, "kwargs", {}) or {})),
            "num_warps": getattr(cfg, "num_warps", None),
            "num_stages": getattr(cfg, "num_stages", None),
            "num_ctas": getattr(cfg, "num_ctas", 1),
            "maxnreg": getattr(cfg, "maxnreg", None),
            "candidates": len(getattr(tuner, "configs", []) or []),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return repr(value)


ERR_SLICE = 2**26  # elements compared at a time by _max_err


def _max_err(expected: Any, actual: Any) -> float | None:
    import torch

    if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
        if expected.shape != actual.shape:
            return math.inf
        if expected.numel() == 0:
            return 0.0
        # In slices of at most 2**26 elements: whole-tensor temporaries of a problem at its own
        # sizes (KernelBench L1's 1.6e9-element poolings) ran the capture out of GPU memory
        # after its compile had worked (twenty-third GPU run).
        e, a = expected.reshape(-1), actual.reshape(-1)
        step, worst = ERR_SLICE, 0.0
        for start in range(0, e.numel(), step):
            es, acts = e[start:start + step], a[start:start + step]
            if not expected.is_floating_point():
                worst += float((es != acts).sum().item())
            else:
                err = float((es.float() - acts.float()).abs().max().item())
                if math.isnan(err):
                    return err
                worst = max(worst, err)
        return worst
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)) and len(expected) == len(actual):
        errs = [_max_err(e, a) for e, a in zip(expected, actual)]
        errs = [e for e in errs if e is not None]
        return max(errs) if errs else None
    return None


def _output_structure(value: Any, inputs: list[Any] | None = None) -> Any:
    """What forward returned: tensors with shape and dtype, lists/tuples of them, anything else by
    its repr. In a returned list/tuple, an item that is an earlier item again (`return [out, out]`)
    is `{"kind": "same_as", "index": j}` and one that is a forward input unchanged `{"kind": "input",
    "index": i}`: Inductor's call() returns each computed tensor once and never the inputs."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"kind": "tensor", "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")}
    if isinstance(value, (list, tuple)):
        items: list[Any] = []
        for i, v in enumerate(value):
            earlier = next((j for j in range(i) if isinstance(v, torch.Tensor) and value[j] is v), None)
            given = next((k for k, x in enumerate(inputs or []) if isinstance(v, torch.Tensor) and x is v), None)
            items.append({"kind": "same_as", "index": earlier} if earlier is not None else
                         {"kind": "input", "index": given} if given is not None else _output_structure(v))
        return {"kind": type(value).__name__, "items": items}
    return {"kind": "other", "repr": repr(value)[:200]}


class _NoGradSwitchesOff(ast.NodeTransformer):
    """`t.requires_grad = False` and `t.requires_grad_(False)` left out (see _inference_source)."""

    changed = False

    @staticmethod
    def _off(call: ast.AST) -> bool:
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_"):
            return False
        flags = list(call.args[:1]) + [k.value for k in call.keywords if k.arg == "requires_grad"]
        return len(flags) == 1 and isinstance(flags[0], ast.Constant) and flags[0].value is False

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        target = node.targets[0] if len(node.targets) == 1 else None
        if (isinstance(target, ast.Attribute) and target.attr == "requires_grad"
                and isinstance(node.value, ast.Constant) and node.value.value is False):
            self.changed = True
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if self._off(node.value):
            self.changed = True
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        if self._off(node):
            self.changed = True
            return node.func.value  # type: ignore[union-attr]
        return node


def _inference_source(source: str) -> str:
    """The problem as inference runs it: switching gradients off on a tensor (`grid.requires_grad =
    False` in a helper that builds a sampling grid) changes no value under no_grad, but Dynamo
    breaks the graph at it (setattr on requires_grad; held-out deformable-attention lost its
    capture to that). Only the capture runs this; ModelNew is made from the problem as written,
    and the judge compares it with the untouched reference."""
    if "requires_grad" not in source:
        return source
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    switches = _NoGradSwitchesOff()
    tree = switches.visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n" if switches.changed else source


def _problem_namespace(source: str, name: str) -> dict[str, Any]:
    """Execute the problem as a module registered in sys.modules, as the judge loads it
    (validation/judge.py): real-world code needs that, e.g. a `@dataclass` config under
    `from __future__ import annotations` looks its module up in sys.modules, and fails in a bare
    exec namespace; linecache holds the source for tracebacks."""
    import linecache
    import sys
    import types

    module_name = f"autotriton_capture_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
    filename = f"<problem {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    exec(compile(source, filename, "exec"), module.__dict__)  # trusted suite / harvested problems only
    return module.__dict__


def _forward_signature(forward: Any) -> list[dict[str, Any]]:
    """forward's parameters as inspect sees them ({"name", "kind", "default"?: its repr}): the
    converter's signature of ModelNew.forward when the source has none (a Model that is a torch
    layer, e.g. `class Model(nn.Sequential)`: nn.Sequential.forward(input))."""
    out = []
    for p in inspect.signature(forward).parameters.values():
        entry: dict[str, Any] = {"name": p.name, "kind": p.kind.name}
        if p.default is not inspect.Parameter.empty:
            entry["default"] = repr(p.default)[:200]
        out.append(entry)
    return out


def _to_device(value: Any, device: str) -> Any:
    """Inputs moved to the device, also inside lists, tuples and dicts (forward(self, xs: list))."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def capture_problem(
    source: str,
    *,
    name: str = "problem",
    device: str = "cuda",
    dynamic: bool = True,
    max_autotune: bool = True,
    search_space: str = "DEFAULT",
    seed: int = 0,
    decompose_convolution: bool = False,
    autotune_pointwise: bool = False,
    max_mm_configs: int | None = None,
    dynamic_parameters: bool = False,
    index_64bit: bool = False,
    tf32: bool = True,
    implicit_gemm: bool = True,
) -> dict[str, Any]:
    """Compile a problem's Model with Inductor and record its output code and chosen configs.

    Never raises for a problem's own failures: the returned dict has `ok` False and `error`
    (with `stage`: "load", "compile", "run") instead. `decompose_convolution` rewrites every
    convolution (incl. transposed/grouped/1D/3D) into gathers + matmul before Inductor lowers
    it, so it comes out as Triton templates instead of an extern convolution kernel; it also
    rewrites the average poolings Inductor would leave to ATen (windows > 25 elements, e.g. 3-D).
    `max_mm_configs` caps the GEMM/conv template configs autotuned per op (see `inductor_settings`).

    `dynamic_parameters` (opt-in, with `dynamic` only) keeps sizes that come from a parameter's
    shape symbolic all the way to the output code, so the candidate reads them from
    `self.<module>.<param>.shape[d]` and works when the judge changes a layer's width: parameter
    and module-property shapes are dynamic in Dynamo (see `dynamo_settings`), and every
    convolution is traced as gathers + matmul (`inductor_decompose.symbolic_parameter_convolutions`)
    because Inductor's convolution lowering (and, on CUDA, the fake convolution's cuDNN backend
    choice) turns the weight's sizes into constants. The capture dict then says
    `"dynamic_parameters": True`; without it the capture is exactly what it was before the option.

    Indexing: Inductor picks int32 indexing when the sizes it sees fit, and guards that choice; a
    standalone candidate keeps the kernel but not the guard. So every capture keeps int32 only
    for kernels INT32_HEADROOM x below the limit (recorded as `"int32_headroom"`), and
    `index_64bit` makes every kernel index in int64: for a problem captured at shrunk sizes
    (benchmarks/inductor_l1.py, to share a GPU) that runs at its own (a depthwise convolution's
    gathered patches: 64 x 128 x 254 x 510 x 9 elements for KernelBench L1/84). Recorded as
    `"index_64bit": True`.

    `tf32` (default on): GEMM and convolution templates use the tensor cores for fp32 (see
    `tf32_matmuls`); recorded as `"tf32": True`. The reference output the capture compares with is
    computed before, in full fp32.

    `implicit_gemm` (default on): the convolutions rewritten above (`decompose_convolution`'s
    uncovered ones, every one under `dynamic_parameters`) whose per-group product is
    tensor-core sized become one implicit-GEMM Triton kernel each (conv_kernels.py) instead of an
    im2col gather + matmul; recorded as `"implicit_gemm": True`.
    """
    import torch
    import triton

    started = time.monotonic()
    result: dict[str, Any] = {
        "format": CAPTURE_FORMAT, "name": name, "ok": False, "dynamic": dynamic, "max_autotune": max_autotune,
        "autotune_pointwise": autotune_pointwise, "tf32": tf32,
        "decompose_convolution": decompose_convolution, "max_mm_configs": max_mm_configs,
        "versions": {"torch": torch.__version__, "triton": triton.__version__},
        **({"dynamic_parameters": True} if dynamic_parameters and dynamic else {}),
        **({"implicit_gemm": True} if implicit_gemm and (decompose_convolution or dynamic_parameters) else {}),
        **({"index_64bit": _wide_indexing_available()} if index_64bit else {}),
        "int32_headroom": INT32_HEADROOM if _wide_indexing_available() else None,
        "device_name": torch.cuda.get_device_name() if device.startswith("cuda") and torch.cuda.is_available() else device,
        # Inductor's Triton compile workers in this process (TORCHINDUCTOR_COMPILE_THREADS)
        "compile_threads": getattr(importlib.import_module("torch._inductor.config"), "compile_threads", None),
    }
    # ---- load the problem
    try:
        ns = _problem_namespace(_inference_source(source), name)
        torch.manual_seed(seed)
        init_inputs = ns["get_init_inputs"]()
        # eval mode, as autotriton's judge runs both Model and ModelNew (validation/judge.py):
        # BatchNorm then uses its running statistics; a train-mode capture computes batch
        # statistics and fails every trial (KernelBench L1/33 in the CPU dry run)
        model = ns["Model"](*init_inputs).to(device).eval()
        torch.manual_seed(seed + 1)
        inputs = [_to_device(x, device) for x in ns["get_inputs"]()]
        arg_names = [p for p in inspect.signature(model.forward).parameters]
    except Exception as exc:  # noqa: BLE001 - a broken problem is recorded, not raised
        result.update(error=f"{type(exc).__name__}: {exc}", stage="load", traceback=traceback.format_exc()[-4000:])
        result["elapsed_s"] = time.monotonic() - started
        return result
    result["parameters"] = {n: list(p.shape) for n, p in model.named_parameters()}
    result["buffers"] = {n: list(b.shape) for n, b in model.named_buffers()}
    result["forward_args"] = arg_names
    result["forward_signature"] = _forward_signature(model.forward)
    result["input_shapes"] = [list(x.shape) if isinstance(x, torch.Tensor) else repr(x) for x in inputs]

    graphs: list[dict[str, Any]] = []

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        from torch._inductor.compile_fx import compile_fx

        graphs.append({"inputs": _describe_inputs(gm, list(example_inputs), model, inputs, arg_names),
                       "fx_graph": gm.code[-6000:]})
        if decompose_convolution:
            from torch._inductor.decomposition import select_decomp_table

            table = dict(select_decomp_table())
            decompose = _sibling("inductor_decompose")
            table.update(decompose.convolution_decompositions())
            table.update(decompose.avg_pool_decompositions())  # pools Inductor leaves to ATen
            return compile_fx(gm, example_inputs, decompositions=table)
        return compile_fx(gm, example_inputs)

    import contextlib

    import torch._dynamo
    import torch._inductor.config as ic
    from torch._inductor.utils import run_and_get_code

    decompose_module = _sibling("inductor_decompose")
    symbolic_convolutions = decompose_module.symbolic_parameter_convolutions() if dynamic_parameters and dynamic \
        else contextlib.nullcontext()
    implicit_convolutions = decompose_module.implicit_gemm_convolutions(_sibling("conv_kernels")) \
        if implicit_gemm and (decompose_convolution or dynamic_parameters) else contextlib.nullcontext()

    recorder = _LaunchRecorder()
    try:
        with torch.no_grad():
            torch.manual_seed(seed + 2)
            # The reference output from a copy: a forward that fills a cache on the module (timm's
            # per-device `attention_bias_cache` in eval mode) would otherwise hand Dynamo the cached
            # tensor as a graph input, which a freshly built ModelNew does not have (KeyError in
            # the judge); traced on the untouched module, the graph computes it from the parameters.
            try:
                reference = copy.deepcopy(model)
            except Exception:  # noqa: BLE001 - a module that cannot be copied runs as before
                reference = model
            expected = reference(*inputs)
            del reference
            torch._dynamo.reset()
            with ic.patch(inductor_settings(max_autotune, search_space, autotune_pointwise, max_mm_configs)), \
                    torch._dynamo.config.patch(dynamo_settings(dynamic, dynamic_parameters and dynamic)), \
                    torch.fx.experimental._config.patch(use_duck_shape=not dynamic), recorder, \
                    decompose_module.shape_generic_functionals(), _math_attention(), symbolic_convolutions, \
                    implicit_convolutions, \
                    _wide_indexing(index_64bit), tf32_matmuls(tf32), _no_onednn_on_cpu(device):
                compiled = torch.compile(model, backend=backend, dynamic=dynamic, fullgraph=False)
                actual, codes = run_and_get_code(compiled, *inputs)
            torch.cuda.synchronize() if device.startswith("cuda") else None
    except Exception as exc:  # noqa: BLE001
        result.update(error=f"{type(exc).__name__}: {str(exc)[:2000]}", stage="compile",
                      traceback=traceback.format_exc()[-6000:], graphs=graphs)
        result["elapsed_s"] = time.monotonic() - started
        return result

    result["graphs"] = graphs
    result["output_codes"] = codes
    result["output_code"] = codes[0] if len(codes) == 1 else None
    result["kernel_configs"] = recorder.configs
    result["output"] = _output_structure(expected, inputs)
    result["max_abs_err"] = _max_err(expected, actual)
    result["has_extern_kernels"] = any("extern_kernels." in c for c in codes)
    result["ok"] = len(codes) == 1 and len(graphs) == 1
    if not result["ok"]:
        result["error"] = f"{len(graphs)} graphs / {len(codes)} output modules (graph breaks)"
        result["stage"] = "compile"
    result["elapsed_s"] = time.monotonic() - started
    return result


def _no_onednn_on_cpu(device: str) -> Any:
    """On the CPU (the cpu-triton dry run), oneDNN off while compiling: torch's RNN decomposition
    otherwise keeps each layer as one `mkldnn_rnn_layer` call, where on CUDA it writes the
    recurrence out as matmuls and pointwise ops; the dry run then sees what a GPU capture gets."""
    import contextlib

    import torch

    return torch.backends.mkldnn.flags(enabled=False) if not device.startswith("cuda") else contextlib.nullcontext()


def main(argv: list[str] | None = None) -> int:
    """`python distillation/inductor_capture.py OUT.json` with a JSON request on stdin
    ({"source", "name", "dynamic", "decompose_convolution", "max_autotune", "max_mm_configs", "device",
    "dynamic_parameters", "index_64bit", "env_paths", "tf32"}): the
    subprocess side of InductorTeacher. Writes the capture dict to OUT.json."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python distillation/inductor_capture.py OUT.json < request.json", file=sys.stderr)
        return 2
    request = json.loads(sys.stdin.read())
    # The problem's dependency environment (autotriton/environments.py), after this Python's own
    # paths: torch and triton stay the ones installed here.
    from autotriton.site_paths import add_environment

    add_environment(request.get("env_paths") or [])
    capture = capture_problem(request["source"], name=request.get("name", "problem"),
                              device=request.get("device", "cuda"), dynamic=request.get("dynamic", True),
                              max_autotune=request.get("max_autotune", True),
                              decompose_convolution=request.get("decompose_convolution", True),
                              max_mm_configs=request.get("max_mm_configs"),
                              dynamic_parameters=request.get("dynamic_parameters", False),
                              index_64bit=request.get("index_64bit", False), tf32=request.get("tf32", True),
                              implicit_gemm=request.get("implicit_gemm", True))
    with open(args[0], "w", encoding="utf-8") as f:
        json.dump(capture, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

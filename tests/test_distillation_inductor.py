"""The Inductor teacher's converter, on Inductor output recorded on an H200 (tests/data/inductor/).

What a user relies on: a converted candidate is standalone Triton (no Inductor runtime, no
extern kernels), owns the reference's parameters, launches with the configs autotuning chose, and
computes the reference's function -- on the shapes it was captured at and on others (the CPU
judge shrinks and perturbs sizes); output that cannot be converted is refused with a reason.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from autotriton.distillation.inductor_convert import ConversionResult, convert_capture, convert_output_code, readable_kernel_name
from autotriton.distillation.inductor_decompose import convolution_as_matmul, needs_decomposition

FIXTURES = Path(__file__).parent / "data" / "inductor"
CONVERTIBLE = [
    "pointwise_relu", "pointwise_tanh", "pointwise_float_attribute", "reduction_row_sum", "reduction_softmax",
    "persistent_reduction_layernorm", "template_mm", "template_addmm_relu", "welford_group_norm",
    "template_conv3d_static",
]
# small enough for the CPU interpreter, captured with dynamic shapes (the judge shrinks/perturbs sizes)
JUDGED_ON_CPU = ["pointwise_relu", "pointwise_tanh", "pointwise_float_attribute", "reduction_softmax",
                 "template_addmm_relu"]
ALLOWED_IMPORTS = {"torch", "torch.nn", "triton", "triton.language", "triton.language.extra"}


def load(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def exec_source(source: str, name: str, tmp_path: Path) -> dict:
    """Import source from a file (@triton.jit needs the source on disk)."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"inductor_test_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


@pytest.fixture(scope="module")
def converted() -> dict[str, tuple[dict, ConversionResult]]:
    return {name: (load(name), convert_capture(load(name))) for name in CONVERTIBLE}


@pytest.mark.parametrize("name", CONVERTIBLE)
def test_conversion_is_standalone_triton(converted, name):
    capture, result = converted[name]
    assert result.ok, f"{name}: {result.reason}: {result.detail}"
    tree = ast.parse(result.code)
    imports = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imports.add(node.module)
    assert imports <= ALLOWED_IMPORTS, imports - ALLOWED_IMPORTS
    for banned in ("torch._inductor", "triton_helpers", "triton_heuristics", "async_compile", "extern_kernels",
                   "empty_strided_cuda", "get_raw_stream", "assert_size_stride", "torch.ops", "tl_math"):
        assert banned not in result.code, banned
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert classes == ["ModelNew"]
    kernels = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert kernels and all(any(ast.unparse(d) == "triton.jit" for d in k.decorator_list) for k in kernels)
    # launches are plain kernel[grid](...) with the grid computed by triton.cdiv or given by Inductor
    launches = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)]
    assert {ast.unparse(c.func.value) for c in launches} == set(result.kernels)
    assert all("num_warps=" in ast.unparse(c) for c in launches)


@pytest.mark.parametrize("name", CONVERTIBLE)
def test_model_new_owns_the_reference_parameters(converted, name, tmp_path):
    capture, result = converted[name]
    problem = exec_source(capture["source"], "problem", tmp_path)
    candidate = exec_source(result.code, "candidate", tmp_path)
    torch.manual_seed(0)
    init = problem["get_init_inputs"]()
    ref = problem["Model"](*init)
    new = candidate["ModelNew"](*init)
    ref_state = {k: tuple(v.shape) for k, v in ref.state_dict().items()}
    new_state = {k: tuple(v.shape) for k, v in new.state_dict().items()}
    assert new_state == ref_state
    new.load_state_dict(ref.state_dict())  # what the judge does


def test_chosen_launch_configs_are_baked_in(converted):
    capture, result = converted["reduction_softmax"]
    attempt = capture["attempts"][0]
    (inductor_name, cfg), = attempt["kernel_configs"].items()
    launch = next(line for line in result.code.splitlines() if f"{readable_kernel_name(inductor_name)}[" in line)
    for key, value in cfg["kwargs"].items():
        assert f"{key}={value}" in launch
    assert f"num_warps={cfg['num_warps']}" in launch
    assert not any("chosen by the converter" in n for n in result.notes)


def test_dynamic_capture_keeps_sizes_symbolic(converted):
    """Sizes come from the inputs at run time, so the candidate works on other shapes."""
    capture, result = converted["pointwise_float_attribute"]
    forward = result.code[result.code.index("def forward"):]
    # from the inputs: a dimension of one, or, for a pointwise output, its whole shape and element count
    assert any(f"{t}.shape[" in forward for t in "xy") or any(f"torch.empty({t}.shape" in forward and f"{t}.numel()" in forward for t in "xy")
    assert "16" not in forward and "512" not in forward  # the captured shape is not baked in
    assert "self.alpha" not in forward or ".item()" not in forward


def test_size_parameters_take_the_names_forward_passes(converted):
    """Inductor's `ks0, ks1, ...` become the forward locals each launch passes in their place, so a
    kernel's signature reads like forward's size line (`x_dim3`, `weight_dim0`) and no counter is
    left to continue; the launches pass the same names in the same places."""
    for name in ("welford_group_norm", "template_addmm_relu", "reduction_softmax"):
        code = converted[name][1].code
        assert not re.search(r"\bks\d+\b", code), name
        tree = ast.parse(code)
        kernels = {f.name: [a.arg for a in f.args.args] for f in tree.body if isinstance(f, ast.FunctionDef)}
        launches = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)]
        assert launches, name
        for launch in launches:
            params = kernels[launch.func.value.id]
            for param, arg in zip(params, launch.args):
                if isinstance(arg, ast.Name) and re.fullmatch(r"\w+_dim\d+", arg.id) and not param.endswith("numel"):
                    assert param == arg.id, f"{name}: {param} <- {arg.id}"
    group_norm = converted["welford_group_norm"][1].code
    assert "def native_group_norm_reduce_kernel(in_ptr0, out_ptr0, out_ptr1, out_ptr2, x_dim3, weight_dim0, x_dim2," in group_norm


def test_size_parameters_keep_their_name_where_launches_disagree_or_names_clash():
    from autotriton.distillation.inductor_kernels import name_size_params

    def kernel():
        return ast.parse("def k(in_ptr0, ks0, ks1, ks2, xnumel):\n    x_dim1 = ks0 + ks1 + ks2\n").body[0]

    def args(src):
        return ast.parse(f"f({src})", mode="eval").body.args

    fn = kernel()  # ks0: two launches disagree; ks1: a local of the kernel already has the name; ks2: a literal
    assert name_size_params(fn, [args("x, a_dim0, x_dim1, 4, n"), args("x, b_dim0, x_dim1, 4, n")]) == {}
    fn = kernel()
    assert name_size_params(fn, [args("x, a_dim0, a_dim0, s, n")]) == {"ks0": "a_dim0", "ks2": "s"}
    assert ast.unparse(fn).startswith("def k(in_ptr0, a_dim0, ks1, s, xnumel):\n    x_dim1 = a_dim0 + ks1 + s")


def test_helpers_and_math_are_rewritten_to_plain_triton(converted):
    tanh = converted["pointwise_tanh"][1].code
    assert "libdevice" not in tanh and "tl.exp(-2.0 *" in tanh
    softmax = converted["reduction_softmax"][1].code
    assert "tl.max(" in softmax and "tl.exp(" in softmax
    welford = converted["welford_group_norm"][1].code
    assert "def welford_combine(" in welford  # inlined from Inductor's helper library


def test_template_kernels_keep_the_fixed_grid(converted):
    code = converted["template_mm"][1].code
    tree = ast.parse(code)
    launch = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript))
    grid = ast.unparse(launch.func.slice)
    assert "triton.cdiv" in grid or "//" in grid  # tiles over M and N, from Inductor's launcher args
    assert "BLOCK_M: tl.constexpr" in code


def test_grids_are_plain_integer_arithmetic_equal_to_triton_cdiv(converted):
    """forward computes grids without triton.cdiv (a ConstexprFunction: microseconds per host call,
    several per launch, every forward) and gets the same numbers."""
    import triton

    from autotriton.distillation.inductor_forward import _HostCdivRewriter

    for name in CONVERTIBLE:
        forward = converted[name][1].code.split("def forward", 1)[1]
        assert "cdiv" not in forward, name
    launch = next(line for line in converted["pointwise_relu"][1].code.splitlines() if "relu_kernel[" in line)
    assert "+ 127) // 128" in launch  # the recorded XBLOCK=128, folded
    for src in ("triton.cdiv(n, 512)", "triton.cdiv(n, 1)", "triton.cdiv(n, m * 2)", "triton.cdiv(triton.cdiv(n, 32), m)"):
        rewritten = ast.unparse(_HostCdivRewriter().visit(ast.parse(src, mode="eval")))
        assert "cdiv" not in rewritten
        for n in (0, 1, 31, 32, 33, 511, 512, 513, 65535 * 3 + 1, 2**31 + 5):
            for m in (1, 3, 64, 65535):
                scope = {"n": n, "m": m, "triton": triton}
                assert eval(rewritten, scope) == eval(src, scope), (src, n, m)


@pytest.mark.parametrize("name,expected", [
    ("triton_poi_fused_add_relu_0", "add_relu_kernel"),
    ("triton_per_fused__softmax_exp_prepare_softmax_online_sub_0", "softmax_exp_sub_reduce_kernel"),
    ("triton_tem_fused_addmm_relu_t_0", "addmm_relu_kernel"),
    ("triton_red_fused_native_layer_norm_1", "native_layer_norm_reduce_kernel"),
    ("triton_poi_fused_0", "pointwise_kernel"),
])
def test_readable_kernel_names(name, expected):
    assert readable_kernel_name(name) == expected


def test_aten_fallback_is_refused_with_its_reason():
    result = convert_capture(load("aten_fallback_avg_pool3d"))
    assert not result.ok and result.reason == "aten_fallback" and "avg_pool3d" in result.detail
    assert result.code == ""


def test_extern_kernels_are_refused():
    capture = load("template_mm")
    attempt = capture["attempts"][0]
    code = attempt["output_code"]
    launch = next(line for line in code.splitlines() if ".run(" in line and "triton_tem" in line)
    bad = code.replace(launch.strip(), "extern_kernels.mm(arg1_1, arg2_1, out=buf0)")
    result = convert_output_code(bad, capture["source"], attempt["graphs"][0]["inputs"],
                                 kernel_configs=attempt["kernel_configs"], output=attempt["output"])
    assert not result.ok and result.reason == "extern_kernels" and "extern_kernels.mm" in result.detail


def test_graph_breaks_and_failed_captures_are_recorded():
    capture = copy.deepcopy(load("pointwise_relu"))
    capture["attempts"][0]["graphs"].append(capture["attempts"][0]["graphs"][0])
    result = convert_capture(capture)
    assert not result.ok and result.reason == "graph_breaks"
    failed = {"source": capture["source"], "attempts": [{"ok": False, "error": "NoValidChoicesError: No choices"}]}
    result = convert_capture(failed)
    assert not result.ok and result.reason == "capture_failed" and "NoValidChoices" in result.detail


def test_converted_fixtures_pass_the_cpu_judge(converted):
    """Under the Triton interpreter, on shrunk and odd sizes (the judge's rules), with the reference weights."""
    from autotriton.validation import ValidationConfig, validate_many

    jobs = [(converted[n][0]["source"], converted[n][1].code) for n in JUDGED_ON_CPU]
    verdicts = validate_many(jobs, ValidationConfig(device="cpu", trials=2, workers=2, timeout_s=300))
    for name, verdict in zip(JUDGED_ON_CPU, verdicts):
        assert verdict.correct and verdict.rule_ok, f"{name}: {verdict.status}: {verdict.error} {verdict.violations}"
        assert verdict.triton_kernels_launched


@pytest.mark.parametrize("module,shape,transposed", [
    (lambda: nn.ConvTranspose2d(8, 16, 3, stride=2, padding=1, output_padding=1), (2, 8, 7, 9), True),
    (lambda: nn.ConvTranspose3d(8, 4, (3, 5, 3), stride=(2, 1, 2), padding=(1, 2, 0), groups=2), (1, 8, 5, 6, 4), True),
    (lambda: nn.ConvTranspose1d(6, 9, 5, stride=3, padding=2, dilation=2, groups=3, output_padding=1), (2, 6, 11), True),
    (lambda: nn.Conv1d(8, 16, 5, stride=2, padding=3, dilation=2), (2, 8, 31), False),
    (lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8), (2, 8, 10, 12), False),
    (lambda: nn.Conv2d(16, 32, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=4), (2, 16, 13, 14), False),
])
def test_convolution_decomposition_matches_torch(module, shape, transposed):
    torch.manual_seed(0)
    conv = module()
    x = torch.randn(shape)
    with torch.no_grad():
        expected = conv(x)
        got = convolution_as_matmul(x, conv.weight, conv.bias, conv.stride, conv.padding, conv.dilation, transposed,
                                    conv.output_padding if transposed else [0], conv.groups)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_only_uncovered_convolutions_are_decomposed():
    assert needs_decomposition(4, transposed=True, groups=1)
    assert needs_decomposition(3, transposed=False, groups=1)  # 1-D
    assert needs_decomposition(4, transposed=False, groups=4)
    assert not needs_decomposition(4, transposed=False, groups=1)  # Inductor's Triton conv template
    assert not needs_decomposition(5, transposed=False, groups=1)
    assert needs_decomposition(4, transposed=False, groups=1, dilation=[2, 1])  # no Triton template: L1/80
    assert not needs_decomposition(4, transposed=False, groups=1, dilation=[1, 1])


def test_capture_describes_graph_inputs_without_specialising_them():
    """On the CPU (C++ codegen) the capture's bookkeeping is the same as on a GPU: params by name,
    inputs by position, sizes by their source -- and the compiled code still takes sizes as inputs."""
    from autotriton.distillation.inductor_capture import capture_problem

    source = load("pointwise_float_attribute")["source"].replace("0.5", "0.25")
    source = source.replace("def __init__(self, alpha: float):\n        super().__init__()",
                            "def __init__(self, alpha: float):\n        super().__init__()\n"
                            "        self.scale = nn.Parameter(torch.randn(512))")
    source = source.replace("return x + self.alpha * y", "return x * self.scale + self.alpha * y")
    capture = capture_problem(source, name="cpu-smoke", device="cpu", dynamic=True, max_autotune=False)
    assert capture["ok"], capture.get("error")
    inputs = capture["graphs"][0]["inputs"]
    kinds = {(d["kind"], d.get("name"), d.get("input")) for d in inputs if d["kind"] in ("param", "input")}
    assert kinds == {("param", "scale", None), ("input", None, 0), ("input", None, 1)}
    assert any(d["kind"] == "size" for d in inputs)
    code = capture["output_code"]
    call = code[code.index("def call"):code.index("def get_args")]
    assert "assert_size_stride" in call and "(16, 512)" not in call  # sizes stayed symbolic
    assert capture["max_abs_err"] is not None and capture["max_abs_err"] < 1e-5


def test_teacher_turns_a_failed_conversion_into_a_recorded_candidate():
    from autotriton.distillation.inductor import InductorTeacher
    from autotriton.records import Problem

    teacher = InductorTeacher(jobs=1)
    ok_capture = load("pointwise_relu")
    bad_capture = load("aten_fallback_avg_pool3d")
    ok_problem = Problem(reference_source=ok_capture["source"], name="relu")
    bad_problem = Problem(reference_source=bad_capture["source"], name="avg_pool3d")
    good = teacher._candidate(ok_problem, ok_capture)
    bad = teacher._candidate(bad_problem, bad_capture)
    assert good.code and good.parse_error is None and good.generator == "inductor"
    assert good.problem_key == ok_problem.key and good.generator_version.startswith("torch-")
    assert bad.code == "" and "aten_fallback" in bad.parse_error and bad.raw_output
    assert teacher.counters["converted"] == 1 and teacher.counters["failed:aten_fallback"] == 1


@pytest.mark.gpu
def test_inductor_teacher_end_to_end_on_gpu():
    from autotriton.distillation.inductor import InductorTeacher
    from autotriton.records import Problem
    from autotriton.validation import ValidationConfig, validate_many

    suite = Path(__file__).parent.parent / "examples" / "demo" / "problems.jsonl"
    rows = {json.loads(line)["name"]: json.loads(line) for line in suite.read_text().splitlines()}
    problems = [Problem(reference_source=rows[n]["source"], name=n) for n in ("relu", "softmax", "linear_relu")]
    candidates = InductorTeacher(jobs=3).generate(problems, samples=1)
    assert all(c.code and "extern_kernels" not in c.code for c in candidates), [c.parse_error for c in candidates]
    verdicts = validate_many([(p.reference_source, c.code) for p, c in zip(problems, candidates)],
                             ValidationConfig(device="cuda", trials=2))
    assert all(v.correct and v.rule_ok for v in verdicts), [(v.status, v.error) for v in verdicts]
    # the GEMM template of linear_relu multiplies on the tensor cores (capture_problem's tf32)
    gemm = candidates[2].code
    assert "ALLOW_TF32: tl.constexpr = True" in gemm, gemm[:3000]


def test_template_config_cap_is_set_only_when_asked():
    """max_mm_configs caps Inductor's GEMM/conv template configs (test_configs.max_mm_configs, a key
    this torch knows); None leaves Inductor's own list; nonsense is refused."""
    import torch._inductor.config as ic

    from autotriton.distillation.inductor_capture import inductor_settings

    assert "test_configs.max_mm_configs" not in inductor_settings()
    settings = inductor_settings(max_mm_configs=4)
    assert settings["test_configs.max_mm_configs"] == 4
    with ic.patch(settings):  # every key is one ic.patch accepts
        assert ic.test_configs.max_mm_configs == 4 and ic.max_autotune_gemm_backends == "TRITON"
    with pytest.raises(ValueError, match="max_mm_configs"):
        inductor_settings(max_mm_configs=0)


@pytest.mark.parametrize("nd,kernel,stride,padding", [
    (3, 3, 2, 1),   # KernelBench L1/46: a 27-element window Inductor leaves to ATen
    (3, 4, 3, 2),
    (2, 6, 2, 3),
    (1, 30, 7, 0),
])
def test_average_pooling_rewrite_matches_torch_and_leaves_no_pool_op(nd, kernel, stride, padding):
    """avg_pool with count_include_pad (the default), traced through the decomposition table as
    Inductor sees it: no avg_pool op left, same values as torch, also at other sizes."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from autotriton.distillation.inductor_decompose import avg_pool_decompositions, avg_pool_falls_back

    assert avg_pool_falls_back([kernel] * nd, [stride] * nd)
    pool = {1: nn.AvgPool1d, 2: nn.AvgPool2d, 3: nn.AvgPool3d}[nd](kernel, stride, padding)
    shape = {1: (2, 3, 75), 2: (2, 3, 19, 22), 3: (2, 3, 9, 10, 13)}[nd]
    x = torch.randn(*shape)
    traced = make_fx(pool, decomposition_table=avg_pool_decompositions())(x)
    assert "avg_pool" not in traced.code
    torch.testing.assert_close(traced(x), pool(x), atol=1e-6, rtol=1e-5)
    if (nd, kernel) != (3, 3):
        return
    # the rewrite takes its sizes from the input: a dynamically traced graph is right at other sizes
    dyn = make_fx(pool, decomposition_table=avg_pool_decompositions(), tracing_mode="symbolic")(x)
    y = torch.randn(*[s + 3 for s in shape])
    torch.testing.assert_close(dyn(y), pool(y), atol=1e-6, rtol=1e-5)


def test_average_pooling_inductor_lowers_itself_is_left_alone():
    from autotriton.distillation.inductor_decompose import avg_pool_decompositions

    decomp = avg_pool_decompositions()[torch.ops.aten.avg_pool2d.default]
    x = torch.randn(1, 2, 8, 8)
    assert decomp(x, [2, 2], [2, 2], [0, 0]) is NotImplemented  # 4-element window: Inductor's lowering
    assert decomp(x, [11, 11], [], [0, 0]) is NotImplemented  # window == stride: Inductor's lowering
    assert decomp(x, [6, 6], [2, 2], [0, 0], True) is NotImplemented  # ceil_mode: not covered
    assert decomp(x, [6, 6], [2, 2], [0, 0], False, False) is NotImplemented  # count_include_pad=False


def test_layer_norm_and_max_pool1d_swaps_compute_the_same_in_eager():
    import torch.nn.functional as F

    from autotriton.distillation.inductor_decompose import shape_generic_functionals

    ln, pool = nn.LayerNorm((6, 7)), nn.MaxPool1d(8, stride=2, padding=4, dilation=3)
    pool_ceil = nn.MaxPool1d(3, ceil_mode=True)
    inorm, inorm_affine = nn.InstanceNorm2d(5), nn.InstanceNorm2d(5, affine=True, track_running_stats=True)
    x, y = torch.randn(3, 5, 6, 7), torch.randn(4, 5, 61)
    original = F.layer_norm
    expected = (ln(x), pool(y), pool_ceil(y), inorm(x), inorm_affine(x), inorm(x[0]),
                F.max_pool1d(y, 2, return_indices=True))
    inorm_affine.running_mean.zero_(), inorm_affine.running_var.fill_(1.0), inorm_affine.num_batches_tracked.zero_()
    with shape_generic_functionals():
        assert F.layer_norm is not original
        got = (ln(x), pool(y), pool_ceil(y), inorm(x), inorm_affine(x), inorm(x[0]),
               F.max_pool1d(y, 2, return_indices=True))
    assert F.layer_norm is original
    for e, g in zip(expected[:-1], got[:-1]):
        torch.testing.assert_close(g, e)
    assert all(torch.equal(e, g) for e, g in zip(expected[-1], got[-1]))


@pytest.mark.parametrize("layer,shape", [
    ("nn.LayerNorm((8, 6))", (2, 3, 8, 6)),  # KernelBench L1/40: normalized_shape from the module
    ("nn.MaxPool1d(4, stride=1, padding=2, dilation=3)", (2, 3, 40)),  # L1/41: output length
    ("nn.InstanceNorm2d(3)", (2, 3, 8, 8)),  # L1/34: num_features compared with the channel count
])
def test_module_sizes_stay_symbolic_at_capture(layer, shape):
    """The judge's odd-size trial changes these sizes, so the captured code must take them as
    arguments (read from the input) instead of baking in the capture's values."""
    from autotriton.distillation.inductor_capture import capture_problem

    source = (f"import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self):\n"
              f"        super().__init__()\n        self.op = {layer}\n    def forward(self, x):\n"
              f"        return self.op(x)\ndef get_inputs():\n    return [torch.randn{shape}]\n"
              f"def get_init_inputs():\n    return []\n")
    capture = capture_problem(source, name="symbolic", device="cpu", dynamic=True, max_autotune=False,
                              decompose_convolution=True)
    assert capture["ok"], capture.get("error")
    inputs = capture["graphs"][0]["inputs"]
    position = next(d["position"] for d in inputs if d["kind"] == "input")
    code = capture["output_code"]
    import re

    shape = re.search(rf"assert_size_stride\(arg{position}_1, \(([^)]*)\)", code).group(1).split(", ")
    assert not any(s.strip().isdigit() for s in shape), shape  # every size is a symbol
    assert capture["max_abs_err"] is not None and capture["max_abs_err"] < 1e-5


def cpu_capture(source: str, name: str) -> tuple[dict, str]:
    """A dynamic-shape CPU capture that must succeed, and the body of its output code's call()."""
    from autotriton.distillation.inductor_capture import capture_problem

    capture = capture_problem(source, name=name, device="cpu", dynamic=True, max_autotune=False)
    assert capture["ok"], capture.get("error")
    return capture, capture["output_code"].split("def call", 1)[1]


def test_attention_is_captured_through_its_math_path():
    """scaled_dot_product_attention (KernelBench L1/97) comes out as matmuls + softmax, not as a
    flash/efficient attention ATen call the converter would have to refuse."""
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, q, k, v):\n"
              "        return torch.nn.functional.scaled_dot_product_attention(q, k, v)\n"
              "def get_inputs():\n    return [torch.randn(2, 2, 8, 16) for _ in range(3)]\n"
              "def get_init_inputs():\n    return []\n")
    capture, call = cpu_capture(source, "sdpa")
    assert "aten._scaled_dot_product" not in call and "bmm" in call
    assert capture["max_abs_err"] < 1e-5


def test_attention_stays_on_its_math_path_when_the_forward_picks_fused_backends_itself():
    """x-transformers' / lucidrains' `Attend` shape: the forward wraps F.scaled_dot_product_attention
    in its own `sdpa_kernel([FLASH, EFFICIENT, MATH])`, which Dynamo bakes into the graph and which
    re-enabled the fused kernels under the capture's math-only context (an H200 run: 5 package
    problems refused as `_scaled_dot_product_efficient_attention` ATen fallbacks; on the CPU the same
    forward gave `_scaled_dot_product_flash_attention_for_cpu`). The capture pins the math path and
    gives the caller's backend switches back afterwards."""
    import torch

    source = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
              "from torch.nn.attention import SDPBackend, sdpa_kernel\n"
              "class Model(nn.Module):\n    def __init__(self, dim, heads):\n        super().__init__()\n"
              "        self.heads = heads\n        self.qkv = nn.Linear(dim, 3 * dim)\n"
              "        self.backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]\n"
              "    def forward(self, x, mask):\n        b, n, d = x.shape\n"
              "        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)\n"
              "        with sdpa_kernel(self.backends):\n"
              "            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"
              "        return out.transpose(1, 2).reshape(b, n, d)\n"
              "def get_inputs():\n    return [torch.randn(2, 8, 32), torch.rand(2, 1, 8, 8) > 0.2]\n"
              "def get_init_inputs():\n    return [32, 4]\n")
    switches = {n: getattr(torch._C, n) for n in dir(torch._C) if n.startswith("_set_sdp_use_")}
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.enable_math_sdp(True)
    before = (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.mem_efficient_sdp_enabled(),
              torch.backends.cuda.math_sdp_enabled())
    capture, call = cpu_capture(source, "sdpa_own_backends")
    assert "_scaled_dot_product" not in call and "bmm" in call, call
    assert capture["max_abs_err"] < 1e-5
    assert {n: getattr(torch._C, n) for n in switches} == switches  # the real switches again
    assert (torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.mem_efficient_sdp_enabled(),
            torch.backends.cuda.math_sdp_enabled()) == before


def test_capture_runs_the_model_in_eval_mode_like_the_judge():
    """The judge compares ModelNew with Model.eval(); BatchNorm captured in train mode would
    normalise by batch statistics instead of the running ones and fail every trial."""
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self, c):\n"
              "        super().__init__()\n        self.bn = nn.BatchNorm2d(c)\n    def forward(self, x):\n"
              "        return self.bn(x)\ndef get_inputs():\n    return [torch.rand(4, 3, 8, 8)]\n"
              "def get_init_inputs():\n    return [3]\n")
    capture, call = cpu_capture(source, "bn")
    assert "welford" not in capture["output_code"] and "num_batches_tracked" not in call  # no batch statistics
    assert capture["max_abs_err"] < 1e-5


def test_tf32_matmuls_turns_tensor_cores_on_for_templates_and_restores_everything():
    """Captures (tf32 default on) let Inductor's GEMM template use TF32 whatever it can prove
    about dynamic sizes; the flags and the heuristic are restored afterwards, and off changes nothing."""
    from autotriton.distillation.inductor_capture import force_tf32, tf32_matmuls, tf32_state

    heuristic = force_tf32(lambda mixin, inputs, op: {"ALLOW_TF32": False, "op": op})
    assert heuristic(None, None, "mm") == {"ALLOW_TF32": True, "op": "mm"}
    assert force_tf32(lambda mixin: {"other": 1})(None) == {"other": 1}

    before = tf32_state()
    try:
        from torch._inductor.template_heuristics.triton import MMTemplateConfigMixin
    except ImportError:
        MMTemplateConfigMixin = None
    original = MMTemplateConfigMixin.__dict__.get("get_extra_kwargs") if MMTemplateConfigMixin else None
    with tf32_matmuls(False):
        assert tf32_state() == before
    import torch

    legacy = torch.get_float32_matmul_precision()
    with tf32_matmuls():
        assert all(state in ("tf32", True) for state in tf32_state()), tf32_state()
        # the legacy getters Inductor's GEMM/conv lowering reads still answer (torch >= 2.9 raises
        # "mix of the legacy and new APIs" when only the new fp32_precision was set: every GEMM
        # and convolution capture failed on the H200 that way, 28 of 30 synthetic problems)
        assert torch.backends.cuda.matmul.allow_tf32 is True
        assert torch.get_float32_matmul_precision() == "high"
        if original is not None:
            assert MMTemplateConfigMixin.__dict__["get_extra_kwargs"] is not original
    assert tf32_state() == before  # restored as it was ("none" stays "none", not "ieee")
    assert torch.get_float32_matmul_precision() == legacy and torch.backends.cuda.matmul.allow_tf32 is False
    if original is not None:
        assert MMTemplateConfigMixin.__dict__["get_extra_kwargs"] is original


def test_the_converter_loads_from_its_file_without_the_package(tmp_path):
    """A bare GPU image cannot import autotriton.distillation (benchmarks/inductor_l1.py loads the
    converter's file): its steps (inductor_kernels, inductor_forward) must load the same way."""
    script = tmp_path / "bare.py"
    script.write_text(
        "import importlib.util, json, sys\n"
        "from pathlib import Path\n"
        "sys.modules['autotriton.distillation'] = None  # importing the package fails\n"
        f"root = Path({str(Path(__file__).resolve().parent.parent)!r})\n"
        "spec = importlib.util.spec_from_file_location('autotriton.distillation.inductor_convert',"
        " root / 'distillation' / 'inductor_convert.py')\n"
        "mod = importlib.util.module_from_spec(spec); sys.modules[spec.name] = mod; spec.loader.exec_module(mod)\n"
        "r = mod.convert_capture(json.loads((root / 'tests/data/inductor/pointwise_relu.json').read_text()))\n"
        "print(json.dumps([r.ok, r.kernels]))\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [True, ["relu_kernel"]]

"""Static rule checks on a candidate's source (libcst): the judge's first, cheapest line of defence.

`check_rules(candidate_source) -> list[Violation]` never runs the candidate. It answers: is there a
`ModelNew(nn.Module)` whose `forward` reaches a real `kernel[grid](...)` launch, and does the code on
that path stay away from PyTorch compute, fallbacks, the reference, the judge's process and the
outside world? Every finding is a `Violation(rule, message, line)` with a stable rule id from
`RULES`; `validation/RULES.md` says what each rule catches and why.

The allowlists are plain data (`ALLOWED_IMPORTS`, `ALLOWED_TORCH_CALLS`, `ALLOWED_TENSOR_METHODS`,
`FORBIDDEN_NAMES`, ...) so the runtime anti-cheat and the docs can share them.

Design notes
- Static analysis can be fooled by sufficiently dynamic code; rules therefore also forbid the
  dynamic escape hatches themselves (getattr on modules, eval/exec, introspection, dispatcher
  subclassing). The runtime checks (launch hook, dispatch mode) are the second line.
- Types are inferred, flow-insensitively, just enough to tell tensor arithmetic (`x * y`, a
  violation) from shape arithmetic (`n = x.shape[0] * 2`, fine): `forward` arguments are tensors,
  so are results of allocations, views and tensor-valued calls; `.shape`, `.size()`, `.numel()` are
  not. Tensor-ness flows into helper functions through their call sites.
- Lines are resolved only when something is reported (PositionProvider is the slowest part of
  libcst), so correct candidates, the common case in an RL loop, pay only for parsing and one walk.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from autotriton.records import Violation

__all__ = [
    "check_rules", "RULES", "ALLOWED_IMPORTS", "ALLOWED_TORCH_CALLS", "ALLOWED_TENSOR_METHODS", "TENSOR_COMPUTE_METHODS",
    "FORBIDDEN_NAMES", "FORBIDDEN_BUILTIN_CALLS", "FORBIDDEN_BARE_NAMES", "FORBIDDEN_ATTRIBUTES",
    "INDUCTOR_RUNTIME_ALLOWLIST", "TOLERATED_IMPORTS",
]

# --------------------------------------------------------------------------------------------
# Rule ids (stable: stored in the warehouse and used as training feedback)
# --------------------------------------------------------------------------------------------

RULES: dict[str, str] = {
    "SYNTAX": "the candidate does not parse as Python",
    "MODELNEW-MISSING": "no class ModelNew is defined at module level",
    "MODELNEW-BASE": "ModelNew does not subclass torch.nn.Module",
    "MODELNEW-FORWARD": "ModelNew defines no forward method",
    "TRITON-NO-KERNEL": "no @triton.jit kernel is defined",
    "TRITON-NOT-LAUNCHED": "no Triton kernel is launched (kernel[grid](...)) from ModelNew.forward's call graph",
    "TRITON-NO-STORE": "a kernel launched from forward writes no memory (no tl.store / atomic), so it cannot produce the output",
    "MODELNEW-CALL": "changes how ModelNew is called: __call__ or call-machinery overrides, forward hooks, rebinding forward or ModelNew",
    "TORCH-COMPUTE": "PyTorch computes in the forward path (anything outside the allocation/view/shape allowlist)",
    "TRY-EXCEPT": "try/except or contextlib.suppress in the forward path (silent fallbacks)",
    "TORCH-COMPILE": "torch.compile, TorchDynamo, Inductor, extern_kernels, torch.jit/fx/export",
    "TORCH-OPS": "torch.ops / torch._C / torch._prims operator calls (ATen compute behind the dispatcher)",
    "VENDOR-LIBRARY": "cuBLAS/cuDNN switches (torch.backends), C++/CUDA extensions or other kernel libraries",
    "GLOBAL-STATE": "changes global numerical or random state shared with the reference (seeds, default dtype, matmul precision)",
    "REFERENCE-IMPORT": "imports the reference problem (its module, Model, get_inputs, get_init_inputs) or a relative module",
    "REFERENCE-USE": "uses the reference Model inside ModelNew or its forward path",
    "IMPORT-FORBIDDEN": "imports a module outside the allowlist",
    "MONKEYPATCH": "assigns or deletes attributes of imported modules (torch, triton, tl, builtins, ...), setattr on modules, sys.modules",
    "INTROSPECTION": "reaches into the interpreter or the dispatcher: gc, inspect, ctypes, frames, globals(), __dict__, __torch_function__, Tensor subclasses",
    "DYNAMIC-CODE": "eval, exec, compile, __import__, importlib, runpy",
    "CONCURRENCY": "threads, processes, asyncio, extra CUDA streams, CUDA events or CUDA graphs",
    "SLEEP": "sleeps or clocks (time, torch.cuda._sleep)",
    "SYSTEM-ACCESS": "file, environment, network or process access (open, os, sys, pathlib, socket, subprocess, pickle, torch.load, ...)",
    "RESULT-CACHE": "keeps results across calls: tensors stored on self or globals in the forward path, memoised forward functions",
    "INPUT-MUTATION": "a kernel writes into a tensor passed to forward (or a view of it): inputs must not be mutated",
    "OUTPUT-UNWRITTEN": "forward returns a torch.empty* allocation nothing ever writes: uninitialised memory can still hold the reference's result",
    "TRITON-ARANGE-POW2": "a tl.arange extent is not a power of two",
    "TRITON-BLOCK-CONSTEXPR": "a block size (tl.arange bound, tl.zeros/tl.full shape) is a runtime argument, not a tl.constexpr parameter",
    "TRITON-BLOCK-POW2": "a block-size constexpr is given a value that is not a power of two",
    "TRITON-NUM-WARPS": "num_warps is not a power of two between 1 and 32",
    "TRITON-NUM-STAGES": "num_stages is not between 1 and 8",
}

# --------------------------------------------------------------------------------------------
# Allowlists and denylists (data, shared with the runtime anti-cheat and RULES.md)
# --------------------------------------------------------------------------------------------

#: Top-level modules a candidate may import. Submodules of torch/triton are further screened by
#: FORBIDDEN_NAMES (torch._dynamo, torch.backends, ...).
ALLOWED_IMPORTS: frozenset[str] = frozenset({
    "torch", "triton", "math", "cmath", "numpy", "typing", "typing_extensions", "functools", "itertools",
    "operator", "collections", "dataclasses", "enum", "abc", "__future__", "numbers", "warnings", "copy",
    "contextlib",  # nullcontext & co; contextlib.suppress in the forward path is TRY-EXCEPT
})

#: Names importable from torch._inductor / torch._C: Inductor's device-side helpers and the small
#: runtime glue its generated code uses (raw stream handle, size asserts, strided allocation).
INDUCTOR_RUNTIME_ALLOWLIST: frozenset[str] = frozenset({
    "torch._inductor.runtime.triton_helpers",
    "torch._inductor.runtime.triton_helpers.libdevice",
    "torch._inductor.runtime.triton_helpers.math",
    "torch._inductor.runtime.triton_compat",
    "torch._inductor.runtime.triton_heuristics.grid",
    "torch._C._cuda_getCurrentRawStream",
    "torch._C._dynamo.guards.assert_size_stride",
    "torch._C._dynamo.guards.assert_alignment",
    "torch._C._dynamo.guards._empty_strided_cuda",
    "torch._C._dynamo.guards._empty_strided_cpu",
    "torch._C._dynamo.guards._reinterpret_tensor",
})

#: Dotted-name prefixes that are forbidden anywhere in the file (import, attribute, call), with
#: their rule. Matched on whole components after resolving import aliases; the longest prefix wins.
FORBIDDEN_NAMES: dict[str, str] = {
    # compilers and graph capture
    "torch.compile": "TORCH-COMPILE", "torch._dynamo": "TORCH-COMPILE", "torch._inductor": "TORCH-COMPILE",
    "torch.compiler": "TORCH-COMPILE", "torch.jit": "TORCH-COMPILE", "torch.fx": "TORCH-COMPILE",
    "torch.export": "TORCH-COMPILE", "torch._export": "TORCH-COMPILE", "torch._functorch": "TORCH-COMPILE",
    "extern_kernels": "TORCH-COMPILE",
    # operators behind the dispatcher
    "torch.ops": "TORCH-OPS", "torch._ops": "TORCH-OPS", "torch._C": "TORCH-OPS", "torch._prims": "TORCH-OPS",
    "torch._refs": "TORCH-OPS", "torch._decomp": "TORCH-OPS", "torch._VF": "TORCH-OPS", "torch.library": "TORCH-OPS",
    "torch._higher_order_ops": "TORCH-OPS",
    # vendor libraries and backend switches
    "torch.backends": "VENDOR-LIBRARY", "torch.cuda.blas": "VENDOR-LIBRARY", "torch.utils.cpp_extension": "VENDOR-LIBRARY",
    "torch.cuda.jiterator": "VENDOR-LIBRARY", "torch.cuda.tunable": "VENDOR-LIBRARY", "torch.sparse": "VENDOR-LIBRARY",
    "cupy": "VENDOR-LIBRARY", "numba": "VENDOR-LIBRARY", "pycuda": "VENDOR-LIBRARY", "cuda": "VENDOR-LIBRARY",
    "tvm": "VENDOR-LIBRARY", "tilelang": "VENDOR-LIBRARY", "cutlass": "VENDOR-LIBRARY", "flash_attn": "VENDOR-LIBRARY",
    "xformers": "VENDOR-LIBRARY", "apex": "VENDOR-LIBRARY", "liger_kernel": "VENDOR-LIBRARY", "cudnn": "VENDOR-LIBRARY",
    "triton_kernels": "VENDOR-LIBRARY", "transformer_engine": "VENDOR-LIBRARY", "thunderkittens": "VENDOR-LIBRARY",
    # global numerical / random state shared with the reference
    "torch.manual_seed": "GLOBAL-STATE", "torch.seed": "GLOBAL-STATE", "torch.initial_seed": "GLOBAL-STATE",
    "torch.random": "GLOBAL-STATE", "torch.get_rng_state": "GLOBAL-STATE", "torch.set_rng_state": "GLOBAL-STATE",
    "torch.default_generator": "GLOBAL-STATE", "torch.cuda.manual_seed": "GLOBAL-STATE",
    "torch.cuda.manual_seed_all": "GLOBAL-STATE", "torch.cuda.get_rng_state": "GLOBAL-STATE",
    "torch.cuda.set_rng_state": "GLOBAL-STATE", "torch.cuda.get_rng_state_all": "GLOBAL-STATE",
    "torch.cuda.set_rng_state_all": "GLOBAL-STATE", "torch.cuda.random": "GLOBAL-STATE",
    "torch.set_default_dtype": "GLOBAL-STATE", "torch.set_default_tensor_type": "GLOBAL-STATE",
    "torch.set_default_device": "GLOBAL-STATE", "torch.set_float32_matmul_precision": "GLOBAL-STATE",
    "torch.set_flush_denormal": "GLOBAL-STATE", "torch.use_deterministic_algorithms": "GLOBAL-STATE",
    "torch.set_deterministic_debug_mode": "GLOBAL-STATE", "numpy.random.seed": "GLOBAL-STATE",
    "random": "GLOBAL-STATE",
    # concurrency, streams, events, graphs
    "threading": "CONCURRENCY", "_thread": "CONCURRENCY", "multiprocessing": "CONCURRENCY",
    "concurrent": "CONCURRENCY", "asyncio": "CONCURRENCY", "queue": "CONCURRENCY", "sched": "CONCURRENCY",
    "torch.multiprocessing": "CONCURRENCY", "torch.distributed": "CONCURRENCY", "torch.futures": "CONCURRENCY",
    "torch.cuda.Stream": "CONCURRENCY", "torch.cuda.stream": "CONCURRENCY", "torch.cuda.streams": "CONCURRENCY",
    "torch.cuda.set_stream": "CONCURRENCY", "torch.cuda.ExternalStream": "CONCURRENCY",
    "torch.cuda.Event": "CONCURRENCY", "torch.cuda.graph": "CONCURRENCY", "torch.cuda.graphs": "CONCURRENCY",
    "torch.cuda.CUDAGraph": "CONCURRENCY", "torch.cuda.make_graphed_callables": "CONCURRENCY",
    "torch.Stream": "CONCURRENCY", "torch.Event": "CONCURRENCY", "torch.cpu.Stream": "CONCURRENCY",
    "torch.cpu.stream": "CONCURRENCY", "torch.accelerator": "CONCURRENCY",
    # sleeping and clocks
    "time": "SLEEP", "torch.cuda._sleep": "SLEEP",
    # file, environment, network, process
    "os": "SYSTEM-ACCESS", "sys": "SYSTEM-ACCESS", "posix": "SYSTEM-ACCESS", "nt": "SYSTEM-ACCESS",
    "pathlib": "SYSTEM-ACCESS", "io": "SYSTEM-ACCESS", "socket": "SYSTEM-ACCESS", "ssl": "SYSTEM-ACCESS",
    "http": "SYSTEM-ACCESS", "urllib": "SYSTEM-ACCESS", "urllib3": "SYSTEM-ACCESS", "requests": "SYSTEM-ACCESS",
    "httpx": "SYSTEM-ACCESS", "aiohttp": "SYSTEM-ACCESS", "ftplib": "SYSTEM-ACCESS", "smtplib": "SYSTEM-ACCESS",
    "subprocess": "SYSTEM-ACCESS", "shutil": "SYSTEM-ACCESS", "tempfile": "SYSTEM-ACCESS", "glob": "SYSTEM-ACCESS",
    "pickle": "SYSTEM-ACCESS", "_pickle": "SYSTEM-ACCESS", "dill": "SYSTEM-ACCESS", "marshal": "SYSTEM-ACCESS",
    "shelve": "SYSTEM-ACCESS", "dbm": "SYSTEM-ACCESS", "sqlite3": "SYSTEM-ACCESS", "signal": "SYSTEM-ACCESS",
    "atexit": "SYSTEM-ACCESS", "resource": "SYSTEM-ACCESS", "platform": "SYSTEM-ACCESS", "getpass": "SYSTEM-ACCESS",
    "pwd": "SYSTEM-ACCESS", "mmap": "SYSTEM-ACCESS", "fcntl": "SYSTEM-ACCESS", "select": "SYSTEM-ACCESS",
    "selectors": "SYSTEM-ACCESS", "zipfile": "SYSTEM-ACCESS", "tarfile": "SYSTEM-ACCESS", "gzip": "SYSTEM-ACCESS",
    "bz2": "SYSTEM-ACCESS", "lzma": "SYSTEM-ACCESS", "webbrowser": "SYSTEM-ACCESS", "faulthandler": "SYSTEM-ACCESS",
    "torch.load": "SYSTEM-ACCESS", "torch.save": "SYSTEM-ACCESS", "torch.hub": "SYSTEM-ACCESS",
    "torch.from_file": "SYSTEM-ACCESS", "torch.UntypedStorage.from_file": "SYSTEM-ACCESS",
    "torch.utils.data": "SYSTEM-ACCESS", "torch.serialization": "SYSTEM-ACCESS",
    "numpy.load": "SYSTEM-ACCESS", "numpy.save": "SYSTEM-ACCESS", "numpy.savez": "SYSTEM-ACCESS",
    "numpy.fromfile": "SYSTEM-ACCESS", "numpy.memmap": "SYSTEM-ACCESS", "numpy.loadtxt": "SYSTEM-ACCESS",
    "numpy.savetxt": "SYSTEM-ACCESS", "numpy.genfromtxt": "SYSTEM-ACCESS", "numpy.tofile": "SYSTEM-ACCESS",
    "triton.runtime.cache": "SYSTEM-ACCESS",
    # dynamic code
    "importlib": "DYNAMIC-CODE", "runpy": "DYNAMIC-CODE", "code": "DYNAMIC-CODE", "codeop": "DYNAMIC-CODE",
    "types": "DYNAMIC-CODE", "pydoc": "DYNAMIC-CODE", "zipimport": "DYNAMIC-CODE", "pkgutil": "DYNAMIC-CODE",
    # introspection and dispatcher subversion
    "gc": "INTROSPECTION", "inspect": "INTROSPECTION", "ctypes": "INTROSPECTION", "_ctypes": "INTROSPECTION",
    "cffi": "INTROSPECTION", "traceback": "INTROSPECTION", "dis": "INTROSPECTION", "builtins": "INTROSPECTION",
    "__builtin__": "INTROSPECTION", "weakref": "INTROSPECTION", "sysconfig": "INTROSPECTION",
    "torch.utils._python_dispatch": "INTROSPECTION", "torch.overrides": "INTROSPECTION",
    "torch._subclasses": "INTROSPECTION", "torch.utils._pytree": "INTROSPECTION", "torch.autograd.graph": "INTROSPECTION",
    "torch.nn.modules.module.register_module_forward_hook": "INTROSPECTION",
    "torch.nn.modules.module.register_module_forward_pre_hook": "INTROSPECTION",
    # triton.runtime.driver stays allowed: the fused-softmax tutorial reads device properties from it
    "triton.knobs": "MONKEYPATCH", "triton.runtime.interpreter": "INTROSPECTION",
}

#: Builtins that are violations when called. Only the harmless ones (SHADOWABLE_BUILTINS) may be
#: shadowed by a definition of the candidate's own: a file-wide "is the name bound anywhere" test
#: let `exec = None` in one function unlock the real `exec` in another (issue 14, class 4).
FORBIDDEN_BUILTIN_CALLS: dict[str, str] = {
    "open": "SYSTEM-ACCESS", "input": "SYSTEM-ACCESS", "breakpoint": "SYSTEM-ACCESS", "exit": "SYSTEM-ACCESS",
    "quit": "SYSTEM-ACCESS", "help": "SYSTEM-ACCESS",
    "eval": "DYNAMIC-CODE", "exec": "DYNAMIC-CODE", "compile": "DYNAMIC-CODE", "__import__": "DYNAMIC-CODE",
    "globals": "INTROSPECTION", "locals": "INTROSPECTION", "vars": "INTROSPECTION",
}

SHADOWABLE_BUILTINS = frozenset({"input", "help"})

#: Names that are violations wherever they appear.
FORBIDDEN_BARE_NAMES: dict[str, str] = {
    "__builtins__": "INTROSPECTION", "__import__": "DYNAMIC-CODE", "__loader__": "INTROSPECTION",
    "__spec__": "INTROSPECTION", "extern_kernels": "TORCH-COMPILE",
}

#: Attribute names that reach into interpreter internals, or subvert the dispatcher.
FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset({
    "__dict__", "__globals__", "__code__", "__closure__", "__subclasses__", "__bases__", "__base__", "__mro__",
    "__builtins__", "__loader__", "__spec__", "__import__", "__getattribute__", "__setattr__", "__delattr__",
    "__torch_function__", "__torch_dispatch__", "__reduce__", "__reduce_ex__", "__defaults__", "__kwdefaults__",
    "f_back", "f_globals", "f_locals", "f_code", "f_builtins", "gi_frame", "cr_frame", "ag_frame", "tb_frame",
    "tb_next", "_getframe", "func_globals", "_make_subclass", "_make_wrapper_subclass",
})

#: torch functions (resolved dotted names) a forward path may call: allocation, views, shapes,
#: dtypes/devices, grad-mode contexts, and the Inductor runtime glue.
ALLOWED_TORCH_CALLS: frozenset[str] = frozenset({
    # allocation
    "torch.empty", "torch.empty_like", "torch.empty_strided", "torch.zeros", "torch.zeros_like", "torch.ones",
    "torch.ones_like", "torch.full", "torch.full_like", "torch.tensor", "torch.as_tensor",
    "torch.scalar_tensor", "torch.from_numpy",
    # views and shapes
    "torch.reshape", "torch.flatten", "torch.unflatten", "torch.squeeze", "torch.unsqueeze", "torch.permute",
    "torch.transpose", "torch.t", "torch.narrow", "torch.select", "torch.split", "torch.chunk", "torch.unbind",
    "torch.tensor_split", "torch.as_strided", "torch.movedim", "torch.moveaxis", "torch.swapaxes", "torch.swapdims",
    "torch.broadcast_to", "torch.broadcast_shapes", "torch.view_as_real", "torch.view_as_complex", "torch.Size",
    "torch.numel",
    # dtypes, devices, queries
    "torch.device", "torch.dtype", "torch.finfo", "torch.iinfo", "torch.is_tensor", "torch.is_floating_point",
    "torch.is_complex", "torch.get_default_dtype", "torch.promote_types", "torch.result_type", "torch.can_cast",
    "torch.cuda.is_available", "torch.cuda.current_device", "torch.cuda.device", "torch.cuda.device_count",
    "torch.cuda.get_device_capability", "torch.cuda.get_device_properties", "torch.cuda.get_device_name",
    "torch.cuda.current_stream", "torch.cuda.synchronize", "torch.cuda.set_device", "torch.cuda._DeviceGuard",
    # grad mode
    "torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.set_grad_enabled", "torch.is_grad_enabled",
    # Inductor runtime glue (see INDUCTOR_RUNTIME_ALLOWLIST)
    "torch._C._cuda_getCurrentRawStream", "torch._C._dynamo.guards.assert_size_stride",
    "torch._C._dynamo.guards.assert_alignment", "torch._C._dynamo.guards._empty_strided_cuda",
    "torch._C._dynamo.guards._empty_strided_cpu", "torch._C._dynamo.guards._reinterpret_tensor",
    "torch._inductor.runtime.triton_heuristics.grid",
})

#: Imports tolerated although the name is forbidden: Inductor's generated modules (KernelBook
#: pairs) always import extern_kernels; only *using* it (extern_kernels.mm = cuBLAS) is a violation.
TOLERATED_IMPORTS: frozenset[str] = frozenset({"torch._inductor.select_algorithm.extern_kernels"})

#: Tensor methods a forward path may call: views, shapes, dtype/device/layout conversion,
#: allocation of new tensors, zero/fill of freshly allocated outputs.
ALLOWED_TENSOR_METHODS: frozenset[str] = frozenset({
    "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "transpose_", "t", "t_", "contiguous",
    "flatten", "unflatten", "unsqueeze", "unsqueeze_", "squeeze", "squeeze_", "expand", "expand_as", "size",
    "stride", "numel", "nelement", "dim", "ndimension", "element_size", "storage_offset", "data_ptr",
    "const_data_ptr", "untyped_storage", "is_contiguous", "is_floating_point", "is_complex", "is_signed",
    "get_device", "to", "cpu", "cuda", "float", "half", "bfloat16", "double", "int", "long", "short", "bool",
    "byte", "char", "type_as", "type", "detach", "detach_", "requires_grad_", "new_empty",
    "new_empty_strided", "new_zeros", "new_ones", "new_full", "new_tensor", "zero_", "fill_", "narrow", "select",
    "split", "split_with_sizes", "tensor_split", "chunk", "unbind", "as_strided", "movedim", "moveaxis",
    "swapaxes", "swapdims", "unfold", "clone", "pin_memory", "resize_", "dim_order", "is_pinned",
    "is_same_size", "broadcast_to", "is_set_to", "is_inference",
})

#: Every callable torch.Tensor method in torch 2.13 (generated with dir(torch.Tensor)). Those not
#: in ALLOWED_TENSOR_METHODS are compute (or escape hatches such as .numpy(), .apply_()).
_ALL_TENSOR_METHODS = frozenset("""
abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv addcdiv_ addcmul addcmul_
addmm addmm_ addmv addmv_ addr addr_ adjoint all allclose amax amin aminmax angle any apply_ arccos arccos_
arccosh arccosh_ arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_ argmax argmin
argsort argwhere as_strided as_strided_ as_strided_scatter as_subclass asin asin_ asinh asinh_ atan atan2 atan2_
atan_ atanh atanh_ backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount bitwise_and bitwise_and_
bitwise_left_shift bitwise_left_shift_ bitwise_not bitwise_not_ bitwise_or bitwise_or_ bitwise_right_shift
bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm bool broadcast_to byte cauchy_ ccol_indices cdouble ceil ceil_
cfloat chalf char cholesky cholesky_inverse cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min
clamp_min_ clip clip_ clone coalesce col_indices conj conj_physical conj_physical_ const_data_ptr contiguous copy_
copysign copysign_ corrcoef cos cos_ cosh cosh_ count_nonzero cov cpu cross crow_indices cuda cummax cummin cumprod
cumprod_ cumsum cumsum_ data_ptr deg2rad deg2rad_ dense_dim dequantize det detach detach_ diag diag_embed diagflat
diagonal diagonal_scatter diff digamma digamma_ dim dim_order dist div div_ divide divide_ dot double dsplit eig
element_size eq eq_ equal erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expand expand_as expm1 expm1_
exponential_ fill_ fill_diagonal_ fix fix_ flatten flip fliplr flipud float float_power float_power_ floor floor_
floor_divide floor_divide_ fmax fmin fmod fmod_ frac frac_ frexp gather gcd gcd_ ge ge_ geometric_ geqrf ger
get_device greater greater_ greater_equal greater_equal_ gt gt_ half hardshrink hash_tensor heaviside heaviside_
histc histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ igammac igammac_ index index_add index_add_ index_copy
index_copy_ index_fill index_fill_ index_put index_put_ index_reduce index_reduce_ index_select indices inner int
int_repr inverse ipu is_coalesced is_complex is_conj is_contiguous is_distributed is_floating_point is_inference
is_neg is_nonzero is_pinned is_same_size is_set_to is_shared is_signed isclose isfinite isinf isnan isneginf
isposinf isreal istft item kron kthvalue lcm lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal
less_equal_ lgamma lgamma_ log log10 log10_ log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp
logaddexp2 logcumsumexp logdet logical_and logical_and_ logical_not logical_not_ logical_or logical_or_
logical_xor logical_xor_ logit logit_ logsumexp long lstsq lt lt_ lu lu_solve map2_ map_ masked_fill masked_fill_
masked_scatter masked_scatter_ masked_select matmul matrix_exp matrix_power max maximum mean median min minimum mm
mode module_load moveaxis movedim msort mtia mul mul_ multinomial multiply multiply_ mv mvlgamma mvlgamma_
nan_to_num nan_to_num_ nanmean nanmedian nanquantile nansum narrow narrow_copy ndimension ne ne_ neg neg_ negative
negative_ nelement new new_empty new_empty_strided new_full new_ones new_tensor new_zeros nextafter nextafter_
nonzero nonzero_static norm normal_ not_equal not_equal_ numel numpy orgqr ormqr outer permute pin_memory pinverse
polygamma polygamma_ positive pow pow_ prelu prod put put_ q_per_channel_axis q_per_channel_scales
q_per_channel_zero_points q_scale q_zero_point qr qscheme quantile rad2deg rad2deg_ random_ ravel reciprocal
reciprocal_ record_stream register_hook register_post_accumulate_grad_hook reinforce relu relu_ remainder
remainder_ renorm renorm_ repeat repeat_interleave requires_grad_ reshape reshape_as resize resize_ resize_as
resize_as_ resize_as_sparse_ resolve_conj resolve_neg retain_grad roll rot90 round round_ row_indices rsqrt rsqrt_
scatter scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select select_scatter set_ sgn sgn_
share_memory_ short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ size slice_inverse
slice_scatter slogdet smm softmax solve sort sparse_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ split
split_with_sizes sqrt sqrt_ square square_ squeeze squeeze_ sspaddmm std stft storage storage_offset storage_type
stride sub sub_ subtract subtract_ sum sum_to_size svd swapaxes swapaxes_ swapdims swapdims_ symeig t t_ take
take_along_dim tan tan_ tanh tanh_ tensor_split tile to to_dense to_mkldnn to_padded_tensor to_sparse to_sparse_bsc
to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk trace transpose transpose_ triangular_solve
tril tril_ triu triu_ true_divide true_divide_ trunc trunc_ type type_as unbind unflatten unfold uniform_ unique
unique_consecutive unsafe_chunk unsafe_split unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage values
var vdot view view_as vsplit where xlogy xlogy_ xpu zero_
""".split())

#: Operator dunders of torch.Tensor: calling them by name is the same arithmetic as `x + y`.
_TENSOR_OPERATOR_DUNDERS = frozenset(
    f"__{p}{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor",
                              "lshift", "rshift") for p in ("", "r", "i")
) | frozenset({"__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
               "__ge__", "__getitem__", "__setitem__", "__array__", "__torch_function__", "__div__", "__rdiv__",
               "__idiv__"})

#: Tensor methods that compute (or leave the device for host compute).
TENSOR_COMPUTE_METHODS: frozenset[str] = (_ALL_TENSOR_METHODS - ALLOWED_TENSOR_METHODS) | _TENSOR_OPERATOR_DUNDERS

#: Method names shared with Python builtins (list/dict/set/str): on a receiver of unknown type
#: they are not taken as tensor compute.
_PY_COMMON_METHODS = frozenset({
    "add", "count", "index", "copy", "pop", "sort", "update", "get", "split", "join", "format", "strip", "replace",
    "items", "values", "keys", "append", "extend", "insert", "remove", "clear", "reverse", "lower", "upper",
    "startswith", "endswith", "union", "intersection", "difference", "setdefault", "find", "all", "any", "apply",
    "run", "max", "min", "round", "type", "item", "indices", "mode", "new",
})

#: Python builtins that, given a tensor argument, compute on it in PyTorch.
_BUILTIN_TENSOR_COMPUTE = frozenset({"sum", "max", "min", "abs", "pow", "round", "sorted", "map", "divmod", "all", "any"})

#: Methods of tensor attributes of torch modules (`self.linear.weight`) that are tensors.
_TORCH_MODULE_TENSOR_ATTRS = ("weight", "bias", "running_mean", "running_var", "in_proj_weight", "in_proj_bias")
#: Attributes of a tensor that are tensors (the rest: shape, dtype, device, ... are not).
_TENSOR_VALUED_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "real", "imag", "grad"})

_REFERENCE_NAMES = frozenset({"Model", "get_inputs", "get_init_inputs"})
_REFERENCE_MODULE_HINTS = frozenset({"reference", "ref", "problem", "model", "__main__", "kernelbench", "src", "solution"})
_CACHE_DECORATORS = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})
_INIT_TENSOR_FACTORIES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"})


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


# libcst's own visitor rebuilds every node it passes (tens of microseconds each); the checks only
# read, so they walk the dataclass fields directly, skipping whitespace and punctuation.
_SKIP_FIELDS = frozenset({
    "asynchronous", "colon", "comma", "comment", "dot", "empty_lines", "encoding", "equal", "first_colon", "footer",
    "header", "indent", "lbrace", "lbracket", "leading_lines", "leading_whitespace", "lines_after_decorators", "lpar",
    "rpar", "newline", "rbrace", "rbracket", "relative", "second_colon", "semicolon", "separator", "trailing_whitespace",
    "default_indent", "default_newline", "has_trailing_newline", "operator", "star", "posonly_ind", "first_line",
    "last_line", "parsed_python_version", "python_version", "trailing_comma",
})
_FIELDS: dict[type, tuple[str, ...]] = {}
_DISPATCH: dict[tuple[type, type], object] = {}


def _walk(node: cst.CSTNode, visitor: object) -> None:
    """Depth-first walk calling `visitor.visit_<NodeType>(node)`; a False return skips the children."""
    tp = type(node)
    key = (type(visitor), tp)
    meth = _DISPATCH.get(key, _walk)
    if meth is _walk:
        name = "visit_" + tp.__name__
        meth = getattr(type(visitor), name, None)
        if meth is not None and meth is getattr(cst.CSTVisitor, name, None):
            meth = None  # libcst's no-op default
        _DISPATCH[key] = meth
    if meth is not None and meth(visitor, node) is False:  # type: ignore[operator]
        return
    fields = _FIELDS.get(tp)
    if fields is None:
        fields = tuple(f.name for f in dataclasses.fields(tp) if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace"))
        _FIELDS[tp] = fields
    for name in fields:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            _walk(value, visitor)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    _walk(item, visitor)


# --------------------------------------------------------------------------------------------
# Small CST helpers
# --------------------------------------------------------------------------------------------


def _dotted(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a chain of Names/Attributes, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _import_name(node: cst.CSTNode) -> str:
    return _dotted(node) or ""


def _int_literal(node: cst.CSTNode | None) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.evaluated_value)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = _int_literal(node.expression)
        return -v if v is not None else None
    return None


def _str_literal(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        return v if isinstance(v, str) else None
    return None


def _params(fn: cst.FunctionDef) -> list[cst.Param]:
    p = fn.params
    out = list(p.posonly_params) + list(p.params)
    if isinstance(p.star_arg, cst.Param):
        out.append(p.star_arg)
    out += list(p.kwonly_params)
    if p.star_kwarg is not None:
        out.append(p.star_kwarg)
    return out


def _positional_params(fn: cst.FunctionDef) -> list[cst.Param]:
    return list(fn.params.posonly_params) + list(fn.params.params)


def _prefix_lookup(name: str, table: dict[str, str]) -> tuple[str, str] | None:
    """Longest dotted prefix of `name` present in `table`: (prefix, value)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        pre = ".".join(parts[:i])
        if pre in table:
            return pre, table[pre]
    return None


def _allowlisted_internal(name: str) -> bool:
    """True for the Inductor helper names that live under otherwise forbidden prefixes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in INDUCTOR_RUNTIME_ALLOWLIST:
            return True
    return False


# --------------------------------------------------------------------------------------------
# Module model: what is defined where
# --------------------------------------------------------------------------------------------


@dataclass
class _ClassInfo:
    name: str
    node: cst.ClassDef
    bases: list[str]  # resolved dotted names (local classes stay bare)
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    # attribute kinds from __init__: "tensor", "torch_module", "helper:<Class>", "function:<name>",
    # "kernel:<name>", "method:<name>"
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class _KernelInfo:
    name: str
    node: cst.FunctionDef
    decorators: list[cst.Decorator]
    constexprs: set[str] = field(default_factory=set)
    block_params: set[str] = field(default_factory=set)  # constexprs used as tl.arange / shape extents
    stores: bool = False  # calls tl.store / tl.atomic_* / <block pointer>.store itself
    calls: set[str] = field(default_factory=set)  # names it calls (other @triton.jit helpers)
    stored_params: set[str] = field(default_factory=set)  # pointer parameters it writes through
    store_roots: list[cst.CSTNode] = field(default_factory=list)  # address expressions of its stores
    helper_calls: list[cst.Call] = field(default_factory=list)  # calls of other kernels / helpers
    local_assigns: dict[str, list[cst.CSTNode]] = field(default_factory=dict)


class _Checker:
    """One pass over the module's structure, then the semantic checks. Use `check_rules`."""

    def __init__(self, module: cst.Module, wrapper: MetadataWrapper):
        self.module = module
        self.wrapper = wrapper
        self.found: list[tuple[str, str, cst.CSTNode | None]] = []
        self.aliases: dict[str, str] = {}  # local name -> resolved dotted name (imports, module aliases)
        self.functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, _ClassInfo] = {}
        self.kernels: dict[str, _KernelInfo] = {}
        self.kernel_aliases: dict[str, str] = {}  # name -> kernel name (k2 = triton.jit(f); k = kern)
        self.constants: dict[str, int] = {}  # module-level integer constants
        self.module_names: set[str] = set()  # every name assigned at module level
        self.defined_names: set[str] = set()  # every binding in the file (for builtin shadowing)

    # ---- reporting --------------------------------------------------------------------------
    def report(self, rule: str, message: str, node: cst.CSTNode | None) -> None:
        self.found.append((rule, message, node))

    def violations(self) -> list[Violation]:
        if not self.found:
            return []
        positions = self.wrapper.resolve(PositionProvider)
        seen: set[tuple[str, int | None, str]] = set()
        out: list[Violation] = []
        for rule, message, node in self.found:
            line = None
            if node is not None and node in positions:
                line = positions[node].start.line
            k = (rule, line, message)
            if k in seen:
                continue
            seen.add(k)
            out.append(Violation(rule=rule, message=message, line=line))
        out.sort(key=lambda v: (v.line if v.line is not None else 0, v.rule))
        return out

    # ---- name resolution --------------------------------------------------------------------
    def resolve(self, dotted: str) -> str:
        root, _, rest = dotted.partition(".")
        base = self.aliases.get(root)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

    def resolve_node(self, node: cst.CSTNode) -> str | None:
        d = _dotted(node)
        return self.resolve(d) if d is not None else None

    def is_import_rooted(self, dotted: str) -> bool:
        return dotted.partition(".")[0] in self.aliases

    def kernel_of(self, node: cst.CSTNode) -> str | None:
        """The kernel a launch expression refers to (`k`, `mod.k`, an alias), else None."""
        if isinstance(node, cst.Name):
            return self.kernel_of_name(node.value)
        return None

    def kernel_of_name(self, name: str) -> str | None:
        if name in self.kernels:
            return name
        return self.kernel_aliases.get(name)

    # ---- structure ----------------------------------------------------------------------------
    def collect(self) -> None:
        for stmt in self._top_level_statements(self.module.body):
            if isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = stmt
                if self._is_jit_decorated(stmt):
                    self.kernels[stmt.name.value] = _KernelInfo(stmt.name.value, stmt, list(stmt.decorators))
            elif isinstance(stmt, cst.ClassDef):
                self.classes[stmt.name.value] = self._class_info(stmt)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        self._add_import_aliases(small)
                    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                        self._module_assign(small.targets[0].target, small.value)
                        if isinstance(small.targets[0].target, cst.Name):
                            self.module_names.add(small.targets[0].target.value)
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        self._module_assign(small.target, small.value)
        # decorators may have been resolved before a later import; redo kernel detection now.
        for name, fn in self.functions.items():
            if name not in self.kernels and self._is_jit_decorated(fn):
                self.kernels[name] = _KernelInfo(name, fn, list(fn.decorators))
        for info in self.kernels.values():
            self._kernel_params(info)
        for cls in self.classes.values():
            self._init_attrs(cls)

    def _top_level_statements(self, body: Sequence[cst.CSTNode]) -> Iterable[cst.CSTNode]:
        for stmt in body:
            if isinstance(stmt, cst.If) and _is_main_guard(stmt.test):
                if stmt.orelse is not None:  # the body never runs when the judge imports the module
                    yield from self._top_level_statements(stmt.orelse.body.body if isinstance(stmt.orelse, cst.Else) else [stmt.orelse])
            elif isinstance(stmt, cst.If):
                yield from self._top_level_statements(stmt.body.body)
                if stmt.orelse is not None:
                    yield from self._top_level_statements(stmt.orelse.body.body if isinstance(stmt.orelse, cst.Else) else [stmt.orelse])
            elif isinstance(stmt, (cst.Try, cst.TryStar)):
                yield from self._top_level_statements(stmt.body.body)
                for h in stmt.handlers:
                    yield from self._top_level_statements(h.body.body)
            else:
                yield stmt

    def _add_import_aliases(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _import_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                else:
                    root = full.partition(".")[0]
                    self.aliases.setdefault(root, root)
        else:
            if node.relative:
                mod = "." * len(node.relative) + (_import_name(node.module) if node.module else "")
            else:
                mod = _import_name(node.module) if node.module else ""
            if isinstance(node.names, cst.ImportStar):
                return
            for alias in node.names:
                name = _import_name(alias.name)
                local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                self.aliases[local] = f"{mod}.{name}" if mod else name

    def _module_assign(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        if not isinstance(target, cst.Name):
            return
        name = target.value
        lit = _int_literal(value)
        if lit is not None:
            self.constants[name] = lit
            return
        if isinstance(value, cst.Call):
            callee = self.resolve_node(value.func)
            if callee in ("triton.jit", "triton.runtime.jit.jit") and value.args:
                k = self.kernel_of(value.args[0].value) or (_dotted(value.args[0].value) or "")
                if k in self.functions:
                    fn = self.functions[k]
                    self.kernels.setdefault(k, _KernelInfo(k, fn, list(fn.decorators)))
                    self.kernel_aliases[name] = k
            return
        d = _dotted(value)
        if d is not None:
            k = self.kernel_of_name(d)
            if k is not None:
                self.kernel_aliases[name] = k
            elif self.is_import_rooted(d):
                self.aliases[name] = self.resolve(d)

    def _is_jit_decorated(self, fn: cst.FunctionDef) -> bool:
        for dec in fn.decorators:
            expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
            name = self.resolve_node(expr)
            if name in ("triton.jit", "triton.runtime.jit.jit", "triton.runtime.jit"):
                return True
        return False

    def _class_info(self, node: cst.ClassDef) -> _ClassInfo:
        bases = []
        for arg in node.bases:
            d = _dotted(arg.value)
            if d is not None:
                bases.append(self.resolve(d))
        info = _ClassInfo(node.name.value, node, bases)
        for stmt in node.body.body:
            if isinstance(stmt, cst.FunctionDef):
                info.methods[stmt.name.value] = stmt
        return info

    def _kernel_params(self, info: _KernelInfo) -> None:
        for p in _params(info.node):
            if p.annotation is not None:
                ann = p.annotation.annotation
                name = self.resolve_node(ann) or (_str_literal(ann) or "")
                if name.endswith("constexpr"):
                    info.constexprs.add(p.name.value)

    def is_nn_module_class(self, name: str, seen: set[str] | None = None) -> bool:
        """True when the (resolved) class name is torch.nn.Module or an in-file subclass of it."""
        if name in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            return True
        cls = self.classes.get(name)
        if cls is None:
            return False
        seen = seen or set()
        if name in seen:
            return False
        seen.add(name)
        return any(self.is_nn_module_class(b, seen) for b in cls.bases)

    def is_torch_class(self, resolved: str) -> bool:
        return resolved.startswith("torch.")

    def _init_attrs(self, cls: _ClassInfo) -> None:
        init = cls.methods.get("__init__")
        if init is None:
            return
        collector = _InitCollector(self, cls)
        _walk(init.body, collector)

    def method_of(self, class_name: str, method: str, seen: set[str] | None = None) -> tuple[str, cst.FunctionDef] | None:
        cls = self.classes.get(class_name)
        if cls is None:
            return None
        if method in cls.methods:
            return class_name, cls.methods[method]
        seen = seen or set()
        seen.add(class_name)
        for b in cls.bases:
            if b in self.classes and b not in seen:
                found = self.method_of(b, method, seen)
                if found:
                    return found
        return None

    def class_attr(self, class_name: str, attr: str, seen: set[str] | None = None) -> str | None:
        cls = self.classes.get(class_name)
        if cls is None:
            return None
        if attr in cls.attrs:
            return cls.attrs[attr]
        seen = seen or set()
        seen.add(class_name)
        for b in cls.bases:
            if b in self.classes and b not in seen:
                found = self.class_attr(b, attr, seen)
                if found:
                    return found
        return None

    def is_autograd_function(self, class_name: str) -> bool:
        cls = self.classes.get(class_name)
        return cls is not None and any(b in ("torch.autograd.Function", "torch.autograd.function.Function") for b in cls.bases)


class _InitCollector(cst.CSTVisitor):
    """Kinds of `self.X` attributes assigned in a class's __init__."""

    def __init__(self, checker: _Checker, cls: _ClassInfo):
        self.c = checker
        self.cls = cls

    def _kind(self, value: cst.CSTNode) -> str | None:
        if isinstance(value, cst.Call):
            callee = self.c.resolve_node(value.func)
            if callee is None:
                return None
            if callee in _INIT_TENSOR_FACTORIES or callee in ALLOWED_TORCH_CALLS or callee.startswith("torch.rand"):
                return "tensor"
            if callee in self.c.classes:
                return f"helper:{callee}"
            if callee.startswith("torch.nn."):
                return "torch_module"
            if callee.startswith("torch."):
                return "tensor"
            return None
        d = _dotted(value)
        if d is not None:
            k = self.c.kernel_of_name(d)
            if k is not None:
                return f"kernel:{k}"
            if d in self.c.functions:
                return f"function:{d}"
            if d.startswith("self.") and d.count(".") == 1:
                return f"method:{d[5:]}"
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            d = _dotted(t.target)
            if d and d.startswith("self.") and d.count(".") == 1:
                kind = self._kind(node.value)
                if kind:
                    self.cls.attrs[d[5:]] = kind

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        d = _dotted(node.target)
        if node.value is not None and d and d.startswith("self.") and d.count(".") == 1:
            kind = self._kind(node.value)
            if kind:
                self.cls.attrs[d[5:]] = kind

    def visit_Call(self, node: cst.Call) -> None:
        d = _dotted(node.func)
        if d in ("self.register_buffer", "self.register_parameter") and node.args:
            name = _str_literal(node.args[0].value)
            if name:
                self.cls.attrs[name] = "tensor"


# --------------------------------------------------------------------------------------------
# Pass A: forbidden modules, names, builtins, monkeypatching, anywhere in the file
# --------------------------------------------------------------------------------------------


class _SafetyVisitor(cst.CSTVisitor):
    def __init__(self, checker: _Checker):
        self.c = checker
        self.builtin_calls: list[tuple[str, cst.Call]] = []
        self.machinery = _CallMachineryVisitor(checker)  # MODELNEW-CALL checks ride on this walk

    # imports --------------------------------------------------------------------------------
    def _check_module(self, mod: str, node: cst.CSTNode, relative: bool = False) -> None:
        if relative:
            self.c.report("REFERENCE-IMPORT", f"relative import '{mod}': a candidate is a single file and must not import its neighbours (the reference)", node)
            return
        if _allowlisted_internal(mod):
            return
        hit = _prefix_lookup(mod, FORBIDDEN_NAMES)
        if hit is not None:
            self.c.report(hit[1], f"imports '{mod}' ({RULES[hit[1]]})", node)
            return
        root = mod.partition(".")[0]
        if root in ALLOWED_IMPORTS:
            return
        if root.lower() in _REFERENCE_MODULE_HINTS:
            self.c.report("REFERENCE-IMPORT", f"imports '{mod}', which looks like the reference problem; ModelNew must be self-contained", node)
        else:
            self.c.report("IMPORT-FORBIDDEN", f"imports '{mod}', which is not on the import allowlist ({', '.join(sorted(ALLOWED_IMPORTS))})", node)

    def visit_Import(self, node: cst.Import) -> bool:
        self.c._add_import_aliases(node)
        for alias in node.names:
            self._check_module(_import_name(alias.name), node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.c._add_import_aliases(node)
        mod = _import_name(node.module) if node.module else ""
        if node.relative:
            self._check_module("." * len(node.relative) + mod, node, relative=True)
            return False
        if isinstance(node.names, cst.ImportStar):
            self._check_module(mod, node)
            return False
        for alias in node.names:
            name = _import_name(alias.name)
            if name in _REFERENCE_NAMES:
                self.c.report("REFERENCE-IMPORT", f"imports '{name}' from '{mod}': the reference problem must not be imported", node)
            elif f"{mod}.{name}" not in TOLERATED_IMPORTS:
                self._check_module(f"{mod}.{name}", node)  # checks the module too (prefix match)
        return False

    # names and attributes -------------------------------------------------------------------
    def _check_dotted(self, d: str, node: cst.CSTNode) -> None:
        parts = d.split(".")
        for p in parts[1:]:
            if p in FORBIDDEN_ATTRIBUTES:
                rule = "MONKEYPATCH" if p in ("__setattr__", "__delattr__") else "INTROSPECTION"
                self.c.report(rule, f"'{d}' reaches interpreter internals through '{p}'", node)
                return
        if parts[0] in FORBIDDEN_BARE_NAMES:
            self.c.report(FORBIDDEN_BARE_NAMES[parts[0]], f"uses '{parts[0]}'", node)
            return
        rooted = self.c.is_import_rooted(d)
        rerooted = _reexported_module(self.c.resolve(d) if rooted else d, REEXPORTED_MODULES if rooted else CORE_REEXPORTED_MODULES)
        if rerooted is not None:
            self._check_module(rerooted, node)
            if rerooted.partition(".")[0] == "torch":
                self._check_dotted_resolved(rerooted, node)
            return
        if not self.c.is_import_rooted(d):
            return
        self._check_dotted_resolved(self.c.resolve(d), node)

    def _check_dotted_resolved(self, r: str, node: cst.CSTNode) -> None:
        if _allowlisted_internal(r):
            return
        hit = _prefix_lookup(r, FORBIDDEN_NAMES)
        if hit is not None:
            self.c.report(hit[1], f"uses '{r}' ({RULES[hit[1]]})", node)
        elif r == "sys.modules" or r.startswith("sys.modules."):
            self.c.report("MONKEYPATCH", "uses sys.modules", node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        d = _dotted(node)
        if d is not None:
            self._check_dotted(d, node)
            return False
        if node.attr.value in FORBIDDEN_ATTRIBUTES:
            rule = "MONKEYPATCH" if node.attr.value in ("__setattr__", "__delattr__") else "INTROSPECTION"
            self.c.report(rule, f"attribute '{node.attr.value}' reaches interpreter internals", node)
        _walk(node.value, self)  # the attribute name itself is no reference
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        _walk(node.value, self)  # keyword names are no references
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in FORBIDDEN_BARE_NAMES:
            self.c.report(FORBIDDEN_BARE_NAMES[node.value], f"uses '{node.value}'", node)
        elif node.value in self.c.aliases:
            self._check_dotted(node.value, node)

    # bindings (for builtin shadowing) --------------------------------------------------------
    def visit_Param(self, node: cst.Param) -> None:
        self.c.defined_names.add(node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.c.defined_names.add(node.name.value)
        if node.name.value in ("__torch_function__", "__torch_dispatch__"):
            self.c.report("INTROSPECTION", f"defines {node.name.value}, which reroutes PyTorch's dispatcher around the judge", node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.c.defined_names.add(node.name.value)
        for arg in node.bases:
            d = _dotted(arg.value)
            if d is None:
                continue
            r = self.c.resolve(d)
            if r in ("torch.Tensor", "torch._tensor.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                self.c.report("INTROSPECTION", f"class {node.name.value} subclasses {r}: tensor subclasses can hide PyTorch compute from the judge", node)
        for kw in node.keywords:
            if kw.keyword.value == "metaclass":
                self.c.report("INTROSPECTION", f"class {node.name.value} uses a metaclass", node)

    def _bind_target(self, t: cst.CSTNode) -> None:
        if isinstance(t, cst.Name):
            self.c.defined_names.add(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for el in t.elements:
                self._bind_target(el.value)
        elif isinstance(t, cst.StarredElement):
            self._bind_target(t.value)

    # assignments: monkeypatching --------------------------------------------------------------
    def _check_store(self, target: cst.CSTNode, verb: str) -> None:
        if isinstance(target, cst.Name) and target.value in ("__name__", "__file__", "__package__"):
            self.c.report("MONKEYPATCH", f"{verb} the module's {target.value}", target)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._check_store(el.value, verb)
            return
        if isinstance(target, cst.StarredElement):
            self._check_store(target.value, verb)
            return
        base = target
        while isinstance(base, cst.Subscript):
            base = base.value
        d = _dotted(base)
        if d is None:
            return
        root = d.partition(".")[0]
        if root in ("__builtins__", "builtins"):
            self.c.report("MONKEYPATCH", f"{verb} '{d}': builtins must not be changed", target)
            return
        if (isinstance(target, cst.Attribute) or isinstance(target, cst.Subscript)) and self.c.is_import_rooted(d):
            r = self.c.resolve(d)
            if r.startswith("os.environ") or r.startswith("os.putenv"):
                self.c.report("SYSTEM-ACCESS", f"{verb} '{d}': the environment must not be changed", target)
            else:
                self.c.report("MONKEYPATCH", f"{verb} '{d}' ({r}): imported modules and their classes must not be patched", target)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.machinery.visit_Assign(node)
        for t in node.targets:
            self._check_store(t.target, "assigns")
            self._bind_target(t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_store(node.target, "assigns")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.machinery.visit_AnnAssign(node)
        self._check_store(node.target, "assigns")
        self._bind_target(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._check_store(node.target, "deletes")

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind_target(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target)

    # `if __name__ == "__main__":` blocks (an author's own test harness) never run: the judge
    # imports the candidate under another module name, and rebinding __name__ is a violation
    def visit_If(self, node: cst.If) -> bool:
        if not _is_main_guard(node.test):
            return True
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def visit_Global(self, node: cst.Global) -> None:
        for n in node.names:
            if n.name.value in self.c.aliases:
                self.c.report("MONKEYPATCH", f"rebinds the imported name '{n.name.value}' through a global statement", node)

    # calls ------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        self.machinery.visit_Call(node)
        func = node.func
        if isinstance(func, cst.Name):
            name = func.value
            if name in FORBIDDEN_BUILTIN_CALLS:
                self.builtin_calls.append((name, node))
            elif name in ("getattr", "setattr", "delattr", "hasattr") and node.args:
                self._check_attr_builtin(name, node)
        callee = self.c.resolve_node(func)
        if callee in ("triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"):
            _check_launch_options(self.c, node, node.args[1:] if node.args else (), kernel=None)
            if node.args:
                cfg = node.args[0].value
                if isinstance(cfg, cst.Dict):
                    blocks = set().union(*(k.block_params for k in self.c.kernels.values())) if self.c.kernels else set()
                    for el in cfg.elements:
                        if isinstance(el, cst.DictElement):
                            key = _str_literal(el.key)
                            val = _int_literal(el.value)
                            if key in blocks and val is not None and not _is_pow2(val):
                                self.c.report("TRITON-BLOCK-POW2", f"triton.Config gives block size {key}={val}, not a power of two", el)

    def _check_attr_builtin(self, name: str, node: cst.Call) -> None:
        obj = node.args[0].value
        d = _dotted(obj)
        attr = _str_literal(node.args[1].value) if len(node.args) > 1 else None
        module_target = d is not None and (self.c.is_import_rooted(d) or d.partition(".")[0] in ("__builtins__", "builtins"))
        if name in ("setattr", "delattr"):
            if module_target:
                self.c.report("MONKEYPATCH", f"{name}() on '{d}': imported modules and their classes must not be patched", node)
            elif attr is None:
                self.c.report("INTROSPECTION", f"{name}() with a computed attribute name", node)
            return
        if attr is None:
            if module_target:
                self.c.report("INTROSPECTION", f"{name}() on '{d}' with a computed attribute name hides which API is used", node)
            return
        if attr in FORBIDDEN_ATTRIBUTES:
            self.c.report("INTROSPECTION", f"{name}(..., '{attr}') reaches interpreter internals", node)
        elif module_target and d is not None:
            self._check_dotted(f"{d}.{attr}", node)

    def finish(self) -> None:
        for name, node in self.builtin_calls:
            if name not in SHADOWABLE_BUILTINS or (name not in self.c.defined_names and name not in self.c.aliases):
                self.c.report(FORBIDDEN_BUILTIN_CALLS[name], f"calls {name}() ({RULES[FORBIDDEN_BUILTIN_CALLS[name]]})", node)


#: Modules that other modules re-export as attributes (`warnings.sys`, `typing.sys`,
#: `numpy.ctypeslib.ctypes`, `torch.nn.functional.torch._C`): reached that way, they are judged as
#: if imported by name. A chain is re-rooted at the LAST such name in it (issue 14, class 3).
REEXPORTED_MODULES = frozenset({
    "sys", "os", "ctypes", "_ctypes", "gc", "builtins", "importlib", "inspect", "threading", "_thread", "subprocess",
    "socket", "signal", "marshal", "pickle", "multiprocessing", "io", "pathlib", "shutil", "tempfile", "weakref",
    "traceback", "dis", "code", "runpy", "atexit", "mmap", "resource", "concurrent", "asyncio", "queue", "types",
    "posix", "nt", "_C", "torch", "_imp", "linecache", "faulthandler", "cffi", "_io", "_weakref", "_pickle",
})


#: On chains that do not start at an import (`self.x.sys`, a module kept in a variable), only the
#: names no honest attribute is called: `self.code` or `self.queue` may be the candidate's own.
CORE_REEXPORTED_MODULES = frozenset({"sys", "os", "ctypes", "_ctypes", "gc", "builtins", "_C", "importlib", "inspect",
                                     "subprocess", "_thread", "posix", "_imp"})


def _reexported_module(dotted: str, names: frozenset[str] = REEXPORTED_MODULES) -> str | None:
    """`a.b.sys.modules` -> "sys.modules"; `F.torch._C._foo` -> "torch._C._foo"; None when no part
    after the first names a re-exported module (or the chain is just `torch.<...>` itself)."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in names:
            root = "torch._C" if parts[i] == "_C" else parts[i]
            if parts[i] == "_C" and parts[i - 1] == "torch" and i == 1:
                return None  # torch._C itself: the ordinary rules judge it
            if parts[i] == "types" and parts[0] == "torch":
                continue  # torch.types: type aliases, no capability
            return ".".join([root, *parts[i + 1:]])
    return None


def _is_main_guard(test: cst.CSTNode) -> bool:
    """`__name__ == "__main__"` (either order)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(isinstance(x, cst.Name) and x.value == "__name__" for x in sides) and any(_str_literal(x) == "__main__" for x in sides)


def _check_launch_options(checker: _Checker, node: cst.CSTNode, args: Sequence[cst.Arg], kernel: str | None,
                          env: dict[str, int] | None = None) -> None:
    """num_warps / num_stages given as literals (launch keywords or triton.Config keywords), or as
    names bound once to a literal (module constants, `env`: the launching function's)."""
    for arg in args:
        if arg.keyword is None:
            continue
        key = arg.keyword.value
        val = _int_literal(arg.value)
        if val is None and isinstance(arg.value, cst.Name):
            val = (env or {}).get(arg.value.value, checker.constants.get(arg.value.value))
        if val is None:
            continue
        where = f" launching {kernel}" if kernel else " in triton.Config"
        if key == "num_warps" and not (_is_pow2(val) and val <= 32):
            checker.report("TRITON-NUM-WARPS", f"num_warps={val}{where}: must be a power of two between 1 and 32", arg)
        elif key == "num_stages" and not 1 <= val <= 8:
            checker.report("TRITON-NUM-STAGES", f"num_stages={val}{where}: must be between 1 and 8", arg)


# --------------------------------------------------------------------------------------------
# Pass C: Triton constraints inside kernels
# --------------------------------------------------------------------------------------------


def _eval_int(node: cst.CSTNode | None, env: dict[str, int]) -> int | None:
    """Integer value of a literal / known-constant expression (+ - * // << >>), else None."""
    if node is None:
        return None
    v = _int_literal(node)
    if v is not None:
        return v
    if isinstance(node, cst.Name):
        return env.get(node.value)
    if isinstance(node, cst.BinaryOperation):
        a, b = _eval_int(node.left, env), _eval_int(node.right, env)
        if a is None or b is None:
            return None
        op = node.operator
        try:
            if isinstance(op, cst.Add):
                return a + b
            if isinstance(op, cst.Subtract):
                return a - b
            if isinstance(op, cst.Multiply):
                return a * b
            if isinstance(op, cst.FloorDivide):
                return a // b
            if isinstance(op, cst.LeftShift) and 0 <= b < 64:
                return a << b
            if isinstance(op, cst.RightShift) and 0 <= b < 64:
                return a >> b
        except ZeroDivisionError:
            return None
    return None


class _KernelVisitor(cst.CSTVisitor):
    """tl.arange extents and tl.zeros/tl.full shapes in one kernel body."""

    _SHAPE_FUNCS = ("triton.language.zeros", "triton.language.full")

    def __init__(self, checker: _Checker, info: _KernelInfo):
        self.c = checker
        self.k = info
        self.params = {p.name.value for p in _params(info.node)}
        self.env = dict(checker.constants)
        self.local_env: dict[str, int] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            self.k.local_assigns.setdefault(name, []).append(node.value)
            v = _eval_int(node.value, self.env)
            if v is not None:
                self.env[name] = v

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self.k.local_assigns.setdefault(node.target.value, []).append(node.value)
            v = _eval_int(node.value, self.env)
            if v is not None:
                self.env[node.target.value] = v

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            self.k.local_assigns.setdefault(node.target.value, []).append(node.value)

    def _extent_name(self, node: cst.CSTNode, what: str, where: cst.CSTNode) -> None:
        """A block extent given by a name: must be a constexpr parameter (or a known constant)."""
        if isinstance(node, cst.Name) and node.value in self.params:
            if node.value in self.k.constexprs:
                self.k.block_params.add(node.value)
            else:
                self.c.report(
                    "TRITON-BLOCK-CONSTEXPR",
                    f"{self.k.name}: {what} uses parameter '{node.value}', which is not annotated tl.constexpr",
                    where,
                )

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.c.resolve_node(node.func)
        last = callee.rsplit(".", 1)[-1] if callee else (node.func.attr.value if isinstance(node.func, cst.Attribute) else "")
        if last == "store" or last.startswith("atomic_") or last.endswith("_store"):
            self.k.stores = True
            if callee and callee.startswith("triton.language") and node.args:
                self.k.store_roots.append(node.args[0].value)
            elif isinstance(node.func, cst.Attribute) and not callee:
                self.k.store_roots.append(node.func.value)  # block_ptr.store(...) / desc.store(...)
        if isinstance(node.func, cst.Name):
            self.k.calls.add(node.func.value)
            self.k.helper_calls.append(node)
        if callee == "triton.language.arange" and len(node.args) >= 2:
            lo, hi = node.args[0].value, node.args[1].value
            a, b = _eval_int(lo, self.env), _eval_int(hi, self.env)
            if a is not None and b is not None:
                if not _is_pow2(b - a):
                    self.c.report("TRITON-ARANGE-POW2", f"{self.k.name}: tl.arange({a}, {b}) has extent {b - a}, not a power of two", node)
            for bound in (lo, hi):
                self._extent_name(bound, "tl.arange", node)
        elif callee in self._SHAPE_FUNCS and node.args:
            shape = node.args[0].value
            elems = [e.value for e in shape.elements] if isinstance(shape, (cst.Tuple, cst.List)) else [shape]
            for e in elems:
                self._extent_name(e, callee.rsplit(".", 1)[1] + " shape", node)
                v = _eval_int(e, self.env)
                if v is not None and not _is_pow2(v):
                    self.c.report("TRITON-ARANGE-POW2", f"{self.k.name}: tl.{callee.rsplit('.', 1)[1]} shape dimension {v} is not a power of two", node)


def _pointer_bases(c: _Checker, info: _KernelInfo, expr: cst.CSTNode) -> set[str]:
    """Parameters of a kernel that are the base of an address expression (through +/-, indexing,
    tl.where/broadcast/advance/make_block_ptr and local assignments)."""
    params = {p.name.value for p in _params(info.node)}
    found: set[str] = set()
    seen: set[str] = set()
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract)):
            todo += [e.left, e.right]
        elif isinstance(e, cst.Subscript):
            todo.append(e.value)
        elif isinstance(e, cst.Call):
            name = (c.resolve_node(e.func) or "").rsplit(".", 1)[-1]
            if name == "where" and len(e.args) == 3:
                todo += [e.args[1].value, e.args[2].value]
            elif name in ("broadcast_to", "reshape", "view", "expand_dims", "multiple_of", "max_contiguous", "advance", "make_block_ptr", "make_tensor_descriptor") and e.args:
                todo.append(e.args[0].value)
            for a in e.args:
                if a.keyword is not None and a.keyword.value == "base":
                    todo.append(a.value)
        elif isinstance(e, cst.Name):
            if e.value in params:
                found.add(e.value)
            elif e.value in info.local_assigns and e.value not in seen:
                seen.add(e.value)
                todo += info.local_assigns[e.value]
    return found


def _resolve_stored_params(c: _Checker) -> None:
    """Each kernel's pointer parameters that it (or a jit helper it calls) stores through."""
    for info in c.kernels.values():
        for root in info.store_roots:
            info.stored_params |= _pointer_bases(c, info, root)
    for _ in range(4):  # helpers calling helpers: a few rounds reach a fixpoint
        changed = False
        for info in c.kernels.values():
            for call in info.helper_calls:
                helper = c.kernels.get(call.func.value)  # type: ignore[union-attr]
                if helper is None or not helper.stored_params:
                    continue
                hparams = [p.name.value for p in _positional_params(helper.node)]
                for i, a in enumerate(call.args):
                    pname = a.keyword.value if a.keyword is not None else (hparams[i] if i < len(hparams) else None)
                    if pname in helper.stored_params:
                        new = _pointer_bases(c, info, a.value) - info.stored_params
                        if new:
                            info.stored_params |= new
                            changed = True
        if not changed:
            break


def _check_kernel(checker: _Checker, info: _KernelInfo) -> None:
    _walk(info.node.body, _KernelVisitor(checker, info))
    # literal defaults of block-size constexprs
    for p in _params(info.node):
        if p.name.value in info.block_params and p.default is not None:
            v = _eval_int(p.default, checker.constants)
            if v is not None and not _is_pow2(v):
                checker.report("TRITON-BLOCK-POW2", f"{info.name}: default {p.name.value}={v} is not a power of two", p)
    for dec in info.decorators:
        if isinstance(dec.decorator, cst.Call):
            name = checker.resolve_node(dec.decorator.func)
            if name in ("triton.jit", "triton.runtime.jit.jit"):
                _check_launch_options(checker, dec, dec.decorator.args, kernel=info.name)


# --------------------------------------------------------------------------------------------
# Pass B: ModelNew.forward's call graph
# --------------------------------------------------------------------------------------------


class _FactCollector(cst.CSTVisitor):
    """Raw facts of one function body (nested lambdas and defs included inline)."""

    def __init__(self) -> None:
        self.assigns: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        self.for_targets: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        self.calls: list[cst.Call] = []
        # element-by-element host reads: (call, inside a comprehension?, innermost loop or None)
        self.scalar_reads: list[tuple[cst.Call, bool, cst.CSTNode | None]] = []
        self.loop_calls: dict[int, list[cst.Call]] = {}  # id(loop) -> calls in its body
        self._loops: list[cst.CSTNode] = []
        self._comprehensions = 0
        self.ops: list[cst.CSTNode] = []  # BinaryOperation, UnaryOperation, Comparison
        self.aug: list[cst.AugAssign] = []
        self.subscript_stores: list[tuple[cst.Subscript, cst.CSTNode]] = []
        self.attr_stores: list[tuple[cst.Attribute, cst.CSTNode]] = []
        self.tries: list[cst.CSTNode] = []
        self.withs: list[cst.WithItem] = []
        self.globals: list[cst.Global] = []
        self.names: list[cst.Name] = []
        self.attributes: list[cst.Attribute] = []
        self.local_params: set[str] = set()
        self.local_defs: dict[str, cst.CSTNode] = {}  # nested defs and lambdas bound to names
        self.returns: list[cst.CSTNode] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._store(t.target, node.value)
            if isinstance(node.value, cst.Lambda) and isinstance(t.target, cst.Name):
                self.local_defs[t.target.value] = node.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target, node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.local_defs[node.name.value] = node

    # statically dead code does not count (a launch under `if False:` or after `return`)
    def visit_If(self, node: cst.If) -> bool:
        test = node.test
        dead = (isinstance(test, cst.Name) and test.value in ("False", "None")) or _int_literal(test) == 0
        _walk(test, self)
        if not dead:
            _walk(node.body, self)
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def visit_While(self, node: cst.While) -> bool:
        test = node.test
        dead = (isinstance(test, cst.Name) and test.value in ("False", "None")) or _int_literal(test) == 0
        _walk(test, self)
        if not dead:
            self._loops.append(node)
            _walk(node.body, self)
            self._loops.pop()
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def _comprehension(self, node: cst.CSTNode) -> bool:
        self._comprehensions += 1
        for name in _FIELDS.get(type(node)) or tuple(f.name for f in dataclasses.fields(type(node))):
            value = getattr(node, name, None)
            if isinstance(value, cst.CSTNode) and name not in _SKIP_FIELDS and not name.startswith("whitespace"):
                _walk(value, self)
        self._comprehensions -= 1
        return False

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comprehension(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        for stmt in node.body:
            _walk(stmt, self)
            if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise)) for s in stmt.body):
                break  # the rest of the block never runs
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.assigns.append((node.target, node.value))

    def visit_For(self, node: cst.For) -> bool:
        # iterating a tensor yields tensors; iterating anything else yields unknowns
        self.for_targets.append((node.target, node.iter))
        _walk(node.target, self)
        _walk(node.iter, self)
        self._loops.append(node)
        _walk(node.body, self)
        self._loops.pop()
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def _store(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        self.assigns.append((target, value))
        self._note_store(target, value)

    def _note_store(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        """Stores into x[...] and x.attr, by plain and augmented assignment alike."""
        if isinstance(target, cst.Subscript):
            self.subscript_stores.append((target, value))
        elif isinstance(target, cst.Attribute):
            self.attr_stores.append((target, value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.aug.append(node)
        self._note_store(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        for loop in self._loops:
            self.loop_calls.setdefault(id(loop), []).append(node)
        if self._comprehensions or self._loops:
            f = node.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "item") or (
                    isinstance(f, cst.Name) and f.value in ("float", "int", "bool", "complex") and len(node.args) == 1):
                self.scalar_reads.append((node, bool(self._comprehensions), self._loops[-1] if self._loops else None))

    def _op(self, node: cst.BinaryOperation | cst.UnaryOperation | cst.Comparison) -> None:
        self.ops.append(node)

    visit_BinaryOperation = visit_UnaryOperation = visit_Comparison = _op

    def _try(self, node: cst.Try | cst.TryStar) -> None:
        self.tries.append(node)

    visit_Try = visit_TryStar = _try

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.withs.append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self.globals.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.attributes.append(node)
        _walk(node.value, self)  # not node.attr: `x.relu` is no reference to a function `relu`
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        _walk(node.value, self)  # not the keyword name
        return False

    def visit_Param(self, node: cst.Param) -> None:
        self.local_params.add(node.name.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append(node.value)


@dataclass
class _Frame:
    key: str
    node: cst.FunctionDef
    owner: str | None  # class the function is a method of
    tensor_params: set[str]
    kernel_params: set[str]
    input_params: set[str] = field(default_factory=set)  # params bound to forward()'s inputs (or views)


class _ForwardAnalysis:
    """Walks ModelNew.forward and everything it can reach; reports compute, fallbacks, launches."""

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
            if self.is_tensor(target.value, ctx):
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


@dataclass
class _Ctx:
    fr: _Frame
    tensors: set[str]
    launchers: set[str]
    inputs: set[str] = field(default_factory=set)  # names that are forward()'s inputs or views of them
    literals: dict[str, int] = field(default_factory=dict)  # names bound exactly once, to an int literal


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


def _lambda_as_function(lam: cst.Lambda) -> cst.FunctionDef:
    """A lambda seen as `def <lambda>(params): return body` (the body node is the original)."""
    return cst.FunctionDef(
        name=cst.Name("lambda_"), params=lam.params,
        body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Return(value=lam.body)])]),
    )


_MUTATING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "__setitem__", "appendleft"})


def _param_names(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in _params(fn)]


def _self_attr(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _scalar_param(p: cst.Param) -> bool:
    """A forward() parameter that is a Python scalar, not a tensor (by annotation or default)."""
    if p.annotation is not None:
        d = _dotted(p.annotation.annotation) or ""
        if d in ("int", "float", "bool", "str"):
            return True
    if p.default is not None and isinstance(p.default, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if p.default is not None and isinstance(p.default, cst.Name) and p.default.value in ("True", "False"):
        return True
    return False


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def check_rules(candidate_source: str) -> list[Violation]:
    """Static rule violations of a candidate (empty list: the source passes every rule).

    Never executes the candidate. Violations are sorted by line; each has a rule id from RULES.
    """
    # CPython first: its messages and lines are the most precise, and libcst accepts a few
    # programs CPython rejects (e.g. `return` outside a function).
    try:
        compile(candidate_source, "<candidate>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return [Violation(rule="SYNTAX", message=f"syntax error: {e.msg}", line=e.lineno)]
    except (ValueError, RecursionError, MemoryError) as e:
        return [Violation(rule="SYNTAX", message=f"the source cannot be parsed: {type(e).__name__}: {e}", line=None)]
    try:
        module = cst.parse_module(candidate_source)
    except cst.ParserSyntaxError as e:
        return [Violation(rule="SYNTAX", message=f"syntax error: {e.message}", line=e.raw_line)]
    except (RecursionError, MemoryError):
        return [Violation(rule="SYNTAX", message="the source is too deeply nested to parse", line=None)]

    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    c = _Checker(module, wrapper)
    c.collect()
    for info in list(c.kernels.values()):
        _check_kernel(c, info)
    _resolve_stored_params(c)
    safety = _SafetyVisitor(c)
    _walk(module, safety)
    safety.finish()

    model = c.classes.get("ModelNew")
    if model is None:
        c.report("MODELNEW-MISSING", "no class ModelNew at module level: the judge instantiates ModelNew(*get_init_inputs())", None)
    else:
        if "Model" in model.bases:
            c.report("REFERENCE-USE", "ModelNew subclasses the reference Model", model.node)
        if not c.is_nn_module_class("ModelNew"):
            unresolved = [b for b in model.bases if "." in b and not c.is_import_rooted(b) and b.split(".")[0] not in c.classes]
            hint = f" ('{unresolved[0].split('.')[0]}' is not imported: import torch.nn as nn)" if unresolved else ""
            c.report("MODELNEW-BASE", f"ModelNew subclasses {', '.join(model.bases) or 'nothing'}, not torch.nn.Module{hint}", model.node)
        _report_reference_in_class(c, model)
    if not c.kernels:
        c.report("TRITON-NO-KERNEL", "no @triton.jit kernel is defined: the computation must run in Triton", None)
    if model is not None:
        if c.method_of("ModelNew", "forward") is None:
            c.report("MODELNEW-FORWARD", "ModelNew defines no forward method", model.node)
        else:
            launches = _ForwardAnalysis(c, model).run()
            if c.kernels and not launches:
                names = ", ".join(sorted(c.kernels))
                c.report("TRITON-NOT-LAUNCHED", f"kernel(s) {names} defined but never launched (kernel[grid](...)) from ModelNew.forward's call graph", c.method_of("ModelNew", "forward")[1])  # type: ignore[index]
            for kernel in sorted({k for k, _ in launches if k in c.kernels}):
                if not _writes_memory(c, kernel, set()):
                    c.report("TRITON-NO-STORE", f"kernel {kernel} is launched from forward but writes no memory (no tl.store or atomic): it cannot produce the output", c.kernels[kernel].node)
        _check_call_machinery(c, model)
    _check_modelnew_rebinding(c)
    return c.violations()


def _writes_memory(c: _Checker, kernel: str, seen: set[str]) -> bool:
    info = c.kernels.get(kernel)
    if info is None or kernel in seen:
        return False
    seen.add(kernel)
    return info.stores or any(_writes_memory(c, k, seen) for k in info.calls if k in c.kernels)


#: nn.Module internals whose override changes what `model(x)` runs.
_CALL_MACHINERY = frozenset({
    "__call__", "_call_impl", "_wrapped_call_impl", "__getattribute__", "__getattr__", "__new__", "__init_subclass__",
    "__class_getitem__", "_apply", "__setstate__", "__reduce__", "__reduce_ex__", "__instancecheck__",
})
_HOOK_METHODS = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "register_backward_hook",
    "register_full_backward_pre_hook", "register_module_forward_hook", "register_module_forward_pre_hook",
    "register_state_dict_pre_hook", "register_load_state_dict_post_hook",
})


class _CallMachineryVisitor(cst.CSTVisitor):
    def __init__(self, c: _Checker):
        self.c = c

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in _HOOK_METHODS:
            self.c.report("MODELNEW-CALL", f"{name}() lets a hook replace what the module computes", node)
        elif name in ("setattr", "object.__setattr__") and len(node.args) >= 2 and _str_literal(node.args[1].value) in ("forward", "__call__"):
            self.c.report("MODELNEW-CALL", f"setattr(..., {_str_literal(node.args[1].value)!r}) rebinds the method the judge calls", node)

    def _store(self, target: cst.CSTNode) -> None:
        d = _dotted(target)
        if d and "." in d and d.rsplit(".", 1)[1] in ("forward", "__call__", "_call_impl", "_forward_hooks", "_forward_pre_hooks"):
            self.c.report("MODELNEW-CALL", f"assigning '{d}' rebinds what the judge calls", target)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._store(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)


def _check_call_machinery(c: _Checker, model: _ClassInfo) -> None:
    """ModelNew (and its in-file bases) must be called the nn.Module way: forward, no hooks."""
    seen: set[str] = set()
    todo = ["ModelNew"]
    while todo:
        name = todo.pop()
        cls = c.classes.get(name)
        if cls is None or name in seen:
            continue
        seen.add(name)
        todo += [b for b in cls.bases if b in c.classes]
        for stmt in cls.node.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in _CALL_MACHINERY:
                c.report("MODELNEW-CALL", f"{name} overrides {stmt.name.value}: the judge calls the module the nn.Module way and checks forward", stmt)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target] if isinstance(small, cst.AnnAssign) else []
                    for t in targets:
                        if isinstance(t, cst.Name) and (t.value in _CALL_MACHINERY or t.value == "forward"):
                            c.report("MODELNEW-CALL", f"{name} binds {t.value} to a value instead of defining a method", small)
    # hooks and forward rebinding anywhere in the file are reported during the safety walk


def _check_modelnew_rebinding(c: _Checker) -> None:
    """`ModelNew = Model`, `from x import y as ModelNew` or a second definition after the class."""
    seen_class = False
    for stmt in c.module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == "ModelNew":
            if seen_class:
                c.report("MODELNEW-CALL", "ModelNew is defined twice: only one definition may exist", stmt)
            seen_class = True
        elif isinstance(stmt, cst.FunctionDef) and stmt.name.value == "ModelNew":
            c.report("MODELNEW-CALL", "ModelNew is rebound to a function", stmt)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets: list[cst.CSTNode] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                    targets = [small.target]
                elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(getattr(small, "names", None), cst.ImportStar):
                    for alias in small.names:  # type: ignore[union-attr]
                        local = alias.asname.name if alias.asname is not None else alias.name
                        if isinstance(local, cst.Name) and local.value == "ModelNew":
                            c.report("MODELNEW-CALL", "ModelNew is imported, not defined here", small)
                for t in targets:
                    for n in (t.elements if isinstance(t, (cst.Tuple, cst.List)) else [t]):
                        value = n.value if isinstance(n, cst.Element) else n
                        if isinstance(value, cst.Name) and value.value == "ModelNew":
                            c.report("MODELNEW-CALL", "ModelNew is rebound by an assignment", small)


class _CallNameFinder(cst.CSTVisitor):
    """Names called anywhere below a node (`Block(...)`, `make_layer(...)`)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.names.append(node.func.value)


class _NameFinder(cst.CSTVisitor):
    def __init__(self, names: frozenset[str]):
        self.names = names
        self.found: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.found.append(node)


def _report_reference_in_class(c: _Checker, cls: _ClassInfo) -> None:
    """Any mention of the reference Model in ModelNew's body (__init__ included). A `Model` the
    candidate defines itself counts too: it is the reference's name and, pasted, its code."""
    finder = _NameFinder(frozenset({"Model"}))
    _walk(cls.node.body, finder)
    for n in finder.found:
        c.report("REFERENCE-USE", "ModelNew uses 'Model', the reference implementation", n)

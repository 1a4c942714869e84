"""The static rules' data: rule ids with their messages, and the allow/deny lists they apply.

Plain data, no libcst: `rules.check_rules` reads it, and the runtime anti-cheat and
validation/RULES.md share it (everything public here is re-exported by `validation.rules`).
Rule ids are stable: they are stored in the warehouse and used as training feedback.
"""

from __future__ import annotations

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

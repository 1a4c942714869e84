"""The torch.compile switches an Inductor capture sets (inductor_capture.capture_problem).

- `inductor_settings`: Inductor config for teacher runs: Triton the only GEMM/conv backend,
  caches, graph partitions and CUDA graphs off, an optional cap on template configs;
- `dynamo_settings` / `dynamic_parameter_settings`: Dynamo config (symbolic parameter shapes,
  float attributes baked in, logging and warnings kept out of the graph);
- `_math_attention`: scaled_dot_product_attention through its math path (Triton, not ATen);
- `_wide_indexing` / `int32_fits`: 32-bit indexing only with headroom under the int32 limit;
- `tf32_matmuls`: GEMM and convolution templates on the tensor cores (TF32).

Like the capture, torch + triton + stdlib only, imported inside the functions.
"""

from __future__ import annotations

from typing import Any


def inductor_settings(max_autotune: bool = True, search_space: str = "DEFAULT", autotune_pointwise: bool = False,
                      max_mm_configs: int | None = None) -> dict[str, Any]:
    """Inductor config overrides for teacher runs (only the keys this torch version knows).

    Triton is the only GEMM/conv backend so matmuls and convolutions come out as Triton
    templates; the DEFAULT (reduced) search space keeps each GEMM's autotuning to seconds;
    caches are off so every run really generates code; graph partitions and CUDA graphs are
    off so the output is one plain `call(args)`. `max_mm_configs` caps the Triton GEMM AND
    convolution template configs autotuning benchmarks per op (Inductor's
    `test_configs.max_mm_configs`; None keeps Inductor's full list): compiling and benchmarking
    each config is what makes a conv/GEMM capture take a minute.
    """
    import torch._inductor.config as ic

    wanted: dict[str, Any] = {
        # GEMM/conv templates are always autotuned; pointwise/reduction configs only on request
        # (Inductor's heuristics pick well, and benchmarking every config costs most of the time)
        "max_autotune": max_autotune and autotune_pointwise,
        "max_autotune_pointwise": max_autotune and autotune_pointwise,
        "max_autotune_gemm": max_autotune,
        "max_autotune_gemm_backends": "TRITON",
        "max_autotune_conv_backends": "TRITON",
        "max_autotune_gemm_search_space": search_space,
        "autotune_fallback_to_aten": False,
        "fx_graph_cache": False,
        "fx_graph_remote_cache": False,
        "autotune_local_cache": False,
        "autotune_remote_cache": False,
        "force_disable_caches": True,
        "graph_partition": False,
        "triton.cudagraphs": False,
        "triton.num_decompose_k_splits": 0,  # decompose_k choices are subgraph calls, not one kernel
        "coordinate_descent_tuning": False,
        "size_asserts": True,
        "freezing": False,
    }
    if max_mm_configs is not None:
        if max_mm_configs < 1:
            raise ValueError(f"max_mm_configs must be >= 1 (or None for Inductor's default), got {max_mm_configs}")
        wanted["test_configs.max_mm_configs"] = int(max_mm_configs)
    out = {}
    for key, value in wanted.items():
        obj = ic
        parts = key.split(".")
        ok = True
        for part in parts[:-1]:
            obj = getattr(obj, part, None)
            if obj is None:
                ok = False
                break
        if ok and hasattr(obj, parts[-1]):
            out[key] = value
    return out


def dynamic_parameter_settings() -> dict[str, bool]:
    """The Dynamo switches that make parameter and nn.Module-property shapes symbolic (torch's
    defaults, both True, treat them as constants), filtered to the names this torch version knows
    (both exist in torch 2.11 and 2.13)."""
    import torch._dynamo.config as dc

    wanted = {"force_parameter_static_shapes": False, "force_nn_module_property_static_shapes": False}
    return {k: v for k, v in wanted.items() if hasattr(dc, k)}


def dynamo_settings(dynamic: bool, dynamic_parameters: bool = False) -> dict[str, Any]:
    """Dynamo config for teacher runs. With dynamic shapes, parameter and module-property sizes
    are symbolic too (so a candidate works when the judge changes a layer's width), Python
    float attributes are baked in as constants (they are hyper-parameters, not inputs), and
    warnings and log calls do not break the graph.
    `dynamic_parameters` asks for the symbolic parameter shapes explicitly (the same switches;
    capture_problem also traces convolutions differently then, see there)."""
    import logging
    import warnings

    import torch._dynamo.config as dc

    # warnings.warn / logger calls inside a forward are side effects, not compute; Dynamo breaks
    # the graph at each (a `graph_breaks` capture the converter must refuse) unless it may replay
    # them after the graph (warn) or drop them (logger methods). Real-world code logs and warns in
    # forward; a standalone candidate does neither. Not print: a replayed print's tensor
    # arguments become extra graph outputs the converter cannot tell from the result.
    # allow_rnn: nn.LSTM / nn.GRU / nn.RNN are traced (torch's default breaks the graph at them, so
    # a recurrent model never became one graph); AOTAutograd then decomposes the recurrence into a
    # matmul and pointwise ops per step (torch._decomp's lstm_impl / gru_impl), as Triton kernels.
    wanted: dict[str, Any] = {
        "allow_rnn": True,
        "specialize_float": True,
        "reorderable_logging_functions": {warnings.warn},
        "ignore_logger_methods": {logging.Logger.debug, logging.Logger.info, logging.Logger.warning,
                                  logging.Logger.error, logging.Logger.exception, logging.Logger.critical},
    }
    if dynamic or dynamic_parameters:
        wanted.update(dynamic_parameter_settings())
    return {k: v for k, v in wanted.items() if hasattr(dc, k)}


class _math_attention:
    """Context manager: scaled_dot_product_attention through its math path (bmm + softmax, which
    Inductor makes Triton of) instead of the flash/efficient/cuDNN kernels, which stay ATen
    fallbacks in the output, for the whole capture, whatever the model's own forward asks for.

    Setting the math backend around the compile is not enough: a forward that selects backends
    itself (x-transformers' and lucidrains' `Attend`: `with sdpa_kernel([FLASH_ATTENTION,
    EFFICIENT_ATTENTION, MATH])` or the deprecated `torch.backends.cuda.sdp_kernel(...)` around
    F.scaled_dot_product_attention) re-enables the fused kernels while Dynamo traces it: Dynamo
    enters the context and bakes `torch.nn.attention._sdpa_kernel(...)` calls into the FX graph,
    which run again when AOTAutograd traces the graph, right before SDPA picks its kernel (an H200
    run lost 5 package problems to `_scaled_dot_product_efficient_attention` fallbacks). So, while
    active, every `torch._C._set_sdp_use_*` switch (what sdpa_kernel, _sdpa_kernel and
    torch.backends.cuda.enable_*_sdp all call) is pinned: math on, every other backend off. Math
    attention computes the same function as the fused kernels (the eager reference may use
    either). On exit the switches are real again and the backends the caller had come back."""

    def __enter__(self) -> "_math_attention":
        import contextlib

        import torch

        self._stack = contextlib.ExitStack()
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
        except ImportError:
            return self
        # first the math backend (sdpa_kernel restores the caller's backends on exit, after the
        # switches below are real again: ExitStack closes in reverse)
        self._stack.enter_context(sdpa_kernel([SDPBackend.MATH]))
        for name in sorted(n for n in dir(torch._C) if n.startswith("_set_sdp_use_")):
            setter = getattr(torch._C, name)
            setattr(torch._C, name, _pinned_switch(setter, name == "_set_sdp_use_math"))
            self._stack.callback(setattr, torch._C, name, setter)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.close()


def _pinned_switch(setter: Any, value: bool) -> Any:
    """An SDPA backend switch that sets `value` whatever it is asked."""

    def pinned(enabled: bool = value) -> None:
        setter(value)

    return pinned


INT32_HEADROOM = 8  # int32 indexing only for kernels whose sizes stay 8x below the int32 limit at capture


def int32_fits(sizes: list[int], headroom: int = INT32_HEADROOM) -> bool:
    """Whether sizes (elements: a kernel's numel, its buffers' storage) leave `headroom` x room
    under the int32 limit."""
    return all(size <= (2**31 - 1) // headroom for size in sizes)


def _wide_indexing(all_64bit: bool, headroom: int = INT32_HEADROOM) -> Any:
    """While active, Inductor chooses 32-bit indexing only for kernels whose numel and buffer
    sizes (their hints at capture) stay `headroom` x below the int32 limit, and never with
    `all_64bit` (see capture_problem's `index_64bit`). Inductor guards its int32 choice and
    recompiles past it; a standalone candidate has no guard, and the judge's odd-size trial or a
    user's bigger input may cross the limit (KernelBench L1/77's gathered patches: 1.93e9
    elements at the given sizes, over 2^31 at the odd ones)."""
    import contextlib
    from unittest import mock

    if not _wide_indexing_available():  # the capture records which
        return contextlib.nullcontext()
    from torch._inductor.codegen.simd import SIMDScheduling

    original = SIMDScheduling.can_use_32bit_indexing

    def decide(numel: Any, buffers: Any) -> bool:
        if all_64bit:
            return False
        try:
            from torch._inductor.virtualized import V

            exprs = [numel] + [b.get_layout().storage_size() for b in buffers
                               if getattr(b, "has_tensor_output", lambda: False)()]
            sizevars = V.graph.sizevars
            hint = getattr(sizevars, "optimization_hint", None) or sizevars.size_hint  # torch >= 2.12 / earlier names
            hints = [int(e) if getattr(e, "is_number", True) else int(hint(e, fallback=2**31)) for e in exprs]
        except Exception:  # noqa: BLE001 (no hint: the safe choice)
            return False
        return int32_fits(hints, headroom) and original(numel, buffers)

    return mock.patch.object(SIMDScheduling, "can_use_32bit_indexing", staticmethod(decide))


def tf32_backends() -> list[Any]:
    """The backends whose fp32 precision decides TF32 in Inductor's GEMM and convolution templates."""
    import torch

    return [torch.backends.cuda.matmul, torch.backends.cudnn]


def tf32_state() -> list[Any]:
    """Each backend's precision setting, for tests and records (fp32_precision where it exists)."""
    return [getattr(b, "fp32_precision") if hasattr(b, "fp32_precision") else b.allow_tf32 for b in tf32_backends()]


def force_tf32(get_extra_kwargs: Any) -> Any:
    """The template heuristic's extra kwargs with ALLOW_TF32 forced on (everything else as it says)."""

    def wrapped(mixin: Any, *args: Any, **kwargs: Any) -> Any:
        out = get_extra_kwargs(mixin, *args, **kwargs)
        if isinstance(out, dict) and "ALLOW_TF32" in out:
            out = dict(out, ALLOW_TF32=True)
        return out

    return wrapped


class tf32_matmuls:
    """Context manager: GEMM and convolution templates multiply fp32 on the tensor cores (TF32),
    as eager convolutions already do (cuDNN's default) and as the judge accepts (validation/compare.py:
    fp32 outputs of a `tl.dot` that does not ask for "ieee" are held to 1e-2 on a GPU).

    Why: Inductor's GEMM template takes ALLOW_TF32 from `torch.backends.cuda.matmul` (off by
    default) and, since torch 2.10, only where the sizes are statically known to be large
    (MMTemplateConfigMixin.get_extra_kwargs: m >= 16 and min(n, k) >= 512), which a dynamic-shape
    capture never proves. The teacher's GEMMs, and every convolution decomposed into gathers + a
    matmul, then ran `tl.dot(..., allow_tf32=False)`: fp32 FMA loops, several times slower than
    cuBLAS and far slower than the tensor cores (issue 15: GEMM chains at 0.02-0.37x eager).
    Restores every flag and patch on exit."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> "tf32_matmuls":
        if not self.enabled:
            return self
        import torch

        matmul, cudnn = tf32_backends()
        if hasattr(matmul, "fp32_precision"):
            # torch >= 2.9 has two APIs whose states must agree: a legacy getter (Inductor's GEMM
            # lowering reads `matmul.allow_tf32`) raises once the new fp32_precision says "tf32"
            # while the legacy precision still says "highest". set_float32_matmul_precision sets
            # both; cuDNN's conv template reads cudnn.fp32_precision ("none" is not TF32 there).
            self._saved.append((torch, "set_float32_matmul_precision", torch.get_float32_matmul_precision()))
            self._saved.append((matmul, "fp32_precision", matmul.fp32_precision))
            self._saved.append((cudnn, "fp32_precision", cudnn.fp32_precision))
            torch.set_float32_matmul_precision("high")
            cudnn.fp32_precision = "tf32"
        else:
            for owner in (matmul, cudnn):
                self._saved.append((owner, "allow_tf32", owner.allow_tf32))
                owner.allow_tf32 = True
        try:
            from torch._inductor.template_heuristics.triton import MMTemplateConfigMixin
        except ImportError:  # older Inductor: the backend flag alone decides
            return self
        original = MMTemplateConfigMixin.__dict__.get("get_extra_kwargs")
        if original is None:
            return self
        self._saved.append((MMTemplateConfigMixin, "get_extra_kwargs", original))
        MMTemplateConfigMixin.get_extra_kwargs = force_tf32(original)
        return self

    def __exit__(self, *exc: Any) -> None:
        # in reverse: the legacy precision first, then the new API's exact values over it
        for owner, name, value in reversed(self._saved):
            if name == "set_float32_matmul_precision":
                owner.set_float32_matmul_precision(value)
        for owner, name, value in reversed(self._saved):
            if name != "set_float32_matmul_precision":
                setattr(owner, name, value)
        self._saved = []


def _wide_indexing_available() -> bool:
    from torch._inductor.codegen.simd import SIMDScheduling

    return hasattr(SIMDScheduling, "can_use_32bit_indexing")

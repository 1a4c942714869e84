"""Convolutions Inductor has no Triton template for, rewritten as gathers + matmul before lowering.

Inductor's Triton convolution template covers 2-D/3-D, non-transposed, ungrouped convolutions.
Everything else (transposed, 1-D, grouped/depthwise) falls back to cuDNN (`extern_kernels`), or
fails outright when, as in teacher runs, Triton is the only allowed backend. These
decompositions express such a convolution with view/pad/gather ops (which Inductor fuses into one
generated im2col kernel) and a batched matmul (a Triton mm template), or, for tiny per-group
products (depthwise), a multiply + sum reduction; so the whole problem still comes out as Triton.

- transposed convolution = prod(stride) sub-pixel phases (`conv_transpose_as_phases`): the output
  positions u with the same residue r = u mod stride (u counted before the padding crop) are a
  stride-1 direct convolution of the input itself with the taps k where k * dilation = r
  (mod stride), flipped, at dilation dilation * step / stride (step: the distance between those
  taps), in/out channels swapped per group; the phases are interleaved (stack + permute, as in
  pixel shuffle), cropped by padding / output_padding, and the bias added once. A phase that no
  tap reaches is only the bias. Every tap belongs to exactly one phase, so the work is the
  transposed convolution's own (a few border positions per dim more); the earlier zero insertion
  ((stride - 1) zeros between input elements, then one direct convolution) did stride^d times
  that and materialised a stride^d times larger im2col, mostly zeros (conv_transpose3d + sigmoid,
  stride 2: 19 ms on the H200 against 0.29 ms for torch.compile). Every configuration torch's
  conv_transpose accepts is covered, so the zero-insertion path is gone;
- direct convolution = pad, `unfold` each spatial dim into windows (dilation by striding the
  window), then per group (N * out positions, C/g * k) @ (C/g * k, Cout/g).

Inside `implicit_gemm_convolutions` (the teacher's captures, distill.inductor_implicit_gemm), a
convolution whose per-group product is tensor-core sized is instead one implicit-GEMM Triton kernel
(conv_kernels.py), with no im2col buffer.

Average pooling gets the same treatment: Inductor lowers avg_pool{1,2,3}d to Triton except when
the window holds more than 25 elements and differs from the stride (e.g. KernelBench L1/46,
kernel 3x3x3, stride 2), where it calls ATen's kernel instead. `avg_pool_as_sum` expresses such a
pooling (count_include_pad=True, ceil_mode=False, no divisor_override: the KernelBench cases) as a
zero pad + the sum of the window's strided slices / the window volume, which Inductor fuses into
one pointwise Triton kernel.

Two functionals are swapped for equivalent ones while a problem is traced
(`shape_generic_functionals`), because their own code bakes sizes into the compiled graph and
the candidate then fails at any other size: `F.layer_norm` gets its normalized_shape from the
input's trailing dims instead of the module's tuple of ints (L1/40), and `F.max_pool1d` runs as
max_pool2d over an unsqueezed input (ATen's max_pool1d calls guard_int on the length, L1/41);
InstanceNorm's forward skips its `input.size(1) != self.num_features` check (a warning only
without affine; with affine the weight's shape checks it), which otherwise pins the channel count
(L1/34).

Needs torch only; used by `inductor_capture.capture_problem` (the decomposition tables with
decompose_convolution=True, the functional swaps on every capture).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

__all__ = ["implicit_gemm_convolutions", "convolution_decompositions", "convolution_as_matmul", "conv_transpose_as_phases",
           "needs_decomposition", "is_pointwise", "pointwise_as_matmul", "avg_pool_as_sum", "avg_pool_decompositions", "avg_pool_falls_back", "shape_generic_functionals",
           "symbolic_parameter_convolutions"]


def needs_decomposition(weight_dim: int, transposed: bool, groups: int, dilation: Any = (1,)) -> bool:
    """True for the convolutions Inductor's Triton template does not cover: transposed, 1-D,
    grouped, and dilated ones (the template requires dilation 1: with only Triton allowed, a
    dilated convolution had no choice at all, `NoValidChoicesError`, KernelBench L1/80)."""
    dilated = any(int(d) != 1 for d in (dilation if isinstance(dilation, (list, tuple)) else [dilation]))
    return transposed or weight_dim - 2 == 1 or groups > 1 or dilated


class _Phase(NamedTuple):
    """One output residue class r (mod stride) of a transposed convolution along one dim: the
    kernel taps k0, k0 + step, ... (`taps` of them, those with k * dilation = r mod stride) act as
    a stride-1 convolution of the input with dilation `dilation`, once the input is padded by
    (pad_lo, pad_hi) (negative: cropped) and the taps are flipped."""

    k0: int
    step: int
    taps: int
    dilation: int
    pad_lo: int
    pad_hi: int


def _transposed_phases(k: int, s: int, p: int, d: int, op: int) -> tuple[int, int, list[_Phase | None]]:
    """(m0, extra, phases) for one spatial dim of a transposed convolution (kernel k, stride s,
    padding p, dilation d, output_padding op). Uncropped output position u = i * s + k * d
    (input i, tap k); the output is u in [p, p + out). Writing u = m * s + r, phase r (None when
    no tap lands on it) gives u for m in [m0, m0 + in + extra): in + extra per phase, with extra
    independent of the input length `in`, so the pads stay constants under symbolic sizes."""
    m0 = p // s
    extra = -(-(d * (k - 1) - p + op + 1) // s) - m0 - 1
    phases: list[_Phase | None] = []
    for r in range(s):
        taps = [t for t in range(k) if (t * d - r) % s == 0]
        if not taps:
            phases.append(None)
            continue
        step = taps[1] - taps[0] if len(taps) > 1 else 1
        dil = step * d // s if len(taps) > 1 else 1  # consecutive taps are dil input positions apart
        t0 = (taps[0] * d - r) // s  # tap k0 reads input m - t0 for phase position m
        c = -(t0 + (len(taps) - 1) * dil)  # the flipped taps' first input, relative to m
        phases.append(_Phase(taps[0], step, len(taps), dil, -(m0 + c), m0 + extra + c + (len(taps) - 1) * dil))
    return m0, extra, phases


def _pad_or_crop(x: Any, pads: list[tuple[int, int]]) -> Any:
    """Zero-pad (positive) or crop (negative) each spatial dim of x by (lo, hi)."""
    import torch.nn.functional as F

    for d, (lo, hi) in enumerate(pads):
        if lo < 0 or hi < 0:
            start, end = max(0, -lo), max(0, -hi)
            x = x.narrow(2 + d, start, x.shape[2 + d] - start - end)
    flat: list[int] = []
    for lo, hi in reversed(pads):  # F.pad wants the last dim first
        flat += [max(0, lo), max(0, hi)]
    return F.pad(x, flat) if any(flat) else x


def conv_transpose_as_phases(x: Any, weight: Any, bias: Any, stride: list[int], padding: list[int],
                             dilation: list[int], output_padding: list[int], groups: int, implicit: bool = True) -> Any:
    """A transposed convolution as prod(stride) stride-1 direct convolutions (sub-pixel phases),
    each through `convolution_as_matmul`, interleaved and cropped: every kernel tap is used by
    exactly one phase, so the multiply-adds are the transposed convolution's own (times
    (in + extra) / in per dim, extra a few positions), with no zero insertion."""
    import itertools

    import torch

    nd = weight.dim() - 2
    stride, padding, dilation, output_padding = ([int(v) for v in values] for values in
                                                 (stride, padding, dilation, output_padding))
    ksize = [int(k) for k in weight.shape[2:]]
    cin, cout_g = weight.shape[0], weight.shape[1]
    cout = cout_g * groups
    # per group, in/out channels swapped: the direct convolution's (out, in / groups, k...) layout
    w = weight.reshape(groups, cin // groups, cout_g, *ksize).transpose(1, 2).reshape(cout, cin // groups, *ksize)
    plans = [_transposed_phases(ksize[d], stride[d], padding[d], dilation[d], output_padding[d]) for d in range(nd)]
    in_sizes = [x.shape[2 + d] for d in range(nd)]
    phase_sizes = [in_sizes[d] + plans[d][1] for d in range(nd)]
    outs = []
    for residues in itertools.product(*(range(s) for s in stride)):
        phase = [plans[d][2][r] for d, r in enumerate(residues)]
        if any(ph is None for ph in phase):  # no tap lands here: only the bias
            outs.append(x.new_zeros((x.shape[0], cout, *phase_sizes)))
            continue
        taps = (slice(None), slice(None)) + tuple(slice(ph.k0, ph.k0 + (ph.taps - 1) * ph.step + 1, ph.step)
                                                   for ph in phase)
        w_phase = w[taps].flip(list(range(2, 2 + nd)))
        x_phase = _pad_or_crop(x, [(ph.pad_lo, ph.pad_hi) for ph in phase])
        outs.append(convolution_as_matmul(x_phase, w_phase, None, [1] * nd, [0] * nd, [ph.dilation for ph in phase],
                                          False, [0] * nd, groups, implicit=implicit))
    # (N, Cout, phases, M...) -> (N, Cout, M_1, s_1, ..., M_nd, s_nd): out position m * s + r
    out = torch.stack(outs, dim=2).reshape(x.shape[0], cout, *stride, *phase_sizes)
    perm = [0, 1] + [i for d in range(nd) for i in (2 + nd + d, 2 + d)]
    out = out.permute(perm).reshape(x.shape[0], cout, *(phase_sizes[d] * stride[d] for d in range(nd)))
    for d in range(nd):
        length = (in_sizes[d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (ksize[d] - 1) + output_padding[d] + 1
        out = out.narrow(2 + d, padding[d] - plans[d][0] * stride[d], length)
    if bias is not None:
        out = out + bias.reshape(1, cout, *([1] * nd))
    return out.contiguous()


def _gemm_sized(reduced: Any, out: Any) -> bool:
    """Products a tensor-core tile pays off for: 16 or more reduced values (input channels x taps)
    and output channels a group (conv_kernels.implicit_gemm_applies's rule, which this module does
    not import: the capture loads it only inside implicit_gemm_convolutions)."""
    return bool(out >= 16) and bool(reduced >= 16)


def is_pointwise(weight: Any, stride: list[int], padding: list[int], groups: Any) -> bool:
    """A 1 x 1 (x 1) direct convolution of stride 1, no padding, one group, of tensor-core sized
    channel counts (16 and more in and out, as `conv_kernels.implicit_gemm_applies` asks): a
    GEMM per batch item. Fewer channels keep the multiply + reduction (no GEMM template)."""
    return (isinstance(groups, int) and groups == 1 and all(int(k) == 1 for k in weight.shape[2:])
            and all(int(s) == 1 for s in stride) and all(int(p) == 0 for p in padding)
            and _gemm_sized(weight.shape[1], weight.shape[0]))


def pointwise_as_matmul(x: Any, weight: Any, bias: Any) -> Any:
    """A pointwise convolution (`is_pointwise`) as (Cout, Cin) @ (N, Cin, positions), read and
    written where the tensors lie (NCHW): Inductor's GEMM template, channel counts as the GEMM's
    sizes. The implicit-GEMM kernel took it at 0.34x cuDNN (L1's conv_pointwise_2D on an H100,
    twenty-ninth GPU run): a copy of the input to channels-last and a K of 64 in two steps."""
    import torch

    n, c = x.shape[0], x.shape[1]
    cout = weight.shape[0]
    # bmm of the weight expanded over the batch, not matmul: torch.matmul folds (Cout, Cin) @ (N, Cin, L)
    # into (N * L, Cin) @ (Cin, Cout), a transposed copy of the input and of the output
    out = torch.bmm(weight.reshape(1, cout, c).expand(n, cout, c), x.reshape(n, c, -1))
    if bias is not None:
        out = out + bias.reshape(1, cout, 1)
    return out.reshape(n, cout, *x.shape[2:])


def convolution_as_matmul(x: Any, weight: Any, bias: Any, stride: list[int], padding: list[int], dilation: list[int],
                          transposed: bool, output_padding: list[int], groups: int, implicit: bool = True) -> Any:
    """aten.convolution semantics (any spatial rank, transposed, grouped) with no convolution op;
    transposed ones through `conv_transpose_as_phases`; pointwise ones as one matmul. Inside
    `implicit_gemm_convolutions`, the implicit-GEMM op instead where it applies, unless `implicit`
    is False (the aten decomposition table's calls: an op reached from there stays an opaque call
    the converter refuses)."""
    import torch
    import torch.nn.functional as F

    if not transposed and is_pointwise(weight, stride, padding, groups):
        return pointwise_as_matmul(x, weight, bias)
    nd = weight.dim() - 2
    stride, padding, dilation = _expand(stride, nd), _expand(padding, nd), _expand(dilation, nd)
    output_padding = _expand(output_padding, nd)
    ksize = [int(k) for k in weight.shape[2:]]
    if _IMPLICIT_GEMM and implicit:
        kernels = _IMPLICIT_GEMM[-1]
        conv, conv_transpose = kernels.conv_ops()
        if transposed:
            if kernels.implicit_gemm_applies(weight.shape[0] // groups, weight.shape[1], 1):
                return conv_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation)
        elif kernels.implicit_gemm_applies(weight.shape[1], weight.shape[0] // groups, math.prod(ksize)):
            return conv(x, weight, bias, stride, padding, dilation, groups)
    if transposed:
        return conv_transpose_as_phases(x, weight, bias, stride, padding, dilation, output_padding, groups, implicit)
    if any(padding):
        pads = []
        for d in reversed(range(nd)):
            pads += [padding[d], padding[d]]
        x = F.pad(x, pads)
    n, c = x.shape[0], x.shape[1]
    cout = weight.shape[0]
    for d in range(nd):
        span = dilation[d] * (ksize[d] - 1) + 1
        x = x.unfold(2 + d, span, stride[d])  # (..., out_d, ...) + window dim at the end
        if dilation[d] > 1:
            x = x[..., :: dilation[d]]
    # x: (N, C, O_1..O_nd, K_1..K_nd)
    out_sizes = list(x.shape[2:2 + nd])
    kprod = math.prod(ksize)
    cg, coutg = c // groups, cout // groups
    x = x.reshape(n, groups, cg, *out_sizes, *ksize)
    perm = [0] + list(range(3, 3 + nd)) + [1, 2] + list(range(3 + nd, 3 + 2 * nd))
    cols = x.permute(perm).reshape(-1, groups, cg * kprod)  # (N*O, g, C/g*K)
    w = weight.reshape(groups, coutg, cg * kprod)
    if not _gemm_sized(cg * kprod, coutg):
        # tiny per-group products (depthwise): multiply + reduce, no matmul template needed
        out = (cols.unsqueeze(2) * w.unsqueeze(0)).sum(-1)  # (N*O, g, Cout/g)
    else:
        out = torch.bmm(cols.transpose(0, 1), w.transpose(1, 2)).transpose(0, 1)  # (N*O, g, Cout/g)
    out = out.reshape(n, *out_sizes, cout)
    out = out.permute([0, nd + 1] + list(range(1, nd + 1)))
    if bias is not None:
        out = out + bias.reshape(1, cout, *([1] * nd))
    return out.contiguous()


class _ConvFunctionals:
    """Context manager base: torch.nn.functional.conv{1,2,3}d and conv_transpose{1,2,3}d replaced
    by `self._conv(original, nd)` and `self._conv_transpose(original, nd)` while entered (the
    functionals in place then are the originals the wrappers fall back to); restored on exit."""

    def _conv(self, original: Any, nd: int) -> Any:
        raise NotImplementedError

    def _conv_transpose(self, original: Any, nd: int) -> Any:
        raise NotImplementedError

    def __enter__(self) -> Any:
        import torch.nn.functional as F

        self._saved = {name: getattr(F, name) for name in (*_CONV_FUNCTIONALS, *_CONV_TRANSPOSE_FUNCTIONALS)}
        for name, nd in _CONV_FUNCTIONALS.items():
            setattr(F, name, self._conv(self._saved[name], nd))
        for name, nd in _CONV_TRANSPOSE_FUNCTIONALS.items():
            setattr(F, name, self._conv_transpose(self._saved[name], nd))
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch.nn.functional as F

        for name, fn in self._saved.items():
            setattr(F, name, fn)


# conv_kernels (the module), on top while `implicit_gemm_convolutions` is entered: resolved there, not
# in the traced functions (an import while Dynamo traces breaks the graph)
_IMPLICIT_GEMM: list[Any] = []


class implicit_gemm_convolutions(_ConvFunctionals):
    """Context manager: while entered, a direct or transposed convolution whose per-group product
    is tensor-core sized runs as one implicit-GEMM Triton kernel (conv_kernels.py: no im2col
    buffer, channel counts still kernel arguments) instead of gathers + matmul, where Dynamo meets
    the convolution in Python: in `convolution_as_matmul` as symbolic_parameter_convolutions calls
    it, and at torch.nn.functional.conv*/conv_transpose* for the convolutions Inductor's template
    does not cover (`needs_decomposition`). An op Dynamo meets in Python is traced into its Triton
    kernel, while one reached from an aten decomposition stays an opaque call, so the
    decomposition table keeps gathers + matmul. Depthwise-sized products keep the multiply +
    reduction. Restored on exit. `kernels`: the conv_kernels module (inductor_capture hands it over
    as it loads its siblings on a bare GPU machine); imported when not given."""

    def __init__(self, kernels: Any = None) -> None:
        self._kernels = kernels

    def __enter__(self) -> "implicit_gemm_convolutions":
        import importlib

        kernels = self._kernels or importlib.import_module("autotriton.distillation.conv_kernels")
        kernels.register()
        _IMPLICIT_GEMM.append(kernels)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _IMPLICIT_GEMM.pop()

    def _conv(self, original: Any, nd: int) -> Any:
        return _implicit_conv(original, nd)

    def _conv_transpose(self, original: Any, nd: int) -> Any:
        return _implicit_conv_transpose(original, nd)


def _implicit_conv(original: Any, nd: int) -> Any:
    def conv(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
             groups: int = 1) -> Any:
        dil = _expand(_listify(dilation), nd)
        pads = _conv_padding(padding, weight, dil, nd)
        if pads is None or input.dim() != nd + 2 or not needs_decomposition(weight.dim(), False, int(groups), dil):
            return original(input, weight, bias, stride, padding, dilation, groups)
        strides = _expand(_listify(stride), nd)
        if is_pointwise(weight, strides, pads, int(groups)):
            return pointwise_as_matmul(input, weight, bias)
        kernels = _IMPLICIT_GEMM[-1]
        if not kernels.implicit_gemm_applies(weight.shape[1], weight.shape[0] // int(groups),
                                             math.prod([int(k) for k in weight.shape[2:]])):
            return original(input, weight, bias, stride, padding, dilation, groups)
        return kernels.conv_ops()[0](input, weight, bias, strides, pads, dil, int(groups))

    return conv


def _implicit_conv_transpose(original: Any, nd: int) -> Any:
    def conv_transpose(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                       output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
        kernels = _IMPLICIT_GEMM[-1]
        if input.dim() != nd + 2 or not kernels.implicit_gemm_applies(weight.shape[0] // int(groups), weight.shape[1], 1):
            return original(input, weight, bias, stride, padding, output_padding, groups, dilation)
        return kernels.conv_ops()[1](input, weight, bias, _expand(_listify(stride), nd), _expand(_listify(padding), nd),
                                     _expand(_listify(output_padding), nd), int(groups), _expand(_listify(dilation), nd))

    return conv_transpose


def _expand(values: Any, nd: int) -> list[int]:
    values = list(values)
    return values * nd if len(values) == 1 else values


def convolution_decompositions() -> dict[Any, Any]:
    """A decomposition table entry for aten.convolution that only takes the uncovered cases."""
    import torch

    def convolution(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any, transposed: bool,
                    output_padding: Any, groups: int) -> Any:
        if not needs_decomposition(weight.dim(), bool(transposed), int(groups), dilation):
            return NotImplemented  # the Triton conv template handles it
        return convolution_as_matmul(x, weight, bias, stride, padding, dilation, bool(transposed), output_padding,
                                     int(groups), implicit=False)

    return {torch.ops.aten.convolution.default: convolution}


def avg_pool_falls_back(kernel_size: list[int], stride: list[int]) -> bool:
    """Inductor's rule (lowering._avg_poolnd): windows over 25 elements that differ from the stride
    are left to ATen's kernel."""
    return math.prod(kernel_size) > 25 and any(k != s for k, s in zip(kernel_size, stride))


def avg_pool_as_sum(x: Any, kernel_size: list[int], stride: list[int], padding: list[int]) -> Any:
    """avg_pool{nd}d with count_include_pad=True, ceil_mode=False, no divisor_override, over the
    last nd dims of x: zero pad, then sum the window's strided slices, divided by the volume."""
    import itertools

    import torch.nn.functional as F

    nd = len(kernel_size)
    if any(padding):
        pads: list[int] = []
        for d in reversed(range(nd)):  # F.pad wants the last dim first
            pads += [padding[d], padding[d]]
        x = F.pad(x, pads)
    lead = x.dim() - nd
    spatial = [x.shape[lead + d] for d in range(nd)]
    out = [(spatial[d] - kernel_size[d]) // stride[d] + 1 for d in range(nd)]
    total = None
    for offsets in itertools.product(*(range(k) for k in kernel_size)):
        window = x
        for d, o in enumerate(offsets):
            window = window.narrow(lead + d, o, (out[d] - 1) * stride[d] + 1)
            if stride[d] > 1:
                index = [slice(None)] * (lead + d) + [slice(None, None, stride[d])]
                window = window[tuple(index)]
        total = window if total is None else total + window
    return total / math.prod(kernel_size)


def avg_pool_decompositions() -> dict[Any, Any]:
    """Decomposition table entries for aten.avg_pool{1,2,3}d that only take the cases Inductor
    would leave to ATen (and that `avg_pool_as_sum` covers)."""
    import torch

    def make(nd: int) -> Any:
        def avg_pool(x: Any, kernel_size: Any, stride: Any = (), padding: Any = 0, ceil_mode: bool = False,
                     count_include_pad: bool = True, divisor_override: Any = None) -> Any:
            kernel = _expand(_listify(kernel_size), nd)
            strides = _expand(_listify(stride), nd) if _listify(stride) else list(kernel)
            pads = _expand(_listify(padding), nd)
            if ceil_mode or not count_include_pad or divisor_override is not None:
                return NotImplemented
            if not avg_pool_falls_back(kernel, strides):
                return NotImplemented  # Inductor's own lowering makes Triton of it
            return avg_pool_as_sum(x, kernel, strides, pads)

        return avg_pool

    ops = {1: torch.ops.aten.avg_pool1d.default, 2: torch.ops.aten.avg_pool2d.default,
           3: torch.ops.aten.avg_pool3d.default}
    return {op: make(nd) for nd, op in ops.items()}


def _listify(values: Any) -> list[int]:
    if isinstance(values, (list, tuple)):
        return [int(v) for v in values]
    return [int(values)]


def _layer_norm_from_input(original: Any) -> Any:
    def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:
        n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
        # same values as the module's tuple whenever the call is valid; symbolic when traced
        return original(input, tuple(input.shape[input.dim() - n:]), weight, bias, eps)

    return layer_norm


def _max_pool1d_as_2d(original: Any) -> Any:
    def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                   ceil_mode: bool = False, return_indices: bool = False) -> Any:
        import torch.nn.functional as F

        if return_indices:
            return original(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                            return_indices=return_indices)
        k = _listify(kernel_size)[0]
        st = _listify(stride)[0] if stride is not None and _listify(stride) else k
        out = F.max_pool2d(input.unsqueeze(-2), (1, k), (1, st), (0, _listify(padding)[0]),
                           (1, _listify(dilation)[0]), ceil_mode)
        return out.squeeze(-2)

    return max_pool1d


class shape_generic_functionals:
    """Context manager: torch.nn.functional.layer_norm / max_pool1d replaced by equivalents that
    keep sizes symbolic when Dynamo traces them (see the module docstring); restored on exit."""

    def __enter__(self) -> "shape_generic_functionals":
        import torch.nn.functional as F

        from torch.nn.modules.instancenorm import _InstanceNorm

        self._saved = {"layer_norm": F.layer_norm, "max_pool1d": F.max_pool1d}
        self._instance_norm_forward = _InstanceNorm.forward
        F.layer_norm = _layer_norm_from_input(self._saved["layer_norm"])
        F.max_pool1d = _max_pool1d_as_2d(self._saved["max_pool1d"])
        _InstanceNorm.forward = _instance_norm_forward
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch.nn.functional as F
        from torch.nn.modules.instancenorm import _InstanceNorm

        for name, fn in self._saved.items():
            setattr(F, name, fn)
        _InstanceNorm.forward = self._instance_norm_forward


def _instance_norm_forward(self: Any, input: Any) -> Any:
    """torch's _InstanceNorm.forward without the num_features comparison (see module docstring)."""
    self._check_input_dim(input)
    if input.dim() == self._get_no_batch_dim():
        return self._handle_no_batch_input(input)
    return self._apply_instance_norm(input)


def _conv_padding(padding: Any, weight: Any, dilation: list[int], nd: int) -> list[int] | None:
    """F.conv*'s padding as a list of ints; None for a 'same' padding that is not symmetric."""
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * nd
        ksize = [int(k) for k in weight.shape[2:]]
        total = [dilation[d] * (ksize[d] - 1) for d in range(nd)]
        if any(t % 2 for t in total):
            return None  # asymmetric 'same': left to the original functional
        return [t // 2 for t in total]
    return _expand(_listify(padding), nd)


def _conv_as_matmul(original: Any, nd: int) -> Any:
    def conv(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
             groups: int = 1) -> Any:
        dil = _expand(_listify(dilation), nd)
        pads = _conv_padding(padding, weight, dil, nd)
        if pads is None or input.dim() != nd + 2:  # unbatched or asymmetric: the original op
            return original(input, weight, bias, stride, padding, dilation, groups)
        # The group count is a module attribute (an int Dynamo bakes in), but it is also
        # in_channels // weight.shape[1] for every valid convolution: written that way it stays
        # symbolic, so a depthwise convolution (groups = in_channels) follows the channel count.
        g = input.shape[1] // weight.shape[1] if int(groups) > 1 else 1
        return convolution_as_matmul(input, weight, bias, _expand(_listify(stride), nd), pads, dil, False,
                                     [0] * nd, g)

    return conv


def _conv_transpose_as_matmul(original: Any, nd: int) -> Any:
    def conv_transpose(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
                       output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
        if input.dim() != nd + 2:
            return original(input, weight, bias, stride, padding, output_padding, groups, dilation)
        return convolution_as_matmul(input, weight, bias, _expand(_listify(stride), nd),
                                     _expand(_listify(padding), nd), _expand(_listify(dilation), nd), True,
                                     _expand(_listify(output_padding), nd), int(groups))

    return conv_transpose


_CONV_FUNCTIONALS = {"conv1d": 1, "conv2d": 2, "conv3d": 3}
_CONV_TRANSPOSE_FUNCTIONALS = {"conv_transpose1d": 1, "conv_transpose2d": 2, "conv_transpose3d": 3}


class symbolic_parameter_convolutions(_ConvFunctionals):
    """Context manager for captures with symbolic parameter shapes (`dynamic_parameters`):
    torch.nn.functional.conv{1,2,3}d and conv_transpose{1,2,3}d (what nn.Conv*'s forward calls)
    replaced by `convolution_as_matmul`, so Dynamo traces gathers + a matmul instead of a
    convolution op. Two things pin a convolution's channel counts otherwise, even when Dynamo
    keeps the weight's sizes symbolic: Inductor's convolution lowering reads the weight's sizes with
    guard_int_seq (the Triton conv template bakes out/in channels and the kernel size in), and on
    CUDA the fake-tensor convolution picks a cuDNN backend from concrete sizes. The kernel's
    spatial size stays a constant (it is read with int()); channel counts, batch and spatial input
    sizes stay symbolic. Restored on exit."""

    def _conv(self, original: Any, nd: int) -> Any:
        return _conv_as_matmul(original, nd)

    def _conv_transpose(self, original: Any, nd: int) -> Any:
        return _conv_transpose_as_matmul(original, nd)

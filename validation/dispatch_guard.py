"""PyTorch compute made to fail inside a candidate's forward, at the dispatcher's backend keys.

The TorchDispatchMode recorder (candidate_runner.AtenRecorder) sits at the Python dispatch key,
which the candidate's thread can switch off (`torch._C._ExcludeDispatchKeyGuard`, a re-exported
`torch._C`, `_DisableTorchDispatch`) and which other threads never see. This guard sits where
every CPU/CUDA computation ends: the backend kernels themselves. For each aten operator whose
computed CPU (or CUDA) kernel is a real kernel (a backend kernel or a CompositeExplicitAutograd
one; CompositeImplicitAutograd operators decompose into those), a wrapper is registered at that
backend key (`torch.library`), which calls the original kernel (`torch.library.get_kernel`) unless
the guard is armed: then the operator is recorded and raises. Data movement and allocation
(candidate_runner.ALLOWED_ATEN_OPS) are not wrapped.

Why this holds: excluding a backend key leaves no kernel to run, so no TLS setting reaches the
original kernels around the wrapper; the armed state is process-wide (threads included) and lives
only in the closure of `install()`'s result, which the judge keeps in local variables, never in a
module namespace the candidate could look up. Installed once in the judge's template process
(~0.2 s) and inherited by every forked candidate; disarmed it costs one Python call per operator.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable


_NUMBERS = (bool, int, float, complex)


def _tensor_positions(qualified: str) -> tuple[int, ...]:
    """Positions of `Tensor` arguments in an operator's schema. A Python kernel receives a wrapped
    number (`x * 1e-5`) there as a Python scalar, which the boxed call back into the original kernel
    refuses; _rewrap turns it into the 0-dim tensor it was."""
    import torch

    name, _, overload = qualified.partition(".")
    try:
        packet = getattr(torch.ops.aten, name.removeprefix("aten::"))
        schema = getattr(packet, overload or "default")._schema
    except (AttributeError, RuntimeError):
        return ()
    return tuple(i for i, a in enumerate(schema.arguments) if str(a.type) == "Tensor")


def _rewrap(args: tuple, slots: tuple[int, ...]) -> tuple:
    import torch

    dtypes = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}
    # A wrapped number promotes like a Python scalar; the plain 0-dim tensor standing in for it
    # does not: float64 would turn `torch.arange(n) * 0.5` into float64 instead of the default
    # float32, and a following float32 Linear then fails. Its dtype is chosen so that promotion
    # gives what the scalar would have.
    tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
    out = list(args)
    for i in slots:
        if i < len(out) and type(out[i]) in dtypes:
            dtype = dtypes[type(out[i])]
            if tensor is not None:
                promoted = torch.result_type(tensor, out[i])
                # A scalar of a higher category (a float with an integer tensor) sets the result
                # dtype, and next to another 0-dim tensor any dtype counts: give it the one the
                # scalar would have produced. Otherwise the dimensioned tensor's dtype wins anyway,
                # and the wide dtype keeps the scalar's value exact.
                if promoted != tensor.dtype or tensor.dim() == 0:
                    dtype = promoted
            out[i] = torch.scalar_tensor(out[i], dtype=dtype) if not dtype.is_complex \
                else torch.tensor(out[i], dtype=dtype)
    return tuple(out)


class Guard:
    """The handle the candidate runner holds: arm/disarm around forward, and what was blocked."""

    def __init__(self, arm: Callable[[bool], None], blocked: Callable[[], list[str]], wrapped: int, keys: tuple[str, ...],
                 unavailable: str | None) -> None:
        self.set_armed = arm
        self.take_blocked = blocked
        self.wrapped = wrapped
        self.keys = keys
        self.unavailable = unavailable  # why the guard could not be installed (old torch), or None


def install(allowed: frozenset[str], keys: tuple[str, ...] = ("CPU", "CUDA")) -> Guard:
    """Wrap every compute operator's kernel at `keys`; returns the (disarmed) guard."""
    import torch

    state = {"armed": False, "blocked": []}

    def arm(on: bool) -> None:
        state["armed"] = bool(on)

    def blocked() -> list[str]:
        out, state["blocked"] = state["blocked"], []
        return out

    get_kernel = getattr(torch.library, "get_kernel", None)
    if get_kernel is None:
        return Guard(arm, blocked, 0, (), f"torch {torch.__version__} has no torch.library.get_kernel")
    C = torch._C
    lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901 (kept alive by the closure below)
    n = 0
    used: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding a previously registered kernel": that is the point
        for name in C._dispatch_get_all_op_names():
            if not name.startswith("aten::"):
                continue
            overload = name[len("aten::"):]
            if overload.split(".", 1)[0] in allowed or C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"):
                continue
            for key in keys:
                if not (C._dispatch_has_kernel_for_dispatch_key(name, key)
                        or C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd")
                        or C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutogradNonFunctional")):
                    continue
                try:
                    kernel = get_kernel(name, key)
                except Exception:  # noqa: BLE001 (no kernel for this key in this build)
                    continue

                tensor_slots = _tensor_positions(name)

                def wrapper(keyset, *args, __kernel=kernel, __name=overload, __slots=tensor_slots, **kwargs):
                    if state["armed"]:
                        state["blocked"].append(__name)
                        raise RuntimeError(f"aten.{__name} computed during forward: PyTorch compute is not allowed there "
                                           "(RUNTIME-ATEN-COMPUTE)")
                    if __slots and any(type(args[i]) in _NUMBERS for i in __slots if i < len(args)):
                        args = _rewrap(args, __slots)
                    return __kernel.call_boxed(keyset, *args, **kwargs)

                try:
                    lib.impl(overload, wrapper, key, with_keyset=True)
                except Exception:  # noqa: BLE001 (an operator the Python registration API refuses: the dispatch mode still sees it)
                    continue
                n += 1
                if key not in used:
                    used.append(key)
    state["lib"] = lib  # the registrations live as long as the Library object
    return Guard(arm, blocked, n, tuple(used), None)

"""Framed messages between judge processes, and a tensor format that is safe to read.

Two directions, two levels of trust:
- caller -> worker -> candidate: pickle (the sender is trusted; the receiver may be hostile);
  the worker's job for a candidate goes as a pickled skeleton plus raw tensor bytes (send_job).
- candidate -> worker: NEVER pickle. Unpickling bytes that hostile code wrote would run its
  code in the worker, next to the reference outputs. The candidate answers with a JSON header
  plus raw tensor bytes, and the worker rebuilds tensors from an allowlist of dtypes.

Standard library only at import time; torch is imported where tensors are handled.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import socket
import struct
import time
from typing import Any

_LEN = struct.Struct("!Q")


class WireError(RuntimeError):
    """The peer closed the channel, sent garbage, sent too much or was too slow."""


def _send_all(fd: int | socket.socket, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data).cast("B")
    while view:
        n = fd.send(view) if isinstance(fd, socket.socket) else os.write(fd, view)
        view = view[n:]


def _recv_exact(fd: int | socket.socket, n: int, deadline: float | None) -> bytearray:
    """Exactly n bytes, read straight into one preallocated buffer (no chunk list, no join)."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise TimeoutError("peer did not answer in time")
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise TimeoutError("peer did not answer in time")
        part = view[got:got + min(n - got, _CHUNK)]
        k = fd.recv_into(part) if isinstance(fd, socket.socket) else os.readv(fd, [part])
        if not k:
            raise EOFError("peer closed the channel")
        got += k
    return buf


_CHUNK = 16 << 20


def send_frame(fd: int | socket.socket, payload: bytes | bytearray | memoryview) -> None:
    send_parts(fd, [payload])


def send_parts(fd: int | socket.socket, parts: list[Any]) -> None:
    """One frame made of several buffers, sent one after the other (never concatenated)."""
    views = [memoryview(p).cast("B") for p in parts]
    _send_all(fd, _LEN.pack(sum(v.nbytes for v in views)))
    for v in views:
        if v.nbytes:
            _send_all(fd, v)


def recv_frame(fd: int | socket.socket, *, deadline: float | None = None, max_bytes: int | None = None) -> bytearray:
    (size,) = _LEN.unpack(_recv_exact(fd, _LEN.size, deadline))
    if max_bytes is not None and size > max_bytes:
        raise WireError(f"message of {size} bytes is over the limit of {max_bytes}")
    return _recv_exact(fd, size, deadline)


def send_pickle(fd: int | socket.socket, obj: Any) -> None:
    """Trusted direction only (caller -> worker -> candidate)."""
    send_frame(fd, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def recv_pickle(fd: int | socket.socket, *, deadline: float | None = None) -> Any:
    return pickle.loads(recv_frame(fd, deadline=deadline))


class _TensorSlot:
    """Where a tensor sent by `send_job` goes back into the unpickled skeleton."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __reduce__(self) -> tuple[Any, tuple[int]]:
        return _TensorSlot, (self.index,)


def send_job(fd: int | socket.socket, obj: Any) -> None:
    """Trusted direction only (worker -> candidate): `obj` as a pickled skeleton plus one frame of
    raw tensor bytes (encode_tensor_parts), so large inputs are neither serialised by torch's
    pickling nor concatenated. Plain contiguous CPU tensors inside lists, tuples and dicts travel
    raw (one slot per tensor object, so aliases stay aliases); anything else is pickled as is."""
    import torch

    tensors: list[Any] = []
    slots: dict[int, _TensorSlot] = {}

    def strip(o: Any) -> Any:
        if type(o) is torch.Tensor and o.device.type == "cpu" and o.is_contiguous() and not o.requires_grad \
                and o.numel() and str(o.dtype).removeprefix("torch.") in _DTYPES:
            if id(o) not in slots:
                slots[id(o)] = _TensorSlot(len(tensors))
                tensors.append(o)
            return slots[id(o)]
        if type(o) is list:
            return [strip(x) for x in o]
        if type(o) is tuple:
            return tuple(strip(x) for x in o)
        if type(o) is dict:
            return {k: strip(v) for k, v in o.items()}
        return o

    skeleton = strip(obj)
    send_frame(fd, _dumps_with_problem_classes(skeleton))
    send_parts(fd, encode_tensor_parts({}, tensors))


#: The judge executes a reference problem as a module of this prefix (reference_problem.py).
PROBLEM_MODULE_PREFIX = "autotriton_problem_"


def _dumps_with_problem_classes(skeleton: Any) -> bytes:
    """`skeleton` pickled, with what the reference problem itself defines (a `WrappedNetwork` or a
    block class given to the constructor, a function or lambda among its init inputs) pickled by
    value (cloudpickle): the candidate process has no such module to import them from, and must
    not have one (the reference `Model` would be within its reach)."""
    import sys

    import cloudpickle

    problems = [m for n, m in list(sys.modules.items()) if n.startswith(PROBLEM_MODULE_PREFIX)]
    for module in problems:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(skeleton, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        for module in problems:
            cloudpickle.unregister_pickle_by_value(module)


class _JobUnpickler(pickle.Unpickler):
    """Resolves the slot class from this very module object: the candidate process has removed
    the judge's modules from sys.modules by then, and a plain unpickle would import them again."""

    def find_class(self, module: str, name: str) -> Any:
        if module == _TensorSlot.__module__ and name == "_TensorSlot":
            return _TensorSlot
        return super().find_class(module, name)


def recv_job(fd: int | socket.socket, *, deadline: float | None = None) -> Any:
    """Inverse of send_job. The tensors are views of one received buffer."""
    import io

    skeleton = _JobUnpickler(io.BytesIO(recv_frame(fd, deadline=deadline))).load()
    _header, tensors = decode_tensors(recv_frame(fd, deadline=deadline))

    def fill(o: Any) -> Any:
        if isinstance(o, _TensorSlot):
            return tensors[o.index]
        if type(o) is list:
            return [fill(x) for x in o]
        if type(o) is tuple:
            return tuple(fill(x) for x in o)
        if type(o) is dict:
            return {k: fill(v) for k, v in o.items()}
        return o

    return fill(skeleton)


# ---- the untrusted direction: JSON header + raw bytes ---------------------------------------

_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
           "complex64", "complex128")


def encode_tensor_parts(header: dict[str, Any], tensors: list[Any]) -> list[Any]:
    """Header (JSON-able dict) plus tensors -> the buffers of one payload, without copying tensor
    bytes (each part is a view of a contiguous CPU tensor); header["tensors"] gets their metadata.
    Tensor data starts at multiples of 64 bytes from the payload's start, so the receiver can
    view it in place. `payload_size(parts)` is its length; send with `send_parts`."""
    import torch

    metas, blobs, offset = [], [], 0
    for t in tensors:
        t = t.detach().to("cpu").contiguous()
        name = str(t.dtype).removeprefix("torch.")
        if name not in _DTYPES:
            raise TypeError(f"output dtype {t.dtype} is not supported by the judge")
        raw = t.reshape(-1).view(torch.uint8).numpy() if t.numel() else b""
        pad = -offset % _ALIGN
        if pad:
            blobs.append(bytes(pad))
            offset += pad
        metas.append({"dtype": name, "shape": list(t.shape), "offset": offset, "nbytes": len(raw)})
        blobs.append(raw)
        offset += len(raw)
    header = dict(header, tensors=metas)
    head = json.dumps(header, default=str).encode()
    head += b" " * (-(_LEN.size + len(head)) % _ALIGN)  # JSON ignores trailing blanks; the body starts aligned
    return [_LEN.pack(len(head)) + head, *blobs]


def payload_size(parts: list[Any]) -> int:
    return sum(memoryview(p).nbytes for p in parts)


def encode_tensors(header: dict[str, Any], tensors: list[Any]) -> bytes:
    """encode_tensor_parts as one bytes object (tests, small answers)."""
    return b"".join(bytes(memoryview(p).cast("B")) for p in encode_tensor_parts(header, tensors))


_ALIGN = 64


def _tensor_at(payload: bytes | bytearray, start: int, nbytes: int, itemsize: int, dtype: Any, shape: list[int]) -> Any:
    """A tensor over payload[start:start+nbytes]: a view when the payload is a private bytearray
    (recv_frame's) or a private mapping of an answer file and the offset is aligned, a copy otherwise. Tensors are read-only to the judge,
    so views sharing the buffer (even overlapping ones a hostile sender declared) are harmless."""
    import torch

    import mmap

    if isinstance(payload, (bytearray, mmap.mmap)) and start % max(itemsize, 1) == 0:
        flat = torch.frombuffer(payload, dtype=torch.uint8, count=nbytes, offset=start)
        if flat.data_ptr() % itemsize == 0:
            return flat.view(dtype).reshape(shape)
    raw = bytearray(memoryview(payload)[start:start + nbytes])
    return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape)


def decode_tensors(payload: bytes | bytearray | Any) -> tuple[dict[str, Any], list[Any]]:
    """Inverse of encode_tensors, hardened: bad metadata raises WireError, never runs code.
    Tensors decoded from a bytearray share its memory (see _tensor_at)."""
    import torch

    try:
        (hlen,) = _LEN.unpack_from(payload, 0)
        header = json.loads(payload[_LEN.size:_LEN.size + hlen])
        body = memoryview(payload)[_LEN.size + hlen:]
        tensors = []
        for meta in header.get("tensors", []):
            name = meta["dtype"]
            if name not in _DTYPES:
                raise WireError(f"unknown dtype {name!r}")
            dtype = getattr(torch, name)
            shape = [int(s) for s in meta["shape"]]
            start, nbytes = int(meta["offset"]), int(meta["nbytes"])
            numel = 1
            for s in shape:
                if s < 0:
                    raise WireError("negative dimension")
                numel *= s
            itemsize = torch.empty((), dtype=dtype).element_size()
            if nbytes != numel * itemsize or start < 0 or start + nbytes > len(body):
                raise WireError("tensor metadata does not match its bytes")
            if numel == 0:
                tensors.append(torch.empty(shape, dtype=dtype))
                continue
            tensors.append(_tensor_at(payload, _LEN.size + hlen + start, nbytes, itemsize, dtype, shape))
    except WireError:
        raise
    except Exception as exc:  # malformed JSON, wrong types, ...
        raise WireError(f"malformed result from the candidate process: {exc!r}") from exc
    if not isinstance(header, dict):
        raise WireError("malformed result header")
    return header, tensors


# ---- answers larger than the frame limit: a shared-memory file the worker owns -------------------
#
# An answer over `max_output_mb` (real-size KernelBench problems: a 1-4 GiB output per trial) does
# not go through the socket. The worker creates an anonymous memory file (memfd) sized to the
# reference's own outputs (plus header room), passes its descriptor to the candidate process with
# the job (SCM_RIGHTS), and the candidate process's judge code writes the same payload
# encode_tensor_parts makes into it, then answers with a small frame naming its length. The worker
# kills the candidate's process group before it maps the file, so nothing can change the bytes
# while they are compared, and the comparison runs in the worker as for any answer: the candidate
# only ever supplies bytes, never a verdict, and cannot send more than the reference's size.

ANSWER_SHM_KEY = "answer_shm_bytes"


def answer_file(size: int) -> int:
    """A memory file of `size` bytes (pages are only allocated when written); returns its fd."""
    fd = os.memfd_create("autotriton-answer", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
    except BaseException:
        os.close(fd)
        raise
    return fd


def send_fd(sock: socket.socket, fd: int) -> None:
    socket.send_fds(sock, [b"F"], [fd])


def recv_fd(sock: socket.socket, *, deadline: float | None = None) -> int:
    if deadline is not None:
        ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError("peer did not send the answer file in time")
    msg, fds, _flags, _addr = socket.recv_fds(sock, 1, 1)
    if msg != b"F" or len(fds) != 1:
        for f in fds:
            os.close(f)
        raise WireError("expected one file descriptor")
    return fds[0]


def write_parts_to_file(fd: int, parts: list[Any]) -> int:
    """Write an encoded answer (encode_tensor_parts) into the answer file; returns its length.
    Raises WireError when it does not fit (the file's size is the reference's outputs' size)."""
    import mmap

    size = payload_size(parts)
    capacity = os.fstat(fd).st_size
    if size > capacity:
        raise WireError(f"outputs are {size} bytes, more than the reference's outputs ({capacity} bytes with header room)")
    with mmap.mmap(fd, capacity, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as mem:
        at = 0
        for part in parts:
            view = memoryview(part).cast("B")
            mem[at:at + view.nbytes] = view
            at += view.nbytes
    return size


def read_answer_file(fd: int, size: int) -> tuple[dict[str, Any], list[Any]]:
    """Decode an answer written by write_parts_to_file. The mapping is private (copy on write) and
    the writer is dead by then; the tensors are views of it, valid while they are referenced."""
    import mmap

    capacity = os.fstat(fd).st_size
    if not 0 < size <= capacity:
        raise WireError(f"answer length {size} outside the answer file's {capacity} bytes")
    mem = mmap.mmap(fd, capacity, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
    return decode_tensors(mem)

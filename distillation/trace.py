"""Trace reference problems on the meta device, in a child process, to list their aten ops.

`describe_problem` reads ops from the source statically; tracing adds what only running shows:
the aten operators forward really dispatches (after nn.Module and functional indirections) and
the output shapes and dtypes. On the meta device no data is allocated, so KernelBench's full
shapes cost nothing. Problem sources may come from anywhere (GitHub), so they run in a separate
Python process with a scrubbed environment (no keys or tokens), an address-space limit and a
timeout, never in the caller; a problem that cannot be traced (data-dependent ops, errors) gets
None and the static description alone.

`trace_problems` keeps one warm worker (`python -m autotriton.distillation.trace --serve`) and
forks a fresh child from it for every problem.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["trace_problems", "trace_one"]

_SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL|^GITHUB_|^OPENAI_|^HF_|^AWS_|^AZURE_|^GOOGLE_", re.IGNORECASE)
# aten ops that only move, view or allocate: not worth naming in a description.
_BORING = {
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "contiguous", "clone", "copy_", "empty",
    "empty_like", "zeros", "ones", "zeros_like", "ones_like", "detach", "alias", "unsqueeze", "squeeze", "slice", "select",
    "as_strided", "_to_copy", "to", "lift_fresh", "lift_fresh_copy", "split", "split_with_sizes", "unbind", "flatten",
    "new_empty", "new_zeros", "randn", "rand", "randint", "normal_", "uniform_", "kaiming_uniform_", "fill_", "zero_",
    "empty_strided", "expand_as", "view_as", "_reshape_alias", "full", "arange", "sym_size", "sym_stride", "sym_numel",
}


_WARM_UP = """
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, x):
        return F.softmax(F.gelu(self.fc(x)) @ x.t(), dim=-1).sum(0)
def get_inputs():
    return [torch.randn(2, 4)]
def get_init_inputs():
    return []
"""


def trace_one(source: str) -> dict[str, Any]:
    """In THIS process: build Model and inputs on the meta device and record forward's aten ops.
    Only called inside the child process started by trace_problems."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    ops: list[str] = []

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name not in _BORING and (not ops or ops[-1] != name):
                ops.append(name)
            return func(*args, **(kwargs or {}))

    namespace: dict[str, Any] = {"__name__": "autotriton_traced_problem"}
    exec(compile(source, "problem.py", "exec"), namespace)  # noqa: S102 - isolated child process
    torch.manual_seed(0)
    with torch.device("meta"):
        model = namespace["Model"](*namespace["get_init_inputs"]())
        inputs = namespace["get_inputs"]()
        with Recorder():
            out = model(*inputs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    shapes = [{"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", "")} if isinstance(o, torch.Tensor)
              else {"value": repr(o)[:40]} for o in outs]
    return {"aten_ops": ops, "outputs": shapes}


def _scrubbed_env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _SECRET.search(k)}
    env.update(HOME=home, CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


class _Tracer:
    """A warm child process (torch already imported, secrets scrubbed from its environment,
    address space limited) that forks a fresh grandchild for every problem, so each trace costs
    a fork instead of a Python + torch start-up, and one problem cannot touch the next."""

    def __init__(self, memory_limit_gb: float):
        self.home = tempfile.mkdtemp(prefix="autotriton-trace-")
        limit = int(memory_limit_gb * (1 << 30))

        def confine() -> None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            os.setsid()

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autotriton.distillation.trace", "--serve"], cwd=self.home, env=_scrubbed_env(self.home),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=confine,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, sources: list[str], timeout_s: float) -> list[dict[str, Any] | None]:
        import select

        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"sources": sources, "timeout_s": timeout_s}) + "\n").encode())
        self.proc.stdin.flush()
        deadline = 60.0 + timeout_s * len(sources)  # start-up (torch import) + every problem's limit
        ready, _, _ = select.select([self.proc.stdout], [], [], deadline)
        if not ready:
            raise TimeoutError("trace worker did not answer")
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError("trace worker exited")
        return json.loads(line)["results"]

    def close(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


_tracer: _Tracer | None = None
_tracer_lock = threading.Lock()


def _close_tracer() -> None:
    global _tracer
    if _tracer is not None:
        _tracer.close()
        _tracer = None


atexit.register(_close_tracer)


def trace_problems(sources: list[str], *, timeout_s: float = 60.0, memory_limit_gb: float = 8.0) -> list[dict[str, Any] | None]:
    """Trace each source in a fresh process forked from a warm, scrubbed worker; None where
    tracing failed or took longer than `timeout_s`. The worker starts on first use and lives
    until this process exits."""
    global _tracer
    if not sources:
        return []
    with _tracer_lock:
        for attempt in range(2):  # a worker that died (killed, OOM) is replaced once
            if _tracer is None or not _tracer.alive():
                _close_tracer()
                _tracer = _Tracer(memory_limit_gb)
            try:
                results = _tracer.request(list(sources), timeout_s)
                if len(results) == len(sources):
                    return results
            except (OSError, ValueError, TimeoutError, EOFError):
                pass
            _close_tracer()
    return [None] * len(sources)


def _trace_forked(source: str, timeout_s: float) -> dict[str, Any] | None:
    """Run trace_one in a forked child with stdio on /dev/null; its answer comes over a pipe."""
    import select
    import signal

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            os.close(read_fd)
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            try:
                payload = {"ok": True, "trace": trace_one(source)}
            except BaseException as exc:  # noqa: BLE001 - any failure means "no trace"
                payload = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
            data = json.dumps(payload).encode()
            while data:
                data = data[os.write(write_fd, data):]
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                return None
            chunk = os.read(read_fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    try:
        payload = json.loads(b"".join(chunks) or b"{}")
    except json.JSONDecodeError:
        return None
    return payload.get("trace") if payload.get("ok") else None


def _serve() -> int:
    import torch  # noqa: F401 - imported once here, inherited by every forked child

    # Warm every lazy import a trace touches (meta device, dispatch modes, nn.functional), so the
    # forked children start with them loaded.
    trace_one(_WARM_UP)

    out = os.fdopen(os.dup(1), "w")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing but answers on the real stdout
    for line in sys.stdin:
        request = json.loads(line)
        results = [_trace_forked(src, float(request.get("timeout_s", 60.0))) for src in request["sources"]]
        out.write(json.dumps({"results": results}) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.exit(_serve())
    sys.exit("usage: python -m autotriton.distillation.trace --serve   (started by trace_problems)")

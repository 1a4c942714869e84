"""trl users' habits: trl arguments passed through by trl's names, trackers (tensorboard offline),
push_to_hub, old key names as deprecated aliases, and a model card that names the base model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.config import load_config
from autotriton.training.config import TrainingConfig
from autotriton.training.data import build_sft_rows
from autotriton.training.grpo import build_grpo_config
from autotriton.training.models import make_tiny_model
from autotriton.training.sft import build_sft_config, run_sft
from training_helpers import validated_pairs


def test_trl_mappings_reach_trl_configs_and_win(tmp_path):
    cfg = TrainingConfig(sft_trl={"warmup_steps": 3, "learning_rate": 1e-4, "weight_decay": 0.01},
                         grpo_trl={"epsilon": 0.3, "mask_truncated_completions": True},
                         report_to=["tensorboard"], push_to_hub=True, hub_model_id="someone/autotriton-sft")
    sft = build_sft_config(cfg, tmp_path / "sft", "cpu")
    assert (sft.warmup_steps, sft.learning_rate, sft.weight_decay) == (3, 1e-4, 0.01)
    assert sft.report_to == ["tensorboard"]
    assert sft.push_to_hub is True and sft.hub_model_id == "someone/autotriton-sft"  # passed through, nothing pushed here
    grpo = build_grpo_config(cfg, tmp_path / "grpo", "cpu")
    assert grpo.epsilon == 0.3 and grpo.mask_truncated_completions is True and grpo.push_to_hub is True
    plain = build_sft_config(TrainingConfig(), tmp_path / "sft", "cpu")
    assert plain.report_to in ("none", [], ["none"]) and plain.push_to_hub is False


def test_an_unknown_trl_argument_is_an_error_naming_the_key(tmp_path):
    with pytest.raises(ValueError, match=r"training\.sft_trl\.warmup_stepz.*Did you mean warmup_steps"):
        build_sft_config(TrainingConfig(sft_trl={"warmup_stepz": 3}), tmp_path, "cpu")
    with pytest.raises(ValueError, match=r"training\.grpo_trl\.output_dir: set training\.output_dir"):
        build_grpo_config(TrainingConfig(grpo_trl={"output_dir": "x"}), tmp_path, "cpu")


def test_train_verbs_refuse_a_bad_trl_key_before_any_work(tmp_path, monkeypatch):
    from autotriton.flows.cli import app

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "w.duckdb"
    result = CliRunner().invoke(app, ["--db", str(db), "--set", "training.grpo_trl.not_a_trl_arg=1", "grpo", "--json"])
    assert result.exit_code == 2, result.output
    assert "training.grpo_trl.not_a_trl_arg" in result.output
    assert not db.exists()  # refused before the export (nothing written)


def test_trl_keys_settable_from_cli_file_and_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "autotriton.yaml").write_text("training:\n  sft_trl:\n    lr_scheduler_type: linear\n    warmup_steps: 5\n")
    cfg, sources = load_config(environ={"AUTOTRITON_TRAINING__GRPO_TRL__EPSILON": "0.25"},
                               cli={"training.sft_trl.warmup_steps": 7})
    assert cfg.training.sft_trl == {"lr_scheduler_type": "linear", "warmup_steps": 7}
    assert sources["training.sft_trl.lr_scheduler_type"] == "file:autotriton.yaml"
    assert sources["training.sft_trl.warmup_steps"] == "cli"
    assert cfg.training.grpo_trl == {"epsilon": 0.25}
    assert sources["training.grpo_trl.epsilon"] == "env:AUTOTRITON_TRAINING__GRPO_TRL__EPSILON"


def test_old_key_names_still_work_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "autotriton.toml").write_text("[training]\nbatch_size = 3\n")
    with pytest.warns(FutureWarning, match="'training.batch_size' is deprecated; use 'training.per_device_train_batch_size'"):
        cfg, sources = load_config(environ={})
    assert cfg.training.per_device_train_batch_size == 3
    assert sources["training.per_device_train_batch_size"] == "file:autotriton.toml"
    with pytest.warns(FutureWarning):
        cfg, _ = load_config(environ={"AUTOTRITON_TRAINING__BATCH_SIZE": "5"})
    assert cfg.training.per_device_train_batch_size == 5
    with pytest.warns(FutureWarning):
        assert TrainingConfig(batch_size=6).per_device_train_batch_size == 6


def test_sft_logs_to_tensorboard_offline_and_its_model_card_names_the_base(tmp_path):
    pytest.importorskip("tensorboard")
    tiny = make_tiny_model(tmp_path / "models" / "tiny")
    cfg = TrainingConfig(model=str(tiny), output_dir=str(tmp_path / "out"), device="cpu", per_device_train_batch_size=2,
                         max_length=1024, sft_max_steps=2, save_steps=10, report_to=["tensorboard"])
    rows = build_sft_rows(validated_pairs(1), val_fraction=0.0)
    result = run_sft(cfg, rows, progress=False)
    events = list((tmp_path / "out" / "sft" / "runs").rglob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    assert "train/loss" in acc.Tags()["scalars"]
    card = (Path(result.checkpoint.path) / "README.md").read_text()
    assert "[None]" not in card and f"`{tiny}` (a local model)" in card and f"base_model: {tiny}" in card
    assert json.loads((tmp_path / "out" / "sft" / "metrics.json").read_text())["steps"] == 2

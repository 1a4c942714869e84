"""Config precedence (defaults < profile < TOML < env < CLI), profiles, provenance and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.configuration import ConfigError
from autotriton.flows.config import PROFILES, PipelineConfig, load_config


def test_defaults_use_demo_profile(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg, sources = load_config(environ={})
    assert cfg.profile == "demo"
    assert cfg.validation.device == "cpu"  # the demo profile runs on the CPU interpreter
    assert sources["validation.device"] == "profile:demo"
    assert sources["warehouse.path"] == "default"


def test_precedence_file_env_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    toml = tmp_path / "autotriton.toml"
    toml.write_text('[validation]\ntrials = 2\ntimeout_s = 30\n[warehouse]\npath = "file.duckdb"\n')
    env = {"AUTOTRITON_VALIDATION__TRIALS": "4", "AUTOTRITON_DB": "env.duckdb"}
    cfg, sources = load_config(environ=env, cli={"warehouse.path": "cli.duckdb"})
    assert cfg.validation.trials == 4 and sources["validation.trials"] == "env:AUTOTRITON_VALIDATION__TRIALS"
    assert cfg.validation.timeout_s == 30 and sources["validation.timeout_s"] == "file:autotriton.toml"
    assert cfg.warehouse.path == "cli.duckdb" and sources["warehouse.path"] == "cli"
    # Without the CLI flag the env alias wins over the file.
    cfg, sources = load_config(environ=env)
    assert cfg.warehouse.path == "env.duckdb" and sources["warehouse.path"] == "env:AUTOTRITON_DB"


def test_profile_selected_by_any_layer_and_overridable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg, sources = load_config(environ={"AUTOTRITON_PROFILE": "gpu"})
    assert cfg.profile == "gpu" and cfg.validation.device == "cuda"
    assert sources["validation.device"] == "profile:gpu"
    cfg, _ = load_config(environ={"AUTOTRITON_PROFILE": "gpu"}, cli={"validation.device": "cpu"})
    assert cfg.validation.device == "cpu"  # CLI beats the profile


def test_every_profile_is_valid():
    for name in PROFILES:
        cfg, _ = load_config(environ={}, cli={"profile": name}, config_file=None)
        assert isinstance(cfg, PipelineConfig)


def test_errors_name_the_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text("[validation\ntrials = 2\n")
    with pytest.raises(ConfigError, match="bad.toml"):
        load_config(bad, environ={})
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("[validation]\ntrails = 2\n")
    with pytest.raises(ConfigError, match="validation.trails"):
        load_config(unknown, environ={})
    with pytest.raises(ConfigError, match="AUTOTRITON_VALIDATION__TRIALS"):
        load_config(environ={"AUTOTRITON_VALIDATION__TRIALS": "zero"})
    with pytest.raises(ConfigError, match="profile 'nope'"):
        load_config(environ={}, cli={"profile": "nope"})
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml", environ={})


def test_config_hash_changes_with_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, _ = load_config(environ={})
    b, _ = load_config(environ={}, cli={"validation.trials": 9})
    assert a.hash != b.hash
    assert a.hash == load_config(environ={})[0].hash


def test_config_show_cli_reports_sources(tmp_path, monkeypatch):
    from autotriton.flows.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOTRITON_VALIDATION__TRIALS", "6")
    result = CliRunner().invoke(app, ["--set", "distill.samples=3", "config", "show", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["values"]["validation.trials"] == 6
    assert out["sources"]["validation.trials"] == "env:AUTOTRITON_VALIDATION__TRIALS"
    assert out["sources"]["distill.samples"] == "cli"
    bad = CliRunner().invoke(app, ["--set", "trials=3", "config", "show"])
    assert bad.exit_code == 2
    assert "validation.trials" in bad.output  # suggests the full key


def test_harvest_state_follows_the_warehouse(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg, sources = load_config(environ={}, cli={"warehouse.path": str(tmp_path / "a.duckdb")})
    assert cfg.harvest.state_path == str(tmp_path / "a.duckdb") + ".harvest-state.json"
    assert sources["harvest.state_path"] == "derived:warehouse.path"
    cfg, sources = load_config(environ={}, cli={"harvest.state_path": "s.json"})
    assert cfg.harvest.state_path == "s.json" and sources["harvest.state_path"] == "cli"


def test_dict_keys_settable_from_cli_file_and_environment(tmp_path, monkeypatch):
    """validation.tolerances.float32 is listed by `config show`, so every layer can set it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "autotriton.toml").write_text("[validation.tolerances]\nfloat16 = 0.05\n")
    cfg, sources = load_config(environ={"AUTOTRITON_VALIDATION__TOLERANCES__BFLOAT16": "0.02"},
                               cli={"validation.tolerances.float32": 1e-3})
    assert cfg.validation.tolerances == {"float32": 1e-3, "float64": 1e-4, "float16": 0.05, "bfloat16": 0.02}
    assert sources["validation.tolerances.float32"] == "cli"
    assert sources["validation.tolerances.float16"] == "file:autotriton.toml"
    assert sources["validation.tolerances.bfloat16"] == "env:AUTOTRITON_VALIDATION__TOLERANCES__BFLOAT16"
    assert sources["validation.tolerances.float64"] == "default"
    from autotriton.flows.cli import app

    result = CliRunner().invoke(app, ["--set", "validation.tolerances.float32=0.002", "config", "show", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["values"]["validation.tolerances.float32"] == 0.002 and out["sources"]["validation.tolerances.float32"] == "cli"
    bad = CliRunner().invoke(app, ["--set", "validation.trials.x=1", "config", "show"])  # not a dict: still refused
    assert bad.exit_code == 2 and "validation.trials.x" in bad.output


def test_unknown_environment_key_with_the_prefix_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="AUTOTRITON_VALIDATION__TRAILS: no config key 'validation.trails'"):
        load_config(environ={"AUTOTRITON_VALIDATION__TRAILS": "3"})
    with pytest.raises(ConfigError, match="AUTOTRITON_TRIALS.*AUTOTRITON_VALIDATION__TRIALS"):
        load_config(environ={"AUTOTRITON_TRIALS": "3"})
    # variables read elsewhere on purpose, and secrets named by *_env keys, are not config
    load_config(environ={"AUTOTRITON_MODEL_CACHE": "/tmp/x", "AUTOTRITON_OPENAI_KEY": "sk-1"},
                cli={"distill.api_key_env": "AUTOTRITON_OPENAI_KEY"})
    from autotriton.flows.cli import app

    monkeypatch.setenv("AUTOTRITON_VALIDATION__TRAILS", "3")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 2 and "AUTOTRITON_VALIDATION__TRAILS" in result.output


def test_yaml_config_file_beside_toml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.yaml").write_text("profile: gpu\nvalidation:\n  trials: 2\n  tolerances:\n    float32: 0.001\n"
                                       "training:\n  report_to: [tensorboard]\n")
    cfg, sources = load_config(tmp_path / "run.yaml", environ={})
    assert cfg.profile == "gpu" and cfg.validation.trials == 2 and cfg.validation.tolerances["float32"] == 1e-3
    assert cfg.training.report_to == ["tensorboard"] and sources["validation.trials"].endswith("run.yaml")
    (tmp_path / "autotriton.yml").write_text("validation:\n  trials: 7\n")  # found by default, like autotriton.toml
    cfg, sources = load_config(environ={})
    assert cfg.validation.trials == 7 and sources["validation.trials"] == "file:autotriton.yml"
    bad = tmp_path / "bad.yaml"
    bad.write_text("validation: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        load_config(bad, environ={})
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="list.yaml: a config file holds a mapping"):
        load_config(tmp_path / "list.yaml", environ={})
    (tmp_path / "typo.yaml").write_text("validation:\n  trails: 2\n")
    with pytest.raises(ConfigError, match="validation.trails"):
        load_config(tmp_path / "typo.yaml", environ={})

"""CLI habits users bring from other tools: --version, -h, global options after the verb (and in
each verb's help), flags that look like flags, whole names when piped, progress on stderr, a
stated evaluation cap, and a harvest of an empty folder refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

from autotriton import __version__
from autotriton.flows.cli import app
from autotriton.hashing import source_key
from autotriton.records import Verdict, candidate_key
from kernel_fixtures import elementwise_reference

GLOBALS = ("--db", "--config", "--profile", "--set")


def one_json(result) -> dict:
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"--json must print exactly one JSON line on stdout, got {result.stdout!r}"
    return json.loads(lines[0])


def _verbs(group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every verb: the leaf commands, and `eval`, a group that is a verb itself."""
    out = []
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):  # typer's own (vendored) click Group
            out += _verbs(cmd, (*prefix, name))
            if name == "eval":
                out.append(((*prefix, name), cmd))
        else:
            out.append(((*prefix, name), cmd))
    return out


def test_version_and_short_help():
    version = CliRunner().invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith(f"autotriton {__version__}")
    for args in (["-h"], ["db", "stats", "-h"], ["eval", "-h"], ["harvest", "local", "-h"], ["suite", "convert", "-h"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0 and "Usage:" in result.stdout, (args, result.output)


def test_every_verb_lists_and_accepts_the_global_options():
    root = typer.main.get_command(app)
    verbs = _verbs(root)
    assert len(verbs) > 20
    for path, command in verbs:
        names = {opt for p in command.params for opt in getattr(p, "opts", [])}
        missing = [g for g in GLOBALS if g not in names]
        assert not missing, f"`autotriton {' '.join(path)}` lacks {missing}"
        text = CliRunner().invoke(app, [*path, "--help"]).stdout
        assert "Global options" in text and "--db" in text, path


def test_global_options_after_the_verb_work_like_before_it(tmp_path):
    db = tmp_path / "w.duckdb"
    before = one_json(CliRunner().invoke(app, ["--db", str(db), "--set", "validation.trials=4", "config", "show", "--json"]))
    after = one_json(CliRunner().invoke(app, ["config", "show", "--json", "--db", str(db), "--set", "validation.trials=4"]))
    assert after["values"]["warehouse.path"] == str(db) and after["values"]["validation.trials"] == 4
    assert after["sources"]["validation.trials"] == "cli" and after["hash"] == before["hash"]
    profile = one_json(CliRunner().invoke(app, ["config", "show", "--profile", "gpu", "--json"]))
    assert profile["profile"] == "gpu"
    migrated = one_json(CliRunner().invoke(app, ["db", "migrate", "--json", "--db", str(db)]))
    assert db.is_file() and migrated


def test_flags_are_shown_as_flags_and_take_no_value():
    text = CliRunner().invoke(app, ["db", "stats", "--help"]).stdout
    json_line = next(line for line in text.splitlines() if "--json" in line)
    assert "<bool>" not in json_line and "<bool>" not in text
    refused = CliRunner().invoke(app, ["db", "stats", "--json", "true"])
    assert refused.exit_code == 2


def test_piped_tables_keep_whole_names(tmp_path):
    # CliRunner's stdout is not a terminal, as in `autotriton config show | grep ...`.
    shown = CliRunner(env={"COLUMNS": None}).invoke(app, ["config", "show"])
    assert shown.exit_code == 0
    assert "…" not in shown.stdout
    long_key = "training.rl_difficulty_floor"
    assert re.search(rf"{re.escape(long_key)}\s+.*0\.2\s+.*default", shown.stdout), shown.stdout[:2000]
    # What the same table looked like at rich's assumed 80 columns (COLUMNS set still wins).
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["config", "show"])
    assert "…" in narrow.stdout
    db = tmp_path / "w.duckdb"
    assert CliRunner().invoke(app, ["--db", str(db), "db", "migrate"]).exit_code == 0
    name = "a_column_name_long_enough_to_be_cut_at_eighty_columns_in_rich"
    value = "a value that is longer still, so that a table of eighty columns would have to fold or cut it"
    result = CliRunner(env={"COLUMNS": None}).invoke(app, ["--db", str(db), "db", "sql", f"SELECT '{value}' AS {name}"])
    assert result.exit_code == 0, result.output
    assert name in result.stdout and value in result.stdout


def test_harvest_local_empty_folder_is_an_error_and_progress_goes_to_stderr(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("no modules here\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "w.duckdb"), "harvest", "local", str(empty)])
    assert result.exit_code == 2
    assert f"{empty}: no .py files to harvest" in result.output
    assert not (tmp_path / "w.duckdb").exists()  # nothing written

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "LICENSE").write_text("MIT License\n\nPermission is hereby granted, free of charge, to any person\n", encoding="utf-8")
    (repo / "ops.py").write_text(elementwise_reference("torch.relu(x)", n=64, doc="ReLU."), encoding="utf-8")
    run = CliRunner().invoke(app, ["harvest", "local", str(repo), "--dry-run", "--no-probe"])
    assert run.exit_code == 0, run.output
    assert "harvest local" in run.stdout  # the summary table
    assert "extract repo" in run.stderr and "extract repo" not in run.stdout  # the progress bar


def test_a_capped_evaluation_says_so_and_outcomes_split_no_code(tmp_path, monkeypatch):
    """The demo profile evaluates at most 8 problems: with a longer suite the cap is stated, and
    samples without code are counted as parse errors, not hidden among rule violations."""
    monkeypatch.chdir(tmp_path)
    suite = tmp_path / "ten.jsonl"
    rows = [{"id": f"custom/level1/{i}", "source": elementwise_reference(f"x * {i + 2}.0", n=64, doc=f"Scale {i}.")}
            for i in range(10)]
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    recorded = tmp_path / "none.jsonl"
    recorded.write_text("", encoding="utf-8")
    # One recorded verdict (for code no sample has): samples are judged statically, nothing runs.
    pkey = source_key(rows[0]["source"])
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(json.dumps(Verdict(candidate_key=candidate_key("pass\n", pkey), problem_key=pkey,
                                           status="incorrect").to_dict()) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "w.duckdb"), "eval", "--suite", str(suite), "--recorded",
                                      str(recorded), "--verdicts", str(verdicts), "--json"])
    summary = one_json(result)
    assert "evaluating a sample (seed 0) of 8 of 10 problems (evaluation.max_problems = 8, from profile:demo" in result.stderr
    assert summary["problems"] == 8 and summary["problems_in_suite"] == 10
    assert summary["status_counts"] == {"rule_violation": 16}  # the judge's word for "no kernel"
    assert summary["outcome_counts"] == {"parse_error": 16}  # and why: there was no code
    report = Path(summary["report"]).read_text()
    assert "8 of the suite's 10 problems evaluated" in report and "## Sample outcomes" in report

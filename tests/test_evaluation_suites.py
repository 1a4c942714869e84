"""Suites as data: KernelBench JSONL loading and filtering, clear errors, the hub flag, and the
TritonBench-T conversion on a small sample written in TritonBench's layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autotriton.evaluation import SuiteError, convert_tritonbench_t, load_suite, read_suite_jsonl, write_suite_jsonl
from autotriton.hashing import source_key

from evaluation_helpers import SUITE_ROWS, write_suite

TB_SAMPLE = Path(__file__).parent / "data" / "evaluation" / "tritonbench_t"
TB_STATS = TB_SAMPLE / "TritonBench_T_sample.json"


def test_kernelbench_level1_loads_with_suite_fields(kernelbench_l1):
    problems = load_suite(kernelbench_l1)
    assert len(problems) == 100
    p = problems[18]
    assert (p.suite, p.suite_id, p.name) == ("kernelbench/level1", "kernelbench/level1/19", "ReLU")
    assert p.key == source_key(p.reference_source) and p.licence == "MIT"
    assert len({q.key for q in problems}) == 100


def test_filters_by_ids_levels_name_and_limit(kernelbench_l1):
    by_ids = load_suite(kernelbench_l1, ids=["19", "kernelbench/level1/23"])
    assert [p.suite_id for p in by_ids] == ["kernelbench/level1/19", "kernelbench/level1/23"]
    convs = load_suite(kernelbench_l1, name_glob="*conv*")
    assert convs and all("conv" in p.name.lower() for p in convs)
    assert load_suite(kernelbench_l1, levels=[2]) == []
    assert len(load_suite(kernelbench_l1, levels=[1], limit=7)) == 7


def test_shrink_keeps_suite_ids_and_makes_a_smaller_problem(kernelbench_l1):
    big = load_suite(kernelbench_l1, ids=["1"])[0]
    small = load_suite(kernelbench_l1, ids=["1"], shrink=True)[0]
    assert small.suite_id == big.suite_id and small.name == big.name
    assert small.reference_source != big.reference_source and small.shape_profile == "cpu-small"


def test_suite_file_errors_name_file_line_and_field(tmp_path):
    good = json.dumps(SUITE_ROWS[0])
    cases = {
        "not json": (good + "\n{oops\n", ":2: not valid JSON"),
        "no source": (json.dumps({"id": "x/level1/1", "name": "x"}) + "\n", ":1: field 'source'"),
        "not kernelbench": (json.dumps({"id": "x/level1/1", "source": "print(1)"}) + "\n", "has no `class Model`"),
        "duplicate": (good + "\n" + good + "\n", ":2: duplicate id 'tiny/level1/1' (first on line 1)"),
        "bad level": (json.dumps(dict(SUITE_ROWS[0], level="one")) + "\n", "field 'level'"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.jsonl"
        path.write_text(text)
        with pytest.raises(SuiteError) as info:
            load_suite(path)
        assert expected in str(info.value) and str(path) in str(info.value), name
    with pytest.raises(SuiteError, match="not found"):
        load_suite(tmp_path / "absent.jsonl")


def test_suite_round_trip_and_level_from_id(tmp_path):
    path = write_suite(tmp_path / "tiny.jsonl")
    entries = read_suite_jsonl(path)
    write_suite_jsonl(entries, tmp_path / "copy.jsonl")
    assert [e.to_row() for e in read_suite_jsonl(tmp_path / "copy.jsonl")] == [e.to_row() for e in entries]
    row = {k: v for k, v in SUITE_ROWS[1].items() if k != "level"}
    (tmp_path / "nolevel.jsonl").write_text(json.dumps(row) + "\n")
    assert read_suite_jsonl(tmp_path / "nolevel.jsonl")[0].level == 2  # taken from "tiny/level2/1"
    assert [p.suite for p in load_suite(path, levels=[2])] == ["tiny/level2"]


def test_hub_loading_is_behind_a_flag_and_offline_says_so(monkeypatch):
    with pytest.raises(SuiteError, match="--hub"):
        load_suite("hf:level_1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(SuiteError) as info:
        load_suite("hf:level_1", hub=True)
    message = str(info.value)
    assert "ScalingIntelligence/KernelBench" in message and "level_1" in message and "local suite file" in message


# ------------------------------------------------------------------------------------------------
# TritonBench-T


def _run_problem(source: str):
    """Run a converted (trusted, test-authored) problem in-process: it must be a working KernelBench problem."""
    import torch

    ns: dict = {}
    exec(compile(source, "<converted>", "exec"), ns)
    torch.manual_seed(0)
    model = ns["Model"](*ns["get_init_inputs"]())
    return model(*ns["get_inputs"]())


def test_tritonbench_t_conversion_of_the_sample():
    result = convert_tritonbench_t(TB_STATS)
    ids = [e.id for e in result.entries]
    assert ids == ["tritonbench-t/level1/scaled_relu", "tritonbench-t/level1/add_alpha",
                   "tritonbench-t/level2/row_softmax", "tritonbench-t/level2/lerp_weighted",
                   "tritonbench-t/level3/dropout_scale"]
    by_name = {e.name: e for e in result.entries}

    relu = by_name["scaled_relu"].source
    # The random test case is preferred over the literal one; its scalar stays in the call.
    assert "def forward(self, x2):" in relu and "return scaled_relu(x2, scale=0.5)" in relu
    assert "x2 = torch.randn(4, 8)" in relu and "cuda" not in relu
    out = _run_problem(relu)
    assert tuple(out.shape) == (4, 8) and float(out.min()) >= 0.0

    add = by_name["add_alpha"].source
    # The out= case is skipped; constants held in variables become module-level constants.
    assert "out=" not in add.split("class Model")[1]
    assert "alpha = 0.25" in add and "rows, cols = (3, 5)" in add
    assert "def forward(self, a, b):" in add and ".to(" not in add.split("def get_inputs")[1]
    assert tuple(_run_problem(add).shape) == (3, 5)

    softmax = _run_problem(by_name["row_softmax"].source)
    assert softmax.sum(dim=1).sub(1).abs().max() < 1e-5  # softmax over dim=1, as the test case asked

    lerp = by_name["lerp_weighted"].source
    assert "print(" not in lerp  # top-level noise of the reference is dropped
    assert "end = start * 2 + 1" in lerp
    assert _run_problem(lerp).tolist() == [[0.5, 2.0], [3.5, 5.0]]

    # Dropout in training mode would not match itself: the evaluation-mode case is taken.
    dropout = by_name["dropout_scale"].source
    assert "training = False" in dropout and "return dropout_scale(x, 3.0, 0.5, training)" in dropout
    assert bool((_run_problem(dropout) != 0).all())  # training mode would zero about half of the 16 values

    problems = result.problems
    assert problems[0].suite == "tritonbench-t/level1" and problems[0].suite_id == ids[0]


def test_tritonbench_t_conversion_errors_are_per_record():
    errors = {e.record: e for e in convert_tritonbench_t(TB_STATS).errors}
    assert set(errors) == {"momentum_step", "no_tests", "missing_file"}
    assert "argument name 'p' is not assigned" in errors["momentum_step"].message
    assert errors["momentum_step"].file.endswith("momentum_step.py") and errors["momentum_step"].line == 9
    assert "no test section" in errors["no_tests"].message
    assert "operator file not found" in errors["missing_file"].message


def test_tritonbench_t_folder_single_file_and_suite_loading(tmp_path):
    # The folder finds its statistics beside it; a lone folder (no statistics) has no difficulty levels.
    assert len(convert_tritonbench_t(TB_SAMPLE / "TritonBench_T_sample").entries) == 5
    lone = tmp_path / "ops"
    shutil.copytree(TB_SAMPLE / "TritonBench_T_sample", lone)
    entries = convert_tritonbench_t(lone).entries
    assert sorted(e.id for e in entries) == sorted(f"tritonbench-t/{n}" for n in ("add_alpha", "dropout_scale", "lerp_weighted",
                                                                              "row_softmax", "scaled_relu"))
    single = convert_tritonbench_t(lone / "row_softmax.py")
    assert [e.name for e in single.entries] == ["row_softmax"] and not single.errors
    # load_suite recognises TritonBench-T data and filters it like any suite.
    problems = load_suite(TB_STATS, levels=[2])
    assert [p.name for p in problems] == ["row_softmax", "lerp_weighted"]
    with pytest.raises(ValueError, match="not found"):
        convert_tritonbench_t(tmp_path / "nothing.json")


def test_tritonbench_t_probe_drops_problems_that_do_not_run_in_the_judge(tmp_path):
    from autotriton.validation import ValidationConfig

    sep = "#" * 146
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "cube.py").write_text(
        f"import torch\n\ndef cube(input):\n    return input * input * input\n\n{sep}\n\n"
        "def test_cube():\n    x = torch.randn(8, device='cuda')\n    return {'c1': cube(x)}\n")
    # The reference itself allocates on 'cuda' (TritonBench-T references sometimes do): on a CPU judge it cannot run.
    (tmp_path / "ops" / "shifted.py").write_text(
        f"import torch\n\ndef shifted(input):\n    return input + torch.ones(input.shape, device='cuda')\n\n{sep}\n\n"
        "def test_shifted():\n    x = torch.randn(64, device='cuda')\n    return {'c1': shifted(x)}\n")
    plain = convert_tritonbench_t(tmp_path / "ops")
    assert sorted(e.name for e in plain.entries) == ["cube", "shifted"]
    probed = convert_tritonbench_t(tmp_path / "ops", probe=True,
                                   validation_config=ValidationConfig(device="cpu", workers=1, trials=2))
    assert [e.name for e in probed.entries] == ["cube"]
    [error] = probed.errors
    assert error.record == "shifted" and "does not run in the judge" in error.message and "CUDA" in error.message

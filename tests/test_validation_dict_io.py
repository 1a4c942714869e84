"""Forward inputs and outputs that are dicts of tensors (issue 13): sentence-transformers' modules
take a `features` dict, read `features["token_embeddings"]` and `features["attention_mask"]`,
write their result into it and return it. The judge moves, clones, digests and compares such
dicts leaf by leaf; a key missing or added is a mismatch that names the key."""

from __future__ import annotations

import pytest
import torch

from autotriton.validation import JudgePool
from autotriton.validation import candidate_runner as cr
from autotriton.validation.compare import compare_outputs
from validation_helpers import candidate, judge_config, problem

TOL = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


def test_reference_and_candidate_outputs_flatten_to_the_same_keys_whatever_the_insertion_order():
    a, b, c = torch.randn(2), torch.randn(3), torch.randn(4)
    ref_paths: list[str] = []
    ref = cr._flatten_outputs({"b": b, "a": (a, {"c": c})}, ref_paths)
    got_paths: list[str] = []
    got = cr._plain_outputs({"a": (a, {"c": c}), "b": b}, got_paths)
    assert ref_paths == got_paths == ["['a']", "['a']['c']", "['b']"]
    assert all(x is y for x, y in zip(ref, got)) and [x is a for x in ref] == [True, False, False]
    # tuples and lists as before: flattened, no keys
    plain: list[str] = []
    assert len(cr._plain_outputs((a, [b, c]), plain)) == 3 and plain == ["", "", ""]


def test_a_candidates_dict_must_be_exactly_a_dict_with_plain_keys():
    from collections import OrderedDict

    class Key(str):
        pass

    with pytest.raises(TypeError, match="OrderedDict"):
        cr._plain_outputs(OrderedDict(y=torch.ones(1)))
    with pytest.raises(TypeError, match="keys other than str or int"):
        cr._plain_outputs({Key("y"): torch.ones(1)})


def test_the_probe_still_asks_harvested_problems_for_tensors_or_tuples():
    """Without `paths` (the probe's call) a dict is refused as before: the harvester's structured
    output rewrite (harvesting/structured_outputs.py) depends on that message."""
    with pytest.raises(TypeError, match="forward returned dict; expected a tensor or a tuple of tensors"):
        cr._flatten_outputs({"y": torch.ones(1)})


def test_compare_names_a_missing_an_extra_and_a_wrong_key():
    x, y = torch.randn(4, 8), torch.randn(4)
    keys = ["['sentence_embedding']", "['token_embeddings']"]
    ok = compare_outputs([y, x], [y, x], tolerances=TOL, ref_paths=keys, got_paths=list(keys))
    assert ok["ok"], ok
    r = compare_outputs([y, x], [x], tolerances=TOL, ref_paths=keys, got_paths=keys[1:])
    assert not r["ok"] and r["reason"] == "output lacks key(s) ['sentence_embedding'] of the reference's output"
    r = compare_outputs([y, x], [y, y, x], tolerances=TOL, ref_paths=keys, got_paths=[keys[0], "['extra']", keys[1]])
    assert not r["ok"] and r["reason"] == "output has key(s) ['extra'] that the reference's output has not"
    r = compare_outputs([y, x], [y + 1, x], tolerances=TOL, ref_paths=keys, got_paths=list(keys))
    assert not r["ok"] and r["reason"].startswith("output 0 ['sentence_embedding']: ")
    r = compare_outputs([y, x], [y, x], tolerances=TOL, ref_paths=keys, got_paths="forged")
    assert not r["ok"] and "lacks key(s) ['sentence_embedding'], ['token_embeddings']" in r["reason"]


def test_the_reference_writing_into_its_features_dict_leaves_the_trial_inputs_alone(tmp_path):
    """The reference runs on a clone of the trial's inputs, dicts included: the trial's dict (which
    the candidate gets, and whose digest was taken) never holds the reference's result."""
    from autotriton.validation.problem_state import Phase
    from autotriton.validation.reference_problem import load_problem_module

    module = load_problem_module(problem("features_pooling"), str(tmp_path), "main")
    phase = Phase("main", module, 0, [1, 2], "cpu")
    outs = phase.reference_outputs()
    assert phase.output_paths == [["['attention_mask']", "['sentence_embedding']", "['token_embeddings']"]] * 2
    for trial, out in zip(phase.trials, outs):
        (features,) = trial["inputs"]
        assert sorted(features) == ["attention_mask", "token_embeddings"]
        assert trial["digest"] == cr.digest(cr.input_leaves(trial["inputs"]))
        assert torch.equal(out[2], features["token_embeddings"]) and out[1].shape == (4, 32)


# candidate -> (expected status, a phrase its verdict's error must hold, rules that must be reported)
JUDGED = {
    "correct_features_pooling": ("correct", None, set()),
    "wrong_key_features_pooling": ("incorrect", "output 1 ['sentence_embedding']:", set()),
    "missing_key_features_pooling": ("incorrect", "output lacks key(s) ['attention_mask'] of the reference's output", set()),
    "mutating_features_pooling": ("rule_violation", None, {"RUNTIME-INPUT-MUTATION"}),
}


@pytest.fixture(scope="module")
def verdicts():
    jobs = [(problem("features_pooling"), candidate(name)) for name in JUDGED]
    with JudgePool(judge_config()) as pool:
        return dict(zip(JUDGED, pool.validate_many(jobs)))


@pytest.mark.parametrize("name", sorted(JUDGED))
def test_a_features_dict_problem_is_judged_key_by_key(verdicts, name):
    status, phrase, rules = JUDGED[name]
    v = verdicts[name]
    reported = {x.rule for x in v.violations}
    assert v.status == status, f"{name}: {v.status} {v.error} {[(x.rule, x.message) for x in v.violations]}"
    assert rules <= reported, f"{name}: missing {rules - reported}; reported {reported}"
    if phrase is not None:
        assert phrase in (v.error or ""), v.error
    if status == "correct":
        assert not v.violations and len(v.trials) == 3 + 1 and all(t["ok"] for t in v.trials), v.trials

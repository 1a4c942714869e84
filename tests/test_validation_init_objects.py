"""Constructor arguments the problem itself defines (issue 13): a harvested module built around
another network gets a `WrappedNetwork` stand-in (harvesting/argument_guesses.py), with the
attributes and methods the module reads of it, methods as lambdas. The judge builds them in the
worker and sends them to the candidate process, which has no module to import their class
from: they travel by value, and a correct candidate is judged correct."""

from __future__ import annotations

import pickle
import sys

from autotriton.validation import JudgePool
from autotriton.validation import wire
from autotriton.validation.reference_problem import load_problem_module
from validation_helpers import candidate, judge_config, problem


def test_a_problem_defined_network_and_its_lambda_travel_by_value(tmp_path):
    module = load_problem_module(problem("wrapped_network"), str(tmp_path), "main")
    try:
        data = wire._dumps_with_problem_classes({"init_inputs": module.get_init_inputs()})
    finally:
        sys.modules.pop(module.__name__, None)
    network, offset = pickle.loads(data)["init_inputs"]  # the module is gone, as in a candidate process
    assert type(network).__name__ == "WrappedNetwork" and network.get_shift() == 0.5 and offset == 1.0
    assert float(network.scale) == 2.0


def test_a_correct_candidate_for_a_problem_with_a_defined_network_is_judged_correct():
    with JudgePool(judge_config()) as pool:
        (verdict,) = pool.validate_many([(problem("wrapped_network"), candidate("correct_wrapped_network"))])
    assert verdict.status == "correct" and verdict.rule_ok, (verdict.status, verdict.error, verdict.violations)

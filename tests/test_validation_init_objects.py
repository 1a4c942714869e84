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


CONFIGURED = '''import torch
import torch.nn as nn


class PretrainedConfig:
    def __init__(self, **kwargs):
        self.name_or_path = kwargs.pop("name_or_path", "")


class ScaleConfig(PretrainedConfig):
    def __init__(self, scale=2.0, **kwargs):
        self.scale = scale
        super().__init__(**kwargs)


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        if not isinstance(config, PretrainedConfig):
            raise ValueError("Parameter config should be an instance of class `PretrainedConfig`")
        self.scale = config.scale

    def forward(self, x):
        return x * self.scale


def get_inputs():
    return [torch.randn(4, 37)]


def get_init_inputs():
    return [ScaleConfig(scale=3.0)]
'''

CONFIGURED_ANSWER = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


class PretrainedConfig:
    def __init__(self, **kwargs):
        self.name_or_path = kwargs.pop("name_or_path", "")


class ScaleConfig(PretrainedConfig):
    def __init__(self, scale=2.0, **kwargs):
        self.scale = scale
        super().__init__(**kwargs)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, config):
        super().__init__()
        if not isinstance(config, PretrainedConfig):
            raise ValueError("Parameter config should be an instance of class `PretrainedConfig`")
        self.scale = config.scale

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        scale_kernel[((x.numel() + 63) // 64,)](x, out, x.numel(), self.scale, BLOCK=64)
        return out
'''


def test_a_config_object_of_the_problems_class_reaches_the_candidate_as_its_own_class():
    """A Hugging Face style model takes `ScaleConfig(...)` and checks `isinstance(config,
    PretrainedConfig)`; a self-contained candidate carries its own copy of both classes, so the
    problem's object is handed to ModelNew as an instance of the candidate's ScaleConfig (its
    attributes as they were). super-image's EDSR/CARN/MDSR failed so on an H100 (twenty-third run)."""
    with JudgePool(judge_config()) as pool:
        good, lying = pool.validate_many([
            (CONFIGURED, CONFIGURED_ANSWER),
            # the attributes travel as the problem set them: a candidate's own default (scale=2) is not used
            (CONFIGURED, CONFIGURED_ANSWER.replace("self.scale = config.scale\n\n    def forward",
                                                    "self.scale = ScaleConfig().scale\n\n    def forward")),
        ])
    assert good.status == "correct" and good.rule_ok, (good.status, good.error, good.violations)
    assert lying.status == "incorrect", (lying.status, lying.error)

"""Generators: the real `openai` client against a local OpenAI-compatible server, and a tiny local
Llama model with a locally trained tokenizer; both prompt in the training format and parse strictly."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotriton.evaluation import LocalModelGenerator, OpenAIGenerator, RecordedGenerator, default_instruction, load_suite
from autotriton.prompting import PROMPT_VERSION, SYSTEM_PROMPT
from autotriton.training.models import make_tiny_model

from evaluation_helpers import (
    AFFINE_CHEAT, AFFINE_CORRECT, GARBAGE, RELU_CHEAT, RELU_CORRECT, TRUNCATED, ChatServer, completion, write_suite,
)

MODEL = "test-kernel-model"


@pytest.fixture
def problems(tmp_path):
    return load_suite(write_suite(tmp_path / "tiny.jsonl"))


def _script():
    return {
        "Tiny ReLU.": [completion(RELU_CORRECT), completion(RELU_CHEAT), GARBAGE],
        "Tiny affine map": [TRUNCATED, completion(AFFINE_CORRECT), completion(AFFINE_CHEAT)],
    }


def test_openai_generator_samples_n_per_request_in_the_training_format(problems, monkeypatch):
    monkeypatch.setenv("TEST_EVAL_KEY", "sk-test-123")
    with ChatServer(_script()) as server:
        gen = OpenAIGenerator(server.base_url, MODEL, api_key_env="TEST_EVAL_KEY", temperature=0.8, top_p=0.9,
                              max_tokens=512, max_retries=0, concurrency=2, seed=7)
        out = gen.generate(problems, 3)
    assert len(server.requests) == 2  # one request per problem, n=3 each
    body = server.requests[0]["body"]
    assert body["n"] == 3 and body["temperature"] == 0.8 and body["top_p"] == 0.9 and body["max_tokens"] == 512
    assert body["seed"] == 7 and body["model"] == MODEL
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert "```python\n" in body["messages"][1]["content"] and "class Model(nn.Module)" in body["messages"][1]["content"]
    assert server.requests[0]["headers"].get("authorization") == "Bearer sk-test-123"

    relu, affine = out
    assert [c.code.strip() for c in relu[:2]] == [RELU_CORRECT.strip(), RELU_CHEAT.strip()]
    assert relu[2].code == "" and relu[2].parse_error == "no ```python code block in the output" and relu[2].raw_output == GARBAGE
    assert affine[0].code == "" and "truncated" in affine[0].parse_error
    assert affine[1].reasoning.startswith("Elementwise")
    for cands, problem in zip(out, problems):
        for i, c in enumerate(cands):
            assert c.problem_key == problem.key and c.generator == f"openai:{MODEL}" and c.prompt_version == PROMPT_VERSION
            assert c.sampling["sample"] == i and c.sampling["n"] == 3 and c.sampling["temperature"] == 0.8
            assert c.usage["prompt_tokens"] > 0 and c.instruction


def test_openai_generator_tops_up_when_the_endpoint_ignores_n_and_retries_429(problems):
    with ChatServer(_script(), max_choices=1, rate_limit_first=True) as server:
        gen = OpenAIGenerator(server.base_url, MODEL, max_retries=2, concurrency=1)
        out = gen.generate(problems[:1], 3)
    # 1 rate-limited request (retried by the client after Retry-After: 0) + 3 one-choice requests
    assert len(server.requests) == 4
    assert [c.code.strip() for c in out[0][:2]] == [RELU_CORRECT.strip(), RELU_CHEAT.strip()]
    assert out[0][2].parse_error is not None and gen.failed_requests == 0


def test_openai_generator_records_failed_requests_as_failed_samples(problems):
    with ChatServer(_script(), fail_markers=("Tiny affine map",)) as server:
        gen = OpenAIGenerator(server.base_url, MODEL, max_retries=1, concurrency=2)
        relu, affine = gen.generate(problems, 2)
    assert gen.failed_requests == 1
    assert all(c.code == "" and c.parse_error.startswith("request failed after retries: InternalServerError") for c in affine)
    assert relu[0].code and relu[0].parse_error is None


def test_openai_generator_reads_reasoning_content_and_names_bad_model(problems):
    plain = {"Tiny ReLU.": [f"```python\n{RELU_CORRECT}```"], "Tiny affine map": [GARBAGE]}
    with ChatServer(plain, reasoning_content=True) as server:
        out = OpenAIGenerator(server.base_url, MODEL, max_retries=0).generate(problems[:1], 1)
        assert out[0][0].reasoning == "Reasoning delivered out of band." and out[0][0].code
        with pytest.raises(RuntimeError, match="model 'other-model' not found"):
            OpenAIGenerator(server.base_url, "other-model", max_retries=0).generate(problems[:1], 1)


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("evaluation-tiny") / "tiny")


def test_local_model_generator_samples_k_with_the_chat_template(problems, tiny_model_dir):
    gen = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=1.0, top_p=0.95, max_new_tokens=12,
                              batch_size=2, seed=3)
    prompt = gen.prompt_text(problems[0])
    assert prompt.startswith("<|im_start|>system\n" + SYSTEM_PROMPT) and "Tiny ReLU." in prompt
    assert prompt.rstrip().endswith("<|im_start|>assistant")
    out = gen.generate(problems, 3)
    assert [len(cs) for cs in out] == [3, 3]
    for cands, problem in zip(out, problems):
        for i, c in enumerate(cands):
            assert c.problem_key == problem.key and c.generator == "model:tiny" and c.generator_version.startswith("tiny@")
            assert c.sampling == {"temperature": 1.0, "top_p": 0.95, "max_new_tokens": 12, "seed": 3, "n": 3,
                                  "do_sample": True, "sample": i}
            assert 0 < c.usage["completion_tokens"] <= 12
            # A random tiny model writes no fenced ModelNew: no code, and the reason is kept.
            assert c.code == "" and c.parse_error and isinstance(c.raw_output, str)
    # Same seed, same samples.
    again = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=1.0, top_p=0.95, max_new_tokens=12,
                                batch_size=2, seed=3).generate(problems, 3)
    assert [c.raw_output for cs in again for c in cs] == [c.raw_output for cs in out for c in cs]


def test_local_model_generator_greedy_repeats_one_generation(problems, tiny_model_dir):
    gen = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=0.0, max_new_tokens=8, batch_size=4)
    out = gen.generate(problems, 2)
    for cands in out:
        assert cands[0].raw_output == cands[1].raw_output and cands[0].sampling["do_sample"] is False


def test_local_model_generator_passes_transformers_generate_arguments_through(problems, tiny_model_dir):
    """evaluation.generation_kwargs reach generate() by transformers' own names (a static KV cache
    gives the same greedy answers as the default cache) and win over the generator's settings; a
    name generate() does not know is transformers' own error."""
    from autotriton.evaluation import make_generator
    from autotriton.evaluation.config import EvaluationConfig

    plain = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=0.0, max_new_tokens=6, batch_size=2)
    static = make_generator(EvaluationConfig(device="cpu", max_new_tokens=6, batch_size=2,
                                             generation_kwargs={"cache_implementation": "static", "max_new_tokens": 3}),
                            model_path=str(tiny_model_dir))
    seen, generate = [], static.model.generate
    static.model.generate = lambda **kw: seen.append(kw) or generate(**kw)
    short = static.generate(problems[:2], 1)
    assert seen[0]["cache_implementation"] == "static" and seen[0]["max_new_tokens"] == 3
    full = plain.generate(problems[:2], 1)
    for a, b in zip(short, full):
        assert 0 < a[0].usage["completion_tokens"] <= 3
        assert b[0].raw_output.startswith(a[0].raw_output)  # the same greedy tokens, cut at 3
    wrong = LocalModelGenerator(str(tiny_model_dir), device="cpu", max_new_tokens=2, generation_kwargs={"no_such_argument": 1})
    with pytest.raises(ValueError, match="no_such_argument"):
        wrong.generate(problems[:1], 1)


def test_local_model_generator_with_continuous_batching_answers_every_sample_in_order(problems, tiny_model_dir):
    """evaluation.continuous_batching: every sample is its own request to transformers'
    generate_batch; answers come back at their problem's place, as greedy generate() gives them."""
    padded = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=0.0, max_new_tokens=6, batch_size=2)
    paged = LocalModelGenerator(padded.model, tokenizer=padded.tokenizer, device="cpu", temperature=0.0, max_new_tokens=6,
                                continuous_batching=True)
    want = padded.generate(problems, 1)
    got = paged.generate(problems, 2)
    assert len(problems) >= 2 and [len(cs) for cs in got] == [2] * len(problems)
    for w, g in zip(want, got):
        assert g[0].problem_key == w[0].problem_key and g[0].sampling["continuous_batching"] is True
        assert g[0].usage["prompt_tokens"] == w[0].usage["prompt_tokens"]
        assert 0 < g[0].usage["completion_tokens"] <= 6
        assert g[0].raw_output == w[0].raw_output == g[1].raw_output  # greedy: the same answer


def test_continuous_batching_that_fails_requests_is_an_error_not_empty_answers(problems, tiny_model_dir, monkeypatch):
    """transformers' generate_batch reports a request that failed in its decoding thread as an output
    with `error` set and no tokens (the H200 image's transformers failed every one); the evaluation must
    stop with that error, not score hundreds of empty answers as a model's failures."""
    from transformers.generation.continuous_batching.requests import GenerationOutput, RequestStatus

    paged = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=0.0, max_new_tokens=4, continuous_batching=True)

    def failing(requests, **_kwargs):
        return {f"req_{i}": GenerationOutput(request_id=f"req_{i}", prompt_ids=list(r), error="Inplace update to inference tensor",
                                             status=RequestStatus.FAILED) for i, r in enumerate(requests)}

    monkeypatch.setattr(paged.model, "generate_batch", failing)
    with pytest.raises(RuntimeError, match="answered 0 of 2 requests: Inplace update"):
        paged.generate(problems[:2], 1)


def test_a_prompt_beyond_the_models_context_is_a_failed_sample_not_a_generation(problems, tiny_model_dir):
    """A problem whose prompt plus max_new_tokens exceed the model's positions is answered with failed
    samples that say so (prompt_too_long), without generating; the others are generated as usual, in order."""
    from autotriton.evaluation.metrics import outcome
    from autotriton.records import Problem

    huge = Problem(reference_source=problems[0].reference_source + "\n# " + "padding " * 5000, name="huge")
    gen = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=0.0, max_new_tokens=4, batch_size=4)
    assert gen.context_tokens == 4096
    seen = []
    generate = gen.model.generate

    def recording(**kwargs):
        seen.append(tuple(kwargs["input_ids"].shape))
        return generate(**kwargs)

    gen.model.generate = recording
    out = gen.generate([problems[0], huge, problems[1]], 2)
    assert [c.problem_key for c in out[1]] == [huge.key] * 2
    assert all(c.code == "" and c.parse_error.startswith("prompt_too_long") and "4096" in c.parse_error for c in out[1])
    assert outcome(out[1][0], None) == "parse_error"
    assert [cs[0].problem_key for cs in (out[0], out[2])] == [problems[0].key, problems[1].key]
    assert all(c.raw_output for cs in (out[0], out[2]) for c in cs)
    assert seen and all(rows <= 2 and length < 4096 for rows, length in seen)  # the huge prompt never reached generate()


def test_local_model_generator_batches_prompts_of_like_length_and_answers_in_input_order(problems, tiny_model_dir):
    """A long prompt is batched with the long ones (a batch pads to its longest prompt), and every
    answer still comes back at its problem's place, with that problem's own prompt length."""
    from autotriton.records import Problem

    long_one = Problem(reference_source=problems[0].reference_source + "\n# " + "padding " * 400, name="long")
    mixed = [problems[0], long_one, problems[1]]
    gen = LocalModelGenerator(str(tiny_model_dir), device="cpu", temperature=0.0, max_new_tokens=4, batch_size=2)
    prompt_tokens = [len(gen.tokenizer(gen.prompt_text(p), add_special_tokens=False)["input_ids"]) for p in mixed]
    shapes, generate = [], gen.model.generate

    def recording(**kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))
        return generate(**kwargs)

    gen.model.generate = recording
    out = gen.generate(mixed, 1)
    # the two short prompts together (padded to the longer of them), the long one alone
    assert shapes == [(2, max(prompt_tokens[0], prompt_tokens[2])), (1, prompt_tokens[1])]
    assert [cs[0].problem_key for cs in out] == [p.key for p in mixed]
    assert [cs[0].usage["prompt_tokens"] for cs in out] == prompt_tokens


def test_recorded_generator_serves_replay_records_and_counts_misses(problems, tmp_path):
    import json

    path = tmp_path / "teacher.jsonl"
    path.write_text(json.dumps({"problem_key": problems[0].key, "problem_name": problems[0].name, "teacher": "inductor",
                                "teacher_version": "torch-2.11", "prompt_version": "v1", "code": RELU_CORRECT,
                                "reasoning": "", "instruction": "", "usage": {}, "created": "2026-01-01"}) + "\n")
    gen = RecordedGenerator.from_jsonl([path])
    assert gen.name == "replay:inductor"
    relu, affine = gen.generate(problems, 2)
    assert relu[0].code == RELU_CORRECT and relu[0].generator == "inductor" and relu[1].parse_error == "no recorded output"
    assert all(c.parse_error == "no recorded output" for c in affine) and gen.misses == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"code": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        RecordedGenerator.from_jsonl([bad])


def test_default_instruction_is_the_description_and_a_failure_to_describe_is_an_error(monkeypatch):
    import autotriton.distillation as distillation
    from autotriton.records import Problem
    from validation_helpers import problem as judge_problem

    relu = Problem(reference_source=judge_problem("relu"), name="relu")
    assert default_instruction(relu) == distillation.describe_problem(relu.reference_source)[0]

    def broken(source, *args, **kwargs):
        raise RuntimeError("the describer broke")

    # No generic prompt in its place: the problem is named and the cause kept.
    import autotriton.describe as describe  # where describe_problem lives now (core)

    monkeypatch.setattr(describe, "describe_problem", broken)
    with pytest.raises(ValueError, match=r"'relu'.*describe_problem failed \(RuntimeError: the describer broke\)"):
        default_instruction(relu)

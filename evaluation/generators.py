"""Generators: what turns a problem into k candidate kernels, with the training prompt format.

Every generator prompts with `autotriton.prompting.build_messages` (the format models are trained
on) and parses with `autotriton.prompting.parse_completion` (strict: no fenced `ModelNew` block,
no code). It returns, per problem, `samples` Candidates carrying the generator's name and version,
the sampling parameters, the prompt version, the raw output and `parse_error` when no code came out.

* `LocalModelGenerator`: a Hugging Face causal LM (hub id, local folder, or a warehouse checkpoint's
  path) through its chat template; batched `generate`, k samples per prompt via
  `num_return_sequences`; greedy when temperature is 0 (then one generation, repeated k times).
* `OpenAIGenerator`: any OpenAI-compatible endpoint through the `openai` client: `n` samples per
  request (topped up with more requests where an endpoint returns fewer), temperature, top_p,
  retries with backoff (the client's own: 429, 5xx, timeouts, connection errors, Retry-After),
  bounded concurrency, the key from an environment variable.
* `RecordedGenerator`: candidates recorded elsewhere (teacher replay JSONL, warehouse rows), so a
  teacher's outputs can be scored like any model (the pipeline's upper bound).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from autotriton.describe import default_instruction, problem_instruction
from autotriton.prompting import PROMPT_VERSION, build_messages, parse_completion
from autotriton.records import Candidate, Problem

ProgressFn = Callable[[int], None]  # called with the number of problems just finished


@runtime_checkable
class Generator(Protocol):
    """Problems in, `samples` candidates per problem out (one list per problem, in problem order)."""

    name: str
    version: str

    def generate(self, problems: Sequence[Problem], samples: int, *, progress: ProgressFn | None = None) -> list[list[Candidate]]:
        ...


def candidate_from_output(problem: Problem, raw: str, *, generator: str, version: str, instruction: str,
                          sampling: dict[str, Any], usage: dict[str, Any] | None = None,
                          reasoning_content: str | None = None, error: str | None = None) -> Candidate:
    """A Candidate from one raw completion, parsed strictly; `error` marks a failed request."""
    if error is not None:
        return Candidate(problem_key=problem.key, code="", instruction=instruction, generator=generator,
                         generator_version=version, prompt_version=PROMPT_VERSION, sampling=sampling,
                         usage=usage or {}, raw_output=raw, parse_error=error)
    parsed = parse_completion(raw, reasoning_content)
    return Candidate(problem_key=problem.key, code=parsed.code or "", reasoning=parsed.reasoning, instruction=instruction,
                     generator=generator, generator_version=version, prompt_version=PROMPT_VERSION, sampling=sampling,
                     usage=usage or {}, raw_output=raw, parse_error=parsed.error)


# ----------------------------------------------------------------------------------------------
# Local Hugging Face model


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' was asked for but torch sees no CUDA GPU; use --device cpu.")
    return device


def _load_local(model: str, device: str) -> tuple[Any, Any, str]:
    """(model, tokenizer, version) for a hub id, a local folder, a GGUF file or a training alias."""
    from autotriton.models import load_model  # core: evaluation loads models exactly as training does

    path = Path(model)
    try:
        mdl, tok = load_model(model, device=device)
    except Exception as exc:  # ModelLoadError and friends: one clear message naming the model
        raise ValueError(str(exc)) from exc
    version = model
    cfg_file = path / "config.json"
    if cfg_file.is_file():
        from autotriton.hashing import content_key

        # A local folder's identity: its config and the files it holds (a retrained checkpoint differs).
        files = sorted((p.name, p.stat().st_size) for p in path.iterdir() if p.is_file())
        version = f"{path.name}@{content_key(cfg_file.read_text(encoding='utf-8'), files)}"
    return mdl, tok, version


class LocalModelGenerator:
    """Generates with a local Hugging Face causal LM (hub id, folder, or checkpoint path)."""

    def __init__(self, model: str | Any, *, tokenizer: Any = None, name: str | None = None, device: str = "auto",
                 temperature: float = 0.0, top_p: float = 1.0, max_new_tokens: int = 1024, batch_size: int = 4, seed: int = 0,
                 instruction_fn: Callable[[Problem], str] = problem_instruction, generation_kwargs: dict[str, Any] | None = None,
                 continuous_batching: bool = False):
        self.device = resolve_device(device)
        # transformers' own generate() arguments, e.g. {"cache_implementation": "static"} (a static
        # KV cache, which generate() compiles on a GPU); they win over the settings above.
        self.generation_kwargs = dict(generation_kwargs or {})
        # transformers' continuous batching (generate_batch: paged KV cache, a finished sequence's
        # slot goes to the next one) instead of padded batches that run to their longest answer
        self.continuous_batching = bool(continuous_batching)
        if isinstance(model, (str, Path)):
            self.model, self.tokenizer, self.version = _load_local(str(model), self.device)
            self.name = name or f"model:{Path(str(model)).name if Path(str(model)).exists() else model}"
        else:
            if tokenizer is None:
                raise ValueError("LocalModelGenerator: pass the tokenizer along with a model object.")
            self.model, self.tokenizer = model.to(self.device), tokenizer
            self.version = getattr(getattr(model, "config", None), "_name_or_path", "") or type(model).__name__
            self.name = name or f"model:{self.version}"
        self.model.eval()
        self.temperature, self.top_p = float(temperature), float(top_p)
        self.max_new_tokens, self.batch_size, self.seed = int(max_new_tokens), int(batch_size), int(seed)
        self.instruction_fn = instruction_fn
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"  # decoder-only: pad on the left so generation continues the prompt

    def prompt_text(self, problem: Problem) -> str:
        messages = build_messages(problem.reference_source, self.instruction_fn(problem))
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        # A base model without a chat template: plain role-prefixed turns.
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "

    def sampling(self, samples: int) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_new_tokens": self.max_new_tokens,
                "seed": self.seed, "n": samples, "do_sample": self.temperature > 0}

    @property
    def context_tokens(self) -> int | None:
        """The model's context (positions), when its config states one."""
        value = getattr(getattr(self.model, "config", None), "max_position_embeddings", None)
        return int(value) if isinstance(value, int) and value > 0 else None

    def context_overflow(self, prompt: str) -> str | None:
        """Why a prompt cannot be answered within the model's context, or None when it can."""
        context = self.context_tokens
        if context is None:
            return None
        n = len(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        if n + self.max_new_tokens <= context:
            return None
        return (f"prompt_too_long: the prompt's {n} tokens + max_new_tokens {self.max_new_tokens} exceed the model's "
                f"context of {context} tokens (not generated; a smaller evaluation.max_new_tokens leaves more room)")

    def _unanswered(self, problem: Problem, samples: int, why: str) -> list[Candidate]:
        instruction = self.instruction_fn(problem)
        return [candidate_from_output(problem, "", generator=self.name, version=self.version, instruction=instruction,
                                      sampling=dict(self.sampling(samples), sample=s), error=why) for s in range(samples)]

    def generate(self, problems: Sequence[Problem], samples: int, *, progress: ProgressFn | None = None) -> list[list[Candidate]]:
        import torch
        from transformers import set_seed

        set_seed(self.seed)
        do_sample = self.temperature > 0
        per_prompt = samples if do_sample else 1
        # Batches of prompts of like length: a batch is padded to its longest prompt and every
        # sequence in it pays attention over that length at each step, so one long package
        # problem among short ones would slow the whole batch. Answers come back in input order.
        prompts = [self.prompt_text(p) for p in problems]
        out: list[list[Candidate]] = [[] for _ in problems]
        # A prompt that leaves no room for max_new_tokens in the model's context is not generated
        # (past its positions a model writes noise, and one such prompt pads its whole batch to
        # the context: the seventh H200 run decoded 256 sequences at 8k positions for 9 minutes).
        fits = []
        for i, problem in enumerate(problems):
            overflow = self.context_overflow(prompts[i])
            if overflow:
                out[i] = self._unanswered(problem, samples, overflow)
            else:
                fits.append(i)
        if len(fits) < len(problems):
            if progress:
                progress(len(problems) - len(fits))
            answered = self.generate([problems[i] for i in fits], samples, progress=progress) if fits else []
            for i, cands in zip(fits, answered):
                out[i] = cands
            return out
        if self.continuous_batching:
            return self._generate_continuous(problems, prompts, samples, per_prompt, progress)
        order = sorted(range(len(problems)), key=lambda i: len(prompts[i]))
        for start in range(0, len(problems), self.batch_size):
            chosen = order[start:start + self.batch_size]
            batch = [problems[i] for i in chosen]
            texts = [prompts[i] for i in chosen]
            enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "num_return_sequences": per_prompt,
                                      "pad_token_id": self.tokenizer.pad_token_id, "do_sample": do_sample}
            if do_sample:
                kwargs.update(temperature=self.temperature, top_p=self.top_p)
            else:
                kwargs.update(temperature=None, top_p=None, top_k=None)  # silence sampling defaults of generation_config
            kwargs.update(self.generation_kwargs)
            with torch.inference_mode():
                generated = self.model.generate(**enc, **kwargs)
            new_tokens = generated[:, enc["input_ids"].shape[1]:]
            decoded = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            for i, problem in enumerate(batch):
                instruction = self.instruction_fn(problem)
                cands = []
                for s in range(samples):
                    row = i * per_prompt + (s if do_sample else 0)
                    n_tokens = int((new_tokens[row] != self.tokenizer.pad_token_id).sum())
                    sampling = dict(self.sampling(samples), sample=s)
                    cands.append(candidate_from_output(problem, decoded[row], generator=self.name, version=self.version,
                                                       instruction=instruction, sampling=sampling,
                                                       usage={"prompt_tokens": int(enc["attention_mask"][i].sum()),
                                                              "completion_tokens": n_tokens}))
                out[chosen[i]] = cands
            if progress:
                progress(len(batch))
        return out


    def _generate_continuous(self, problems: Sequence[Problem], prompts: list[str], samples: int, per_prompt: int,
                             progress: ProgressFn | None) -> list[list[Candidate]]:
        """Every problem's samples in one `generate_batch` call (each sample its own request)."""
        from transformers import GenerationConfig

        ids = [self.tokenizer(text, add_special_tokens=False)["input_ids"] for text in prompts]
        do_sample = self.temperature > 0
        settings: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "do_sample": do_sample,
                                    "pad_token_id": self.tokenizer.pad_token_id,
                                    "eos_token_id": self.model.generation_config.eos_token_id or self.tokenizer.eos_token_id}
        if do_sample:
            settings.update(temperature=self.temperature, top_p=self.top_p)
        settings.update(self.generation_kwargs)
        requests = [row for row in ids for _ in range(per_prompt)]
        # generate_batch is no_grad itself and decodes on a thread of its own: under inference_mode
        # here, transformers before 5.2x (the H200 image's 5.17) allocated its input buffers as
        # inference tensors that the thread, outside inference mode, may not update in place, and
        # every request failed (RESULTS.md, seventh H200 run).
        outputs = list(self.model.generate_batch(requests, generation_config=GenerationConfig(**settings),
                                                 progress_bar=False).values())
        failed = [o for o in outputs if getattr(o, "error", None)]
        if len(outputs) != len(requests) or failed:
            why = f": {str(failed[0].error)[:300]}" if failed else ""
            raise RuntimeError(f"continuous batching answered {len(outputs) - len(failed)} of {len(requests)} requests{why} "
                               "(transformers' log names the failed ones); evaluate without evaluation.continuous_batching")
        out: list[list[Candidate]] = []
        for i, problem in enumerate(problems):
            instruction = self.instruction_fn(problem)
            cands = []
            for s in range(samples):
                result = outputs[i * per_prompt + (s if do_sample else 0)]
                tokens = list(result.generated_tokens)
                cands.append(candidate_from_output(
                    problem, self.tokenizer.decode(tokens, skip_special_tokens=True), generator=self.name,
                    version=self.version, instruction=instruction,
                    sampling=dict(self.sampling(samples), sample=s, continuous_batching=True),
                    usage={"prompt_tokens": len(ids[i]), "completion_tokens": len(tokens)}))
            out.append(cands)
        if progress:
            progress(len(problems))
        return out


# ----------------------------------------------------------------------------------------------
# OpenAI-compatible endpoint


class OpenAIGenerator:
    """Samples from any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, DeepSeek, OpenAI, ...)."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str = "OPENAI_API_KEY", temperature: float = 0.0,
                 top_p: float = 1.0, max_tokens: int = 1024, timeout_s: float = 600.0, max_retries: int = 4,
                 concurrency: int = 4, seed: int | None = None, instruction_fn: Callable[[Problem], str] = problem_instruction):
        import openai

        if not base_url:
            raise ValueError("OpenAIGenerator: an endpoint base URL is needed (--endpoint http://HOST:PORT/v1).")
        if not model:
            raise ValueError("OpenAIGenerator: the model name at the endpoint is needed (--model NAME).")
        # Local servers accept any key; a real service answers 401, which names the variable below.
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env) or "EMPTY"
        self.client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s, max_retries=max_retries)
        self.base_url, self.model = base_url, model
        self.name, self.version = f"openai:{model}", model
        self.temperature, self.top_p, self.max_tokens = float(temperature), float(top_p), int(max_tokens)
        self.concurrency, self.seed = int(concurrency), seed
        self.instruction_fn = instruction_fn
        self.requests = 0
        self.failed_requests = 0

    def sampling(self, samples: int) -> dict[str, Any]:
        return {"temperature": self.temperature, "top_p": self.top_p, "max_tokens": self.max_tokens, "n": samples,
                "seed": self.seed}

    def _request(self, messages: list[dict[str, str]], n: int) -> Any:
        self.requests += 1
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "n": n, "temperature": self.temperature,
                                  "top_p": self.top_p, "max_tokens": self.max_tokens}
        if self.seed is not None:
            kwargs["seed"] = self.seed
        return self.client.chat.completions.create(**kwargs)

    def _one_problem(self, problem: Problem, samples: int) -> list[Candidate]:
        import openai

        instruction = self.instruction_fn(problem)
        messages = build_messages(problem.reference_source, instruction)
        cands: list[Candidate] = []
        attempts = 0
        while len(cands) < samples and attempts < samples:
            attempts += 1
            want = samples - len(cands)
            sampling = self.sampling(samples)
            try:
                response = self._request(messages, want)
            except openai.AuthenticationError as exc:
                raise RuntimeError(f"{self.base_url}: the endpoint refused the key (401). Put a valid key in "
                                   f"${self.api_key_env}.") from exc
            except openai.NotFoundError as exc:
                raise RuntimeError(f"{self.base_url}: model {self.model!r} not found at the endpoint (404); check --model.") from exc
            except (openai.APIError, openai.APIConnectionError) as exc:
                # Retries are exhausted: record the failure as samples with no code, counted in the report.
                self.failed_requests += 1
                message = f"request failed after retries: {type(exc).__name__}: {str(exc)[:300]}"
                for s in range(len(cands), samples):
                    cands.append(candidate_from_output(problem, "", generator=self.name, version=self.version,
                                                       instruction=instruction, sampling=dict(sampling, sample=s),
                                                       error=message))
                break
            self.version = getattr(response, "model", None) or self.version
            choices = list(response.choices or [])[:want]
            usage = getattr(response, "usage", None)
            per_choice = {
                "prompt_tokens": getattr(usage, "prompt_tokens", None),
                "completion_tokens": (getattr(usage, "completion_tokens", 0) or 0) // max(1, len(choices)) if usage else None,
            }
            for choice in choices:
                message = choice.message
                reasoning = getattr(message, "reasoning_content", None)
                if reasoning is None and getattr(message, "model_extra", None):
                    reasoning = message.model_extra.get("reasoning_content")
                s = len(cands)
                cands.append(candidate_from_output(problem, message.content or "", generator=self.name, version=self.version,
                                                   instruction=instruction, sampling=dict(sampling, sample=s,
                                                                                          finish_reason=choice.finish_reason),
                                                   usage=per_choice, reasoning_content=reasoning))
        while len(cands) < samples:  # an endpoint that keeps returning no choices
            cands.append(candidate_from_output(problem, "", generator=self.name, version=self.version, instruction=instruction,
                                               sampling=dict(self.sampling(samples), sample=len(cands)),
                                               error="the endpoint returned no choices"))
        return cands

    def generate(self, problems: Sequence[Problem], samples: int, *, progress: ProgressFn | None = None) -> list[list[Candidate]]:
        results: list[list[Candidate] | None] = [None] * len(problems)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self._one_problem, p, samples): i for i, p in enumerate(problems)}
            from concurrent.futures import as_completed

            for future in as_completed(futures):
                results[futures[future]] = future.result()
                if progress:
                    progress(1)
        return [r or [] for r in results]


# ----------------------------------------------------------------------------------------------
# Recorded candidates (teacher outputs, earlier runs)


class RecordedGenerator:
    """Serves candidates recorded elsewhere; a problem with fewer recordings than `samples` gets
    samples with no code (parse_error 'no recorded output'), so a missing output counts as a failure."""

    def __init__(self, candidates: Iterable[Candidate], *, name: str = "recorded", version: str = "",
                 names: dict[str, str] | None = None):
        self.name, self.version = name, version
        self.by_key: dict[str, list[Candidate]] = defaultdict(list)
        self.by_name: dict[str, list[Candidate]] = defaultdict(list)
        for cand in candidates:
            self.by_key[cand.problem_key].append(cand)
            if names and cand.problem_key in names:
                self.by_name[names[cand.problem_key]].append(cand)
        self.misses = 0

    @classmethod
    def from_jsonl(cls, paths: Sequence[str | Path], *, name: str | None = None) -> "RecordedGenerator":
        """Replay JSONL (distillation's format: problem_key, problem_name, teacher, teacher_version,
        prompt_version, code, reasoning, instruction, usage, created), one or more files."""
        from autotriton.evaluation.suite_entries import parse_json_lines

        names: dict[str, str] = {}
        teachers: set[str] = set()

        def candidate(row: dict[str, Any]) -> Candidate:
            key, code = row["problem_key"], row["code"]
            teachers.add(str(row.get("teacher", "")))
            names[key] = str(row.get("problem_name") or "")
            return Candidate(problem_key=key, code=code, reasoning=row.get("reasoning") or "",
                             instruction=row.get("instruction") or "", generator=str(row.get("teacher", "")),
                             generator_version=str(row.get("teacher_version", "")),
                             prompt_version=str(row.get("prompt_version", "")), usage=row.get("usage") or {})

        cands = parse_json_lines(paths, candidate, "a replay record", "each line needs problem_key and code.")
        label = name or ("replay:" + "+".join(sorted(t for t in teachers if t)) if teachers else "replay")
        return cls(cands, name=label, version=",".join(str(p) for p in paths), names=names)

    def generate(self, problems: Sequence[Problem], samples: int, *, progress: ProgressFn | None = None) -> list[list[Candidate]]:
        out = []
        for problem in problems:
            have = list(self.by_key.get(problem.key) or self.by_name.get(problem.name) or [])
            cands = []
            for s in range(samples):
                if s < len(have):
                    c = have[s]
                    # Re-key onto this problem (a shrunk problem has its own key) and keep the recording's data.
                    cands.append(Candidate(problem_key=problem.key, code=c.code, reasoning=c.reasoning, instruction=c.instruction,
                                           generator=c.generator or self.name, generator_version=c.generator_version,
                                           prompt_version=c.prompt_version, sampling=dict(c.sampling, sample=s), usage=c.usage,
                                           raw_output=c.raw_output, parse_error=c.parse_error if not c.code else None))
                else:
                    self.misses += 1
                    cands.append(Candidate(problem_key=problem.key, code="", generator=self.name, generator_version=self.version,
                                           prompt_version=PROMPT_VERSION, sampling={"sample": s}, parse_error="no recorded output"))
            out.append(cands)
            if progress:
                progress(1)
        return out


def make_generator(config: Any, *, model_path: str | None = None, name: str | None = None) -> Generator:
    """The generator an EvaluationConfig asks for (`model_path` overrides config.model for local models;
    `name` overrides the generator's label, e.g. for a warehouse checkpoint)."""
    kind = config.generator
    if kind == "auto":
        kind = "openai" if config.endpoint else "local"
    if kind == "openai":
        return OpenAIGenerator(config.endpoint, config.model, api_key_env=config.api_key_env, temperature=config.temperature,
                               top_p=config.top_p, max_tokens=config.max_new_tokens, timeout_s=config.request_timeout_s,
                               max_retries=config.max_retries, concurrency=config.concurrency, seed=config.seed)
    model = model_path or config.model
    if not model:
        raise ValueError("no model to evaluate: pass --model (HF id, local path or checkpoint key) or --endpoint URL --model NAME.")
    return LocalModelGenerator(model, name=name, device=config.device, temperature=config.temperature, top_p=config.top_p,
                               max_new_tokens=config.max_new_tokens, batch_size=config.batch_size, seed=config.seed,
                               generation_kwargs=config.generation_kwargs, continuous_batching=config.continuous_batching)


__all__ = ["Generator", "LocalModelGenerator", "OpenAIGenerator", "RecordedGenerator", "candidate_from_output",
           "default_instruction", "make_generator"]

"""The LLM teacher: any OpenAI-compatible chat endpoint (vLLM, SGLang, Ollama, hosted APIs).

Prompts come from `autotriton.prompting` (the format the trained model later sees). The reply's
reasoning is taken from the message's `reasoning_content` (DeepSeek, vLLM reasoning parsers) or
`reasoning` field, else from a `<think>` block; the code is the strictly parsed ```python block
defining `ModelNew`. Requests run concurrently up to `concurrency`, are retried with exponential
backoff and jitter on 429, 5xx, timeouts and connection errors (a server's Retry-After wins,
capped by `backoff_max_s`), and every answer is appended to a response cache keyed by
(model, messages, sampling parameters), so a rerun of the same prompts sends no request.

The API key is read from the environment variable named in the config, at call time; it is
never stored in a candidate, the cache or the warehouse.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field

from autotriton.distillation.cache import ResponseCache, replay_record, request_key
from autotriton.distillation.describe import describe_problem
from autotriton.distillation.teacher import RepairRequest, TeacherSpec, candidate_from_completion
from autotriton.prompting import PROMPT_VERSION, build_messages
from autotriton.records import Candidate, Problem

if TYPE_CHECKING:
    # The openai client is imported on first request (the registry imports this file whenever a
    # config is read); config.py composes DistillConfig from the teachers' settings.
    from openai import AsyncOpenAI

    from autotriton.distillation.config import DistillConfig

__all__ = ["OpenAITeacher", "OpenAISettings", "TEACHER", "TeacherError", "repair_messages", "EXPLAIN_PROMPT_VERSION"]

EXPLAIN_PROMPT_VERSION = "explain-v1"
_T = TypeVar("_T")


class TeacherError(RuntimeError):
    """The endpoint refuses every request (bad key, unknown model, wrong URL): the run cannot go on."""


def _assistant_turn(candidate: Candidate) -> str:
    """What the teacher said last time, as the conversation shows it: the code it wrote (its
    reasoning is dropped to keep the context short), or its raw text when nothing parsed."""
    if candidate.code:
        return f"```python\n{candidate.code.strip()}\n```"
    raw = candidate.raw_output or ""
    return raw if len(raw) <= 6000 else "...\n" + raw[-6000:]


def repair_messages(request: RepairRequest) -> list[dict[str, str]]:
    """The multi-turn conversation for a repair: the original prompt, then for every earlier
    attempt the teacher's answer and the validator's feedback on it."""
    first = request.history[0].candidate
    messages = build_messages(request.problem.reference_source, first.instruction or describe_problem(request.problem.reference_source)[0])
    for turn in request.history:
        messages.append({"role": "assistant", "content": _assistant_turn(turn.candidate)})
        messages.append({"role": "user", "content": turn.feedback})
    return messages


def _retry_after_s(exc: Exception) -> float | None:
    """Seconds the server asked us to wait (Retry-After / retry-after-ms), if it said."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def _retryable(exc: Exception) -> bool:
    import openai

    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def _fatal(exc: Exception) -> bool:
    """Errors that every further request would repeat: stop instead of failing each one."""
    import openai

    return isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError))


def _extra(obj: Any, *names: str) -> str | None:
    """A non-standard field (reasoning_content, reasoning) of a message or delta, when present."""
    for name in names:
        value = getattr(obj, name, None)
        if value is None:
            extra = getattr(obj, "model_extra", None) or {}
            value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _run_sync(make: Callable[[], Awaitable[_T]]) -> _T:
    """Run a coroutine to completion from sync code, also when this thread already runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())  # type: ignore[arg-type]
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="openai-teacher")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class OpenAITeacher:
    """Distils with an LLM behind an OpenAI-compatible `/v1/chat/completions` endpoint."""

    def __init__(self, config: DistillConfig | None = None, *, api_key: str | None = None, progress: Callable[[int], None] | None = None):
        if config is None:
            from autotriton.distillation.config import DistillConfig

            config = DistillConfig(teacher="openai")
        self.config = config
        self.name = f"openai:{self.config.model}"
        self.version = self.config.model
        self.counters: Counter = Counter()
        self.failures: dict[str, str] = {}  # problem key -> why its last request failed
        self.usage_totals: Counter = Counter()  # tokens and cost of requests actually sent
        self._api_key = api_key
        self.on_output = progress  # called with 1 after each answer (distill() points it at its progress bar)
        self.cache = ResponseCache(self.config.cache_dir, "openai", self.config.model) if self.config.use_cache else None

    # ---- the Teacher protocol -------------------------------------------------------------
    def generate(self, problems: list[Problem], samples: int) -> list[Candidate]:
        jobs = []
        for problem in problems:
            instruction = describe_problem(problem.reference_source)[0]
            messages = build_messages(problem.reference_source, instruction)
            for sample in range(samples):
                jobs.append((problem, messages, instruction, sample, 0, None))
        return _run_sync(lambda: self._candidates(jobs))

    def repair(self, requests: list[RepairRequest]) -> list[Candidate]:
        jobs = []
        for request in requests:
            parent = request.parent
            jobs.append((
                request.problem, repair_messages(request), request.history[0].candidate.instruction,
                int(parent.sampling.get("sample", 0)), request.repair_round, parent.key,
            ))
        return _run_sync(lambda: self._candidates(jobs))

    def explain(self, problem: Problem, code: str) -> tuple[str, str]:
        """Instruction and reasoning for a pair someone else wrote (e.g. the Inductor teacher)."""
        return self.explain_many([(problem, code)])[0]

    def explain_many(self, items: list[tuple[Problem, str]]) -> list[tuple[str, str]]:
        """`explain` for many pairs at once (concurrent); a failed or unparsable answer falls back
        to the deterministic describe_problem text, so every pair gets an explanation."""
        return _run_sync(lambda: self._explain_all(items))

    # ---- internals ---------------------------------------------------------------------------
    def _sampling(self, sample: int) -> dict[str, Any]:
        c = self.config
        return {"temperature": c.temperature, "top_p": c.top_p, "max_tokens": c.max_tokens, "seed": c.seed + sample, "sample": sample}

    def _client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        key = self._api_key if self._api_key is not None else os.environ.get(self.config.api_key_env, "")
        # Local servers (vLLM, Ollama) accept any key; the client insists on a non-empty one.
        return AsyncOpenAI(base_url=self.config.base_url, api_key=key or "EMPTY", timeout=self.config.request_timeout_s, max_retries=0)

    async def _candidates(self, jobs: list[tuple]) -> list[Candidate]:
        semaphore = asyncio.Semaphore(self.config.concurrency)
        async with self._client() as client:
            tasks = [self._one(client, semaphore, *job) for job in jobs]
            results = await asyncio.gather(*tasks, return_exceptions=True)
        out: list[Candidate] = []
        for result in results:
            if isinstance(result, BaseException):  # TeacherError (endpoint refuses everything) or a bug
                raise result
            if result is not None:
                out.append(result)
        return out

    async def _one(self, client: AsyncOpenAI, semaphore: asyncio.Semaphore, problem: Problem, messages: list[dict[str, str]],
                   instruction: str, sample: int, repair_round: int, parent_key: str | None) -> Candidate | None:
        sampling = self._sampling(sample)
        response = await self._complete(client, semaphore, messages, sampling, problem=problem, instruction=instruction,
                                         repair_round=repair_round, parent_key=parent_key)
        if self.on_output:
            self.on_output(1)
        if response is None:
            return None
        return candidate_from_completion(
            problem, response["raw_output"], reasoning_content=response.get("reasoning_content"),
            generator=self.name, generator_version=response.get("teacher_version") or self.version,
            instruction=instruction, sampling=sampling, usage=response.get("usage") or {},
            repair_round=repair_round, parent_key=parent_key, finish_reason=response.get("finish_reason"),
        )

    def _usage(self, usage: Any) -> dict[str, Any]:
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0) if usage is not None else 0
        completion = int(getattr(usage, "completion_tokens", 0) or 0) if usage is not None else 0
        out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
        c = self.config
        if c.price_prompt_per_m or c.price_completion_per_m:
            out["cost_usd"] = round(prompt * c.price_prompt_per_m / 1e6 + completion * c.price_completion_per_m / 1e6, 8)
        return out

    async def _complete(self, client: AsyncOpenAI, semaphore: asyncio.Semaphore, messages: list[dict[str, str]],
                        sampling: dict[str, Any], *, problem: Problem, instruction: str, repair_round: int = 0,
                        parent_key: str | None = None, prompt_version: str = PROMPT_VERSION) -> dict[str, Any] | None:
        """One chat completion, from the cache or the endpoint (with retries); None when it failed for good."""
        key = request_key(self.config.model, messages, sampling)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.counters["cache_hits"] += 1
                return hit
        attempt = 0
        while True:
            try:
                async with semaphore:
                    self.counters["requests"] += 1
                    text, reasoning, finish, usage, model = await self._request(client, messages, sampling)
                break
            except Exception as exc:  # noqa: BLE001 - classified below
                if _fatal(exc):
                    raise TeacherError(
                        f"{self.config.base_url}: the endpoint refused the request ({type(exc).__name__}: {exc}). "
                        f"Check distill.base_url, distill.model ({self.config.model!r}) and the key in ${self.config.api_key_env}."
                    ) from exc
                if not _retryable(exc) or attempt >= self.config.max_retries:
                    self.counters["request_failures"] += 1
                    self.counters[f"request_failure:{type(exc).__name__}"] += 1
                    self.failures[problem.key] = f"request_failed: {type(exc).__name__} after {attempt + 1} attempt(s): {exc}"[:500]
                    return None
                attempt += 1
                self.counters["retries"] += 1
                delay = _retry_after_s(exc)
                if delay is None:
                    delay = self.config.backoff_base_s * (2 ** (attempt - 1))
                    delay += random.uniform(0, delay * 0.25)  # jitter: spread out synchronised retries
                await asyncio.sleep(min(delay, self.config.backoff_max_s))
        usage_dict = self._usage(usage)
        self.usage_totals["prompt_tokens"] += usage_dict["prompt_tokens"]
        self.usage_totals["completion_tokens"] += usage_dict["completion_tokens"]
        if "cost_usd" in usage_dict:
            self.usage_totals["cost_usd"] += usage_dict["cost_usd"]
        parsed = candidate_from_completion(problem, text, reasoning_content=reasoning, generator=self.name,
                                           generator_version=model or self.version, instruction=instruction, finish_reason=finish)
        record = replay_record(
            problem_key=problem.key, problem_name=problem.name, teacher=self.name, teacher_version=model or self.version,
            prompt_version=prompt_version, code=parsed.code, reasoning=parsed.reasoning, instruction=instruction, usage=usage_dict,
            request_key=key, model=self.config.model, sampling=sampling, raw_output=text, reasoning_content=reasoning,
            finish_reason=finish, parse_error=parsed.parse_error, repair_round=repair_round, parent_key=parent_key,
        )
        if self.cache is not None:
            self.cache.put(record)
        return record

    async def _request(self, client: AsyncOpenAI, messages: list[dict[str, str]], sampling: dict[str, Any]):
        kwargs = dict(model=self.config.model, messages=messages, temperature=sampling["temperature"], top_p=sampling["top_p"],
                      max_tokens=sampling["max_tokens"], seed=sampling["seed"])
        if not self.config.stream:
            response = await client.chat.completions.create(**kwargs)
            if not response.choices:
                return "", None, None, response.usage, response.model
            choice = response.choices[0]
            message = choice.message
            return (message.content or "", _extra(message, "reasoning_content", "reasoning"), choice.finish_reason,
                    response.usage, response.model)
        stream = await client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
        text: list[str] = []
        reasoning: list[str] = []
        finish = usage = model = None
        async for chunk in stream:
            model = chunk.model or model
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None:
                    if delta.content:
                        text.append(delta.content)
                    piece = _extra(delta, "reasoning_content", "reasoning")
                    if piece:
                        reasoning.append(piece)
                if choice.finish_reason:
                    finish = choice.finish_reason
        return "".join(text), "".join(reasoning) or None, finish, usage, model

    async def _explain_all(self, items: list[tuple[Problem, str]]) -> list[tuple[str, str]]:
        semaphore = asyncio.Semaphore(self.config.concurrency)
        async with self._client() as client:
            return list(await asyncio.gather(*[self._explain_one(client, semaphore, p, code) for p, code in items]))

    async def _explain_one(self, client: AsyncOpenAI, semaphore: asyncio.Semaphore, problem: Problem, code: str) -> tuple[str, str]:
        fallback = describe_problem(problem.reference_source, code)
        messages = explain_messages(problem.reference_source, code)
        sampling = self._sampling(0)
        response = await self._complete(client, semaphore, messages, sampling, problem=problem, instruction="",
                                        prompt_version=EXPLAIN_PROMPT_VERSION)
        if response is None:
            return fallback
        parsed = parse_explanation(response.get("raw_output", ""))
        if parsed is None:
            self.counters["explain_unparsed"] += 1
            return fallback
        return parsed


def explain_messages(reference_source: str, code: str) -> list[dict[str, str]]:
    """Ask for the instruction a user would give and the reasoning an engineer would write."""
    return [
        {"role": "system", "content": "You are an expert GPU kernel engineer who explains Triton kernels precisely and briefly."},
        {"role": "user", "content": (
            "Below are a PyTorch module `Model` and a Triton implementation `ModelNew` of it.\n\n"
            f"PyTorch reference:\n```python\n{reference_source.strip()}\n```\n\n"
            f"Triton implementation:\n```python\n{code.strip()}\n```\n\n"
            "Write two things:\n"
            "1. Inside <instruction></instruction>: the task as a user would state it (one to three sentences: what to "
            "implement in Triton, the operations and input shapes). Do not mention this implementation.\n"
            "2. Inside <reasoning></reasoning>: the step-by-step reasoning an engineer would write BEFORE writing this "
            "implementation: which operations fuse into which kernel, how work is split over programs (grid, block sizes), "
            "what each kernel loads, computes and stores, masking of edges, numerics (accumulation dtype)."
        )},
    ]


_TAG = {name: re.compile(rf"<{name}>(.*?)</{name}>", re.DOTALL) for name in ("instruction", "reasoning")}


def parse_explanation(text: str) -> tuple[str, str] | None:
    """(instruction, reasoning) from an explain answer, or None when either tag is missing or empty."""
    found = {}
    for name, pattern in _TAG.items():
        match = pattern.search(text or "")
        if not match or not match.group(1).strip():
            return None
        found[name] = match.group(1).strip()
    return found["instruction"], found["reasoning"]


class OpenAISettings(BaseModel):
    """The openai teacher's `distill.*` fields (also the endpoint of `distill.explain_with_llm`)."""

    base_url: str = Field("http://127.0.0.1:8000/v1", description="OpenAI-compatible endpoint (openai teacher)")
    model: str = Field("deepseek-reasoner", description="model name at the endpoint")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the endpoint's key (never stored)")
    temperature: float = Field(0.6, ge=0)
    top_p: float = Field(0.95, gt=0, le=1)
    max_tokens: int = Field(8192, ge=1)
    seed: int = Field(0, description="base sampling seed sent to the endpoint; sample i of a problem uses seed + i")
    concurrency: int = Field(4, ge=1, description="requests in flight at once")
    stream: bool = Field(False, description="stream completions (SSE); usage is then requested with stream_options.include_usage")
    request_timeout_s: float = Field(600.0, gt=0, description="client timeout of one request; a timed-out request is retried")
    max_retries: int = Field(5, ge=0, description="retries of one request on 429, 5xx, timeouts and connection errors")
    backoff_base_s: float = Field(1.0, ge=0, description="first retry waits about this long, doubling each retry (plus jitter), unless the server sends Retry-After")
    backoff_max_s: float = Field(60.0, ge=0, description="longest wait between retries (also caps Retry-After)")
    price_prompt_per_m: float = Field(0.0, ge=0, description="USD per 1M prompt tokens (0 = cost unknown)")
    price_completion_per_m: float = Field(0.0, ge=0, description="USD per 1M completion tokens (0 = cost unknown)")
    cache_dir: str = Field(".autotriton/teacher_cache", description="response cache (JSONL, one file per teacher/model); reruns with the same prompts cost nothing")
    use_cache: bool = Field(True, description="read and write the response cache")


TEACHER = TeacherSpec(name="openai", description="any OpenAI-compatible endpoint (distill.base_url, distill.model, key in $OPENAI_API_KEY)",
                      build=OpenAITeacher, settings=OpenAISettings, network=True, writes_words=True)

"""Shared pieces of the evaluation tests: a tiny suite, kernels (correct, cheating, garbage), and a
local OpenAI-compatible chat-completions server on 127.0.0.1 that the real `openai` client talks to."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from kernel_fixtures import elementwise_answer, elementwise_reference, torch_fallback
from local_http import LocalChatEndpoint, send_json

# ------------------------------------------------------------------------------------------------
# A tiny suite: two elementwise problems small enough for the Triton interpreter.

RELU_PROBLEM = elementwise_reference("torch.relu(x)", n="8, 32", doc="Tiny ReLU.")
AFFINE_PROBLEM = elementwise_reference("x * 2.0 + 1.0", n=200, doc="Tiny affine map: 2 x + 1.")

SUITE_ROWS = [
    {"id": "tiny/level1/1", "level": 1, "problem_id": 1, "name": "tiny_relu", "source": RELU_PROBLEM,
     "origin": "autotriton tests", "license": "Apache-2.0"},
    {"id": "tiny/level2/1", "level": 2, "problem_id": 1, "name": "tiny_affine", "source": AFFINE_PROBLEM,
     "origin": "autotriton tests", "license": "Apache-2.0"},
]


def write_suite(path: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in (rows or SUITE_ROWS)), encoding="utf-8")
    return path


RELU_CORRECT = elementwise_answer("relu", "tl.maximum(x, 0.0)", block=128)
AFFINE_CORRECT = elementwise_answer("affine", "x * 2.0 + 1.0", block=64)

# PyTorch fallbacks: a Triton kernel runs (a copy), but the real computation is torch's.
RELU_CHEAT = torch_fallback("torch.relu(out)", block=128)
AFFINE_CHEAT = torch_fallback("torch.add(torch.mul(out, 2.0), 1.0)", block=64)

GARBAGE = "I am not sure how to write this kernel. Maybe use CUDA?"
TRUNCATED = "<think>\nStart with a kernel.\n</think>\n\n```python\nimport triton\n@triton.jit\ndef k(x_ptr"


def completion(code: str, reasoning: str = "Elementwise: one program per block, masked loads and stores.") -> str:
    """An assistant turn in the training format: <think> reasoning, then one fenced block."""
    return f"<think>\n{reasoning}\n</think>\n\n```python\n{code.strip()}\n```"


# ------------------------------------------------------------------------------------------------
# A local OpenAI-compatible server


class ChatServer(LocalChatEndpoint):
    """POST /v1/chat/completions on 127.0.0.1, speaking the real wire format.

    `script` maps a marker (a string found in the user message, e.g. the problem's docstring) to
    the list of completions served for that problem, in order across requests (so a top-up request
    continues where the last one stopped). `max_choices` caps choices per response (endpoints that
    ignore n); `rate_limit_first` answers the first request with 429 + Retry-After; `fail_markers`
    always answer 500 for those problems.
    """

    def __init__(self, script: dict[str, list[str]], *, max_choices: int | None = None, rate_limit_first: bool = False,
                 fail_markers: tuple[str, ...] = (), model: str = "test-kernel-model", reasoning_content: bool = False):
        self.script = script
        self.max_choices = max_choices
        self.rate_limit_first = rate_limit_first
        self.fail_markers = fail_markers
        self.model = model
        self.reasoning_content = reasoning_content
        self.requests: list[dict[str, Any]] = []
        self.served: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def respond(self, handler: Any, body: dict[str, Any], headers: dict[str, str]) -> None:
        send_json(handler, *self.answer(body, headers))

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any], dict[str, str]] | tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append({"body": body, "headers": headers})
            first = len(self.requests) == 1
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"model {body.get('model')!r} not found", "type": "invalid_request_error"}}
        if first and self.rate_limit_first:
            return 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "0"}
        user = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
        marker = next((m for m in self.script if m in user), None)
        if marker is None:
            return 400, {"error": {"message": "unknown problem", "type": "invalid_request_error"}}
        if marker in self.fail_markers:
            return 500, {"error": {"message": "internal error", "type": "server_error"}}
        n = int(body.get("n") or 1)
        if self.max_choices:
            n = min(n, self.max_choices)
        choices = []
        with self.lock:
            for i in range(n):
                texts = self.script[marker]
                text = texts[self.served[marker] % len(texts)]
                self.served[marker] += 1
                message: dict[str, Any] = {"role": "assistant", "content": text}
                if self.reasoning_content:
                    message["reasoning_content"] = "Reasoning delivered out of band."
                choices.append({"index": i, "message": message, "finish_reason": "stop", "logprobs": None})
        usage = {"prompt_tokens": len(user) // 4, "completion_tokens": sum(len(c["message"]["content"]) // 4 for c in choices)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return 200, {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
                     "model": self.model, "choices": choices, "usage": usage}

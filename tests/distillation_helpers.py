"""A local OpenAI-compatible server for the distillation tests, and tiny problems/kernels.

`ChatServer` speaks the real wire protocol of POST /v1/chat/completions on 127.0.0.1: a JSON
body with streaming off, Server-Sent Events (`data: {chunk}` lines, then `data: [DONE]`) with
streaming on, HTTP errors with an OpenAI error body and headers such as Retry-After. It serves
a script of recorded responses in order, records every request body, and counts requests, so
tests drive the real `openai` client against it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernel_fixtures import elementwise_answer, elementwise_reference
from local_http import LocalChatEndpoint, send_json

RELU_PROBLEM = elementwise_reference("torch.relu(x)", n="4, 37", doc="ReLU.")

RELU_KERNEL = elementwise_answer("relu", "tl.maximum(x, 0.0)", block=64)

# The same kernel with a typo a model really makes: an attribute triton.language does not have.
RELU_KERNEL_BROKEN = RELU_KERNEL.replace("tl.maximum(x, 0.0)", "tl.relu_max(x, 0.0)")

# Right syntax and launch, wrong maths: the validator answers "incorrect".
RELU_KERNEL_WRONG = RELU_KERNEL.replace("tl.maximum(x, 0.0)", "tl.minimum(x, 0.0)")


def answer(code: str, reasoning: str = "ReLU is elementwise: one flat kernel, masked tail.", think: bool = True) -> str:
    """A completion in the house format: <think> reasoning, then the code block."""
    if think:
        return f"<think>\n{reasoning}\n</think>\n\n```python\n{code}```\n"
    return f"{reasoning}\n\n```python\n{code}```\n"


@dataclass
class Reply:
    """One scripted response. `status` != 200 sends an OpenAI error body (with `headers`)."""

    content: str = ""
    reasoning_content: str | None = None
    finish_reason: str = "stop"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering (to provoke client timeouts)
    prompt_tokens: int = 100
    completion_tokens: int = 50
    model: str | None = None


class ChatServer(LocalChatEndpoint):
    """Run with `with ChatServer(script) as server:`; `server.base_url` goes to the client."""

    protocol_version = "HTTP/1.1"

    def __init__(self, script: list[Reply] | None = None, fallback: Callable[[dict[str, Any]], Reply] | None = None):
        self.script = list(script or [])
        self.fallback = fallback
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests the server was handling at once

    @property
    def count(self) -> int:
        return len(self.requests)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            if self.script:
                return self.script.pop(0)
        if self.fallback is not None:
            return self.fallback(body)
        return Reply(status=500, content="script exhausted")

    def respond(self, handler: Any, body: dict[str, Any], headers: dict[str, str]) -> None:
        reply = self.next_reply(body)
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if reply.delay_s:
                time.sleep(reply.delay_s)
            self._reply(handler, body, reply)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _reply(self, handler: Any, body: dict[str, Any], reply: Reply) -> None:
        if reply.status != 200:
            err = {"error": {"message": reply.content or "error", "type": "server_error" if reply.status >= 500 else "rate_limit_error", "code": None}}
            send_json(handler, reply.status, err, reply.headers)
            return
        model = reply.model or body.get("model", "test-model")
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if reply.reasoning_content is not None:
                message["reasoning_content"] = reply.reasoning_content
            send_json(handler, 200, {
                "id": f"chatcmpl-{self.count}", "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
                "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                          "total_tokens": reply.prompt_tokens + reply.completion_tokens},
            })
            return
        try:
            self._stream(handler, body, reply, model)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): nothing to deliver

    def _stream(self, handler: Any, body: dict[str, Any], reply: Reply, model: str) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        cid = f"chatcmpl-{self.count}"

        def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None, choices: bool = True) -> None:
            obj: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}] if choices else []}
            if usage is not None:
                obj["usage"] = usage
            handler.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            handler.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if reply.reasoning_content:
            for i in range(0, len(reply.reasoning_content), 16):
                chunk({"reasoning_content": reply.reasoning_content[i:i + 16]})
        for i in range(0, len(reply.content), 23):
            chunk({"content": reply.content[i:i + 23]})
        chunk({}, finish=reply.finish_reason)
        if (body.get("stream_options") or {}).get("include_usage"):
            chunk({}, usage={"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                             "total_tokens": reply.prompt_tokens + reply.completion_tokens}, choices=False)
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
        handler.close_connection = True

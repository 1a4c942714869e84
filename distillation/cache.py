"""Teacher output records: the response cache and the replay format (one JSONL format for both).

Every teacher output is one JSON object on one line of a `.jsonl` file. These keys are REQUIRED
in every line (the replay format; the Inductor teacher's shipped data has exactly these):

    problem_key      autotriton.hashing.source_key(problem reference source)
    problem_name     the problem's name (for humans; lookups use problem_key)
    teacher          teacher name, e.g. "inductor", "openai:deepseek-reasoner"
    teacher_version  the teacher's version string (torch/triton versions, model revision, ...)
    prompt_version   autotriton.prompting.PROMPT_VERSION the output answered ("" for compilers)
    code             the standalone `ModelNew` source ("" when the output did not parse)
    reasoning        the reasoning ("" = none recorded; replay fills it with describe_problem)
    instruction      the task in words ("" = none recorded; replay fills it with describe_problem)
    usage            {"prompt_tokens", "completion_tokens", "cost_usd"?} ({} for compilers)
    created          ISO-8601 UTC time the output was produced

LLM response-cache lines carry these OPTIONAL keys too, so a rerun can rebuild the candidate
exactly without a request: `request_key` (content_key of model, messages and sampling
parameters: the cache key), `model`, `sampling`, `raw_output` (full completion text),
`reasoning_content`, `finish_reason`, `parse_error`, `repair_round`, `parent_key`.
Readers ignore keys they do not know.

Files are append-only. Each line is written with a single `write()` on a file opened with
O_APPEND under an exclusive `flock`, so concurrent writers never interleave and a crash leaves at
most one torn last line, which readers skip. One file per teacher/model:
`<cache_dir>/<teacher>__<model>.jsonl` (default cache dir `.autotriton/teacher_cache/`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from autotriton.hashing import content_key

__all__ = [
    "REPLAY_FIELDS", "ReplayFormatError", "ResponseCache", "append_record", "read_records",
    "replay_record", "request_key", "cache_file", "utc_now",
]

REPLAY_FIELDS: tuple[str, ...] = (
    "problem_key", "problem_name", "teacher", "teacher_version", "prompt_version",
    "code", "reasoning", "instruction", "usage", "created",
)


class ReplayFormatError(ValueError):
    """A teacher-output file has a line that is not a valid record; the message names file and line."""


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def request_key(model: str, messages: list[dict[str, Any]], sampling: dict[str, Any]) -> str:
    """The cache key of one request: same model, same conversation, same sampling -> same answer."""
    return content_key("chat-request", model, messages, sampling)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "default"


def cache_file(cache_dir: str | Path, teacher: str, model: str) -> Path:
    return Path(cache_dir) / f"{_slug(teacher)}__{_slug(model)}.jsonl"


def replay_record(
    *,
    problem_key: str,
    problem_name: str,
    teacher: str,
    teacher_version: str,
    prompt_version: str,
    code: str,
    reasoning: str = "",
    instruction: str = "",
    usage: dict[str, Any] | None = None,
    created: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A record with every required field, in the documented order, plus any optional keys."""
    record = {
        "problem_key": problem_key, "problem_name": problem_name, "teacher": teacher,
        "teacher_version": teacher_version, "prompt_version": prompt_version, "code": code,
        "reasoning": reasoning, "instruction": instruction, "usage": dict(usage or {}),
        "created": created or utc_now(),
    }
    record.update(extra)
    return record


def append_record(path: str | Path, record: dict[str, Any]) -> None:
    """Append one record as one line, atomically with respect to other appenders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(record, ensure_ascii=False, sort_keys=False, default=str) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            view = memoryview(data)
            while view:  # one write() in practice; loop only on a short write
                written = os.write(fd, view)
                view = view[written:]
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_records(path: str | Path, *, strict: bool = True, required: tuple[str, ...] = REPLAY_FIELDS) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file, in file order.

    A torn last line (no trailing newline: a writer died mid-line) is skipped. Any other line that
    is not a JSON object with the `required` keys raises ReplayFormatError naming file and line
    when `strict`, and is skipped otherwise.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReplayFormatError(f"{path}: cannot read teacher outputs ({exc.strerror}).") from exc
    lines = text.split("\n")
    torn_tail = not text.endswith("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        last = number == len(lines)
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if last and torn_tail:
                return  # an interrupted append: the rest of the file is intact
            if strict:
                raise ReplayFormatError(f"{path}:{number}: not valid JSON ({exc.msg}). Fix or delete that line.") from exc
            continue
        if not isinstance(record, dict):
            if strict:
                raise ReplayFormatError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}.")
            continue
        missing = [k for k in required if k not in record]
        if missing:
            if strict:
                raise ReplayFormatError(
                    f"{path}:{number}: missing field(s) {', '.join(missing)}; every line needs "
                    f"{', '.join(required)} (see autotriton/distillation/REPLAY.md)."
                )
            continue
        yield record


class ResponseCache:
    """Cached teacher responses for one teacher/model, looked up by `request_key`.

    Reads the whole file once (lazily), then serves hits from memory and appends misses.
    Safe to share between threads; several processes may append to the same file.
    """

    def __init__(self, cache_dir: str | Path, teacher: str, model: str):
        self.path = cache_file(cache_dir, teacher, model)
        self._index: dict[str, dict[str, Any]] | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._index is None:
            index: dict[str, dict[str, Any]] = {}
            if self.path.exists():
                # A damaged cache line costs one request again; it never stops a run.
                for record in read_records(self.path, strict=False, required=("request_key",)):
                    index[record["request_key"]] = record
            self._index = index
        return self._index

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self._load().get(key)

    def put(self, record: dict[str, Any]) -> None:
        if "request_key" not in record:
            raise ValueError("a cache record needs its request_key")
        with self._lock:
            index = self._load()
            if record["request_key"] in index:
                return
            append_record(self.path, record)
            index[record["request_key"]] = record

    def __len__(self) -> int:
        with self._lock:
            return len(self._load())

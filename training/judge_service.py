"""One judge shared by several training processes: the pool in the launching process, served
over a private Unix socket to every rank.

With one JudgePool per rank, two pools contend for CUDA context creation (which the driver
serialises) and each holds its own warm workers: on two GPUs the reward was still 22 % of a
step (benchmarks/RESULTS.md). Here the process that launches training (`autotriton grpo/train`)
opens ONE pool, on the GPUs the layout gives the judge (training/layout.py), and each rank's
`RemoteJudge` sends its batch to it; the pool's workers take jobs from all ranks at once.

The socket lives in a fresh 0700 directory and every connection must prove the 32-byte key
(multiprocessing.connection's HMAC handshake). The key travels to the ranks in the
environment, which the judge scrubs from candidate processes (every AUTOTRITON_* variable), so
candidate code can neither find nor use the service.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any, Sequence

from autotriton.records import Verdict

ADDRESS_ENV = "AUTOTRITON_JUDGE_SERVICE"
KEY_ENV = "AUTOTRITON_JUDGE_SERVICE_KEY"


@dataclass
class ServiceStats:
    """What the service saw: which ranks connected, how many batches and jobs each sent."""

    ranks: set[int] = field(default_factory=set)
    batches: dict[int, int] = field(default_factory=dict)
    jobs: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"ranks": sorted(self.ranks), "batches": dict(sorted(self.batches.items())),
                "jobs": dict(sorted(self.jobs.items()))}


class JudgeService:
    """Serves `judge.validate_many` to other processes until closed.

        with JudgePool(vcfg) as pool, JudgeService(pool) as service:
            subprocess.run(cmd, env={**os.environ, **service.env()})
    """

    def __init__(self, judge: Any):
        self.judge = judge
        self.stats = ServiceStats()
        self._key = secrets.token_bytes(32)
        self._dir = tempfile.mkdtemp(prefix="autotriton-judge-svc-")  # 0700: only this user reaches the socket
        self.address = str(Path(self._dir) / "judge.sock")
        self._listener = Listener(self.address, family="AF_UNIX", authkey=self._key)
        self._lock = threading.Lock()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self._accepter = threading.Thread(target=self._accept, name="judge-service", daemon=True)
        self._accepter.start()

    def env(self) -> dict[str, str]:
        """The variables a rank needs to reach this service (RemoteJudge.from_env)."""
        return {ADDRESS_ENV: self.address, KEY_ENV: self._key.hex()}

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except (OSError, EOFError, AuthenticationError):  # closed, or a client that failed the handshake
                if self._closed:
                    return
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), name="judge-service-conn", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn) -> None:
        rank = -1
        try:
            while True:
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    return
                op = message.get("op")
                if op == "hello":
                    rank = int(message.get("rank", -1))
                    with self._lock:
                        self.stats.ranks.add(rank)
                    conn.send({"ok": True})
                elif op == "validate":
                    jobs = [tuple(job) for job in message["jobs"]]
                    with self._lock:
                        self.stats.batches[rank] = self.stats.batches.get(rank, 0) + 1
                        self.stats.jobs[rank] = self.stats.jobs.get(rank, 0) + len(jobs)
                    try:
                        # the pool is thread-safe: batches of several ranks share its workers at once
                        verdicts = self.judge.validate_many(jobs)
                    except Exception as exc:  # noqa: BLE001 - the rank raises it
                        conn.send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
                        continue
                    conn.send({"ok": True, "verdicts": [v.to_dict() for v in verdicts]})
                else:
                    conn.send({"ok": False, "error": f"unknown op {op!r}"})
        finally:
            conn.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._accepter.is_alive():
            try:
                # wake the accepting thread: it is blocked in accept()
                Client(self.address, family="AF_UNIX", authkey=self._key).close()
            except (OSError, EOFError, AuthenticationError):
                pass
        self._listener.close()
        self._accepter.join(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "JudgeService":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class RemoteJudge:
    """A rank's handle on the shared judge: the BatchJudge protocol over the service's socket.
    Thread-safe (reward_overlap judges from a background thread)."""

    def __init__(self, address: str, key: bytes, rank: int = 0):
        self.address, self.rank = address, rank
        self._conn = Client(address, family="AF_UNIX", authkey=key)
        self._lock = threading.Lock()
        self._ask({"op": "hello", "rank": rank, "pid": os.getpid()})

    @classmethod
    def from_env(cls, environ=os.environ, rank: int = 0) -> "RemoteJudge | None":
        """The shared judge named by the environment, or None when none was given."""
        address = environ.get(ADDRESS_ENV)
        if not address:
            return None
        return cls(address, bytes.fromhex(environ.get(KEY_ENV, "")), rank)

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._conn.send(message)
            answer = self._conn.recv()
        if not answer.get("ok"):
            raise RuntimeError(f"the shared judge ({self.address}) failed: {answer.get('error')}")
        return answer

    def validate_many(self, jobs: Sequence[tuple[str, str]]) -> list[Verdict]:
        answer = self._ask({"op": "validate", "jobs": [list(job) for job in jobs]})
        return [Verdict.from_dict(v) for v in answer["verdicts"]]

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "RemoteJudge":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

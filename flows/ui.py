"""Run a local Prefect server (API + UI) and point the CLI at it while it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from typing import Iterator


def wait_healthy(api_url: str, timeout_s: float = 90.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the Prefect server exited with code {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"{api_url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError as exc:
            last = str(exc)
        time.sleep(0.5)
    raise TimeoutError(f"the Prefect server at {api_url} did not answer within {timeout_s:.0f} s ({last})")


@contextmanager
def local_server(host: str = "127.0.0.1", port: int = 4200, point_cli: bool = True) -> Iterator[str]:
    """Start `prefect server start` on host:port; yield the UI URL; stop it on exit.

    With point_cli, the active Prefect profile's PREFECT_API_URL is set to this server while it
    runs (so `autotriton run` in another terminal reports to it) and restored afterwards.
    """
    api_url = f"http://{host}:{port}/api"
    env = dict(os.environ, PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_API_URL="")
    env.pop("PREFECT_API_URL")
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    previous = None
    try:
        try:
            wait_healthy(api_url, proc=proc)
        except (RuntimeError, TimeoutError) as exc:
            err = proc.stderr.read().decode(errors="replace")[-2000:] if proc.poll() is not None and proc.stderr else ""
            raise RuntimeError(f"{exc}. Is port {port} free? Try --port.\n{err}") from None
        if point_cli:
            from prefect.settings import PREFECT_API_URL, load_current_profile, update_current_profile

            previous = load_current_profile().settings.get(PREFECT_API_URL)
            update_current_profile({PREFECT_API_URL: api_url})
        yield f"http://{host}:{port}"
    finally:
        if point_cli:
            from prefect.settings import PREFECT_API_URL, update_current_profile

            update_current_profile({PREFECT_API_URL: previous})
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

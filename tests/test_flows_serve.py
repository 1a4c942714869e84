"""`autotriton serve`: needs a server or says it started one; Ctrl-C ends it promptly without a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = "import sys; from autotriton.flows.cli import main; sys.argv[0] = 'autotriton'; main()"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOTRITON_") and k != "PREFECT_API_URL"}
    env.update(PYTHONPATH=str(Path(__file__).parent.parent), PREFECT_HOME=str(tmp_path / "prefect"))
    return env


def test_serve_without_a_server_says_what_to_do(tmp_path):
    proc = subprocess.run([sys.executable, "-c", CLI, "serve"], capture_output=True, text=True, cwd=tmp_path,
                          env=_env(tmp_path), timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "PREFECT_API_URL" in proc.stderr and "--temporary-server" in proc.stderr and "autotriton ui" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("when", ["while serving", "during start-up"])
def test_serve_with_a_temporary_server_names_it_and_stops_on_ctrl_c(tmp_path, when):
    """Ctrl-C stops serve cleanly wherever it lands; during start-up it once landed inside an import,
    where pydantic wrapped the KeyboardInterrupt in an error of its own (a traceback, exit 1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", CLI, "serve", "--temporary-server", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env(tmp_path))
    lines: list[str] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if when == "during start-up" and "started a temporary Prefect server" in line:
            break
        if "serving" in line and "retrain" in line:
            break
    text = "".join(lines)
    assert f"started a temporary Prefect server at http://127.0.0.1:{port}" in text, (text, proc.poll())
    if when == "while serving":
        time.sleep(2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 30  # promptly (it took ~77 s before)
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "serve stopped" in err
    with socket.socket() as s:  # the temporary server is gone with serve
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_an_interrupt_wrapped_by_the_code_it_lands_in_still_stops_quietly():
    """The interrupt that once escaped serve: pydantic turns a KeyboardInterrupt raised inside it into
    an error of its own; after Ctrl-C that error is the interrupt's echo, before it a real error."""
    from pydantic import BaseModel, field_serializer

    from autotriton.flows.cli.common import stopped_by_interrupt

    class Settings(BaseModel):
        port: int = 4300

        @field_serializer("port")
        def _interrupt_while_serialising(self, port):
            os.kill(os.getpid(), signal.SIGINT)
            return port

    before = signal.getsignal(signal.SIGINT)
    cleaned: list[str] = []
    with stopped_by_interrupt() as stopping:
        try:
            Settings().model_dump()
        finally:
            cleaned.append("server stopped")
        raise AssertionError("the block went on after Ctrl-C")
    assert stopping.is_set() and cleaned == ["server stopped"]
    assert signal.getsignal(signal.SIGINT) is before  # the CLI's own handler is back
    with pytest.raises(ValueError, match="not an interrupt"):
        with stopped_by_interrupt():
            raise ValueError("not an interrupt")


def test_prefect_yaml_is_valid_for_prefect_and_its_entrypoints_load():
    """prefect.yaml passes Prefect's own loader (what `prefect deploy` uses) and names real flows."""
    from rich.console import Console

    from prefect.cli.deploy._config import _load_deploy_configs_and_actions
    from prefect.flows import load_flow_from_entrypoint

    root = Path(__file__).parent.parent
    deployments, actions = _load_deploy_configs_and_actions(root / "prefect.yaml", console=Console(stderr=True))
    assert {d["name"] for d in deployments} == {"scheduled-refresh", "train", "evaluate", "retrain"}
    assert all(d["work_pool"]["name"] == "autotriton" for d in deployments)
    assert actions["pull"]
    cwd = os.getcwd()
    os.chdir(root)
    try:
        names = {load_flow_from_entrypoint(d["entrypoint"]).name for d in deployments}
    finally:
        os.chdir(cwd)
    assert names == {"refresh-dataset", "train", "evaluate", "retrain"}

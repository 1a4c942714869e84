"""`autotriton serve`: needs a server or says it started one; Ctrl-C ends it promptly without a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

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


def test_serve_with_a_temporary_server_names_it_and_stops_on_ctrl_c(tmp_path):
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
        if "serving" in line and "retrain" in line:
            break
    text = "".join(lines)
    assert f"started a temporary Prefect server at http://127.0.0.1:{port}" in text, (text, proc.poll())
    time.sleep(2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 30  # promptly (it took ~77 s before)
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "serve stopped" in err
    with socket.socket() as s:  # the temporary server is gone with serve
        assert s.connect_ex(("127.0.0.1", port)) != 0


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

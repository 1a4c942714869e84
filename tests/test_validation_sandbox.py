"""The walls: secrets, network, identity, HOME, captured output, dead workers, keys and order of
verdicts, and probing reference problems (the harvester's check).

Network isolation and the privilege drop are asserted wherever the machine allows them (judged
here independently of the sandbox's own report), and turning them off must show in what the
candidate can do: a sandbox that quietly stopped isolating fails these tests.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from autotriton.hashing import source_key
from autotriton.records import candidate_key
from autotriton.validation import JudgePool, probe_many
from validation_helpers import candidate, judge_config, problem

SECRETS = {"OPENAI_API_KEY": "sk-test-openai-0123456789", "GITHUB_TOKEN": "ghp_test0123456789", "HF_TOKEN": "hf_test0123456789",
           "AWS_SECRET_ACCESS_KEY": "aws-test-secret", "MY_SERVICE_PASSWORD": "hunter2-test"}

SNOOP = '''
import os
import socket
import tempfile
import torch
import torch.nn as nn
import triton
import triton.language as tl


class ModelNew(nn.Module):
    def forward(self, x):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
            net = "connected"
        except OSError as exc:
            net = f"refused:{exc.__class__.__name__}"
        print("HELLO-FROM-CANDIDATE")
        raise RuntimeError("SNOOP " + repr({"env": dict(os.environ), "home": os.path.expanduser("~"), "cwd": os.getcwd(), "net": net,
                                            "uid": os.getuid(), "tmp": tempfile.gettempdir()}))
'''

KILL_TEMPLATE = '''
import os
import signal
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.kill(os.getppid(), signal.SIGKILL)  # the parent is the worker's clean template
        os._exit(3)
'''


SANDBOX_PY = Path(__file__).resolve().parent.parent / "validation" / "sandbox.py"
NOBODY = 65534


def _can_make_network_namespace() -> bool:
    """Whether this machine lets a fresh process enter an empty network namespace (root with
    CAP_SYS_ADMIN, or unprivileged user namespaces), asked of the kernel, not of the sandbox."""
    probe = ("import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
             "sys.exit(0 if libc.unshare(0x40000000) == 0 or libc.unshare(0x10000000 | 0x40000000) == 0 else 1)")
    return subprocess.run([sys.executable, "-c", probe], timeout=60).returncode == 0


NETNS = _can_make_network_namespace()


class Listener:
    """A TCP server on the caller's loopback. A connection lands in its backlog whether or not it
    is accepted in time, so `reached()` tells afterwards whether anybody got through."""

    def __enter__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(4)
        return self

    @property
    def port(self) -> int:
        return self.server.getsockname()[1]

    def reached(self) -> bool:
        self.server.settimeout(0.5)
        try:
            self.server.accept()[0].close()
            return True
        except OSError:  # socket.timeout: nobody in the backlog
            return False

    def __exit__(self, *exc):
        self.server.close()


def snoop(pool_, listener: Listener) -> tuple[dict, dict]:
    """Judge the snooping candidate; return what it saw from inside and the sandbox's own report."""
    v = pool_.validate(problem("relu"), SNOOP.replace("PORT", str(listener.port)))
    assert v.status == "rule_violation" and not v.correct and "SNOOP " in v.error  # it raised (and its source breaks the rules)
    seen = ast.literal_eval(v.error[v.error.index("SNOOP ") + 6:].splitlines()[0])
    return seen, v.timing["sandbox"]


@pytest.fixture(scope="module")
def pool():
    saved = {k: os.environ.get(k) for k in SECRETS}
    os.environ.update(SECRETS)  # the caller has secrets; the pool must not pass them on
    try:
        with JudgePool(judge_config(workers=1, odd_size_trial=False)) as p:
            yield p
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_candidate_sees_no_secrets_no_network_and_a_private_home(pool, capfd):
    with Listener() as listener:
        seen, sandbox = snoop(pool, listener)
        reached = listener.reached()
    for name, value in SECRETS.items():
        assert name not in seen["env"] and value not in repr(seen)
    assert seen["home"] != "/root" and "autotriton-judge-" in seen["home"] and seen["cwd"] == seen["home"]  # its own temp dir
    assert seen["tmp"] == seen["home"]  # its temporary files too, not the worker's folder
    # Isolation wherever the kernel allows a network namespace; elsewhere the report says it was refused.
    assert sandbox["network"].startswith("isolated") == NETNS, sandbox["network"]
    if NETNS:
        assert seen["net"].startswith("refused") and not reached
    else:
        assert sandbox["network"].startswith("not isolated: unshare refused"), sandbox["network"]
    # As root the candidate runs as nobody, unless the Python install is closed to other users (then it says so).
    if os.geteuid() == 0:
        assert sandbox["privileges"] == "dropped to nobody" or "is not open to other users" in sandbox["privileges"], sandbox
        assert (seen["uid"] == NOBODY) == (sandbox["privileges"] == "dropped to nobody"), (seen["uid"], sandbox)
    else:
        assert sandbox["privileges"] == "kept" and seen["uid"] == os.getuid()
    assert sandbox["rlimit_as"] and sandbox["rlimit_fsize"]
    captured = capfd.readouterr()
    assert "HELLO-FROM-CANDIDATE" not in captured.out + captured.err  # candidate output stays in its sandbox


def test_a_sandbox_with_isolation_turned_off_is_told_apart():
    """The checks above are not vacuous: with the walls off, the same candidate reaches the caller's
    loopback, keeps the judge's identity, and the report says so."""
    with JudgePool(judge_config(workers=1, odd_size_trial=False, isolate_network=False, drop_privileges=False)) as open_pool:
        with Listener() as listener:
            seen, sandbox = snoop(open_pool, listener)
            reached = listener.reached()
    assert sandbox["network"] == "not requested" and seen["net"] == "connected" and reached
    assert sandbox["privileges"] == "kept" and seen["uid"] == os.getuid()


# Confines a fork the way a judge worker does, then reports what the confined process can do. Runs
# under `python -I` with the sandbox module loaded by path (it is standard library only).
CONFINE_PROBE = r"""
import importlib.util, json, os, sys, tempfile

spec = importlib.util.spec_from_file_location("sandbox", sys.argv[1])
sandbox = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sandbox)
secret, drop = sys.argv[2], sys.argv[3] == "drop"
workdir = tempfile.mkdtemp(prefix="autotriton-judge-test-")
open(os.path.join(workdir, "candidate.py"), "w").write("# the candidate's file")
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read_end)
    facts = {}
    try:
        facts["report"] = sandbox.confine(workdir, memory_limit_bytes=1 << 32, max_file_bytes=1 << 20, max_processes=64,
                                          isolate_network=False, drop_privileges=drop, keep_fds=(write_end,),
                                          environ=dict(os.environ))
        facts["uid"], facts["euid"], facts["gid"], facts["groups"] = os.getuid(), os.geteuid(), os.getgid(), os.getgroups()
        try:
            open(secret).read()
            facts["read_secret"] = True
        except PermissionError:
            facts["read_secret"] = False
        try:
            open(os.path.join(workdir, "candidate.py"), "a").write("# and its own writes")
            facts["writes_workdir"] = True
        except OSError as exc:
            facts["writes_workdir"] = repr(exc)
        try:
            os.setuid(0)
            facts["regained_root"] = True
        except PermissionError:
            facts["regained_root"] = False
    except BaseException as exc:
        facts["error"] = repr(exc)
    os.write(write_end, json.dumps(facts).encode())
    os._exit(0)
os.close(write_end)
chunks = []
while chunk := os.read(read_end, 65536):
    chunks.append(chunk)
os.waitpid(pid, 0)
print(b"".join(chunks).decode())
"""


def _confined(python: str, secret: Path, drop: bool) -> dict:
    out = subprocess.run([python, "-I", "-c", CONFINE_PROBE, str(SANDBOX_PY), str(secret), "drop" if drop else "keep"],
                         capture_output=True, text=True, timeout=60, check=True)
    facts = json.loads(out.stdout)
    assert "error" not in facts, facts
    return facts


@pytest.mark.skipif(os.geteuid() != 0, reason="drop_privileges acts only when the judge runs as root")
def test_drop_privileges_runs_the_candidate_as_nobody_and_keeping_them_is_visible(tmp_path):
    secret = tmp_path / "root-only"
    secret.write_text("root's secret")
    secret.chmod(0o600)
    # The drop needs a Python whose files other users can read (a judge under /root keeps root and
    # says so, asserted in the pool test above); try this one first, then the system's.
    pythons = [sys.executable, shutil.which("python3"), "/usr/bin/python3"]
    for python in dict.fromkeys(p for p in pythons if p and os.path.exists(p)):
        facts = _confined(python, secret, drop=True)
        if facts["report"]["privileges"] == "dropped to nobody":
            break
        assert "is not open to other users" in facts["report"]["privileges"], facts  # the only reason to keep root
    else:
        pytest.skip(f"no Python here ({', '.join(p for p in pythons if p)}) is readable by other users: nobody could run it")
    assert (facts["uid"], facts["euid"], facts["gid"], facts["groups"]) == (NOBODY, NOBODY, NOBODY, [])
    assert facts["read_secret"] is False and facts["regained_root"] is False
    assert facts["writes_workdir"] is True  # its working dir was handed over to nobody
    kept = _confined(python, secret, drop=False)
    assert kept["report"]["privileges"] == "kept" and kept["uid"] == 0 and kept["read_secret"] is True


def test_keys_and_order_of_verdicts(pool):
    jobs = [(problem("relu"), candidate("correct_relu")), (problem("relu"), candidate("cheat_wrong_shape")),
            (problem("softmax"), candidate("correct_softmax"))]
    verdicts = pool.validate_many(jobs)
    assert [v.status for v in verdicts] == ["correct", "incorrect", "correct"]
    for (p, c), v in zip(jobs, verdicts):
        assert v.problem_key == source_key(p)
        assert v.candidate_key == candidate_key(c, v.problem_key)
        assert v.judge_config_hash == pool.config_hash and v.versions["triton"]


def test_a_killed_worker_or_template_is_replaced(pool):
    v = pool.validate(problem("relu"), KILL_TEMPLATE)
    assert v.status in ("crashed", "rule_violation") and not v.correct
    assert pool.validate(problem("relu"), candidate("correct_relu")).status == "correct"
    for pid in pool.processes():  # kill everything of the pool: workers and templates
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert pool.validate(problem("relu"), candidate("correct_relu")).status == "correct"


def test_a_problem_that_does_not_run_is_blamed_on_the_problem(pool):
    v = pool.validate("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        raise ValueError('broken')\n"
                      "def get_inputs():\n    return [torch.randn(2)]\ndef get_init_inputs():\n    return []\n",
                      candidate("correct_relu"))
    assert v.status == "runtime_error" and v.timing.get("reference_failed") and "broken" in v.error


PROBES = {
    "ok": ("relu", None),
    "bad_format": ("import torch\nx = 1\n", "bad_format"),
    "missing_dependency": ("import not_a_real_module_xyz\n" + problem("relu"), "missing_dependency"),
    "needs_data_files": (problem("relu").replace("super().__init__()", "super().__init__()\n        open('weights.bin').read()"), "needs_data_files"),
    # pretrained weights fetched while building (Hugging Face offline, a URL): no guess brings the network back
    "downloads_at_init": (problem("relu").replace("super().__init__()", "super().__init__()\n        raise OSError(\"We couldn't "
                          "connect to 'https://huggingface.co' to load the files, and couldn't find them in the cached files.\")"),
                          "needs_data_files"),
    "downloads_in_forward": (problem("relu").replace("return torch.relu(x)", "import urllib.error\n        try:\n"
                             "            raise urllib.error.URLError('Name or service not known')\n        except Exception as exc:\n"
                             "            raise RuntimeError('could not fetch the checkpoint') from exc"), "needs_data_files"),
    "nondeterministic": (problem("relu").replace("return torch.relu(x)", "import random\n        return torch.relu(x) * random.random()"), "nondeterministic"),
    "input_independent": (problem("relu").replace("return torch.relu(x)", "return torch.ones(3)"), "input_independent"),
    "returns_input": (problem("relu").replace("return torch.relu(x)", "return torch.nn.functional.dropout(x, 0.5, self.training)"), "returns_input"),
    # changed in place and returned: computed, not passed through
    "in_place": (problem("relu").replace("return torch.relu(x)", "return x.mul_(2)"), None),
    "runtime_error": (problem("relu").replace("return torch.relu(x)", "return x @ x"), "runtime_error"),
    # a package that is installed but raises while it is imported (a CUDA torchvision beside a CPU torch)
    "broken_dependency": ("import os, sys\nsys.path.insert(0, os.getcwd())\n"
                          "open('brokendep.py', 'w').write('raise RuntimeError(\"operator brokendep::nms does not exist\")')\n"
                          "import brokendep\n" + problem("relu"), "broken_dependency"),
    "too_slow": (problem("relu").replace("return torch.relu(x)", "import time\n        time.sleep(2)\n        return torch.relu(x)"), "too_slow"),
    "timeout": (problem("relu").replace("return torch.relu(x)", "while True:\n            pass"), "timeout"),
    "crashed": (problem("relu").replace("return torch.relu(x)", "import os\n        os._exit(1)"), "crashed"),
}


def test_probe_reasons():
    names = list(PROBES)
    sources = [problem(PROBES[n][0]) if n == "ok" else PROBES[n][0] for n in names]
    results = probe_many(sources, judge_config(probe_budget_s=1.0, probe_timeout_s=8.0))
    for name, result in zip(names, results):
        assert result.reason == PROBES[name][1], (name, result)
        assert result.ok == (PROBES[name][1] is None), (name, result)
    assert results[0].output_shapes == [[4, 32]] and results[0].shrunk  # batch 16 -> 4, dim 64 -> 32


def test_probe_shrinks_kernelbench_problems_and_they_still_run(kernelbench_l1):
    import json

    rows = [json.loads(line) for line in kernelbench_l1.read_text().splitlines()]
    picked = [r for r in rows if r["name"] in ("Square_matrix_multiplication_", "Softmax", "Sum_reduction_over_a_dimension")]
    results = probe_many([r["source"] for r in picked], judge_config())
    assert picked and all(r.ok and r.shrunk for r in results), results


def test_shrink_and_check_falls_back_when_the_shrunk_problem_breaks(pool):
    from autotriton.validation import shrink_and_check

    fine, result = shrink_and_check(problem("relu"), pool=pool)
    assert result.ok and result.shrunk and "dim = 32" in fine
    # A problem that only works at its own size (hard-coded sizes in forward): shrinking breaks it.
    fragile = problem("relu").replace("return torch.relu(x)", "return torch.relu(x).reshape(16, 64)")
    kept, result = shrink_and_check(fragile, pool=pool)
    assert kept == fragile and result.ok and not result.shrunk


def test_a_problem_that_only_fails_shrunk_is_probed_at_its_own_sizes():
    """An Inception-style block fixes its own input channels (192): shrinking get_inputs() to 24
    channels breaks it, so the probe runs it again as written instead of blaming the input guess."""
    fixed = ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.conv = nn.Conv2d(192, 8, 1)\n\n    def forward(self, x):\n        return torch.relu(self.conv(x))\n\n\n"
             "def get_inputs():\n    return [torch.randn(2, 192, 8, 8)]\n\n\ndef get_init_inputs():\n    return []\n")
    broken = fixed.replace("torch.relu(self.conv(x))", "torch.relu(self.conv(x)) @ torch.ones(3, 3)")
    ok, bad = probe_many([fixed, broken], judge_config(probe_budget_s=5.0, probe_timeout_s=20.0))
    assert ok.ok and not ok.shrunk and ok.output_shapes == [[2, 8, 8, 8]]
    # failing as written too: that error is the one reported (its sizes are the guess's own)
    assert not bad.ok and bad.reason == "runtime_error" and "192 channels" not in bad.detail and not bad.shrunk


def test_the_probe_runs_compiled_code_eagerly_and_reports_torchs_own_shape_error():
    """A problem whose forward calls a torch.compile'd function (moshi's rotary embedding): the probe
    runs it eagerly, so a wrong input size is reported in torch's words, which the harvest's input
    repairs read ("The size of tensor a (8) must match ..."), not dynamo's page about fake tensors."""
    compiled = ("import torch\nimport torch.nn as nn\n\n@torch.compile\ndef rotate(q, freqs):\n    return q * freqs\n\n\n"
                "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.register_buffer('freqs', torch.randn(16, 4))\n\n"
                "    def forward(self, q):\n        return torch.tanh(rotate(q, self.freqs))\n\n\n"
                "def get_inputs():\n    return [torch.randn(2, {n}, 4)]\n\n\ndef get_init_inputs():\n    return []\n")
    ok, bad = probe_many([compiled.format(n=16), compiled.format(n=8)], judge_config(probe_budget_s=5.0, probe_timeout_s=60.0))
    assert ok.ok and ok.output_shapes == [[2, 16, 4]]
    assert not bad.ok and bad.reason == "runtime_error"
    assert "must match the size of tensor b" in bad.detail and "fake" not in bad.detail.lower()


LEAVES_A_TEMP_FILE = '''
import tempfile
import torch
import torch.nn as nn

_made = tempfile.NamedTemporaryFile(prefix="generated_module_", suffix=".py", delete=False)  # torch_geometric's way
_made.close()
with open(RECORD, "a") as f:
    f.write(_made.name + "\\n")


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
'''


def test_temporary_files_a_problem_leaves_in_the_worker_go_with_the_worker(tmp_path):
    """A problem loaded in a judge worker (its footprint, its reference) that writes a temporary file
    and leaves it (torch_geometric generates a module per MessagePassing class: 87 files in /tmp after
    one harvest) writes it into the worker's own folder, removed when the pool closes."""
    record = tmp_path / "made.txt"
    source = LEAVES_A_TEMP_FILE.replace("RECORD", repr(str(record)))
    with JudgePool(judge_config(workers=1, odd_size_trial=False)) as p:
        assert p.footprints([source])[0] is not None
        made = [Path(line) for line in record.read_text().split()]
        assert made and all("autotriton-judge-" in str(m.parent) and m.exists() for m in made), made
    assert not any(m.exists() for m in made)

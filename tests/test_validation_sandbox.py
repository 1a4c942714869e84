"""The walls: secrets, network, HOME, captured output, dead workers, keys and order of verdicts,
and probing reference problems (the harvester's check)."""

from __future__ import annotations

import os
import signal
import socket
import threading

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
        raise RuntimeError("SNOOP " + repr({"env": dict(os.environ), "home": os.path.expanduser("~"), "cwd": os.getcwd(), "net": net}))
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
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.2)
    accepted = []

    def accept():
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    v = pool.validate(problem("relu"), SNOOP.replace("PORT", str(server.getsockname()[1])))
    t.join()
    server.close()
    assert v.status == "rule_violation" and not v.correct  # it raised (and its source breaks the rules)
    assert "SNOOP" in v.error
    for name, value in SECRETS.items():
        assert value not in v.error and name not in v.error
    assert "'home': '/root'" not in v.error and "autotriton-judge-" in v.error  # HOME and cwd: its own temp dir
    sandbox = v.timing["sandbox"]
    if sandbox["network"].startswith("isolated"):
        assert "refused" in v.error and not accepted
    assert sandbox["rlimit_as"] and sandbox["rlimit_fsize"]
    captured = capfd.readouterr()
    assert "HELLO-FROM-CANDIDATE" not in captured.out + captured.err  # candidate output stays in its sandbox


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
    "nondeterministic": (problem("relu").replace("return torch.relu(x)", "import random\n        return torch.relu(x) * random.random()"), "nondeterministic"),
    "input_independent": (problem("relu").replace("return torch.relu(x)", "return torch.ones(3)"), "input_independent"),
    "runtime_error": (problem("relu").replace("return torch.relu(x)", "return x @ x"), "runtime_error"),
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
        assert result.ok == (name == "ok")
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

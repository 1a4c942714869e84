"""GPU memory shared by batches side by side (distillation/gpu_memory.py): each batch reserves its
problems' estimated need while its teacher writes and again while it is judged, big problems take
turns, and the estimate comes from one run at the problem's own sizes on the meta device, in a
judge worker."""

from __future__ import annotations

import threading
import time

import pytest

from autotriton.distillation import DistillConfig
from autotriton.distillation.batches import BatchBudget, distill_batches
from autotriton.distillation.gpu_memory import GIB, PROCESS_OVERHEAD, MemoryLedger, gpu_memory_bytes, problem_need
from autotriton.records import Candidate, Problem
from autotriton.validation import JudgePool

from distillation_helpers import RELU_KERNEL
from kernel_fixtures import elementwise_reference

LINEAR = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out)
        self.register_buffer("scale", torch.ones(d_out))

    def forward(self, x):
        return self.proj(x) * self.scale


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return [1024, 512]
'''


@pytest.fixture(scope="module")
def judge():
    from autotriton.validation.config import ValidationConfig

    config = ValidationConfig(device="cpu", trials=1, workers=2, timeout_s=60)
    with JudgePool(config) as pool:
        yield config, pool


def test_a_problems_footprint_is_its_inputs_outputs_and_parameters_at_its_own_sizes(judge):
    """Worked out on the meta device in a worker (no memory taken, whatever the sizes): a 64 x 1024
    input, a 64 x 512 output, a 1024 -> 512 Linear and a 512-float buffer, in bytes; a problem
    whose get_inputs() cannot run there has no footprint and reserves the process overhead only."""
    _, pool = judge
    broken = LINEAR.replace("return [torch.randn(64, 1024)]", "raise RuntimeError('no inputs here')")
    big = elementwise_reference("torch.relu(x)", n="65536, 65536")  # 16 GiB at its own sizes
    linear, none, huge = pool.footprints([LINEAR, broken, big])
    assert linear == {"inputs": 64 * 1024 * 4, "outputs": 64 * 512 * 4, "parameters": (1024 * 512 + 512 + 512) * 4}
    assert none is None and problem_need(none, 4.0) == PROCESS_OVERHEAD
    assert huge == {"inputs": 16 * GIB, "outputs": 16 * GIB, "parameters": 0}
    assert problem_need(huge, 4.0) == 4 * 32 * GIB + PROCESS_OVERHEAD
    assert problem_need({"inputs": GIB, "outputs": None, "parameters": GIB}, 2.0) == 2 * 2 * GIB + 2 * GIB + PROCESS_OVERHEAD


def test_the_ledger_serves_in_arrival_order_and_lets_an_oversize_reservation_run_alone():
    ledger = MemoryLedger(10)
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def hold(name: str, nbytes: int, wait_for: threading.Event | None = None) -> None:
        with ledger.reserve(nbytes):
            order.append(name)
            if wait_for is not None:
                inside.set()
                wait_for.wait(10)

    first = threading.Thread(target=hold, args=("six", 6, release))
    first.start()
    assert inside.wait(10)
    waiting = [threading.Thread(target=hold, args=("oversize", 25)), threading.Thread(target=hold, args=("two", 2))]
    for t in waiting:
        t.start()
        time.sleep(0.2)  # arrival order: the oversize one first
    # "two" would fit beside "six", but the oversize reservation came first and is served first
    assert order == ["six"] and ledger.held == 6
    release.set()
    for t in (first, *waiting):
        t.join(10)
    assert order == ["six", "oversize", "two"] and ledger.held == 0 and ledger.peak == 25 and ledger.waited == 2
    with pytest.raises(RuntimeError), ledger.reserve(4):
        raise RuntimeError("a batch that fails gives its memory back")
    assert ledger.held == 0
    with pytest.raises(ValueError, match="positive capacity"):
        MemoryLedger(0)


def test_no_gpu_means_no_ledger_capacity(monkeypatch, tmp_path):
    """nvidia-smi missing (this machine) or listing other GPUs than CUDA_VISIBLE_DEVICES."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_memory_bytes() is None
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho '0, GPU-aaa, 81559'\necho '1, GPU-bbb, 81559'\n")
    fake.chmod(0o755)
    assert gpu_memory_bytes({}) == 2 * 81559 * 2**20
    assert gpu_memory_bytes({"CUDA_VISIBLE_DEVICES": "1"}) == 81559 * 2**20
    assert gpu_memory_bytes({"CUDA_VISIBLE_DEVICES": "GPU-aaa"}) == 81559 * 2**20


class TimingTeacher:
    """Writes the ReLU kernel; records when each problem's capture ran. The problems named in
    `meet` wait for each other inside their captures: they pass only if the ledger lets them run
    at the same time (a wall-clock overlap check failed on a loaded CI machine, where a footprint
    measurement queued behind a judgement outlasted the first capture)."""

    name, version = "inductor", "test"

    def __init__(self, meet: tuple[str, ...] = ()):
        self.spans: dict[str, tuple[float, float]] = {}
        self.meet = set(meet)
        self.barrier = threading.Barrier(len(meet)) if meet else None

    def generate(self, problems, samples=1):
        start = time.monotonic()
        time.sleep(0.4)
        if self.barrier is not None and any(p.name in self.meet for p in problems):
            self.barrier.wait(timeout=120)  # BrokenBarrierError: they never ran side by side
        for p in problems:
            self.spans[p.name] = (start, time.monotonic())
        return [Candidate(problem_key=p.key, code=RELU_KERNEL, generator=self.name) for p in problems]


def test_big_problems_side_by_side_take_turns_while_small_ones_share(judge):
    """Four batches at once against 3.5 GiB: each 8192 x 8192 problem needs 2 GiB while captured
    (2 x 512 MiB of inputs and outputs + 1 GiB) and as much while judged (factor 2 here), so the
    two never overlap; the small ones (1 GiB each) run beside one big one and each other."""
    validation_config, pool = judge
    big = [Problem(reference_source=elementwise_reference(f"torch.relu(x) * {i + 1}.0", n="8192, 8192"), name=f"big{i}")
           for i in range(2)]
    small = [Problem(reference_source=elementwise_reference(f"torch.relu(x) + {i + 1}.0", n="4, 37"), name=f"small{i}")
             for i in range(2)]
    teacher = TimingTeacher(meet=("small0", "small1"))
    said: list[str] = []
    ledger = MemoryLedger(int(3.5 * GIB))
    run = distill_batches([[p] for p in (*big, *small)], teacher,
                          DistillConfig(teacher="replay", describe_trace=False, rounds=0, concurrent_batches=4,
                                        gpu_memory_factor=2.0, gpu_memory_capture_factor=2.0),
                          validation_config, pool, on_batch=lambda *a: None, memory=ledger, say=said.append)
    assert sorted(p.name for p in run.problems) == ["big0", "big1", "small0", "small1"]
    (a0, a1), (b0, b1) = teacher.spans["big0"], teacher.spans["big1"]
    assert a1 <= b0 or b1 <= a0, "the two big problems were captured at the same time"
    s0, s1 = teacher.spans["small0"], teacher.spans["small1"]
    assert max(s0[0], s1[0]) < min(s0[1], s1[1]), "the small problems did not share"
    assert run.memory["capacity_gb"] == 3.5 and run.memory["biggest_gb"] == 2.0 and run.memory["waited"] >= 1
    assert run.memory["peak_gb"] <= 3.5 and any("GPU memory" in line for line in said)


class HeldWhileJudging:
    """The judge pool, noting how much of the ledger is reserved while it judges."""

    def __init__(self, pool, ledger: MemoryLedger):
        self.pool, self.ledger, self.held = pool, ledger, []

    def validate_many(self, pairs):
        self.held.append(self.ledger.held)
        return self.pool.validate_many(pairs)

    def __getattr__(self, name):
        return getattr(self.pool, name)


def test_a_batch_reserves_for_its_capture_and_for_its_judgement_in_turn(judge):
    """An Inductor capture compiles for minutes on the CPU holding what it put on the GPU; a
    judgement holds the reference's and the candidates' runs. A batch reserves the one, gives it
    back, then the other (twenty-fifth GPU run: reserved for both throughout, 67.7 GiB were held
    while under 30 GiB was in use): an 8192 x 8192 problem holds 2 GiB while its teacher writes
    (capture factor 2) and 3 GiB while it is judged (factor 4), never both."""
    validation_config, pool = judge
    ledger = MemoryLedger(10 * GIB)
    held_writing: list[int] = []

    class Noting(TimingTeacher):
        def generate(self, problems, samples=1):
            held_writing.append(ledger.held)
            return super().generate(problems, samples)

    watched = HeldWhileJudging(pool, ledger)
    problem = Problem(reference_source=elementwise_reference("torch.relu(x) * 3.0", n="8192, 8192"), name="big")
    run = distill_batches([[problem]], Noting(), DistillConfig(teacher="replay", describe_trace=False, rounds=0,
                                                               concurrent_batches=2),
                          validation_config, watched, on_batch=lambda *a: None, memory=ledger)
    assert held_writing == [2 * GIB] and watched.held == [3 * GIB]
    assert ledger.held == 0 and ledger.peak == 3 * GIB and run.memory["biggest_gb"] == 3.0


def test_a_batch_that_waited_for_memory_past_its_time_is_turned_back_not_started(judge):
    """Twenty-ninth GPU run: batches started within the budget queued for GPU memory behind
    others, captured after the wait and ran 150 s past the budget until the script's hard bound
    killed the verb (no summary, the run row left `running`). Now a batch whose first reservation
    had to wait is asked again once it is granted: two big problems that cannot be captured side
    by side, batches estimated at 80 s against a 150 s budget; the first capture takes 100 s (the
    budget's clock), so the second, granted at 100 s, would end at 180: it is turned back, counted
    as left, and its teacher never runs."""
    validation_config, pool = judge
    now = [0.0]
    budget = BatchBudget(150, clock=lambda: now[0])
    budget.record(80)  # earlier batches of this run took 80 s
    ledger = MemoryLedger(3 * GIB)
    captured: list[str] = []

    class SlowFirst(TimingTeacher):
        def generate(self, problems, samples=1):
            captured.extend(p.name for p in problems)
            deadline = time.monotonic() + 60
            while ledger.waited < 1 and time.monotonic() < deadline:  # the other batch is queued behind this one
                time.sleep(0.05)
            now[0] += 100
            return super().generate(problems, samples)

    big = [Problem(reference_source=elementwise_reference(f"torch.relu(x) * {i + 1}.0", n="8192, 8192"), name=f"big{i}")
           for i in range(2)]
    run = distill_batches([[p] for p in big], SlowFirst(),
                          DistillConfig(teacher="replay", describe_trace=False, rounds=0, concurrent_batches=2,
                                        gpu_memory_capture_factor=2.0),
                          validation_config, pool, on_batch=lambda *a: None, memory=ledger, budget=budget)
    assert len(captured) == 1 and [p.name for p in run.problems] == captured
    assert run.left == 1 and run.stopped_by_budget and len(run.results) == 1
    assert ledger.held == 0

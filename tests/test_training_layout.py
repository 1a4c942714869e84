"""Where GRPO trains and judges on several GPUs (training.layout, issue 19), checked on the CPU:
the choice itself, the shared judge served to several processes, and data-parallel GRPO on two
gloo processes with one judge for both."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autotriton.training.judge_service import JudgeService
from autotriton.training.layout import LayoutError, choose_layout, trainer_env
from training_helpers import TextJudge

GOOD_CODE = "y = tl.maximum(x, 0.0)"  # what TextJudge calls correct


def test_auto_picks_by_gpus_and_processes():
    one = choose_layout("auto", num_processes=1, visible_gpus=1, device="cuda")
    assert one.name == "single" and not one.shared_judge
    cpu = choose_layout("auto", num_processes=1, visible_gpus=0, device="cpu")
    assert cpu.name == "single"
    two = choose_layout("auto", num_processes=1, visible_gpus=2, device="cuda")
    assert (two.name, two.num_processes, two.train_gpus, two.judge_gpus, two.shared_judge) == \
        ("judge_on_own_gpu", 1, [0], [1], True)
    dp = choose_layout("auto", num_processes=2, visible_gpus=2, device="cuda")
    assert (dp.name, dp.num_processes, dp.train_gpus, dp.judge_gpus, dp.shared_judge) == ("data_parallel", 2, [0, 1], [], True)
    # GPUs that a cpu-training run does not use do not count
    assert choose_layout("auto", num_processes=1, visible_gpus=2, device="cpu").name == "single"


def test_explicit_layouts_and_their_errors():
    dp = choose_layout("data_parallel", num_processes=1, visible_gpus=2, device="cuda")
    assert dp.num_processes == 2 and dp.train_gpus == [0, 1]  # one process per visible GPU
    own = choose_layout("judge_on_own_gpu", num_processes=1, visible_gpus=4, device="cuda", judge_gpus=[0])
    assert own.train_gpus == [1] and own.judge_gpus == [0]  # validation.gpus honoured, training gets a free GPU
    cpu_dp = choose_layout("data_parallel", num_processes=2, visible_gpus=0, device="cpu")
    assert cpu_dp.num_processes == 2 and cpu_dp.train_gpus == []
    with pytest.raises(LayoutError, match="judge_on_own_gpu needs two GPUs"):
        choose_layout("judge_on_own_gpu", num_processes=1, visible_gpus=1, device="cuda")
    with pytest.raises(LayoutError, match="single runs one process"):
        choose_layout("single", num_processes=2, visible_gpus=2, device="cuda")
    with pytest.raises(LayoutError, match="data_parallel needs two or more"):
        choose_layout("data_parallel", num_processes=1, visible_gpus=1, device="cuda")
    with pytest.raises(LayoutError, match="leaves no GPU for training"):
        choose_layout("judge_on_own_gpu", num_processes=1, visible_gpus=2, device="cuda", judge_gpus=[0, 1])
    with pytest.raises(LayoutError, match="training.layout = 'nope'"):
        choose_layout("nope", num_processes=1, visible_gpus=2, device="cuda")


def test_trainers_see_only_their_gpus_named_as_the_launcher_names_them():
    own = choose_layout("judge_on_own_gpu", num_processes=1, visible_gpus=2, device="cuda")
    assert trainer_env(own, {}) == {"CUDA_VISIBLE_DEVICES": "0"}
    assert trainer_env(own, {"CUDA_VISIBLE_DEVICES": "6,7"}) == {"CUDA_VISIBLE_DEVICES": "6"}
    dp = choose_layout("data_parallel", num_processes=2, visible_gpus=2, device="cuda")
    assert trainer_env(dp, {"CUDA_VISIBLE_DEVICES": "2,3"}) == {"CUDA_VISIBLE_DEVICES": "2,3"}


CLIENT = textwrap.dedent("""
    import sys
    from autotriton.training.judge_service import RemoteJudge
    rank, code = int(sys.argv[1]), sys.argv[2]
    with RemoteJudge.from_env(rank=rank) as judge:
        for _ in range(3):
            verdicts = judge.validate_many([("import torch\\n", code), ("import torch\\n", "bad")])
            assert [v.correct for v in verdicts] == [True, False], verdicts
    print("ok", rank)
""")


def test_one_judge_serves_several_processes_at_once_and_only_with_its_key(tmp_path):
    judge = TextJudge(0.3)
    with JudgeService(judge) as service:
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent), **service.env())
        procs = [subprocess.Popen([sys.executable, "-c", CLIENT, str(rank), GOOD_CODE], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (0, 1)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        assert service.stats.to_dict() == {"ranks": [0, 1], "batches": {0: 3, 1: 3}, "jobs": {0: 6, 1: 6}}
        # the two ranks' batches were judged at the same time by the one judge
        calls = sorted(judge.calls)
        assert any(a1 > b0 for (a0, a1), (b0, b1) in zip(calls, calls[1:]))
        bad = dict(env, AUTOTRITON_JUDGE_SERVICE_KEY="00" * 32)
        refused = subprocess.run([sys.executable, "-c", CLIENT, "5", GOOD_CODE], env=bad, capture_output=True,
                                 text=True, timeout=120)
        assert refused.returncode != 0 and "AuthenticationError" in refused.stderr
        assert 5 not in service.stats.ranks
    assert not Path(service.address).exists()  # the socket's folder is gone with the service


def test_data_parallel_grpo_on_two_gloo_processes_shares_one_judge(tmp_path):
    """`autotriton grpo` with training.layout = data_parallel on the CPU: two trainer processes
    under accelerate (gloo), the judge served from this process to both ranks."""
    import datasets

    from autotriton.records import Export
    from autotriton.tasks.steps import train_grpo
    from autotriton.training.config import TrainingConfig
    from autotriton.training.data import build_rl_rows
    from autotriton.training.models import make_tiny_model
    from autotriton.validation import ValidationConfig
    from training_helpers import elementwise_problem

    tiny = make_tiny_model(tmp_path / "tiny")
    rows = build_rl_rows([elementwise_problem("relu", "torch.relu(x)", n=300 + k) for k in range(2)], val_fraction=0.0)
    data = tmp_path / "rl.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(data))
    export = Export(name="rl", filter={}, row_count=len(rows), content_hash="h", path=str(data))
    cfg = TrainingConfig(model=str(tiny), output_dir=str(tmp_path / "out"), device="cpu", layout="data_parallel",
                         num_processes=2, grpo_max_steps=2, num_generations=2, per_device_train_batch_size=2,
                         max_completion_length=8, save_steps=100)
    judge = TextJudge(0.0)
    statuses: list[str] = []
    result = train_grpo(cfg, ValidationConfig(device="cpu"), export, base_model=None, resume=False,
                        judge_for=lambda vcfg: judge, on_status=statuses.append)
    assert result.steps == 2 and result.metrics["layout"] == "data_parallel"
    assert result.metrics["judge_service"]["ranks"] == [0, 1]  # both ranks reached the one shared judge
    assert any("layout data_parallel" in s for s in statuses)
    breakdown = result.metrics["step_breakdown"]
    assert breakdown["step_s"] > 0 and breakdown["generation_s"] > 0 and "reward_wait_s" in breakdown
    assert breakdown["update_s"] >= 0

"""GRPO with the judge overlapped with generation (`training.reward_overlap`).

Plain GRPO is sequential: generate a batch, judge it, update. On a GPU the judge is the slow
part (every completion is a fresh sandboxed process that starts CUDA and JIT-compiles its
kernels: benchmarks/RESULTS.md), and the policy waits for it. With overlap, the judge works on
batch k while the trainer generates batch k+1:

    step k:  generate batch k (policy after k-1 updates) -> hand it to the judge (background)
             wait for the verdicts of batch k-1 (judged while batch k was generated)
             update on batch k-1

so each update uses rewards one step late, on a batch sampled by the policy one update older
(the one-step off-policy pipeline of AReaL and PipelineRL). The batch's log-probabilities
under the policy that sampled it are recorded at generation (`old_per_token_logps`), so trl's
clipped importance ratio corrects for the extra update, exactly as it does for
`num_iterations > 1`. The first step generates two batches from the same prompts to fill
the pipeline; the last batch generated is judged but not trained on.

What changes in the logs: `time/reward_s` is still the judge's wall time per batch (now spent
in the background); `time/reward_wait_s` is the part of a step the trainer actually waited
for it. Rewards, advantages and the judge's shares are logged at the step that trains on the
batch they belong to.

Only plain, synchronous reward functions are supported (the judge's `JudgeRewards` are);
reward models, async reward functions, tools and environments raise a clear error.
"""

from __future__ import annotations

import copy
import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

OVERLAP_METRICS = ("reward", "reward_std", "frac_reward_zero_std")


@dataclass
class PendingBatch:
    """A generated batch whose rewards are still being computed in the background."""

    output: dict[str, Any]  # what trl's _generate_and_score_completions returned (advantages not yet real)
    future: Future  # -> one list of rewards per reward function, this process's rows
    metrics: dict[str, list[float]]  # what the reward functions logged through log_metric
    logged_prompts: list[Any] = field(default_factory=list)
    logged_completions: list[Any] = field(default_factory=list)


def group_advantages(rewards_per_func, weights, num_generations: int, scale_rewards: str, aggregation: str):
    """trl 1.16's GRPO advantages from gathered rewards (rows x reward functions): returns
    (advantages, rewards, is_std_zero), NaN-aware as trl is. Kept equal to
    GRPOTrainer._generate_and_score_completions (tests/test_training_overlap.py checks it
    against the trainer's own numbers)."""
    import torch
    from trl.trainer.utils import nanstd

    unscorable = torch.isnan(rewards_per_func).all(dim=1)
    weights = weights.to(rewards_per_func.device)
    if aggregation == "sum_then_normalize":
        rewards = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
        rewards[unscorable] = torch.nan
        mean = torch.nanmean(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations, dim=0)
        if scale_rewards in ("group", "none"):
            if num_generations > 1:
                std = nanstd(rewards.view(-1, num_generations), dim=1).repeat_interleave(num_generations, dim=0)
            else:
                std = torch.zeros_like(rewards)
        elif scale_rewards == "batch":
            std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
        else:
            raise ValueError(f"scale_rewards={scale_rewards!r}: expected 'group', 'batch' or 'none'")
        advantages = rewards - mean
        if scale_rewards != "none":
            advantages = advantages / (std + 1e-4)
    elif aggregation == "normalize_then_sum":
        n_funcs = rewards_per_func.shape[1]
        grouped = rewards_per_func.view(-1, num_generations, n_funcs)
        mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
        std_k = nanstd(grouped, dim=1, keepdim=True) if num_generations > 1 else torch.zeros_like(mean_k)
        reward_k = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, n_funcs)
        rewards = (reward_k * weights.unsqueeze(0)).nansum(dim=1)
        rewards[unscorable] = torch.nan
        std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
        advantages = (rewards - torch.nanmean(rewards)) / (std + 1e-4)
    else:
        raise ValueError(f"multi_objective_aggregation={aggregation!r}")
    return torch.nan_to_num(advantages, nan=0.0), rewards, torch.isclose(std, torch.zeros_like(std))


class RewardOverlapMixin:
    """Mixed into trl's GRPOTrainer (before it in the MRO) by training.grpo when
    `reward_overlap` is on. See the module docstring."""

    reward_overlap = False

    # -- set-up -----------------------------------------------------------------------------------
    def _overlap_init(self) -> None:
        import torch.nn as nn
        from trl.trainer.utils import is_async_callable

        bad = [name for f, name in zip(self.reward_funcs, self.reward_func_names)
               if isinstance(f, nn.Module) or is_async_callable(f)]
        if bad or getattr(self, "environment_factories", None) or getattr(self, "tools", None):
            raise ValueError("training.reward_overlap works with plain synchronous reward functions only (the judge's); "
                             f"turn it off for reward models, async rewards, tools or environments (got {bad or 'tools/environments'}).")
        self._overlap_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="autotriton-rewards")
        self._overlap_pending: PendingBatch | None = None
        self._overlap_deferred: tuple[Future, dict[str, list[float]]] | None = None

    def _overlap_close(self) -> None:
        pending, self._overlap_pending = self._overlap_pending, None
        if pending is not None:  # judged but never trained on: let the judge finish before its pool closes
            try:
                pending.future.result()
            except Exception:  # noqa: BLE001
                pass
        self._overlap_pool.shutdown(wait=True)

    def train(self, *args, **kwargs):
        if not self.reward_overlap:
            return super().train(*args, **kwargs)
        self._overlap_init()
        try:
            return super().train(*args, **kwargs)
        finally:
            self._overlap_close()

    # -- the pipeline -------------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs):
        if not (self.reward_overlap and self.model.training and hasattr(self, "_overlap_pool")):
            return super()._generate_and_score_completions(inputs)
        fresh = self._overlap_start(inputs)
        if self._overlap_pending is None:  # fill the pipeline: a second batch from the same prompts
            ready, self._overlap_pending = fresh, self._overlap_start(copy.deepcopy(inputs))
        else:
            ready, self._overlap_pending = self._overlap_pending, fresh
        return self._overlap_finish(ready)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        if not getattr(self, "_overlap_deferring", False):
            return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        import torch

        keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
        kwargs = {k: [example[k] for example in inputs] for k in keys}
        state = copy.copy(self.state)  # the step it was generated at, frozen: training moves on meanwhile
        logged: dict[str, list[float]] = {}

        def log_metric(name: str, value: float) -> None:
            logged.setdefault(name, []).append(float(value))

        funcs = list(self.reward_funcs)

        def judge() -> list[list[float]]:
            t0 = time.perf_counter()
            columns = []
            for func in funcs:
                out = func(prompts=prompts, completions=completions, completion_ids=completion_ids_list, trainer_state=state,
                           log_metric=log_metric, log_extra=lambda *a, **k: None, **kwargs)
                if len(out) != len(prompts):
                    raise ValueError(f"a reward function returned {len(out)} rewards for {len(prompts)} completions")
                columns.append([math.nan if r is None else float(r) for r in out])
            logged["time/reward_s"] = [time.perf_counter() - t0]
            return columns

        self._overlap_deferred = (self._overlap_pool.submit(judge), logged)
        # Placeholders: trl computes (zero) advantages from these; the real ones replace them
        # when the verdicts are in. The gather keeps every process's collectives in step.
        placeholder = torch.zeros(len(prompts), len(self.reward_funcs), device=self.accelerator.device)
        return self.accelerator.gather(placeholder)

    def _overlap_start(self, inputs) -> PendingBatch:
        """Generate (and score with the current policy) one batch; its judging starts in the background."""
        import torch

        self._overlap_deferring, self._overlap_deferred = True, None
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            self._overlap_deferring = False
        deferred, self._overlap_deferred = self._overlap_deferred, None
        assert deferred is not None, "trl did not compute rewards for the batch"
        future, logged = deferred
        mode = "train"
        metrics = self._metrics[mode]
        for name in self.reward_func_names:  # drop what trl logged from the placeholders
            metrics[f"rewards/{name}/mean"].pop()
            metrics[f"rewards/{name}/std"].pop()
        for key in OVERLAP_METRICS:
            metrics[key].pop()
        if "old_per_token_logps" not in output:
            # The policy that sampled this batch, recorded now: it trains one update later.
            from trl.models.utils import disable_gradient_checkpointing

            ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
            mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
            with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
                output["old_per_token_logps"], _, _ = self._get_per_token_logps_and_entropies(
                    self.model, ids, mask, output["completion_ids"].size(1), batch_size=self.args.per_device_train_batch_size)
        return PendingBatch(output, future, logged, list(self._logs["prompt"]), list(self._logs["completion"]))

    def _overlap_finish(self, batch: PendingBatch) -> dict[str, Any]:
        """Wait for a batch's rewards; put its real advantages, metrics and logs in place."""
        import torch
        from accelerate.utils import gather_object

        t0 = time.perf_counter()
        columns = batch.future.result()  # a judge failure surfaces here, in the step that needs it
        waited = time.perf_counter() - t0
        device = self.accelerator.device
        local = torch.tensor(columns, dtype=torch.float32, device=device).T.contiguous()
        rewards_per_func = self.accelerator.gather(local)
        advantages, rewards, is_std_zero = group_advantages(
            rewards_per_func, self.reward_weights, self.num_generations, self.scale_rewards, self.multi_objective_aggregation)
        n_local = local.shape[0]
        index = self.accelerator.process_index
        output = dict(batch.output)
        output["advantages"] = advantages[index * n_local:(index + 1) * n_local]

        from trl.trainer.utils import nanstd

        metrics = self._metrics["train"]
        for i, name in enumerate(self.reward_func_names):
            metrics[f"rewards/{name}/mean"].append(torch.nanmean(rewards_per_func[:, i]).item())
            metrics[f"rewards/{name}/std"].append(nanstd(rewards_per_func[:, i]).item())
        metrics["reward"].append(torch.nanmean(rewards).item())
        metrics["reward_std"].append(nanstd(rewards).item())
        metrics["frac_reward_zero_std"].append(is_std_zero.float().mean().item())
        metrics["time/reward_wait_s"].append(waited)
        # What the reward functions logged (judge shares, judge time): averaged over processes,
        # in one key order on every process (as trl flushes log_metric).
        for name in sorted(set(sum(gather_object([sorted(batch.metrics)]), []))):
            values = batch.metrics.get(name, [])
            stats = torch.tensor([sum(values), len(values)], dtype=torch.float32, device=device)
            total, count = self.accelerator.gather(stats).view(-1, 2).sum(dim=0).tolist()
            if count:
                metrics[name].append(total / count)
        logs = self._logs
        logs["prompt"].clear()
        logs["prompt"].extend(batch.logged_prompts)
        logs["completion"].clear()
        logs["completion"].extend(batch.logged_completions)
        for i, name in enumerate(self.reward_func_names):
            logs["rewards"][name].clear()
            logs["rewards"][name].extend(rewards_per_func[:, i].tolist())
        logs["advantages"].clear()
        logs["advantages"].extend(advantages.tolist())
        return output

"""Training throughput on a GPU: SFT tokens/s and the GRPO step-time breakdown.

A Qwen2.5-0.5B-shaped model (hidden 896, 24 layers, 14 heads / 2 KV heads, MLP 4864, vocab
151936, tied embeddings; random weights: no model hub here) in bf16, trained with autotriton's
own `run_sft` / `run_grpo` (trl SFTTrainer / GRPOTrainer) and the real judge (`JudgePool`,
CUDA device, timing on).

GRPO generation is steered (a LogitsProcessor picks the tokens; the model still runs every
forward pass) so the completions are real Triton answers of the benchmark problem: a random
model would only produce unparseable text, which the judge never sees, and the reward share
would be meaningless. Completions are padded with reasoning to about --completion-len tokens,
a mix of correct and wrong kernels with distinct block sizes, so every completion is a
distinct job for the judge, as in real training.

Target (issue 7): reward computation under 20% of a GRPO step.

    python benchmarks/training_gpu.py --out results.json            # on a GPU machine
    python benchmarks/training_gpu.py --smoke                       # CPU check, tiny shapes
    accelerate launch --config_file configs/accelerate/multi_gpu.yaml --num_processes 2 \
        benchmarks/training_gpu.py --out results-2gpu.json            # data parallel on 2 GPUs

Under `accelerate launch` every rank runs the same benchmark on its own GPU (DDP through trl and
accelerate, one judge pool per rank spread over the GPUs); SFT tokens/s is global (trl gathers
the token counts of all ranks), GRPO timings are rank 0's; only rank 0 prints and writes --out.

Needs torch, transformers, trl, datasets, pydantic, triton, and libcst (the judge's static
rules); no warehouse, no Prefect. The GPU image lacks trl, datasets (+ dill, multiprocess),
pydantic (+ pydantic-core, annotated-types, typing-inspection, typing-extensions) and libcst:
carry them as cp312 manylinux wheels (see /work/.library/device/README.md) and install with
`pip install --no-index --no-deps --target /tmp/site WHEELS; export PYTHONPATH=/tmp/site`.
Its pyarrow (25.0.1) is recent enough for datasets 5.2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # autotriton.* from the checkout

REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a large activation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = {rows}
dim = {cols}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

ANSWER = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, {expr}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, {block}),)](x, out, n, BLOCK={block})
        return out
'''

FILLER = ("The forward is elementwise, so one program handles a contiguous block of elements; "
          "the block size is a power of two, the edge is masked, loads use other=0.0 and the "
          "result is stored in place of a torch call. ")


def qwen05b_config(vocab: int, smoke: bool):
    from transformers import Qwen2Config

    if smoke:
        return Qwen2Config(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                           tie_word_embeddings=True)
    return Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                       num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
                       rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True)


def make_model(tok, device: str, smoke: bool):
    import torch
    from transformers import AutoModelForCausalLM

    from autotriton.training.models import dtype_for

    torch.manual_seed(0)
    config = qwen05b_config(len(tok), smoke)
    config.pad_token_id, config.eos_token_id, config.bos_token_id = tok.pad_token_id, tok.eos_token_id, tok.bos_token_id
    with torch.device(device):  # initialise on the GPU: a 0.5B random init on the CPU takes longer than the run
        model = AutoModelForCausalLM.from_config(config, dtype=dtype_for(device), attn_implementation="sdpa")
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    return model


def padded_completion(tok, code: str, tokens: int, salt: int) -> str:
    from autotriton.prompting import format_completion

    reasoning = f"Variant {salt}. "
    while len(tok(format_completion(reasoning + FILLER, code))["input_ids"]) < tokens:
        reasoning += FILLER
    return format_completion(reasoning, code)


class Steer:
    """Row i of a generate() call emits targets[i % len(targets)] token by token, then EOS."""

    def __init__(self, targets, prompt_len, eos):
        import torch

        width = max(len(t) for t in targets) + 1
        self.table = torch.full((len(targets), width), eos, dtype=torch.long)
        for i, t in enumerate(targets):
            self.table[i, : len(t)] = torch.tensor(t)
        self.prompt_len = prompt_len

    def __call__(self, input_ids, scores):
        import torch

        step = min(input_ids.shape[1] - self.prompt_len, self.table.shape[1] - 1)
        rows = torch.arange(scores.shape[0]) % self.table.shape[0]
        chosen = self.table[rows, step].to(scores.device)
        forced = torch.full_like(scores, float("-inf"))
        forced.scatter_(1, chosen[:, None], 0.0)
        return forced


def steer(model, tok, completions):
    """Make model.generate emit the given completions in rotation; returns the longest (tokens)."""
    from transformers import LogitsProcessorList

    targets = [tok(c, add_special_tokens=False)["input_ids"] for c in completions]
    original = model.generate

    def generate(*args, **kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        procs = kwargs.pop("logits_processor", None) or LogitsProcessorList()
        procs.append(Steer(targets, ids.shape[1], tok.eos_token_id))
        return original(*args, logits_processor=procs, **kwargs)

    model.generate = generate
    return max(len(t) for t in targets)


class PrintStepLogs:
    """Print each GRPO step's timing as it is logged, so a run cut short still reports."""

    def __new__(cls):
        from transformers import TrainerCallback

        class _Printer(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kwargs):
                keys = ("step_time", "time/generation_s", "time/reward_s", "time/reward_wait_s", "judge/judge_s", "reward", "judge/correct",
                        "completions/mean_length")
                if logs and "step_time" in logs and state.is_world_process_zero:
                    print(json.dumps({"grpo_step": state.global_step, **{k: logs.get(k) for k in keys}}), flush=True)

        return _Printer()


def bench_sft(args, tok, device, workdir):
    from autotriton.prompting import build_messages
    from autotriton.training.config import TrainingConfig
    from autotriton.training.sft import run_sft

    ref = REFERENCE.format(rows=64, cols=4096)
    code = ANSWER.format(expr="tl.maximum(x, 0.0)", block=1024)
    completion = padded_completion(tok, code, args.seq, 0)
    rows = [{"prompt": build_messages(ref, "Write relu as a Triton kernel."),
             "completion": [{"role": "assistant", "content": completion}], "split": "train"}
            for _ in range(args.sft_batch * (args.sft_steps + 2))]
    model = make_model(tok, device, args.smoke)
    params = sum(p.numel() for p in model.parameters())
    cfg = TrainingConfig(model="qwen2.5-0.5b-shape", output_dir=str(workdir), device=device, max_length=args.seq,
                         batch_size=args.sft_batch, sft_max_steps=args.sft_steps + 2, sft_learning_rate=1e-5,
                         save_steps=10_000, gradient_checkpointing=args.grad_ckpt, packing="off")
    t0 = time.perf_counter()
    result = run_sft(cfg, rows, model=model, tokenizer=tok, progress=False)
    wall = time.perf_counter() - t0
    logs = [e for e in result.log_history if "num_tokens" in e and "loss" in e]
    # Steady state: from the end of step 2 (compile/allocator warm-up) to the end.
    steps_s = result.metrics.get("steady_step_s")
    toks = [e["num_tokens"] for e in logs]
    per_step_tokens = (toks[-1] - toks[1]) / max(1, len(toks) - 2) if len(toks) > 2 else toks[-1] / max(1, len(toks))
    del model
    return {"params": params, "seq_len": args.seq, "batch": args.sft_batch, "steps": result.steps,
            "tokens_per_step": per_step_tokens, "steady_step_s": steps_s, "mean_step_s": result.metrics.get("mean_step_s"),
            "tokens_per_s": per_step_tokens / steps_s if steps_s else None, "wall_s": wall,
            "final_loss": result.metrics.get("final_loss"), "gradient_checkpointing": args.grad_ckpt}


def bench_grpo(args, tok, device, workdir):
    import torch

    from autotriton.training.config import TrainingConfig
    from autotriton.training.grpo import run_grpo
    from autotriton.records import Problem
    from autotriton.validation import JudgePool, ValidationConfig

    ref = REFERENCE.format(rows=8 if args.smoke else 256, cols=256 if args.smoke else 8192)
    problem = Problem(reference_source=ref, name="relu_large")
    from autotriton.prompting import build_messages

    rows = [{"prompt": build_messages(ref, "Write relu as a Triton kernel."), "reference": ref,
             "problem_key": problem.key, "split": "train"}] * (args.prompts * int(os.environ.get("WORLD_SIZE", "1")))
    blocks = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
    completions = []
    for i in range(args.generations * args.prompts):
        expr = "tl.maximum(x, 0.0)" if i % 4 != 3 else "x"  # a quarter are wrong
        block = blocks[i % len(blocks)]
        completions.append(padded_completion(tok, ANSWER.format(expr=expr, block=block) + f"\n# variant {i}\n",
                                             args.completion_len, i))
    model = make_model(tok, device, args.smoke)
    longest = steer(model, tok, completions)
    cfg = TrainingConfig(model="qwen2.5-0.5b-shape", output_dir=str(workdir), device=device,
                         grpo_max_steps=args.grpo_steps, num_generations=args.generations,
                         batch_size=args.generations * args.prompts, max_completion_length=longest + 2,
                         grpo_learning_rate=1e-6, save_steps=10_000, gradient_checkpointing=args.grad_ckpt,
                         reward_overlap=args.reward_overlap)
    vcfg = ValidationConfig(device=device, trials=args.trials, workers=args.judge_workers,
                            time_kernels=args.time_kernels and device == "cuda",
                            shrink_for_cpu=device != "cuda",
                            gpus=[int(g) for g in args.judge_gpus.split(",")] if args.judge_gpus else [])
    t0 = time.perf_counter()
    with JudgePool(vcfg) as judge:
        pool_start = time.perf_counter() - t0
        result = run_grpo(cfg, rows, judge, model=model, tokenizer=tok, progress=False,
                          trainer_hook=lambda trainer: trainer.add_callback(PrintStepLogs()))
    steps = [e for e in result.log_history if "step_time" in e]
    per_step = [{"step": e.get("step"), "step_s": e["step_time"], "generation_s": e.get("time/generation_s"),
                 "reward_s": e.get("time/reward_s"), "reward_wait_s": e.get("time/reward_wait_s"), "judge_s": e.get("judge/judge_s"),
                 "reward": e.get("reward"), "correct": e.get("judge/correct"),
                 "completion_len": e.get("completions/mean_length")} for e in steps]
    steady = per_step[1:] or per_step  # the first step pays judge and CUDA warm-up
    if not steady:
        raise RuntimeError(f"no GRPO step was logged (log_history: {result.log_history[-3:]})")
    med = lambda k: statistics.median(s[k] for s in steady if s[k] is not None)  # noqa: E731
    step_s, gen_s, rew_s = med("step_s"), med("generation_s"), med("reward_s")
    # The reward's cost to a step: the judge's wall time, or with reward_overlap (the judge
    # works while the next batch is generated) only the time the trainer waited for it.
    exposed = med("reward_wait_s") if args.reward_overlap else rew_s
    return {"reward_overlap": args.reward_overlap, "median_reward_wait_s": exposed if args.reward_overlap else None,
            "judge_wall_share": rew_s / step_s,"params": sum(p.numel() for p in model.parameters()), "prompts_per_step": args.prompts,
            "generations": args.generations, "completions_per_step": args.prompts * args.generations,
            "time_kernels": vcfg.time_kernels, "trials": args.trials, "completion_tokens": args.completion_len, "max_completion_length": longest + 2, "judge_workers": judge.n_workers, "judge_start_s": pool_start,
            "median_step_s": step_s, "median_generation_s": gen_s, "median_reward_s": rew_s,
            "median_update_s": step_s - gen_s - exposed, "reward_share": exposed / step_s,
            "target_met": exposed / step_s < 0.20, "per_step": per_step,
            "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu"}


PHASE_PREFIXES = ("phase_", "candidate_", "caller_")


def judge_profile(args, tok, device, worker_counts):
    """Where a GRPO step's reward time goes: the benchmark's distinct completions (the same
    kernels a step judges) through a fresh JudgePool per worker count, with the judge's own
    per-candidate figures: end-to-end latency, the first trial (includes the JIT compile), the
    later trials and the import of the candidate module, and `phases_median_s`: the medians of
    the per-phase wall times each verdict carries (caller_*, phase_*, candidate_*: see
    validation/README.md, "Where a judgement's time goes")."""
    from autotriton.validation import JudgePool, ValidationConfig

    ref = REFERENCE.format(rows=8 if args.smoke else 256, cols=256 if args.smoke else 8192)
    blocks = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
    codes = [ANSWER.format(expr="tl.maximum(x, 0.0)" if i % 4 != 3 else "x", block=blocks[i % len(blocks)])
             + f"\n# variant {i}\nVARIANT_{i} = {i}\n" for i in range(args.generations * args.prompts)]
    del tok
    out = []
    for workers in worker_counts:
        vcfg = ValidationConfig(device=device, trials=args.trials, workers=workers, time_kernels=False,
                                shrink_for_cpu=device != "cuda", isolate_network=not args.judge_no_netns)
        t0 = time.perf_counter()
        with JudgePool(vcfg) as judge:
            started = time.perf_counter() - t0
            t1 = time.perf_counter()
            verdicts = judge.validate_many([(ref, c) for c in codes])
            wall = time.perf_counter() - t1
        med = lambda xs: round(statistics.median(xs), 3) if xs else None  # noqa: E731
        first = [v.trials[0].get("elapsed_s") for v in verdicts if v.trials and v.trials[0].get("elapsed_s") is not None]
        later = [t.get("elapsed_s") for v in verdicts for t in v.trials[1:] if t.get("elapsed_s") is not None]
        row = {"workers": judge.n_workers, "isolate_network": vcfg.isolate_network, "candidates": len(codes), "pool_start_s": round(started, 2),
               "wall_s": round(wall, 2), "per_candidate_s": round(wall / len(codes), 3),
               "median_latency_s": med([v.elapsed_s for v in verdicts]),
               "median_first_trial_s": med(first), "median_later_trial_s": med(later),
               "median_import_s": med([v.timing.get("candidate_import_s") for v in verdicts
                                       if v.timing.get("candidate_import_s") is not None]),
               "median_first_transfer_s": med([v.timing.get("candidate_first_transfer_s") for v in verdicts
                                               if v.timing.get("candidate_first_transfer_s") is not None]),
               "statuses": {s: sum(1 for v in verdicts if v.status == s) for s in {v.status for v in verdicts}}}
        # Medians of the judge's per-phase wall times (validation/README.md, "Where a judgement's time goes").
        keys = sorted({k for v in verdicts for k, x in v.timing.items() if k.startswith(PHASE_PREFIXES) and k.endswith("_s")
                       and isinstance(x, (int, float))})
        row["phases_median_s"] = {k: med([v.timing[k] for v in verdicts if isinstance(v.timing.get(k), (int, float))]) for k in keys}
        print(json.dumps({"judge_profile": row}), flush=True)
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny model and shapes (CPU check of the script)")
    ap.add_argument("--seq", type=int, default=2048, help="SFT sequence length")
    ap.add_argument("--sft-batch", type=int, default=8)
    ap.add_argument("--sft-steps", type=int, default=10, help="timed SFT steps (after 2 warm-up steps)")
    ap.add_argument("--grpo-steps", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=4, help="prompts per GRPO step")
    ap.add_argument("--generations", type=int, default=8, help="GRPO group size")
    ap.add_argument("--completion-len", type=int, default=512, help="completion tokens (steered answers padded to this)")
    ap.add_argument("--judge-workers", type=int, default=8, help="judge worker processes")
    ap.add_argument("--trials", type=int, default=3, help="judge correctness trials")
    ap.add_argument("--time-kernels", action="store_true",
                    help="judge with kernel timing (needed only for speedup shaping; `autotriton grpo` turns it off otherwise)")
    ap.add_argument("--grad-ckpt", action="store_true", help="gradient checkpointing on")
    ap.add_argument("--skip-sft", action="store_true")
    ap.add_argument("--skip-grpo", action="store_true")
    ap.add_argument("--judge-profile", default="", help="comma-separated judge worker counts: also profile the judge on "
                    "the GRPO completions' kernels with each (e.g. 8,16,32)")
    ap.add_argument("--reward-overlap", action="store_true",
                    help="GRPO with training.reward_overlap: the judge works on one batch while the next is generated")
    ap.add_argument("--judge-gpus", default="", help="comma-separated GPU indices for the GRPO judge (validation.gpus); "
                    "e.g. train with CUDA_VISIBLE_DEVICES=0,1 on GPU 0 and judge on 1")
    ap.add_argument("--judge-no-netns", action="store_true",
                    help="judge profile without a network namespace per candidate (measures what that isolation costs)")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    args = ap.parse_args()
    if args.smoke:
        args.seq, args.sft_batch, args.sft_steps, args.grpo_steps = 768, 2, 2, 2
        args.prompts, args.generations, args.completion_len, args.judge_workers, args.trials = 1, 4, 128, 2, 1

    import torch
    from transformers import AutoTokenizer

    from autotriton.training.models import make_tiny_model

    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    rank, world = int(os.environ.get("LOCAL_RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    if device == "cuda":
        torch.cuda.set_device(rank)  # `torch.device("cuda")` (model init) then means this rank's GPU
    main_rank = rank == 0

    def say(obj) -> None:
        if main_rank:
            print(json.dumps(obj, default=str), flush=True)

    results = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu", "world_size": world,
               "gpus_visible": torch.cuda.device_count() if device == "cuda" else 0,
               "torch": torch.__version__, "args": {k: str(v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory(prefix="training-gpu-") as tmp:
        tok = AutoTokenizer.from_pretrained(str(make_tiny_model(Path(tmp) / "tok")))
        if not args.skip_sft:
            results["sft"] = bench_sft(args, tok, device, Path(tmp) / "sft")
            say({"sft": results["sft"]})
            if device == "cuda":
                torch.cuda.empty_cache()
        if not args.skip_grpo:
            results["grpo"] = bench_grpo(args, tok, device, Path(tmp) / "grpo")
            say({"grpo": results["grpo"]})
        if args.judge_profile and main_rank:
            results["judge_profile"] = judge_profile(args, tok, device, [int(x) for x in args.judge_profile.split(",")])
    if args.out and main_rank:
        args.out.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Timing study: how fast the evaluation's local generator decodes, per generate() setting.

The third H200 build (RESULTS.md) measured ~75 ms a decoding step for SmolLM2-135M (HF
`generate`, batch 32) in GRPO and ~140 ms in `autotriton eval` (16 problems x 8 samples a call):
at 2,048-token completions an evaluation of 40 problems takes ~15 minutes. This script times the
product's own `LocalModelGenerator` (what `autotriton eval` runs) on a suite's problems for each
variant of `evaluation.generation_kwargs` / `evaluation.batch_size` named on the command line, so a
device session can pick the setting before it spends its time on an evaluation:

    python benchmarks/generation_speed.py --model smollm2-135m --suite exports/rl:validation \
        --problems 16 --samples 8 --max-new-tokens 512 \
        --variant dynamic='{}' --variant static='{"cache_implementation": "static"}' \
        --variant paged='{"continuous_batching": true}' --batch-sizes 4,16

One JSON line per (variant, batch size): seconds of the first call (compilation included) and of
the rest, generated tokens, tokens per second, milliseconds per decoding step. `"continuous_batching":
true` in a variant's JSON is `evaluation.continuous_batching` (one generate_batch call for every
sample; its batch size is moot). A timing study, not
a product figure; correctness of the outputs is the evaluation's business.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--suite", required=True, help="any suite `autotriton eval --suite` takes")
    ap.add_argument("--problems", type=int, default=16)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--batch-sizes", default="16", help="comma-separated problems per generate() call")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                    help="generation_kwargs to time (repeatable; default: dynamic={})")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args(argv)

    from autotriton.evaluation import cap_problems, load_suite
    from autotriton.evaluation.generators import LocalModelGenerator

    problems = cap_problems(load_suite(args.suite), args.problems)
    variants = [v.split("=", 1) for v in (args.variant or ["dynamic={}"])]
    base = LocalModelGenerator(args.model, device=args.device, temperature=0.8, top_p=0.95,
                               max_new_tokens=args.max_new_tokens)
    for name, raw in variants:
        kwargs = json.loads(raw)
        continuous = bool(kwargs.pop("continuous_batching", False))  # evaluation.continuous_batching, not a generate() argument
        for batch in (int(b) for b in args.batch_sizes.split(",")):
            gen = LocalModelGenerator(base.model, tokenizer=base.tokenizer, device=args.device, temperature=0.8,
                                      top_p=0.95, max_new_tokens=args.max_new_tokens, batch_size=batch,
                                      generation_kwargs=kwargs, continuous_batching=continuous)
            times: list[float] = []
            t_last = [time.perf_counter()]

            def tick(_n: int) -> None:
                now = time.perf_counter()
                times.append(now - t_last[0])
                t_last[0] = now

            t0 = time.perf_counter()
            try:
                out = gen.generate(problems, args.samples, progress=tick)
            except Exception as exc:  # one variant failing must not hide the others' figures
                print(json.dumps({"variant": name, "batch_size": batch, "error": f"{type(exc).__name__}: {exc}"[:500]}),
                      flush=True)
                continue
            total = time.perf_counter() - t0
            tokens = sum(c.usage.get("completion_tokens", 0) for cs in out for c in cs)
            steps = len(times) * args.max_new_tokens  # generate() runs to the longest sample of each call
            print(json.dumps({
                "variant": name, "generation_kwargs": kwargs, "continuous_batching": continuous, "batch_size": batch, "problems": len(problems),
                "samples": args.samples, "max_new_tokens": args.max_new_tokens, "calls": len(times),
                "first_call_s": round(times[0], 2) if times else None,
                "rest_s": round(sum(times[1:]), 2), "total_s": round(total, 2), "completion_tokens": tokens,
                "tokens_per_s": round(tokens / total, 1) if total else None,
                "ms_per_step_upper_bound": round(1000 * total / steps, 2) if steps else None,
            }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

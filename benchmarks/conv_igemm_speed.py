# SPDX-License-Identifier: Apache-2.0
"""Timing study (not a product figure): the teacher's implicit-GEMM convolution kernels
(distillation/conv_kernels.py) against torch's own convolution (cuDNN) on a suite's convolution
problems at their own sizes, on one GPU.

    python benchmarks/conv_igemm_speed.py --suite .gpu/kernelbench_level1.jsonl [--name GLOB ...] [--out F.json]
        [--teacher-only] [--tiles auto --tiles 128,0,32,8,4 ...]

For every problem whose Model holds exactly one nn.Conv*/ConvTranspose* layer (names matching
--name, default every `conv_*`), the layer's convolution is timed as torch runs it (eager, TF32 as
torch's defaults allow) and through `conv_nd` / `conv_transpose_nd` on the same tensors, with
triton.testing.do_bench (median ms); the outputs are compared (max abs error). Runs without an
installed autotriton (a bare GPU image): the two modules are loaded from their files. Each row
also gives the per-forward copy of the input to channels-last alone (`copy_ms`) and, with
--tiles, the kernel's time under other tile choices (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages):
what a better fixed choice or an autotuned one would gain.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inductor_l1 import _load  # noqa: E402 - the suite runner's loader (imported, or from its file on a bare image)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", required=True)
    ap.add_argument("--name", action="append", default=[])
    ap.add_argument("--out")
    ap.add_argument("--tiles", action="append", default=[],
                    help="also time the kernel with these tiles, BLOCK_M,BLOCK_N,BLOCK_K,warps,stages (0: the kernel's "
                         "own choice for that one); repeatable; 'auto' is the kernel's own choice (always timed)")
    ap.add_argument("--teacher-only", action="store_true", help="only the convolutions the teacher gives the kernel")
    args = ap.parse_args(argv)
    import torch
    import triton

    _load("inductor_decompose")
    kernels = _load("conv_kernels")
    conv_nd, conv_transpose_nd = kernels.conv_ops()
    own_tiles = kernels._tiles

    def tiles_of(spec: str):  # the kernel's tile choice replaced (its `_launch` looks `_tiles` up at each call)
        if spec == "auto":
            return own_tiles
        bm, bn, bk, warps, stages = (int(v) for v in spec.split(","))

        def chosen(cog, dtype):
            mine = own_tiles(cog, dtype)
            return bm or mine[0], bn or mine[1], bk or mine[2], warps or mine[3], stages or mine[4]
        return chosen
    torch.backends.cuda.matmul.allow_tf32 = True  # the teacher's capture setting (TF32 dots)
    globs = args.name or ["conv_*"]
    rows = []
    for line in Path(args.suite).read_text().splitlines():
        problem = json.loads(line)
        if not any(fnmatch.fnmatch(problem["name"], g) for g in globs):
            continue
        ns: dict = {}
        exec(compile(problem["source"], problem["name"], "exec"), ns)  # noqa: S102 - the suite's own problems
        torch.manual_seed(0)
        model = ns["Model"](*ns["get_init_inputs"]()).cuda().eval()
        convs = [m for m in model.modules() if isinstance(m, (torch.nn.modules.conv._ConvNd,))]
        if len(convs) != 1:
            continue
        layer = convs[0]
        # whether the teacher's symbolic-parameter capture gives this convolution the kernel at all (the
        # gate of inductor_decompose: depthwise ones stay a multiply + reduction; a transposed one's
        # phases reduce over its input channels alone)
        taps = 1 if layer.transposed else layer.weight[0, 0].numel()
        teacher = kernels.implicit_gemm_applies(layer.in_channels // layer.groups, layer.out_channels // layer.groups, taps)
        if args.teacher_only and not teacher:
            continue
        x = ns["get_inputs"]()[0].cuda()
        nd = layer.weight.dim() - 2
        if isinstance(layer.padding, str):
            continue
        if layer.transposed:
            def ours():
                return conv_transpose_nd(x, layer.weight, layer.bias, list(layer.stride), list(layer.padding),
                                         list(layer.output_padding), layer.groups, list(layer.dilation))
        else:
            def ours():
                return conv_nd(x, layer.weight, layer.bias, list(layer.stride), list(layer.padding),
                               list(layer.dilation), layer.groups)
        with torch.no_grad():
            try:
                err = (ours() - layer(x)).abs().max().item()
                t_ours = triton.testing.do_bench(ours, warmup=5, rep=40)
                t_torch = triton.testing.do_bench(lambda: layer(x), warmup=5, rep=40)
                # the op's per-forward copy of the input to channels-last, alone
                t_copy = triton.testing.do_bench(lambda: x.movedim(1, -1).contiguous(), warmup=5, rep=40)
                by_tiles = {}
                for spec in args.tiles:
                    kernels._tiles = tiles_of(spec)
                    try:
                        wrong = (ours() - layer(x)).abs().max().item()
                        by_tiles[spec] = round(triton.testing.do_bench(ours, warmup=5, rep=40), 4) if wrong < 0.05 \
                            else f"wrong: {wrong:.3g}"
                    except Exception as exc:  # noqa: BLE001 - e.g. out of shared memory for these tiles
                        by_tiles[spec] = f"{type(exc).__name__}: {str(exc)[:120]}"
                    finally:
                        kernels._tiles = own_tiles
            except Exception as exc:  # noqa: BLE001 - a failing shape is a row, not the end
                rows.append({"name": problem["name"], "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                print(rows[-1], flush=True)
                continue
        row = {"name": problem["name"], "nd": nd, "transposed": bool(layer.transposed), "groups": layer.groups,
               "teacher_uses_it": bool(teacher),
               "x": list(x.shape), "w": list(layer.weight.shape), "ours_ms": round(t_ours, 4),
               "torch_ms": round(t_torch, 4), "ratio": round(t_torch / t_ours, 4), "max_abs_err": err,
               "copy_ms": round(t_copy, 4), "tiles_ms": by_tiles,
               "own_tiles": list(own_tiles(layer.out_channels // layer.groups, x.dtype))}
        rows.append(row)
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    import math

    for label, chosen in (("all", rows), ("the teacher's", [r for r in rows if r.get("teacher_uses_it")])):
        ratios = [r["ratio"] for r in chosen if "ratio" in r]
        if ratios:
            print(f"geomean speed vs torch, {label}: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}x over {len(ratios)}")
    if args.out:
        Path(args.out).write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Compile check: compile each launched Triton kernel for a real GPU target, with no GPU needed.

The CPU judge runs candidates through the Triton interpreter, which accepts programs the real
compiler rejects (type errors it never checks, shared memory it never allocates). So every kernel
the candidate actually launched is also compiled for the configured target (default sm_90) with
the signature it was launched with, through `triton.compile` and the ptxas bundled in the wheel.

- `launch_record_from_call(jit_fn, args, kwargs, grid=None, options=None) -> LaunchRecord`
  describes one launch (called from the judge's launch hook, inside the candidate process):
  argument types the way Triton itself specialises them (tensor -> '*fp32'/'*fp16'/..., int ->
  'i32'/'i64' by range, int 1 -> constexpr, float -> 'fp32', bool -> 'u1', None -> constexpr),
  tl.constexpr parameters as constexprs, divisibility-by-16 attributes, num_warps/num_stages.
  Works for a compiled `JITFunction` and for the interpreter's `InterpretedFunction`
  (TRITON_INTERPRET=1), which is rebuilt as a JITFunction (helpers it calls included).
- `compile_launched(records, target="cuda:90") -> dict` compiles each distinct
  (kernel, signature, constexprs, options) once and reports, per kernel: ok, a concise error
  naming the kernel, registers, shared memory, spills (from the cubin via the bundled cuobjdump,
  ptxas -v when spilling is suspected). A kernel over the target's shared memory per block
  (sm_90: 232448 bytes) or over 255 registers per thread is rejected.
- `parse_target("cuda:90") -> GPUTarget`.

Imports: torch is not needed here; triton and the standard library only. Under TRITON_INTERPRET=1,
importing this module applies `triton_compat.apply_interpreter_fixes()` (the interpreter otherwise
leaves triton.language patched, which breaks compiling in the same process).

Where each part lives (all in validation/; every public name is re-exported here, so
`autotriton.validation.compile_check.<name>` works as it always did):
- `compile_launch.py`: describing a launch (`LaunchRecord`, `launch_record_from_call`,
  `signature_type`, `as_jit_function`);
- `compile_target.py`: compiling records for a target and the resource report
  (`compile_launched`, `parse_target`, `shared_memory_limit`, the limits);
- `compile_static.py`: `compile_check` from the source alone (inferred signatures).
"""

from __future__ import annotations

from autotriton.validation.compile_launch import (COMPILE_OPTION_NAMES, DEFAULT_NUM_STAGES, DEFAULT_NUM_WARPS,  # noqa: F401 (module attributes)
                                                  CompileCheckError, LaunchRecord, as_jit_function, launch_record_from_call,
                                                  signature_type)
from autotriton.validation.compile_static import GUESSED_BLOCK_SIZE, compile_check
from autotriton.validation.compile_target import (MAX_REGISTERS, SHARED_MEMORY_LIMITS, compile_launched, parse_target,
                                                  shared_memory_limit)

__all__ = [
    "LaunchRecord", "launch_record_from_call", "compile_launched", "compile_check", "parse_target", "signature_type",
    "as_jit_function", "shared_memory_limit", "CompileCheckError", "SHARED_MEMORY_LIMITS", "MAX_REGISTERS",
    "GUESSED_BLOCK_SIZE",
]

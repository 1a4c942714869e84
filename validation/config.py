"""Configuration of the judge (the validator). Every field is documented and has a sane default."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ValidationConfig(BaseModel):
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="cpu: Triton interpreter; cuda: real GPU; auto: cuda when available")
    trials: int = Field(5, ge=1, description="correctness trials, each with fresh random inputs of the same shapes, on one ModelNew instance")
    odd_size_trial: bool = Field(True, description="one more trial with even module-level size constants made odd (masked edges), when the reference allows it")
    seed: int = Field(1234, description="base seed: Model and ModelNew are built under it; trial inputs use secret seeds drawn per judgement (os.urandom in the worker)")
    timeout_s: float = Field(120.0, gt=0, description="hard wall-clock limit per candidate (whole process group killed)")
    memory_limit_gb: float = Field(512.0, gt=0, description="address-space limit of a candidate process on a GPU (CUDA reserves large virtual ranges: keep it well above 64 GiB)")
    memory_limit_gb_cpu: float = Field(8.0, gt=0, description="address-space limit of a candidate process on the CPU interpreter")
    max_output_mb: float = Field(1024.0, gt=0, description="largest answer (output tensors) a candidate may send back over its socket; see answer_shm")
    answer_shm: bool = Field(True, description=(
        "answers over max_output_mb go through a memory file the worker creates, sized to the reference's own outputs, "
        "written by the candidate process and read and compared by the worker after the candidate is killed (wire.py); "
        "the answer is then bounded by the problem's outputs, not by max_output_mb, and max_trial_mb alone decides shrinking"))
    max_trial_mb: float = Field(512.0, gt=0, description=(
        "largest inputs + outputs of one correctness trial at full size (estimated on the meta device) when the problem is "
        "not already shrunk for the interpreter; a problem over it (or whose outputs over all trials would pass "
        "max_output_mb) is judged for correctness at shrunk sizes (shrink.py's rule, the largest max_dim that fits) "
        "while GPU timing still uses the problem's own sizes, with inputs made in the candidate's process"))
    max_own_size_trial_mb: float = Field(0.0, ge=0, description=(
        "a problem over max_trial_mb whose one trial (inputs + outputs, twice with the odd-size trial) is within this is "
        "judged at its own sizes with `own_size_trials` trials instead of shrunk: KernelBench's definition of correct, and "
        "the only sizes a candidate with its sizes baked in runs at (0 = always shrink; the gpu profile sets it)"))
    own_size_trials: int = Field(1, ge=1, description="correctness trials (besides the odd-size one) of a problem judged at its own sizes for memory")
    max_log_mb: float = Field(16.0, gt=0, description="largest file a candidate may write, its captured stdout/stderr included (RLIMIT_FSIZE)")
    max_processes: int = Field(256, ge=1, description="RLIMIT_NPROC of a candidate when it runs as an unprivileged user (stops fork bombs)")
    isolate_network: bool = Field(True, description="give each candidate an empty network namespace (recorded when the OS refuses)")
    drop_privileges: bool = Field(True, description="when running as root, run candidates as 'nobody' where the Python install allows it")
    workers: int = Field(0, ge=0, description="warm judge workers; 0 = one per CPU core (cpu), one per GPU when timing kernels, else up to 4 per GPU (cuda)")
    target: str = Field("cuda:90", description="compile-check target, 'cuda:<sm>' (sm_90 = Hopper)")
    compile_check: bool = Field(True, description="compile every launched kernel for `target` with its recorded signature, even without a GPU")
    static_rules: bool = Field(True, description="run the libcst rule checks (validation/rules.py) besides the runtime checks")
    time_kernels: bool = Field(True, description="measure speedups (GPU only)")
    time_on_cpu: bool = Field(False, description=(
        "with device cpu, still run the timing protocol (wall clock, interpreter kernels: figures that say nothing about "
        "speed), so the timed calls' fresh inputs and the check call after them are exercised without a GPU"))
    time_compile: bool = Field(True, description="also time torch.compile of the reference (speedup_vs_compile; compiled once per problem and worker)")
    timing_runs: int = Field(30, ge=20, description="timed runs per input set (median of the runs left after trimming outliers)")
    timing_input_sets: int = Field(3, ge=1, description="input sets timed per candidate")
    suspect_speedup: float = Field(10.0, gt=1, description="speedups above this are flagged suspect in Verdict.timing and not trusted")
    shrink_for_cpu: bool = Field(True, description="shrink problem sizes so the interpreter can run them (validation/shrink.py)")
    shrink_max_dim: int = Field(32, ge=4, description="largest module-level size constant left after shrinking")
    tolerances: dict[str, float] = Field(default_factory=lambda: {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2},
                                         description="atol = rtol per output dtype (KernelBench's values); see validation/compare.py")
    tf32_tolerance: float = Field(1e-2, gt=0, description="fp32 tolerance on a GPU when a launched kernel uses TF32 tl.dot (validation/compare.py)")
    probe_timeout_s: float = Field(60.0, gt=0, description="hard limit for probing one reference problem")
    probe_budget_s: float = Field(20.0, gt=0, description="a problem whose single forward pass takes longer is rejected as too_slow")
    probe_solve_s: float = Field(10.0, ge=0, description=(
        "after a forward fails, seconds the probe spends finding input sizes whose shape checks pass, on symbolic shapes "
        "(validation/shape_solver.py); the harvester tries them next. 0: off"))
    probe_solve_init: bool = Field(True, description=(
        "when no input size passes forward's shape checks, let the solver also move integer constructor arguments "
        "(sizes of the module's own that disagree: a residual's two branches, a skip concatenated onto a layer built "
        "for fewer channels) within probe_solve_s"))
    gpus: list[int] = Field(default_factory=list, description=(
        "GPUs the judge's workers use (indices as this process sees them); empty = all visible. During GRPO, a GPU of its "
        "own keeps the judge's CUDA contexts and kernels from slowing generation (training.reward_overlap)"))
    spare_candidates: bool = Field(True, description=(
        "keep one spare candidate process per worker, forked and confined (on a GPU: with its CUDA context made) while the "
        "previous candidate runs; still one fresh process per candidate. Off: each candidate's process starts when its job does"))
    skip_execution_on_rule_violation: bool = Field(False, description="do not run candidates that already fail the static rules (faster RL rewards)")

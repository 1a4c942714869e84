"""Stage steps and their persistence as plain functions, shared by the Prefect tasks and the CLI.

The Prefect tasks (tasks/harvest.py, distill.py, evaluate.py, export.py, train.py) wrap these with caching,
retries, assets and artifacts; the single-stage CLI verbs (`autotriton harvest|distill|sft|grpo|
train|eval`) call them directly with a Warehouse they opened. So each stage's results reach the
warehouse through one piece of code, whichever way it was run.

No Prefect import here (the CLI stays quick to start and runs without a Prefect server). The
warehouse `wh` and `run` are an open `autotriton.warehouse.Warehouse` and a Run it started.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from autotriton.capacity import CapCheck
    from autotriton.distillation import DistillResult
    from autotriton.harvesting import HarvestResult
    from autotriton.records import Export, Verdict
    from autotriton.training import TrainingConfig, TrainResult
    from autotriton.validation import JudgePool, ValidationConfig
    from autotriton.warehouse import Run, Warehouse

# ------------------------------------------------------------------------------------------------
# harvest


def store_harvest_results(wh: Warehouse, run: Run, results: Sequence[HarvestResult],
                          legacy_state_path: str | os.PathLike[str] | None = None) -> dict[str, int]:
    """Write sources, modules, problems (with the problems of dataset pairs), rejections and
    the pairs' candidates of every HarvestResult, and the incremental state each carries
    (tasks/harvest_state.py: the sources it touched, the module keys it saw first; into a
    warehouse without state, first the legacy side file at `legacy_state_path`), in one
    transaction, so a failed write never marks files as harvested. Returns new rows per table;
    a side file imported is named in the first result's extra["harvest_state_imported"]."""
    from autotriton.tasks.harvest_state import store_harvest_state

    new = {"sources": 0, "modules": 0, "problems": 0, "rejections": 0, "candidates": 0}
    with wh.atomic():
        for result in results:
            new["sources"] += wh.put_sources(run, result.sources)
            new["modules"] += wh.put_modules(run, result.modules)
            pair_problems = [p for p, _ in result.pairs if p not in result.problems]
            new["problems"] += wh.put_problems(run, result.problems + pair_problems)
            new["rejections"] += wh.put_rejections(run, result.rejection_rows())
            if result.pairs:
                new["candidates"] += wh.put_candidates(run, [c for _, c in result.pairs])
        state = store_harvest_state(wh, run, results, legacy_state_path)
    if state["imported_from"]:
        results[0].extra["harvest_state_imported"] = state["imported_from"]
    return new


# ------------------------------------------------------------------------------------------------
# distill


def store_distill_results(wh: Warehouse, run: Run, results: Sequence[DistillResult],
                          extra_verdicts: Sequence[Verdict] = ()) -> dict[str, int]:
    """Write the candidates, verdicts and rejections (why a problem gave no pair) of every
    DistillResult, plus verdicts judged apart (`extra_verdicts`), in one transaction.
    Returns {"new_candidates": n, "new_verdicts": n}."""
    with wh.atomic():
        new_candidates = wh.put_candidates(run, [c for r in results for c in r.candidates])
        new_verdicts = wh.put_verdicts(run, [v for r in results for v in r.verdicts] + list(extra_verdicts))
        wh.put_rejections(run, [row for r in results for row in r.rejections])
    return {"new_candidates": new_candidates, "new_verdicts": new_verdicts}


def distill_in_batches(wh: Warehouse, run: Run, batches: Sequence[Sequence[Any]], teacher: Any, config: Any,
                       judge: JudgePool, *, explainer: Any = None, environments: dict[str, list[str]] | None = None,
                       say: Callable[[str], None] = lambda text: None,
                       finished: list[Any] | None = None) -> tuple[Any, dict[str, int]]:
    """Distil `batches` (`config.distill.concurrent_batches` at a time, within
    `config.distill.time_budget_s`) and store each batch as it finishes, so a run cut off later
    keeps every finished batch. Returns (BatchRun, {"new_candidates", "new_verdicts"}); a teacher
    or judge error is raised after the batches already running were finished and stored (each
    stored batch's result is also appended to `finished`, so a caller can say what was kept)."""
    from autotriton.distillation.batches import BatchBudget, distill_batches

    new = {"new_candidates": 0, "new_verdicts": 0}
    budget = BatchBudget(config.distill.time_budget_s)
    totals = {"batches": 0, "problems": 0, "pairs": 0}

    def store(number: int, problems: Sequence[Any], result: DistillResult) -> None:
        stored = store_distill_results(wh, run, [result])
        for key in new:
            new[key] += stored[key]
        if finished is not None:
            finished.append(result)
        totals["batches"] += 1
        totals["problems"] += len(problems)
        totals["pairs"] += int(result.stats["validated_pairs"])
        if len(batches) > 1:
            say(f"  batch {number} stored: {result.stats['validated_pairs']} validated pair(s), "
                f"{stored['new_candidates']} new candidate(s); so far {totals['pairs']} pair(s) from "
                f"{totals['problems']} problem(s) in {budget.elapsed():.0f} s")

    done = distill_batches(batches, teacher, config.distill, config.validation, judge, on_batch=store, budget=budget,
                           explainer=explainer, environments=environments, say=say)
    if done.memory:
        say(f"GPU memory: at most {done.memory['peak_gb']:.1f} of {done.memory['capacity_gb']:.1f} GiB reserved at once; "
            f"{done.memory['waited']} batch(es) waited for memory")
    if done.stopped_by_budget and done.left:
        say(f"[yellow]time budget: {budget.elapsed():.0f} of {budget.seconds:g} s spent and a batch takes "
            f"~{budget.estimate():.0f} s: stopped with {done.left} problem(s) left; run `distill` again "
            "to continue (finished problems are skipped)[/]")
    return done, new


# ------------------------------------------------------------------------------------------------
# evaluate


def store_evaluation_result(wh: Any, run: Any, result: Any) -> dict[str, int]:
    """Write the problems, every sample's candidate and verdict, and the Evaluation record (with its
    per-sample verdict keys) of an `EvaluationResult` to the warehouse, in one transaction (all of
    the evaluation's rows, or none); returns the number of new rows per table. A suite problem the
    warehouse already holds (the same source: e.g. the held-out split of an export of this
    warehouse) keeps its row: rewriting it with the suite's view would drop its provenance (the
    package source, module, licence and dependency environment it was harvested with)."""
    with wh.atomic():
        known = {p.key for p in wh.problems(status=None, keys=[p.key for p in result.problems])}
        return {
            "problems": wh.put_problems(run, [p for p in result.problems if p.key not in known]),
            "candidates": wh.put_candidates(run, result.all_candidates),
            "verdicts": wh.put_verdicts(run, result.all_verdicts),
            "evaluations": wh.put_evaluations(run, [result.evaluation]),
        }


# ------------------------------------------------------------------------------------------------
# export


def decontaminate(wh: Any, run: Any, config: Any) -> dict[str, Any]:
    """Check every runnable problem against the evaluation suites of `harvest.eval_suites`
    (exact model and MinHash near copies, harvesting/decontamination.py) and record each match
    as a rejection (stage "decontamination", reason eval_exact / eval_near_duplicate, the suite
    problem and file in the detail). Returns the report, with `keys`: the problem keys that
    training exports must leave out. No suites configured: nothing is checked."""
    from autotriton.evaluation import load_suite
    from autotriton.harvesting.decontamination import EvalIndex, find_contaminated

    suites = list(config.harvest.eval_suites)
    report: dict[str, Any] = {"suites": suites, "suite_problems": 0, "checked": 0, "removed": 0,
                              "by_suite_file": {}, "by_kind": {}, "examples": [], "keys": set()}
    if not suites:
        return report
    index = EvalIndex([], config.harvest.decontamination_threshold)
    for path in suites:
        index.add(load_suite(path), origin=str(path))
    problems = wh.problems(status="runnable")
    found = find_contaminated(problems, index)
    if found:
        wh.put_rejections(run, [{"stage": "decontamination", "subject": c.problem_key, "reason": c.reason,
                                 "detail": c.detail} for c in found])
    by_file: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for c in found:
        by_file[c.origin] = by_file.get(c.origin, 0) + 1
        by_kind[c.kind] = by_kind.get(c.kind, 0) + 1
    report.update(suite_problems=len(index), checked=len(problems), removed=len(found), by_suite_file=by_file,
                  by_kind=by_kind, keys={c.problem_key for c in found},
                  examples=[{"problem": c.problem_name, "problem_key": c.problem_key, "suite_id": c.suite_id,
                             "kind": c.kind, "similarity": c.similarity} for c in found[:10]])
    return report


def redescribe_candidates(wh: Any, run: Any, teacher: str | None = None, *, trace: bool = True) -> dict[str, Any]:
    """Give the stored candidates whose words an older describer wrote the current describer's
    words (`distillation.describe.redescribe`; `teacher`: only that generator's candidates).
    Returns {"candidates": checked, "described": with describer words, "changed": rewritten,
    "example": one new reasoning}."""
    from autotriton.distillation.describe import is_described, redescribe

    candidates = [c for c in wh.candidates() if teacher is None or c.generator == teacher]
    needed = {c.problem_key for c in candidates if is_described(c.reasoning or "")}
    problems = {p.key: p for p in wh.problems(status=None, keys=needed)} if needed else {}
    words = redescribe(candidates, problems, trace=trace)
    changed = wh.set_words(run, words)
    return {"candidates": len(candidates), "described": sum(1 for c in candidates if is_described(c.reasoning or "")),
            "changed": changed, "example": next(iter(words.values()))[1] if words else None}


def export_records(wh: Any, name: str, training_config: Any, exclude_keys: Any = ()) -> Any:
    """The records training export `name` is built from, read from the warehouse: the validated
    pairs and the runnable problems it may use (every export: they are the universe of the one
    train/validation split), and for an export that needs pass rates (`rl`) the problems'
    candidates and those candidates' latest verdicts."""
    from autotriton.records import GENERATED
    from autotriton.training.exports import TRAINING_EXPORTS, ExportRecords, training_problems

    pairs = wh.validated_pairs(require=training_config.require_sizes)
    problems = training_problems(wh.problems(status="runnable"), training_config, exclude_keys)
    generated = frozenset(wh.problem_keys_of_kind(GENERATED))
    if not TRAINING_EXPORTS[name].pass_rates:
        return ExportRecords(pairs, problems, generated=generated)
    candidates = wh.candidates(problem_keys=[p.key for p in problems]) if problems else []
    verdicts = wh.latest_verdicts(candidate_keys=[c.key for c in candidates]) if candidates else []
    return ExportRecords(pairs, problems, candidates, verdicts, generated)


def export_rows(wh: Any, run: Any, config: Any, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(rows, filter) of a training export (`sft`, `rl`), evaluation problems and their near copies
    left out (`decontaminate`); the filter records what was removed and from which suite files."""
    from autotriton.training.exports import TRAINING_EXPORTS

    if name not in TRAINING_EXPORTS:
        raise ValueError(f"export {name!r}: choose one of {', '.join(TRAINING_EXPORTS)}")
    report = decontaminate(wh, run, config)
    records = export_records(wh, name, config.training, report["keys"])
    rows, filter_ = TRAINING_EXPORTS[name].build(records, config.training, report["keys"])
    filter_["decontamination"] = {"suites": report["suites"], "threshold": config.harvest.decontamination_threshold,
                                  "problems_removed": report["removed"], "by_suite_file": report["by_suite_file"],
                                  "by_kind": report["by_kind"]}
    return rows, filter_


def build_export(wh: Any, run: Any, config: Any, name: str) -> Any | None:
    """Build and record the `sft` export (validated pairs) or the `rl` export (prompts chosen
    for diversity) from the warehouse; None when it would have no rows."""
    rows, filter_ = export_rows(wh, run, config, name)
    if not rows:
        return None
    return wh.export_parquet(name, rows, filter_, run)


# ------------------------------------------------------------------------------------------------
# release


def build_release(wh: Any, run: Any, config: Any, out: Any, name: str = "autotriton-triton-kernels") -> dict[str, Any]:
    """Write the released dataset (warehouse/release.py) from the warehouse: validated pairs and
    runnable problems with provenance, op category and one split by near-duplicate cluster of the
    problem (shared by both configs; generated problems clustered by their code up to literals),
    leaving out held-out benchmark suites (training.exclude_suites) and decontaminated problems.
    Returns release.json's manifest."""
    import json

    from autotriton.records import Problem
    from autotriton.training.data import assign_splits, near_duplicate_clusters, primary_category, problem_tags
    from autotriton.records import GENERATED
    from autotriton.training.exports import held_out
    from autotriton.warehouse.release import release_counts, release_rows, write_release

    t = config.training
    report = decontaminate(wh, run, config)
    pairs, problems = release_rows(wh)

    def kept(row: dict[str, Any]) -> bool:
        probe = Problem(reference_source="", name="", suite=row["suite"])
        return row["problem_key"] not in report["keys"] and not held_out(probe, t.exclude_suites)

    pairs, problems = [r for r in pairs if kept(r)], [r for r in problems if kept(r)]
    sources = {r["problem_key"]: r["reference_source"] for r in problems}
    sources.update({r["problem_key"]: r["reference_source"] for r in pairs})
    generated = {r["problem_key"] for r in [*problems, *pairs] if r["source_kind"] == GENERATED}
    clusters = near_duplicate_clusters(sources, t.dedup_threshold, t.minhash_perm, generated=generated)
    splits = assign_splits(clusters, t.val_fraction, t.seed)
    tags: dict[str, list[str]] = {}
    for r in [*problems, *pairs]:
        if r["problem_key"] not in tags:
            tags[r["problem_key"]] = problem_tags(Problem(reference_source=r["reference_source"], name="",
                                                          op_tags=json.loads(r["op_tags"] or "[]")))
    tag_counts: dict[str, int] = {}
    for ts in tags.values():
        for tag in ts:
            tag_counts[tag] = tag_counts.get(tag, 0) + 1
    for r in [*problems, *pairs]:
        key = r["problem_key"]
        r.update(op_category=primary_category(tags[key], tag_counts), split=splits[key], cluster=clusters[key])
    decontamination = {"suites": report["suites"], "threshold": config.harvest.decontamination_threshold,
                       "problems_removed": report["removed"], "by_suite_file": report["by_suite_file"],
                       "by_kind": report["by_kind"]}
    counts = release_counts(wh, pairs, problems, decontamination, config.harvest.licences)
    return write_release(out, pairs, problems, counts, name=name)


# ------------------------------------------------------------------------------------------------
# train


def grpo_judge_config(training_config: TrainingConfig, validation_config: ValidationConfig) -> ValidationConfig:
    """The judge's config for GRPO rewards: kernel timing only when the reward uses speedups
    (training.speedup_bonus > 0). Timing a batch of candidates costs more than judging them,
    and the default reward ignores it. The given config is never changed."""
    if training_config.speedup_bonus > 0 or not validation_config.time_kernels:
        return validation_config
    return validation_config.model_copy(update={"time_kernels": False})


def train_sft(training_config: TrainingConfig, export: Export, *, resume: bool, console: Any = None,
              on_status: Callable[[str], None] | None = None) -> TrainResult:
    """SFT on a recorded `sft` export -> TrainResult; on training.num_processes > 1 processes
    under `accelerate launch`, else in this process."""
    if training_config.num_processes > 1:
        from autotriton.training.launch import run_launched

        return run_launched("sft", training_config, export.path, export_key=export.key, resume=resume)
    from autotriton.training.sft import run_sft

    return run_sft(training_config, export.path, export_key=export.key, resume=resume, console=console,
                   on_status=on_status)


def grpo_layout(training_config: TrainingConfig, validation_config: ValidationConfig) -> Any:
    """The Layout GRPO runs with on this machine (training/layout.py); raises LayoutError."""
    from autotriton.training.layout import choose_layout
    from autotriton.models import resolve_device

    device = resolve_device(training_config.device)
    visible = 0
    if device == "cuda":
        import torch

        visible = torch.cuda.device_count()
    return choose_layout(training_config.layout, num_processes=training_config.num_processes, visible_gpus=visible,
                         device=device, judge_gpus=list(validation_config.gpus))


def train_grpo(training_config: TrainingConfig, validation_config: ValidationConfig, export: Export, *,
               base_model: str | None, resume: bool, judge_for: Callable[[ValidationConfig], JudgePool] | None = None,
               console: Any = None, on_status: Callable[[str], None] | None = None) -> TrainResult:
    """GRPO on a recorded `rl` export with the judge as the reward -> TrainResult. The judge runs
    with `grpo_judge_config`; `judge_for(config)` supplies a warm pool that outlives the call
    (the flows' shared one), else a JudgePool is opened for this run. The layout
    (training.layout) decides where: `single` trains in this process; `judge_on_own_gpu` and
    `data_parallel` launch the trainers under accelerate on their GPUs while this process
    serves them one judge pool."""
    from autotriton.validation import JudgePool

    vcfg = grpo_judge_config(training_config, validation_config)
    layout = grpo_layout(training_config, vcfg)
    if on_status is not None:
        on_status(layout.describe())
    if layout.name == "single":
        from autotriton.training.grpo import run_grpo

        with (nullcontext(judge_for(vcfg)) if judge_for is not None else JudgePool(vcfg)) as judge:
            result = run_grpo(training_config, export.path, judge, export_key=export.key, base_model=base_model,
                              resume=resume, console=console, on_status=on_status)
        result.metrics["layout"] = layout.name
        return result

    from autotriton.training.judge_service import JudgeService
    from autotriton.training.launch import run_launched
    from autotriton.training.layout import trainer_env

    vcfg = vcfg.model_copy(update={"gpus": layout.judge_gpus})
    tcfg = training_config.model_copy(update={"num_processes": layout.num_processes})
    env = trainer_env(layout)
    with (nullcontext(judge_for(vcfg)) if judge_for is not None else JudgePool(vcfg)) as judge, \
            JudgeService(judge) as service:
        env.update(service.env())
        result = run_launched("grpo", tcfg, export.path, validation_config=vcfg, export_key=export.key,
                              base_model=base_model or "", resume=resume, env=env)
        result.metrics["layout"] = layout.name
        result.metrics["judge_service"] = service.stats.to_dict()
    return result


def store_checkpoint_result(wh: Warehouse, run: Run, result: TrainResult) -> int:
    """Register a TrainResult's final checkpoint (with the export it was trained on); new rows."""
    return wh.put_checkpoints(run, [result.checkpoint])


# ------------------------------------------------------------------------------------------------
# completion caps


def load_tokenizer(model: str, training_config: TrainingConfig | None = None) -> Any:
    """The tokenizer of a model name as training resolves it (hub id, folder, .gguf, the special names)."""
    from transformers import AutoTokenizer

    from autotriton.models import resolve_model_path

    path, gguf = resolve_model_path(model, gguf_file=getattr(training_config, "gguf_file", "") or "",
                                    cache_dir=getattr(training_config, "model_cache_dir", "") or "")
    return AutoTokenizer.from_pretrained(path, **({"gguf_file": gguf} if gguf else {}))


def completion_cap_check(wh: Warehouse, cap: int, setting: str, *, tokenizer: Any = None, model: str = "",
                         training_config: TrainingConfig | None = None) -> CapCheck:
    """`autotriton.capacity.CapCheck` of `cap` against the warehouse's validated kernels, measured with
    `tokenizer` (or `model`'s, loaded only when there is something to measure)."""
    from autotriton.capacity import CapCheck, check_cap

    kernels = [(problem.name, candidate.code) for problem, candidate, _ in wh.validated_pairs()]
    if not kernels:
        return CapCheck(setting, int(cap), None)
    if tokenizer is None:
        tokenizer = load_tokenizer(model, training_config)
    name = getattr(tokenizer, "name_or_path", "") or model
    return check_cap(lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"]), kernels, cap, setting,
                     tokenizer=str(name).rstrip("/").rsplit("/", 1)[-1])

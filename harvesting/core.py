"""The harvest pipeline shared by every source: read files -> extract modules -> dedup ->
synthesise inputs -> confirm in the sandbox -> problems (runnable or rejected with a reason).

Sources (local.py, github.py, datasets.py) only decide which files to read and where they came
from; everything after that happens here, so every source yields the same records. What follows
each probe of an input guess (accept, rewrite, steer the next guesses, reject) is probe_steps.py.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autotriton.describe import with_instruction
from autotriton.environments import DependencyError, EnvironmentCache, EnvironmentConfig, requirement_key
from autotriton.harvesting.config import HarvestConfig
from autotriton.harvesting.dedup import DuplicateFilter, canonical_key
from autotriton.harvesting.extract import (
    ExtractionError, ModuleClassIndex, Repository, extract_class, rename_to_model,
)
from autotriton.harvesting.prune import prune_unused, strip_comments, strip_docstrings
from autotriton.harvesting.requirements import module_requirements, package_import_source
from autotriton.harvesting.state import HarvestState
from autotriton.hashing import source_key
from autotriton.harvesting.probe_steps import (
    ADDED_DEPENDENCIES, REWRITES, Pending, after_failure, after_success, missing_package, result_field,
)
from autotriton.harvesting.problem_environments import ensure_relaxing
from autotriton.harvesting.randomness import random_calls
from autotriton.harvesting.renaming import positional_signatures
from autotriton.harvesting.synthesis import Attempt, SynthesisError, problem_source, synthesize
from autotriton.records import Candidate, HarvestedModule, Problem, SourceRef

# probe(sources) -> results; called as probe(sources, environments={problem key: site-packages folders})
# when some of the sources need their dependency environment (SandboxProbe does).
ProbeFn = Callable[..., Sequence[Any]]


@dataclass
class FileRejection:
    """A file (or repository) the harvest could not use, and why. Stored in the warehouse's
    rejections table (stage, subject, reason, detail)."""

    subject: str  # "<repo>:<path>" or "<repo>"
    reason: str
    detail: str
    stage: str = "harvest"

    def to_dict(self) -> dict[str, str]:
        return {"stage": self.stage, "subject": self.subject, "reason": self.reason, "detail": self.detail}


@dataclass
class HarvestResult:
    """Everything one harvest found. `problems` holds runnable and rejected problems (with
    reject_reason); `rejections` holds per-file errors; `pairs` are ready (Problem, Candidate)
    pairs from KernelBook-style datasets."""

    sources: list[SourceRef] = field(default_factory=list)
    modules: list[HarvestedModule] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    rejections: list[FileRejection] = field(default_factory=list)
    pairs: list[tuple[Problem, Candidate]] = field(default_factory=list)
    files: int = 0
    duplicates: int = 0
    unchanged: int = 0  # files or repositories skipped because the state says they did not change
    details: dict[str, str] = field(default_factory=dict)  # rejected problem key -> why, in words
    extra: dict[str, Any] = field(default_factory=dict)  # source-specific figures (GitHub requests, waits)
    state: HarvestState | None = None  # what to record for the next harvest (none when not incremental)

    @property
    def stats(self) -> dict[str, Any]:
        rejected = Counter(p.reject_reason or "unknown" for p in self.problems if p.status != "runnable")
        return {
            "files": self.files,
            "modules": len(self.modules) + self.duplicates + sum(1 for p in self.problems if p.module_key is None and p.suite is None and p.status != "runnable"),
            "runnable": sum(1 for p in self.problems if p.status == "runnable"),
            "rejected": dict(sorted(rejected.items())),
            "duplicates": self.duplicates,
            "file_errors": dict(sorted(Counter(r.reason for r in self.rejections).items())),
            # what a user can act on: one example per reason, and the packages to install
            "rejected_examples": self._examples(),
            "missing_dependencies": dict(Counter(
                pkg for p in self.problems if p.reject_reason == "missing_dependency"
                for pkg in [missing_package(self.details.get(p.key, ""))] if pkg).most_common()),
            "pairs": len(self.pairs),
            "unchanged": self.unchanged,
            **self.extra,
        }

    def _examples(self) -> dict[str, str]:
        """reason -> "<class name>: <detail>" of the first rejected problem (or file) with it."""
        out: dict[str, str] = {}
        for p in self.problems:
            if p.status != "runnable":
                out.setdefault(p.reject_reason or "unknown", f"{p.name}: {self.details.get(p.key, '')}"[:300])
        for r in self.rejections:
            out.setdefault(r.reason, f"{r.subject}: {r.detail}"[:300])
        return dict(sorted(out.items()))

    def rejection_rows(self) -> list[dict[str, str]]:
        """Rows for the warehouse's rejections table: per-file errors, and one row per rejected
        problem (subject = problem key) carrying the detail of its reason."""
        rows = [r.to_dict() for r in self.rejections]
        for p in self.problems:
            if p.status != "runnable":
                rows.append({"stage": "harvest", "subject": p.key, "reason": p.reject_reason or "unknown",
                             "detail": self.details.get(p.key, "")})
        return rows

    def summary(self) -> dict[str, Any]:
        return self.stats

    def commit_state(self) -> None:
        """Save a file-backed incremental state (harvest.state_path); call after the results are
        stored. A state held as data (the warehouse's) is stored by the caller: `state.changes()`."""
        if self.state is not None:
            self.state.save()


_OP_PATTERNS = [
    ("matmul", r"\b(matmul|mm|bmm|einsum|Linear|linear|addmm|@)\b|@"), ("conv", r"\bConv(Transpose)?[123]d\b|\bconv[123]d\b"),
    ("norm", r"Norm\b|norm\(|layer_norm|batch_norm|group_norm|rms"), ("softmax", r"softmax"), ("relu", r"relu\b|ReLU"),
    ("gelu", r"gelu|GELU"), ("silu", r"silu|SiLU|swish"), ("sigmoid", r"sigmoid"), ("tanh", r"tanh"),
    ("pool", r"[Pp]ool"), ("attention", r"attention|Attention|scaled_dot_product"), ("embedding", r"Embedding|embedding"),
    ("reduction", r"\.(sum|mean|amax|max|min|logsumexp)\("), ("dropout", r"[Dd]ropout"), ("rnn", r"\b(LSTM|GRU|RNN)\b"),
]


def op_tags(source: str) -> list[str]:
    return [tag for tag, pat in _OP_PATTERNS if re.search(pat, source)]


class SandboxProbe:
    """The validation sandbox's probe, with its workers kept warm across synthesis rounds."""

    def __init__(self, validation_config: Any = None):
        from autotriton.validation import JudgePool, ValidationConfig

        cfg = (validation_config or ValidationConfig()).model_copy(update={"device": "cpu"})
        self.pool = JudgePool(cfg)

    def __enter__(self) -> "SandboxProbe":
        self.pool.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.pool.__exit__(*exc)

    def __call__(self, sources: Sequence[str], environments: dict[str, list[str]] | None = None) -> Sequence[Any]:
        return self.pool.probe_many(list(sources), environments=environments)


def _any_package(top: str) -> bool:
    return True


class Harvester:
    """Accumulates one harvest over any number of repositories, then synthesises and probes."""

    def __init__(self, config: HarvestConfig, *, probe: ProbeFn | None = None, state: HarvestState | None = None,
                 progress: bool = False, console: Console | None = None, validation_config: Any = None,
                 environments: EnvironmentConfig | None = None):
        self.config = config
        # Dependency environments (autotriton/environments.py): None or disabled = the judge's packages only.
        self.environments = environments if environments is not None and environments.enabled else None
        self._declared: dict[str, str] = {}  # the repository being scanned: distribution -> declared requirement
        self._local_packages: set[str] = set()  # ... and its own top-level packages (never installed from an index)
        self._own: str | None = None  # ... and, for a released distribution, its own requirement (`name==version`)
        self._own_needs: list[str] = []  # ... and what importing that release needs (package_import_source)
        self.probe = probe
        self.validation_config = validation_config
        self.state = state
        self.progress = progress
        self.console = console or Console(stderr=True)
        # Not incremental: the state is neither read nor recorded (a --full harvest leaves it as it is).
        self.result = HarvestResult(state=state if config.incremental else None)
        self.dedup = DuplicateFilter(config.near_duplicate_threshold, seen_keys=state.seen if state else None)
        self.pending: list[Pending] = []
        self._new_keys: set[str] = set()
        self._sources: dict[str, SourceRef] = {}

    # -- bookkeeping -----------------------------------------------------------------------

    def reject_file(self, subject: str, reason: str, detail: str) -> None:
        self.result.rejections.append(FileRejection(subject, reason, detail))

    def add_source(self, ref: SourceRef) -> None:
        if ref.key not in self._sources:
            self._sources[ref.key] = ref
            self.result.sources.append(ref)

    def licence_ok(self, licence: str | None, subject: str, named: str | None = None) -> bool:
        """Is `licence` (an SPDX id, or None when none was recognised) on harvest.licences? `named`:
        the licence the metadata names as written where it is not one recognised, quoted to the user."""
        if licence is None:
            detail = (f"its packaging metadata names {named!r}, which is not a licence this harvest recognises (an SPDX id "
                      "such as MIT or Apache-2.0); check its terms, add a licence file if they allow it, or harvest elsewhere"
                      if named else "no licence file, SPDX header or packaging metadata names a licence; add one or harvest elsewhere")
            self.reject_file(subject, "licence_unknown", detail)
            return False
        if licence not in self.config.licences:
            self.reject_file(subject, "licence_not_allowed", f"{licence} is not in harvest.licences ({', '.join(self.config.licences)})")
            return False
        return True

    # -- repositories -------------------------------------------------------------------------

    def scan_repository(self, repo: Repository, paths: Sequence[str], ref_for: Callable[[str, str], SourceRef],
                        label: str, declared: dict[str, str] | None = None, own: str | None = None) -> None:
        """Extract every nn.Module class of `paths` (files of `repo`). `ref_for(path, text)` gives the
        SourceRef of a file (and may reject it by returning a ref whose licence is not allowed).
        `declared`: the repository's declared requirements (harvesting/requirements.py), whose
        version specifiers the modules' requirement sets take. `own`: the requirement of the scanned
        distribution itself (package harvests), for modules that import a part of it no problem can
        carry (module_requirements)."""
        self._declared = dict(declared or {})
        self._own = own
        self._local_packages = {p.split("/", 1)[0].removesuffix(".py") for p in repo.paths}
        self._own_needs = module_requirements(package_import_source(repo), self._declared,
                                              local_packages=self._local_packages) if own else []
        if self.environments is not None:
            repo.external_ok = _any_package  # each module's environment decides (DependencyError names what is missing)
        jobs = self.config.parse_jobs or (os.cpu_count() or 1)
        repo.preparse(paths, min(jobs, max(1, len(paths) // 2)))
        index = ModuleClassIndex(repo)
        bar = self._progress()
        with bar:
            task = bar.add_task(f"extract {label}", total=len(paths))
            for path in paths:
                bar.advance(task)
                self.result.files += 1
                subject = f"{label}:{path}"
                text = repo.text(path)
                if text is None:
                    reason, detail = repo.errors.get(path, ("unreadable", "the file could not be read"))
                    self.reject_file(subject, reason, detail)
                    continue
                parsed = repo.parsed(path)
                if parsed is None:
                    reason, detail = repo.errors.get(path, ("syntax_error", "cannot parse"))
                    self.reject_file(subject, reason, detail)
                    continue
                ref = ref_for(path, text)
                if not parsed.classes:
                    continue
                try:
                    names = index.module_classes(path)
                except RecursionError:
                    self.reject_file(subject, "too_deep", "class hierarchy too deep to analyse")
                    continue
                if not names:
                    continue
                if not self.licence_ok(ref.licence, subject):
                    continue
                self.add_source(ref)
                for name in names:
                    self._module(repo, ref, path, name, text)

    def _module(self, repo: Repository, ref: SourceRef, path: str, name: str, text: str) -> None:
        try:
            extracted = extract_class(repo, path, name)
        except ExtractionError as exc:
            self._reject_module(ref, name, text, exc.reason, exc.detail, repo, path)
            return
        except RecursionError:
            self._reject_module(ref, name, text, "too_deep", "dependency chain too deep", repo, path)
            return
        self.add_standalone(ref, name, text, extracted.source, source_name=extracted.class_name)

    def _reject_module(self, ref: SourceRef, name: str, text: str, reason: str, detail: str, repo: Repository | None = None, path: str = "") -> None:
        class_code = text
        if repo is not None:
            parsed = repo.parsed(path)
            if parsed is not None and name in parsed.classes:
                class_code = parsed.codes[parsed.classes[name]].strip() + "\n"
        key = canonical_key(class_code)
        if key in self.dedup.keys:
            self.result.duplicates += 1
            return
        self.dedup.keys[key] = f"{ref.repo}:{ref.path}"
        self._new_keys.add(key)
        # What its file imports: for a module that could not stand alone, the best account of
        # what it would need (a missing_dependency here names the package in its detail).
        requirements = module_requirements(text, self._declared, local_packages=self._local_packages, own=self._own,
                                           own_needs=self._own_needs)
        try:
            environment_key = requirement_key(requirements)
        except ValueError:
            requirements, environment_key = [], None
        self.result.problems.append(Problem(
            reference_source=class_code, name=name, source_key=ref.key, status="rejected",
            reject_reason=reason, licence=ref.licence, requirements=requirements, environment_key=environment_key,
        ))
        self.result.details[self.result.problems[-1].key] = detail

    # -- modules ---------------------------------------------------------------------------

    def add_standalone(self, ref: SourceRef, class_name: str, original: str, standalone: str,
                       source_name: str | None = None) -> HarvestedModule | None:
        """Dedup a standalone module and queue it for input synthesis. None for duplicates."""
        if len(standalone) > self.config.max_problem_chars:
            # Methods forward never reaches (saving, loading, configs) and what only they need,
            # dropped before the length check rejects the module (harvesting/prune.py).
            standalone = prune_unused(standalone, source_name or class_name)
            if len(standalone) > self.config.max_problem_chars:
                standalone = strip_docstrings(standalone)
            if len(standalone) > self.config.max_problem_chars:
                standalone = strip_comments(standalone)
        # One too large to be a problem is rejected as such, not as a near-duplicate of another: the
        # package code a big module inlines (escnn's group theory, 300,000 characters each) made 58
        # of escnn's classes near-duplicates of each other, and their MinHash took minutes
        kind, of_what = self.dedup.check(standalone, f"{ref.repo}:{ref.path}:{class_name}",
                                         near=len(standalone) <= self.config.max_problem_chars)
        if kind is not None:
            self.result.duplicates += 1
            return None
        self._new_keys.add(canonical_key(standalone))
        self.add_source(ref)
        module = HarvestedModule(source=ref, class_name=class_name, original_source=original, standalone_source=standalone)
        self.result.modules.append(module)
        # Keyword-only constructors (`__init__(self, *, dim, depth)`, common in einops-era code)
        # take positional arguments in the problem, as KernelBench builds `Model(*get_init_inputs())`;
        # likewise forward's required keyword-only inputs (`forward(self, x, *, context)`), as it
        # calls `model(*get_inputs())`.
        model_source = positional_signatures(rename_to_model(standalone, source_name or class_name))
        requirements = module_requirements(standalone, self._declared, local_packages=self._local_packages, own=self._own,
                                           own_needs=self._own_needs)
        try:
            environment_key = requirement_key(requirements)
        except ValueError:  # a declared specifier packaging cannot read: keep the bare names
            requirements = sorted({r.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip() for r in requirements})
            environment_key = requirement_key(requirements)
        base = Problem(reference_source=model_source, name=class_name, module_key=module.key, source_key=ref.key,
                       licence=ref.licence, op_tags=op_tags(standalone), requirements=requirements,
                       environment_key=environment_key)
        if len(standalone) > self.config.max_problem_chars:
            self._finish_rejected(base, "too_large", f"{len(standalone)} characters (without the code forward never reaches, "
                                  f"docstrings and comments) > harvest.max_problem_chars={self.config.max_problem_chars}")
            return module
        # Random calls forward could reach, read from the source: the verdict when nothing runs the
        # module (harvest.probe off); otherwise the probe decides by moving torch's RNG before forward,
        # since the walk follows calls by name and cannot see a branch the module never takes.
        try:
            randomness = random_calls(model_source) if not self.config.probe else []
        except SyntaxError:
            randomness = []
        if randomness:
            self._finish_rejected(base, "nondeterministic", "draws random numbers outside __init__: " + ", ".join(randomness[:3]))
            return module
        try:
            attempts = synthesize(model_source, max_attempts=self.config.max_attempts)
        except SynthesisError as exc:
            self._finish_rejected(base, exc.reason, exc.detail)
            return module
        except SyntaxError as exc:
            self._finish_rejected(base, "syntax_error", str(exc))
            return module
        self.pending.append(Pending(base, model_source, attempts, declared=self._declared,
                                     local=frozenset(self._local_packages)))
        return module

    def _finish_rejected(self, problem: Problem, reason: str, detail: str) -> None:
        problem.status = "rejected"
        problem.reject_reason = reason
        self.result.problems.append(problem)
        self.result.details[problem.key] = detail

    def add_problem(self, problem: Problem) -> None:
        """A ready problem (benchmark suites): no synthesis, kept verbatim."""
        self.result.problems.append(problem)

    # -- synthesis and probing ---------------------------------------------------------------

    def _progress(self) -> Progress:
        return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=self.console, disable=not self.progress, transient=False)

    def finish(self) -> HarvestResult:
        """Confirm queued modules in the sandbox, guess by guess, and return the result."""
        if self.pending and self.environments is not None:
            self._build_environments()
        if self.pending:
            if not self.config.probe:
                for p in self.pending:
                    self._accept(p, p.attempts[0])
            elif self.probe is not None:
                self._probe_rounds(self.probe)
            else:
                with SandboxProbe(self.validation_config) as probe:
                    self._probe_rounds(probe)
        self.pending = []
        for problem in self.result.problems:  # their sources are final now: the instruction is stored with them
            with_instruction(problem)
        if self.state is not None:
            self.state.add_seen(self._new_keys)
        return self.result

    def _build_environments(self) -> None:
        """Install each distinct requirement set of the queued modules once (cached across
        harvests); a set that cannot be installed rejects its modules, naming the requirement."""
        cache = EnvironmentCache(self.environments)
        by_set: dict[tuple[str, ...], list[Pending]] = {}
        for p in self.pending:
            if p.problem.requirements:
                by_set.setdefault(tuple(p.problem.requirements), []).append(p)
        figures = {"built": 0, "reused": 0, "failed": 0, "build_s": 0.0}
        relaxed: Counter = Counter()  # declared requirements whose upper bound was dropped (problem_environments.py)
        bar = self._progress()
        with bar:
            task = bar.add_task("dependency environments", total=len(by_set))
            for reqs, waiting in by_set.items():
                bar.advance(task)
                try:
                    env, used = ensure_relaxing(cache, list(reqs), relaxed)
                except (DependencyError, ValueError, OSError, subprocess.SubprocessError) as exc:
                    figures["failed"] += 1
                    reason = exc.reason if isinstance(exc, DependencyError) else "unresolvable_dependency:" + reqs[0]
                    detail = exc.detail if isinstance(exc, DependencyError) else f"{type(exc).__name__}: {exc}"
                    for p in waiting:
                        p.done = True
                        self._finish_rejected(p.problem, reason, f"requirements {', '.join(reqs)}: {detail}")
                    continue
                figures["reused" if env.reused else "built"] += 1
                figures["build_s"] += 0.0 if env.reused else env.build_s
                for p in waiting:
                    p.env_paths = list(env.site_packages)
                    if used != list(reqs):  # what was installed is what the problem records
                        p.problem.requirements = used
                        p.problem.environment_key = requirement_key(used)
        self.pending = [p for p in self.pending if not p.done]
        figures["build_s"] = round(figures["build_s"], 1)
        self.result.extra["environments"] = figures
        if relaxed:
            self.result.extra["relaxed_requirements"] = dict(relaxed)

    def _probe_rounds(self, probe: ProbeFn) -> None:
        total = sum(len(p.attempts) for p in self.pending)
        bar = self._progress()
        with bar:
            task = bar.add_task("probe inputs", total=total)

            def grow(n: int) -> None:  # attempts added to the bar's total
                bar.update(task, total=(next(t for t in bar.tasks if t.id == task).total or 0) + n)
            # a rewrite of Model (dict outputs, parameters moved) reuses a guess that ran: it costs no guess,
            # so a module may take up to REWRITES rounds beyond harvest.max_attempts
            for round_no in range(self.config.max_attempts + REWRITES + ADDED_DEPENDENCIES):
                batch = [p for p in self.pending if not p.done and round_no < len(p.attempts)]
                if not batch:
                    break
                sources = [problem_source(p.model_source, p.attempts[round_no]) for p in batch]
                envs = {source_key(src): p.env_paths for p, src in zip(batch, sources) if p.env_paths}
                results = list(probe(sources, environments=envs) if envs else probe(sources))
                if len(results) != len(batch):
                    raise RuntimeError(f"probe returned {len(results)} results for {len(batch)} problems")
                for p, src, res in zip(batch, sources, results):
                    bar.advance(task)
                    if result_field(res, "ok"):
                        added = after_success(p, round_no, res, self.config.max_attempts)
                        if added is None:
                            self._accept(p, p.attempts[round_no], src)
                            bar.advance(task, len(p.attempts) - round_no - 1)
                        else:
                            grow(added)
                        continue
                    added, rejection = after_failure(p, round_no, res, max_attempts=self.config.max_attempts,
                                                     environments=self.environments, extra=self.result.extra)
                    grow(added)
                    if rejection is not None:
                        bar.advance(task, len(p.attempts) - round_no - 1)
                        p.problem.reference_source = src  # the last guess is stored with the rejection
                        self._finish_rejected(p.problem, *rejection)

    def _accept(self, p: Pending, attempt: Attempt, source: str | None = None) -> None:
        p.done = True
        problem = p.problem
        problem.reference_source = source or problem_source(p.model_source, attempt)
        problem.init_spec = attempt.init_spec
        problem.input_spec = attempt.input_spec
        problem.status = "runnable"
        self.result.problems.append(problem)

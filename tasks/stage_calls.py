"""Stage functions the command line's verbs call that their packages' `__init__` does not export.

flows/ reaches a stage only through its public API or through tasks/ (tests/test_architecture.py),
so these are named here, imported on first use (the CLI stays quick to start). A stage that
exports one of them from its `__init__` lets its line here go.
"""

from __future__ import annotations

from typing import Any


def harvest_packages(*args: Any, **kwargs: Any) -> Any:
    """harvesting/packages.py `harvest_packages`: packages and folders of a sources file."""
    from autotriton.harvesting.packages import harvest_packages as run

    return run(*args, **kwargs)


def sources_file_units(path: str) -> list[Any]:
    """A sources file (checked whole) as one SourcesFile per package and per folder, so a
    harvest can store each when it is done."""
    from autotriton.harvesting.packages import SourcesFile, load_sources

    spec = load_sources(path)
    return ([SourcesFile(spec.path, packages=[p]) for p in spec.packages]
            + [SourcesFile(spec.path, folders=[f]) for f in spec.folders])


def merge_harvest_results(total: Any, part: Any) -> None:
    """Add `part`'s HarvestResult into `total`'s (harvesting/packages.py `merge_results`)."""
    from autotriton.harvesting.packages import merge_results

    merge_results(total, part)


def source_packages(path: str) -> list[Any]:
    """The packages a sources file names (harvesting/packages.py `load_sources`)."""
    from autotriton.harvesting.packages import load_sources

    return list(load_sources(path).packages)


def fetch_package(*args: Any, **kwargs: Any) -> Any:
    """Download and unpack one package into the cache: (root, format); raises FetchError."""
    from autotriton.harvesting.packages import fetch_package as fetch

    return fetch(*args, **kwargs)


def fetch_error() -> type[Exception]:
    from autotriton.harvesting.packages import FetchError

    return FetchError


def harvest_synthetic(*args: Any, **kwargs: Any) -> Any:
    """harvesting/synthetic.py `harvest_synthetic`: generated problems."""
    from autotriton.harvesting.synthetic import harvest_synthetic as run

    return run(*args, **kwargs)


def format_metric(value: Any, pct: bool = False) -> str:
    """A metric as the evaluation reports print it (evaluation/report.py `fmt`)."""
    from autotriton.evaluation.report import fmt

    return fmt(value, pct=pct)


def kernelbench_run_candidates(*args: Any, **kwargs: Any) -> Any:
    """Candidates of a KernelBench run's kernels for these problems (evaluation/kernelbench.py)."""
    from autotriton.evaluation.kernelbench import run_candidates

    return run_candidates(*args, **kwargs)


def convert_to_suite_file(*args: Any, **kwargs: Any) -> Any:
    """TritonBench-T data converted to a suite file (evaluation/tritonbench.py)."""
    from autotriton.evaluation.tritonbench import convert_to_suite_file as convert

    return convert(*args, **kwargs)


def looks_like_tritonbench(path: Any) -> bool:
    """Whether an existing path is TritonBench-T data rather than KernelBench problems, a
    KernelBench run or a suite (evaluation/kernelbench.py, suites.py)."""
    from autotriton.evaluation import kernelbench
    from autotriton.evaluation.suites import _looks_like_tritonbench

    return not kernelbench.looks_like_problems(path) and not kernelbench.looks_like_run(path) \
        and _looks_like_tritonbench(path)


def check_trl_args(*args: Any, **kwargs: Any) -> None:
    """trl mappings and trackers checked before anything trains (training/trl_args.py)."""
    from autotriton.training.trl_args import check_trl_args as check

    check(*args, **kwargs)

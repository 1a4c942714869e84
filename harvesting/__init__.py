"""Harvesting: PyTorch nn.Modules from GitHub, local clones and datasets, made into runnable
KernelBench-format problems (see README, "One module's journey").

    harvest_local(path, config) -> HarvestResult
    harvest_dataset(path, config) -> HarvestResult
    harvest_github(config, token=None, base_url=None) -> HarvestResult
    harvest_packages(sources_file, config) -> PackagesHarvest   pinned PyPI packages and folders
    harvest_synthetic(count, seed, config) -> HarvestResult     generated fused-operator problems

A plain library: no Prefect and no database here; the CLI and tasks store the result.
"""

from autotriton.harvesting.config import PERMISSIVE_LICENCES, HarvestConfig
from autotriton.harvesting.core import FileRejection, Harvester, HarvestResult, SandboxProbe
from autotriton.harvesting.datasets import harvest_dataset
from autotriton.harvesting.dedup import DuplicateFilter, canonical_key, canonical_source
from autotriton.harvesting.extract import ExtractionError, Repository, extract_class, rename_to_model
from autotriton.harvesting.github import GitHubHarvestError, harvest_github
from autotriton.harvesting.licences import detect_licence_text, directory_licence
from autotriton.harvesting.local import HarvestInputError, harvest_local
from autotriton.harvesting.packages import (
    FetchError, SourcesFile, fetch_package, harvest_packages, load_sources, merge_results, sources_file_units,
)
from autotriton.harvesting.state import HarvestState, StateError
from autotriton.harvesting.synthesis import SynthesisError, problem_source, synthesize
from autotriton.harvesting.synthetic import harvest_synthetic

__all__ = [
    "HarvestConfig", "PERMISSIVE_LICENCES", "HarvestResult", "FileRejection", "Harvester", "SandboxProbe",
    "harvest_local", "harvest_dataset", "harvest_github", "HarvestInputError", "GitHubHarvestError",
    "DuplicateFilter", "canonical_key", "canonical_source", "ExtractionError", "Repository", "extract_class",
    "rename_to_model", "detect_licence_text", "directory_licence", "HarvestState", "StateError",
    "SynthesisError", "problem_source", "synthesize", "harvest_packages", "harvest_synthetic", "load_sources",
    "sources_file_units", "SourcesFile", "merge_results", "fetch_package", "FetchError",
]

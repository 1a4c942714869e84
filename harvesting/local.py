"""Local source: a directory or a git clone on disk (or a single .py file)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

from autotriton.harvesting.config import HarvestConfig
from autotriton.harvesting.core import Harvester, HarvestResult, ProbeFn
from autotriton.harvesting.extract import Repository
from autotriton.harvesting.licences import directory_licence, spdx_header
from autotriton.harvesting.requirements import declared_in_folder
from autotriton.harvesting.state import HarvestState
from autotriton.records import SourceRef

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "env", ".tox", "node_modules", ".mypy_cache",
             ".pytest_cache", "build", "dist", ".eggs", ".autotriton"}


class HarvestInputError(ValueError):
    """A harvest input (path, file, query) is wrong; the message names it and what to do."""


def git_commit(root: Path) -> tuple[str, Path | None]:
    """(HEAD commit, top-level folder) when root is inside a git work tree, else ("", None)."""
    try:
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=10)
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "", None
    if top.returncode != 0 or head.returncode != 0:
        return "", None
    return head.stdout.strip(), Path(top.stdout.strip())


def python_files(root: Path) -> list[str]:
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                out.append(Path(folder, name).relative_to(root).as_posix())
    return out


def package_root(folder: Path) -> Path:
    """The folder that holds the outermost package around `folder` (a sub-package harvested alone
    still resolves `from ..x import y` and `from pkg.x import y` through its siblings)."""
    root = folder
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    return root


def _scan(harvester: Harvester, root: Path, paths: list[str], scan_paths: list[str], repo_id: str, commit: str,
          licence: str | None) -> None:
    def read(rel: str) -> bytes | None:
        try:
            return (root / rel).read_bytes()
        except OSError:
            return None

    repo = Repository(paths, read, max_bytes=harvester.config.max_file_bytes)

    def ref_for(rel: str, text: str) -> SourceRef:
        return SourceRef(kind="local", repo=repo_id, commit=commit, path=rel, licence=spdx_header(text) or licence,
                         url=(root / rel).as_uri())

    harvester.scan_repository(repo, scan_paths, ref_for, label=root.name or str(root), declared=declared_in_folder(root))


def harvest_local(path: str | os.PathLike[str], config: HarvestConfig | None = None, *, probe: ProbeFn | None = None,
                  progress: bool = False, commit_state: bool = True, state: HarvestState | None = None,
                  console: Any = None, validation_config: Any = None, environments: Any = None) -> HarvestResult:
    """Harvest a directory or git clone: every nn.Module class of its .py files becomes a problem.

    `environments` (autotriton.environments.EnvironmentConfig): install each module's own
    dependencies (its imports, with the specifiers of the folder's pyproject.toml, setup.py or
    requirements*.txt) into a cached environment that the probe uses; None: the judge's packages only.

    With `config.incremental`, files whose content hash is unchanged since the last harvest (`state`,
    or the file at harvest.state_path) are skipped. A file state is saved at the end when
    `commit_state` (pass False and call `result.commit_state()` after storing the result, so a
    failed store does not lose files); the pipeline passes the warehouse's state and stores
    `result.state` with the rows instead (tasks/harvest_state.py).
    """
    config = config or HarvestConfig()
    target = Path(path).expanduser()
    if not target.exists():
        raise HarvestInputError(f"{path}: no such file or directory; pass a folder (or .py file) to harvest")
    target = target.resolve()
    folder = target.parent if target.is_file() else target
    root = package_root(folder)
    paths = python_files(root)
    inside = target.relative_to(root).as_posix()
    if target.is_file():
        scan_candidates = [inside]
    elif inside == ".":
        scan_candidates = paths
    else:
        scan_candidates = [p for p in paths if p.startswith(inside + "/")]
    if not scan_candidates:  # a mistyped or empty folder must not look like a harvest that found nothing new
        raise HarvestInputError(f"{path}: no .py files to harvest in this folder; pass a folder (or .py file) that "
                                "holds PyTorch modules")
    commit, top = git_commit(root)
    repo_id = str(root)
    licence = directory_licence(root)
    if licence is None and top is not None:
        licence = directory_licence(top)
    if state is None:
        state = HarvestState.for_config(config)
    harvester = Harvester(config, probe=probe, state=state, progress=progress, console=console,
                          validation_config=validation_config, environments=environments)
    source_state = state.source(f"local:{target}")
    old_hashes: dict[str, str] = source_state.get("files", {}) if config.incremental else {}
    new_hashes: dict[str, str] = {}
    scan: list[str] = []
    for rel in scan_candidates:
        try:
            digest = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        except OSError as exc:
            harvester.reject_file(f"{root.name}:{rel}", "unreadable", str(exc))
            continue
        new_hashes[rel] = digest
        if old_hashes.get(rel) == digest:
            harvester.result.unchanged += 1
        else:
            scan.append(rel)
    _scan(harvester, root, paths, scan, repo_id, commit, licence)
    result = harvester.finish()
    if target.is_file() or inside != ".":
        old_hashes = {k: v for k, v in source_state.get("files", {}).items()}
        new_hashes = {**old_hashes, **new_hashes}
    source_state.update({"files": new_hashes, "commit": commit, "licence": licence})
    if commit_state:
        result.commit_state()
    return result

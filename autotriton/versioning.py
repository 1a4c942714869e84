"""What version of the code wrote a row: the package version plus the git commit when known."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from autotriton import __version__


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """`<package version>+g<short commit>[.dirty]` inside a git checkout, else the package version."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=10", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{commit}{'.dirty' if dirty else ''}" if commit else __version__


@functools.lru_cache(maxsize=None)
def package_fingerprint(package: str) -> str:
    """A hash of a package's Python source files: changes exactly when its code does.

    Used in cache keys (e.g. the judge's code behind a verdict) where a git commit would be too
    coarse (any commit anywhere) and the package version too fine-grained to notice edits.
    """
    import hashlib
    import importlib

    module = importlib.import_module(package)
    digest = hashlib.sha256()
    for directory in sorted(getattr(module, "__path__", [])):
        for file in sorted(Path(directory).rglob("*.py")):
            digest.update(str(file.relative_to(directory)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]

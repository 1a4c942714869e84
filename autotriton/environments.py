"""Dependency environments: the packages a harvested module needs, installed once per requirement set.

Real PyTorch code imports einops, timm, loguru and friends. A problem is probed and judged with
its own dependencies: the harvest reads what the module needs (harvesting/requirements.py) into a
normalised *requirement set*, this module installs that set into an isolated environment under a
cache folder, keyed by the set, the Python version and the judge's torch, and the probe and the
judge put that environment's site-packages on `sys.path` AFTER their own (validation/pool.py:
`JudgePool.use_environments`), for that problem only (autotriton/site_paths.py: the append, and a
package whose C++ operators do not load into the judge's torch build).

The judge's own torch, triton and numpy are never replaced: the environment is a venv whose
`.pth` file exposes the judge's site-packages (so pip sees them as installed, outside the
environment, and never uninstalls them), and every install runs with a constraints file pinning
the running versions; a requirement that needs another torch is reported as unresolvable.

GPU machines have no network: `find_links` + `offline` build from a wheelhouse (pip's
`--no-index --find-links`), and `autotriton env prefetch` downloads the wheels of every recorded
requirement set for another Python/platform (autotriton/wheelhouse.py).

A failure names the requirement: `missing_dependency:<name>` (no distribution of that name in
the index or wheelhouse) or `unresolvable_dependency:<name>` (it exists, but no version fits the
constraints), with pip's own error line as the detail.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, Field

from autotriton.hashing import content_key

#: Distributions the judge brings itself: never part of a requirement set, never installed, and
#: pinned to the running versions in every install (a module that needs another torch is
#: unresolvable, not a reason to replace the judge's).
JUDGE_PROVIDED: tuple[str, ...] = ("torch", "triton", "numpy")

MARKER = "autotriton-environment.json"


class EnvironmentConfig(BaseModel):
    enabled: bool = Field(True, description="install each harvested module's own dependencies into a cached environment that the probe and the judge use; off: modules run with the judge's packages only")
    cache_dir: str = Field("~/.cache/autotriton/environments", description="where environments are built and kept (one folder per requirement set, Python version and torch); the judge's sandbox reads it, so keep it readable by other users when the judge runs as root")
    find_links: list[str] = Field(default_factory=list, description="wheel folders (wheelhouses) pip looks in besides the index: `autotriton env prefetch --out DIR` fills one")
    offline: bool = Field(False, description="build from find_links only (pip --no-index): for machines without network, such as GPU nodes")
    install_timeout_s: float = Field(600.0, gt=0, description="longest pip install of one environment")
    index_url: str = Field("", description="package index for pip (empty: pip's own default or PIP_INDEX_URL)")
    allow_sdist: bool = Field(False, description="also install source distributions; off: wheels only, so that installing a package a harvested repository names never runs its build code on this machine (its code then runs only in the judge's sandbox)")


class DependencyError(Exception):
    """An environment could not be built. `reason` is `missing_dependency:<name>` or
    `unresolvable_dependency:<name>`; `detail` is pip's own error line."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail

    @property
    def name(self) -> str:
        return self.reason.partition(":")[2]


@dataclass
class Environment:
    """A built environment: what was asked for, where its packages are, and whether it was reused."""

    requirements: list[str]
    key: str | None
    path: str = ""
    site_packages: list[str] = field(default_factory=list)
    reused: bool = False
    installed: dict[str, str] = field(default_factory=dict)  # distribution -> version, in the environment itself
    build_s: float = 0.0


def canonical_name(name: str) -> str:
    """PEP 503 normalised distribution name ("Scikit_Learn" -> "scikit-learn")."""
    return re.sub(r"[-_.]+", "-", name).lower()


def normalize_requirements(requirements: Iterable[str]) -> list[str]:
    """A requirement set in canonical form: parsed by `packaging`, names normalised, one entry per
    distribution (specifiers of repeated names merged), judge-provided ones dropped, sorted.
    Raises ValueError naming a requirement that does not parse."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import SpecifierSet

    merged: dict[str, tuple[set[str], SpecifierSet, str]] = {}
    for text in requirements:
        text = text.strip()
        if not text:
            continue
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise ValueError(f"requirement {text!r} does not parse ({exc}); write it as in pyproject.toml, e.g. 'einops>=0.7'") from exc
        if req.marker is not None and not _marker_holds(req.marker):
            continue  # for another platform or Python (or an extra): not this machine's business
        name = canonical_name(req.name)
        if name in JUDGE_PROVIDED or req.url:
            continue
        extras, spec, _ = merged.get(name, (set(), SpecifierSet(), ""))
        merged[name] = (extras | set(req.extras), spec & req.specifier, name)
    out = []
    for name, (extras, spec, _) in sorted(merged.items()):
        out.append(name + (f"[{','.join(sorted(extras))}]" if extras else "") + str(spec))
    return out


def _marker_holds(marker) -> bool:
    try:
        return bool(marker.evaluate({"extra": ""}))
    except Exception:  # noqa: BLE001 (a marker packaging cannot evaluate: keep the requirement)
        return True


def requirement_key(requirements: Iterable[str]) -> str | None:
    """The key of a (normalised) requirement set: what Problem.environment_key records. None when empty."""
    reqs = normalize_requirements(requirements)
    return content_key("environment", reqs) if reqs else None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def judge_pins() -> dict[str, str]:
    """The running versions of the judge-provided distributions (the constraints of every install)."""
    pins = {}
    for dist in JUDGE_PROVIDED:
        v = _version(dist)
        if v is not None:
            pins[dist] = v
    return pins


def judge_site_packages() -> list[str]:
    """The site-packages folders of the running interpreter (a venv's and, below it, the system's)."""
    paths = list(site.getsitepackages())
    purelib = sysconfig.get_paths()["purelib"]
    if purelib not in paths:
        paths.insert(0, purelib)
    return [p for p in dict.fromkeys(paths) if os.path.isdir(p)]


def _platform_tag() -> str:
    """What an environment was built for besides its requirements: the Python version and the
    judge's torch (a torchvision wheel is only good for the torch it was built against)."""
    pins = judge_pins()
    return f"py{sys.version_info[0]}{sys.version_info[1]}-torch{pins.get('torch', 'none').split('+')[0]}"


class EnvironmentCache:
    """Builds environments into `config.cache_dir`, once per (requirement set, Python, torch), and
    finds them again. Safe across processes: a file lock per environment, built in a temporary
    folder and renamed into place, so a crash never leaves a half-built environment behind."""

    def __init__(self, config: EnvironmentConfig | None = None, *, python: str | None = None):
        self.config = config or EnvironmentConfig()
        self.root = Path(self.config.cache_dir).expanduser().resolve()
        self.python = python or sys.executable

    def folder(self, requirements: Iterable[str]) -> Path | None:
        key = requirement_key(requirements)
        return None if key is None else self.root / f"{_platform_tag()}-{key}"

    def lookup(self, requirements: Iterable[str]) -> Environment | None:
        """The built environment of this set, or None (nothing is built here)."""
        reqs = normalize_requirements(requirements)
        if not reqs:
            return Environment([], None)
        folder = self.folder(reqs)
        assert folder is not None
        return self._read(folder, reqs)

    def ensure(self, requirements: Iterable[str]) -> Environment:
        """The environment of this set, built now if it is not in the cache. Raises DependencyError."""
        reqs = normalize_requirements(requirements)
        if not reqs:
            return Environment([], None)
        found = self.lookup(reqs)
        if found is not None:
            return found
        folder = self.folder(reqs)
        assert folder is not None
        self.root.mkdir(parents=True, exist_ok=True)
        _open_to_others(self.root)
        with open(self.root / f".{folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another harvest may be building the same set
            found = self._read(folder, reqs)
            if found is not None:
                return found
            return self._build(folder, reqs)

    def _read(self, folder: Path, reqs: list[str]) -> Environment | None:
        try:
            info = json.loads((folder / MARKER).read_text())
        except (OSError, ValueError):
            return None
        sp = _site_packages(folder)
        return Environment(reqs, info.get("key"), str(folder), [str(sp)], reused=True,
                           installed=info.get("installed", {}), build_s=float(info.get("build_s", 0.0)))

    def _build(self, folder: Path, reqs: list[str]) -> Environment:
        start = time.monotonic()
        tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            subprocess.run([self.python, "-m", "venv", "--without-pip", str(tmp)], check=True, capture_output=True, text=True, timeout=120)
            sp = _site_packages(tmp)
            # The judge's packages, visible to pip (installed, outside this environment: never
            # uninstalled or upgraded in place) and to the environment's own Python.
            (sp / "_autotriton_judge.pth").write_text("\n".join(judge_site_packages()) + "\n")
            constraints = tmp / "judge-constraints.txt"
            constraints.write_text("".join(f"{d}=={v}\n" for d, v in judge_pins().items()))
            cmd = [str(tmp / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                   "--no-warn-script-location", "--progress-bar", "off", "-c", str(constraints)]
            if not self.config.allow_sdist:
                cmd += ["--only-binary", ":all:"]
            if self.config.offline:
                cmd.append("--no-index")
            elif self.config.index_url:
                cmd += ["--index-url", self.config.index_url]
            for link in self.config.find_links:
                cmd += ["--find-links", str(Path(link).expanduser())]
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
            try:
                proc = subprocess.run(cmd + reqs, capture_output=True, text=True, timeout=self.config.install_timeout_s, env=env)
            except subprocess.TimeoutExpired as exc:
                raise DependencyError(f"unresolvable_dependency:{requirement_name(reqs[0])}",
                                      f"pip install {' '.join(reqs)} did not finish within {self.config.install_timeout_s:g} s") from exc
            if proc.returncode != 0:
                raise pip_error(proc.stdout + "\n" + proc.stderr, reqs, wheels_only=not self.config.allow_sdist)
            installed = _installed(sp)
            key = requirement_key(reqs)
            elapsed = time.monotonic() - start
            (tmp / MARKER).write_text(json.dumps({"requirements": reqs, "key": key, "platform": _platform_tag(),
                                                  "installed": installed, "judge_pins": judge_pins(), "build_s": elapsed},
                                                 indent=1, sort_keys=True))
            _open_to_others(tmp, recursive=True)
            os.rename(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return Environment(reqs, key, str(folder), [str(_site_packages(folder))], reused=False, installed=installed, build_s=elapsed)

    def recorded(self) -> list[Environment]:
        """Every environment built in this cache (for `autotriton env list`)."""
        out = []
        for marker in sorted(self.root.glob(f"*/{MARKER}")):
            try:
                info = json.loads(marker.read_text())
            except (OSError, ValueError):
                continue
            out.append(Environment(info.get("requirements", []), info.get("key"), str(marker.parent),
                                   [str(_site_packages(marker.parent))], reused=True, installed=info.get("installed", {}),
                                   build_s=float(info.get("build_s", 0.0))))
        return out


def environment_paths(problems: Iterable, config: EnvironmentConfig | None) -> tuple[dict[str, list[str]], dict[str, str]]:
    """({problem key: site-packages folders}, {problem key: why its environment is missing}) for
    problems (anything with .key and .requirements) that need one, building what the cache lacks
    (offline from config.find_links on a machine without network). Nothing when disabled."""
    if config is None or not config.enabled:
        return {}, {}
    cache = EnvironmentCache(config)
    paths: dict[str, list[str]] = {}
    failed: dict[str, str] = {}
    built: dict[tuple[str, ...], Environment | DependencyError] = {}
    for p in problems:
        reqs = tuple(getattr(p, "requirements", None) or [])
        if not reqs:
            continue
        if reqs not in built:
            try:
                built[reqs] = cache.ensure(reqs)
            except DependencyError as exc:
                built[reqs] = exc
        got = built[reqs]
        if isinstance(got, DependencyError):
            failed[p.key] = f"{got.reason}: {got.detail}"
        else:
            paths[p.key] = list(got.site_packages)
    return paths, failed


def requirement_name(requirement: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return canonical_name(m.group(1)) if m else requirement.strip()


def pip_error(output: str, reqs: list[str], *, wheels_only: bool = False) -> DependencyError:
    """pip's failure as a DependencyError naming the requirement at fault (`wheels_only`: pip ran with
    --only-binary, so a distribution with no wheel is "not found": the detail says so)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        m = re.search(r"Could not find a version that satisfies the requirement (\S+) \(from versions: ([^)]*)\)", line)
        if m:
            kind = "missing_dependency" if m.group(2).strip() == "none" else "unresolvable_dependency"
            if kind == "missing_dependency" and wheels_only:
                line += (" (wheels only: environments.allow_sdist is off, so a distribution published as source alone is"
                         " not built here, which would run its build code; set it on to allow that)")
            return DependencyError(f"{kind}:{requirement_name(m.group(1))}", line)
    for i, line in enumerate(lines):
        if "conflict is caused by" in line:
            for cause in lines[i + 1:]:
                m = re.match(r"(?:The user requested )?([A-Za-z0-9][A-Za-z0-9._-]*)", cause)
                if m and canonical_name(m.group(1)) not in JUDGE_PROVIDED:
                    return DependencyError(f"unresolvable_dependency:{canonical_name(m.group(1))}", " | ".join(lines[i:i + 4])[:500])
    errors = [line for line in lines if line.startswith("ERROR")] or lines[-1:] or ["pip failed without a message"]
    named = next((r for r in reqs if requirement_name(r) in " ".join(errors).lower()), reqs[0])
    return DependencyError(f"unresolvable_dependency:{requirement_name(named)}", errors[-1][:500])


def _site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _installed(site_packages: Path) -> dict[str, str]:
    out = {}
    for dist in metadata.distributions(path=[str(site_packages)]):
        name = dist.metadata["Name"]
        if name:
            out[canonical_name(name)] = dist.version
    return dict(sorted(out.items()))


def _open_to_others(path: Path, recursive: bool = False) -> None:
    """The judge's sandbox may run a candidate as nobody: it must be able to read the packages.
    Best effort (a folder we do not own stays as it is; the sandbox then keeps its privileges)."""
    targets = [path]
    if recursive:
        targets += [Path(r) / n for r, dirs, files in os.walk(path) for n in dirs + files]
    for p in targets:
        try:
            if p.is_symlink():
                continue
            mode = p.stat().st_mode
            os.chmod(p, mode | (0o055 if p.is_dir() else 0o044))
        except OSError:
            pass

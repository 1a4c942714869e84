"""Package sources: PyPI packages (and local folders) named in a sources file, harvested from
their unpacked sources with the package, version, path and licence kept as provenance.

A sources file is TOML or YAML:

    [[package]]
    name = "timm"
    version = "1.0.31"                 # pinned: a harvest is reproducible, and a pinned version
    include = ["timm/layers"]          # never changes, so a refresh skips it once harvested
    exclude = ["*/tests/*"]

    [[folder]]
    path = "/data/my-models"

(YAML: `package:` and `folder:` lists of the same mappings.) Each package is fetched with
`pip download --no-deps --no-binary NAME` (its source distribution), falling back to its wheel,
and unpacked into `harvest.package_cache`. Its licence comes from the unpacked licence files or
packaging metadata (PKG-INFO, a wheel's METADATA) and the allowlist `harvest.licences` applies.
Every module then goes through the shared harvest pipeline (core.py), so rejections carry the
same reasons as any other source; `missing_dependency` ones name the module that is missing.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotriton.environments import EnvironmentConfig
from autotriton.harvesting.config import HarvestConfig
from autotriton.harvesting.core import Harvester, HarvestResult, ProbeFn
from autotriton.harvesting.extract import Repository
from autotriton.harvesting.licences import detect_licence_text, directory_licence, normalize_spdx, spdx_header
from autotriton.harvesting.local import HarvestInputError, harvest_local, python_files
from autotriton.harvesting.requirements import declared_in_package, remapped_packages
from autotriton.harvesting.state import HarvestState
from autotriton.records import SourceRef

PACKAGE_KIND = "pypi"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
# Where a rejection says which module was missing: the extractor's and the probe's wording.
_MISSING = (re.compile(r"needs package `([^`]+)`"), re.compile(r"No module named '([^'.]+)"))


@dataclass(frozen=True)
class PackageSource:
    """One pinned PyPI package to harvest; `include`/`exclude` are globs over paths inside it."""

    name: str
    version: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class FolderSource:
    path: str


@dataclass
class SourcesFile:
    path: Path
    packages: list[PackageSource] = field(default_factory=list)
    folders: list[FolderSource] = field(default_factory=list)


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise HarvestInputError(f"{where}: must be a list of path globs, e.g. [\"timm/layers\", \"*/models/*\"]")
    return tuple(value)


def load_sources(path: str | Path) -> SourcesFile:
    """Parse a sources file (TOML, or YAML by its .yaml/.yml suffix). Errors name the entry at fault."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise HarvestInputError(f"{path}: no such sources file; pass a TOML or YAML file listing [[package]] name/version entries")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = tomllib.loads(text)
    except Exception as exc:  # tomllib and yaml raise their own error types; both carry the line
        raise HarvestInputError(f"{p}: not valid {'YAML' if p.suffix in ('.yaml', '.yml') else 'TOML'} ({exc})") from exc
    if not isinstance(data, dict):
        raise HarvestInputError(f"{p}: expected a table with `package` and/or `folder` lists")
    unknown = sorted(set(data) - {"package", "folder"})
    if unknown:
        raise HarvestInputError(f"{p}: unknown key(s) {', '.join(unknown)}; a sources file has `package` and `folder` lists")
    out = SourcesFile(p)
    seen: set[str] = set()
    for i, entry in enumerate(data.get("package") or [], 1):
        where = f"{p}: package #{i}"
        if not isinstance(entry, dict):
            raise HarvestInputError(f"{where}: expected a table with name and version")
        extra = sorted(set(entry) - {"name", "version", "include", "exclude"})
        if extra:
            raise HarvestInputError(f"{where}: unknown field(s) {', '.join(extra)} (name, version, include, exclude)")
        name, version = entry.get("name"), entry.get("version")
        if not isinstance(name, str) or not _NAME.match(name):
            raise HarvestInputError(f"{where}: `name` must be a PyPI project name, got {name!r}")
        if not isinstance(version, str) or not _VERSION.match(version):
            raise HarvestInputError(f"{where} ({name}): `version` must be a pinned version string such as \"1.0.31\", got {version!r}")
        src = PackageSource(name, version, _globs(entry.get("include"), f"{where} ({name}).include"),
                            _globs(entry.get("exclude"), f"{where} ({name}).exclude"))
        if src.label in seen:
            raise HarvestInputError(f"{where}: {src.label} is listed twice")
        seen.add(src.label)
        out.packages.append(src)
    for i, entry in enumerate(data.get("folder") or [], 1):
        folder = entry.get("path") if isinstance(entry, dict) else entry
        if not isinstance(folder, str) or not folder:
            raise HarvestInputError(f"{p}: folder #{i}: expected `path = \"DIR\"`")
        resolved = Path(folder).expanduser()
        if not resolved.is_absolute():
            resolved = (p.parent / resolved).resolve()  # relative to the sources file, not the cwd
        out.folders.append(FolderSource(str(resolved)))
    if not out.packages and not out.folders:
        raise HarvestInputError(f"{p}: lists no package and no folder; add [[package]] entries (name, version)")
    return out


# ------------------------------------------------------------------------------------------------
# fetching


class FetchError(RuntimeError):
    """pip could not fetch a package (neither its sdist nor a wheel)."""


def _pip_download(src: PackageSource, dest: Path, binary: bool, timeout_s: float) -> Path:
    # `--no-binary NAME`, not `:all:`: only the package itself as its sdist. pip reads an sdist's
    # metadata by running its build backend; `--no-build-isolation` runs it with what is installed
    # instead of installing its build requirements (monai's include torch): where that is not
    # enough, the sdist fails fast and the wheel, whose Python files are the same, is taken.
    fmt = ["--only-binary", ":all:"] if binary else ["--no-binary", src.name, "--no-build-isolation"]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet",
           *fmt, "-d", str(dest), f"{src.name}=={src.version}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"pip download {src.label} took over {timeout_s:.0f} s") from exc
    files = [f for f in dest.iterdir() if f.is_file()]
    if done.returncode != 0 and not binary:
        found = _sdist_of_another_version(done.stderr + done.stdout, src, dest)
        if found is not None:
            return found
    if done.returncode != 0 or not files:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise FetchError(" | ".join(tail) or f"pip exited with {done.returncode}")
    return files[0]


_OTHER_VERSION = re.compile(r"Requested (\S+) from (\S+?), but installing version (\S+)")


def _sdist_of_another_version(output: str, src: PackageSource, dest: Path) -> Path | None:
    """The sdist pip found, then refused because building its metadata gave another version:
    a version computed from git at build time (setuptools-scm, `dynamic = ["version"]`) is 0.0.0
    in an sdist built without the repository (torchmd-net 3.1.0). Its files are the published
    ones, named with the version asked for: fetched from the address pip resolved on its own
    indexes, unbuilt (only the Python files are read)."""
    from urllib.parse import unquote, urlparse
    from urllib.request import urlopen

    hit = _OTHER_VERSION.search(output)
    if hit is None:
        return None
    url = hit.group(2)
    name = unquote(urlparse(url).path.rsplit("/", 1)[-1])
    stem = next((name[: -len(ext)] for ext in (".tar.gz", ".tgz", ".zip") if name.endswith(ext)), None)
    if stem is None or not stem.endswith(f"-{src.version}"):
        return None
    target = dest / name
    try:
        with urlopen(url, timeout=120) as response, open(target, "wb") as out:  # noqa: S310 - pip's own resolved address
            shutil.copyfileobj(response, out)
    except OSError:
        target.unlink(missing_ok=True)
        return None
    return target


def _unpack(archive: Path, dest: Path) -> None:
    name = archive.name
    if name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                target = (dest / member).resolve()
                if not str(target).startswith(str(dest.resolve())):
                    raise FetchError(f"{name}: member {member} would unpack outside the cache")
            zf.extractall(dest)
    elif name.endswith((".tar.gz", ".tgz", ".tar.bz2", ".tar")):
        with tarfile.open(archive) as tf:
            tf.extractall(dest, filter="data")  # "data" refuses links and paths outside dest
    else:
        raise FetchError(f"{name}: unknown archive type")


_KEPT_NAMES = {"PKG-INFO", "METADATA", "pyproject.toml", "setup.cfg", "setup.py"}


def _keep_sources_only(root: Path) -> None:
    """Delete what a harvest never reads (compiled libraries, data, docs): Python files, licence
    files and packaging metadata stay. A cache of twelve packages then packs small enough to carry
    to a machine without network (torchvision's wheel: 19 MB -> its Python files)."""
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_symlink() or path.is_file():
            name = path.name
            if not (name.endswith(".py") or name in _KEPT_NAMES or name.upper().startswith(("LICEN", "COPYING"))
                    or "licenses" in path.parts):
                path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def fetch_package(src: PackageSource, cache: str | Path, timeout_s: float = 600.0) -> tuple[Path, str]:
    """Unpacked sources of a package in `cache` -> (folder, "sdist" or "wheel"). A package already
    unpacked there is reused; an interrupted unpack never leaves a half folder behind."""
    cache = Path(cache).expanduser()
    remapped = None  # an sdist whose packages lie apart from their import names: the wheel's layout is wanted
    for kind in ("sdist", "wheel"):
        done = cache / f"{src.name}-{src.version}-{kind}"
        if done.is_dir():
            if kind == "sdist" and remapped_packages(done):
                remapped = done
                continue
            return done, kind
    cache.mkdir(parents=True, exist_ok=True)
    errors = []
    for kind in ("sdist", "wheel"):
        if kind == "sdist" and remapped is not None:
            continue
        with tempfile.TemporaryDirectory(dir=cache, prefix=f".{src.name}-") as tmp:
            try:
                (Path(tmp) / "dl").mkdir()
                archive = _pip_download(src, Path(tmp) / "dl", binary=(kind == "wheel"),
                                        timeout_s=timeout_s if kind == "wheel" else min(timeout_s, 180.0))
                unpacked = Path(tmp) / "src"
                unpacked.mkdir()
                _unpack(archive, unpacked)
            except (FetchError, OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
                errors.append(f"{kind}: {exc}")
                continue
            # an sdist unpacks into one top folder (name-version/); a wheel into the package itself
            _keep_sources_only(unpacked)
            entries = list(unpacked.iterdir())
            root = entries[0] if kind == "sdist" and len(entries) == 1 and entries[0].is_dir() else unpacked
            final = cache / f"{src.name}-{src.version}-{kind}"
            try:
                root.rename(final)
            except OSError:
                if not final.is_dir():  # another harvest unpacked the same package meanwhile: use theirs
                    raise
            if kind == "sdist" and remapped_packages(final):
                # `package-dir = {"pkg._ops" = "ops"}`: imports of pkg._ops would find no file; the
                # wheel holds the same Python files where their imports look (kept as a fallback)
                remapped = final
                continue
            return final, kind
    if remapped is not None:
        return remapped, "sdist"
    raise FetchError(f"{src.label}: {'; '.join(errors)}")


# ------------------------------------------------------------------------------------------------
# licence


def package_licence(root: Path) -> str | None:
    """The licence of unpacked package sources: licence files and metadata of the sdist root, or
    a wheel's `*.dist-info` (METADATA's License-Expression / License / classifiers, its licence files)."""
    found = directory_licence(root)
    if found:
        return found
    for info in sorted(root.glob("*.dist-info")):
        for lic in sorted([*info.glob("LICEN[CS]E*"), *info.glob("COPYING*"), *info.glob("licenses/**/*")]):
            if lic.is_file():
                found = detect_licence_text(lic.read_text(encoding="utf-8", errors="replace"))
                if found:
                    return found
        text = _metadata_headers(info / "METADATA")
        header = _licence_header(text)
        if header:  # an expression's first licence ("MIT OR Apache-2.0"); a License field whole
            kind, value = header
            spdx = normalize_spdx(value.split()[0] if kind == "License-Expression" else value)
            if spdx:
                return spdx
        for cls in re.findall(r"License :: OSI Approved :: ([^\n]+)", text):
            found = normalize_spdx(cls.replace(" License", "").strip()) or normalize_spdx(cls.strip())
            if found:
                return found
    return None


def named_licence(root: Path) -> str | None:
    """The licence the package's metadata names as written (a wheel's METADATA, an sdist's
    PKG-INFO), recognised or not: what a user is told when it is not one the harvest knows."""
    for meta in [*sorted(root.glob("*.dist-info/METADATA")), root / "PKG-INFO"]:
        header = _licence_header(_metadata_headers(meta))
        if header and header[1].upper() not in ("UNKNOWN", "NONE"):
            return header[1][:120]
    return None


def _metadata_headers(path: Path) -> str:
    """The header block of a METADATA / PKG-INFO file ("" where there is none)."""
    return path.read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[0] if path.is_file() else ""


def _licence_header(headers: str) -> tuple[str, str] | None:
    """(field, value as written) of the licence metadata headers name: License-Expression, else License."""
    for name in ("License-Expression", "License"):
        m = re.search(rf"^{name}:[ \t]*(.+)$", headers, re.M)
        if m and m.group(1).strip():
            return name, m.group(1).strip()
    return None


# ------------------------------------------------------------------------------------------------
# harvest


def _selected(path: str, src: PackageSource) -> bool:
    """Whether the include/exclude globs select `path`. A src-layout sdist keeps its package under
    `src/` while the wheel does not: `include = ["pkg"]` selects `src/pkg/...` too."""
    paths = (path, path[4:]) if path.startswith("src/") else (path,)

    def match(globs: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatch(p, g) or p.startswith(g.rstrip("/") + "/") or fnmatch.fnmatch(p, g.rstrip("/") + "/*")
                   for g in globs for p in paths)

    if src.include and not match(src.include):
        return False
    return not match(src.exclude)


def missing_module(detail: str) -> str | None:
    """The top-level module a missing_dependency rejection names ("einops"), else None."""
    for pattern in _MISSING:
        m = pattern.search(detail or "")
        if m:
            return m.group(1).split(".")[0]
    return None


def harvest_package_root(harvester: Harvester, src: PackageSource, root: Path, licence: str | None, fmt: str) -> int:
    """Scan the selected .py files of an unpacked package with `harvester`; returns files scanned.
    The package's declared requirements (its metadata's Requires-Dist, pyproject, setup.py) give
    the modules' requirement sets their version specifiers (dependency environments)."""
    paths = python_files(root)
    scan = [p for p in paths if _selected(p, src)]

    def read(rel: str) -> bytes | None:
        try:
            return (root / rel).read_bytes()
        except OSError:
            return None

    # Every file of the package is importable by the extractor (a selected module may need a
    # helper outside the include globs), but only the selected ones are harvested.
    repo = Repository(paths, read, max_bytes=harvester.config.max_file_bytes)

    def ref_for(rel: str, text: str) -> SourceRef:
        return SourceRef(kind=PACKAGE_KIND, repo=src.name, commit=src.version, path=rel,
                         licence=spdx_header(text) or licence,
                         url=f"https://pypi.org/project/{src.name}/{src.version}/#{fmt}:{rel}")

    harvester.scan_repository(repo, scan, ref_for, label=src.label, declared=declared_in_package(root),
                              own=f"{src.name}=={src.version}")
    return len(scan)


@dataclass
class PackagesHarvest:
    """One sources-file harvest: the combined HarvestResult plus figures per package."""

    result: HarvestResult
    per_source: dict[str, dict[str, Any]]

    def summary(self) -> dict[str, Any]:
        return {**self.result.summary(), "per_source": self.per_source}


def per_source_stats(result: HarvestResult, labels: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Runnable / rejected (by reason) / missing modules / file errors per source label.
    `labels` maps a SourceRef key to its source label (package==version or folder)."""
    out: dict[str, dict[str, Any]] = defaultdict(lambda: {"modules": 0, "runnable": 0, "rejected": Counter(),
                                                          "missing_modules": Counter(), "file_errors": Counter()})
    for p in result.problems:
        label = labels.get(p.source_key or "", "?")
        s = out[label]
        s["modules"] += 1
        if p.status == "runnable":
            s["runnable"] += 1
        else:
            s["rejected"][p.reject_reason or "unknown"] += 1
            if p.reject_reason == "missing_dependency":
                s["missing_modules"][missing_module(result.details.get(p.key, "")) or "?"] += 1
    for r in result.rejections:
        label = r.subject.rsplit(":", 1)[0] if ":" in r.subject else r.subject
        out[label]["file_errors"][r.reason] += 1
    return {k: {**v, "rejected": dict(v["rejected"].most_common()), "missing_modules": dict(v["missing_modules"].most_common()),
                "file_errors": dict(v["file_errors"].most_common())} for k, v in sorted(out.items())}


def harvest_packages(sources: str | Path | SourcesFile, config: HarvestConfig | None = None, *,
                     probe: ProbeFn | None = None, progress: bool = False, commit_state: bool = True,
                     console: Any = None, validation_config: Any = None, fetch_timeout_s: float = 600.0,
                     environments: EnvironmentConfig | None = None, state: HarvestState | None = None) -> PackagesHarvest:
    """Harvest every package and folder of a sources file (one harvester: duplicates are found
    across packages, and one warm probe pool serves them all).

    A package whose fetch fails or whose licence is not allowed is recorded as a file rejection
    (subject "name==version") and the rest go on. With `config.incremental`, a pinned package
    harvested before (state) is skipped; folders go through `harvest_local`'s file hashes.
    `environments`: install each module's own dependencies (einops, timm, ...) into a cached
    environment that the probe uses (autotriton/environments.py); None: the judge's packages only.
    `state`: the incremental state to harvest against (default: harvest.state_path's file, or empty).
    """
    config = config or HarvestConfig()
    spec = sources if isinstance(sources, SourcesFile) else load_sources(sources)
    if state is None:
        state = HarvestState.for_config(config)
    harvester = Harvester(config, probe=probe, state=state, progress=progress, console=console,
                          validation_config=validation_config, environments=environments)
    labels: dict[str, str] = {}
    for src in spec.packages:
        sstate = state.source(f"{PACKAGE_KIND}:{src.label}")
        if config.incremental and sstate.get("harvested") and sstate.get("filters") == [list(src.include), list(src.exclude)]:
            harvester.result.unchanged += 1
            continue
        try:
            root, fmt = fetch_package(src, config.package_cache, timeout_s=fetch_timeout_s)
        except FetchError as exc:
            harvester.reject_file(src.label, "fetch_failed", f"{exc}; check the name and version on PyPI")
            continue
        licence = package_licence(root)
        if not harvester.licence_ok(licence, src.label, named=None if licence else named_licence(root)):
            continue
        before = len(harvester.result.sources)
        scanned = harvest_package_root(harvester, src, root, licence, fmt)
        if scanned == 0:
            harvester.reject_file(src.label, "no_files", f"no .py file matches include {list(src.include)} "
                                  f"(exclude {list(src.exclude)}) in {root}; fix the globs")
            continue  # not harvested: the next run (globs fixed, or a fixed autotriton) tries it again
        for ref in harvester.result.sources[before:]:
            labels[ref.key] = src.label
        sstate.update({"harvested": True, "format": fmt, "licence": licence,
                       "filters": [list(src.include), list(src.exclude)]})
    result = harvester.finish()
    for ref in result.sources:
        labels.setdefault(ref.key, f"{ref.repo}=={ref.commit}" if ref.kind == PACKAGE_KIND else ref.repo)
    for folder in spec.folders:
        sub = harvest_local(folder.path, config, probe=probe, progress=progress, commit_state=False, state=state,
                            console=console, validation_config=validation_config, environments=environments)
        for ref in sub.sources:
            labels[ref.key] = folder.path
        merge_results(result, sub)
    stats = per_source_stats(result, labels)
    if commit_state:
        result.commit_state()
    return PackagesHarvest(result, stats)


def merge_results(into: HarvestResult, other: HarvestResult) -> None:
    """Add `other`'s records and figures to `into` (sources once each)."""
    known = {s.key for s in into.sources}
    into.sources += [s for s in other.sources if s.key not in known]
    into.modules += other.modules
    into.problems += other.problems
    into.rejections += other.rejections
    into.pairs += other.pairs
    into.files += other.files
    into.duplicates += other.duplicates
    into.unchanged += other.unchanged
    into.details.update(other.details)


def sources_file_units(path: str | Path) -> list[SourcesFile]:
    """A sources file (checked whole) as one SourcesFile per package and per folder, so a
    harvest can store each when it is done (a harvest cut off at a time limit keeps them)."""
    spec = load_sources(path)
    return ([SourcesFile(spec.path, packages=[p]) for p in spec.packages]
            + [SourcesFile(spec.path, folders=[f]) for f in spec.folders])

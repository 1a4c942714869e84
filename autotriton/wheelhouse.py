"""Wheelhouses for machines without network: the wheels of a set of requirements, for another
Python and platform, minus what that machine already has (its torch, triton, CUDA libraries).

Standard library only, and runnable from a clone without installing autotriton:

    python3 autotriton/wheelhouse.py --python-version 3.12 --out .gpu/whl --pyproject pyproject.toml -c constraints.txt

(`scripts/gpu-wheelhouse` runs exactly that), and used by `autotriton env prefetch` for the
requirement sets recorded with harvested problems.

How: pip resolves the requirements for the target (`pip install --dry-run --ignore-installed
--report`, metadata only), then `pip download --no-deps` fetches each resolved distribution's
wheel, except the excluded ones (the target's own torch, triton, nvidia-* and cuda-* packages):
a plain `pip download` would fetch torch and its CUDA libraries (gigabytes) because accelerate,
peft or a harvested module depend on torch.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Iterable, Sequence

#: What a GPU machine brings itself (and must never be replaced): fnmatch patterns on
#: normalised distribution names.
DEFAULT_EXCLUDE: tuple[str, ...] = ("torch", "triton", "pytorch-triton", "nvidia-*", "cuda-*")
# glibc 2.28 and older manylinux wheels for x86_64 (pip does not widen a --platform downwards:
# matplotlib's cp312 wheel is manylinux_2_17, torch's manylinux_2_28).
DEFAULT_PLATFORMS: tuple[str, ...] = (*(f"manylinux_2_{minor}_x86_64" for minor in range(28, 16, -1)),
                                      "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")


class WheelhouseError(RuntimeError):
    """pip could not resolve or download; the message carries pip's own error lines."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_versions(path: str | os.PathLike[str]) -> dict[str, str | None]:
    """What the target machine has installed, from `pip list --format=freeze` or `pip freeze` run
    there (`name==version`, `name @ url`) or bare names: canonical name -> version (None where the
    line gives no exact version). Blank lines, `#` comments and editable (`-e`) lines are skipped."""
    found: dict[str, str | None] = {}
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name = re.split(r"\s|==|===|~=|>=|<=|!=|<|>|@|;|\[", line, maxsplit=1)[0]
        if name:
            m = re.match(r"[^=<>!~;@\s\[]+\s*===?\s*([A-Za-z0-9.+!_-]+)\s*$", line)
            found[canonical(name)] = m.group(1) if m else None
    return found


def installed_names(path: str | os.PathLike[str]) -> list[str]:
    """The distribution names of a listing of what the target machine has installed (see
    installed_versions)."""
    return list(installed_versions(path))


def pyproject_requirements(path: str | os.PathLike[str], extras: Sequence[str] = ()) -> list[str]:
    """[build-system] requires + [project] dependencies (+ the named optional-dependencies) of a
    pyproject.toml: everything `pip install --no-index -e .` needs from a wheelhouse."""
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    project = data.get("project") or {}
    reqs = list((data.get("build-system") or {}).get("requires") or []) + list(project.get("dependencies") or [])
    for extra in extras:
        group = (project.get("optional-dependencies") or {}).get(extra)
        if group is None:
            raise WheelhouseError(f"{path}: no [project.optional-dependencies] group {extra!r}")
        reqs += group
    return reqs


def _target_args(python_version: str, platforms: Sequence[str]) -> list[str]:
    args = ["--python-version", python_version, "--implementation", "cp", "--only-binary", ":all:"]
    for p in platforms:
        args += ["--platform", p]
    return args


def _pip_failed(proc: subprocess.CompletedProcess, what: str) -> WheelhouseError:
    lines = [line for line in (proc.stdout + "\n" + proc.stderr).splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR" in line] or lines[-5:]
    return WheelhouseError(f"pip {what} failed:\n" + "\n".join(errors[-8:]))


def resolve_report(requirements: Sequence[str], *, python_version: str, platforms: Sequence[str] = (*DEFAULT_PLATFORMS,),
                   constraints: Sequence[str] = (), find_links: Sequence[str] = (), no_index: bool = False,
                   pip: Sequence[str] = (sys.executable, "-m", "pip")) -> list[dict]:
    """pip's installation report (its `install` items) for `requirements` on the target."""
    with tempfile.TemporaryDirectory(prefix="wheelhouse-") as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [*pip, "install", "--dry-run", "--ignore-installed", "--disable-pip-version-check", "--quiet",
               "--report", report, "--target", os.path.join(tmp, "target"), *_target_args(python_version, platforms)]
        for c in constraints:
            cmd += ["-c", str(c)]
        for link in find_links:
            cmd += ["--find-links", str(link)]
        if no_index:
            cmd.append("--no-index")
        proc = subprocess.run(cmd + list(requirements), capture_output=True, text=True)
        if proc.returncode != 0:
            raise _pip_failed(proc, "resolution")
        with open(report, encoding="utf-8") as f:
            return list(json.load(f).get("install", []))


def resolve(requirements: Sequence[str], *, python_version: str, platforms: Sequence[str] = (*DEFAULT_PLATFORMS,),
            constraints: Sequence[str] = (), find_links: Sequence[str] = (), no_index: bool = False,
            pip: Sequence[str] = (sys.executable, "-m", "pip")) -> list[tuple[str, str]]:
    """(name, version) of every distribution pip would install for `requirements` on the target."""
    installs = resolve_report(requirements, python_version=python_version, platforms=platforms, constraints=constraints,
                              find_links=find_links, no_index=no_index, pip=pip)
    return sorted((canonical(i["metadata"]["name"]), i["metadata"]["version"]) for i in installs)


def _packaging():
    """packaging's Requirement and Version: the installed library, else the copy pip vendors
    (this module runs from a clone with nothing but Python and pip)."""
    try:
        from packaging.requirements import Requirement
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover - depends on the machine
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
        from pip._vendor.packaging.version import InvalidVersion, Version  # type: ignore[no-redef]
    return Requirement, Version, InvalidVersion


def kept_by_target(installs: Sequence[dict], requirements: Sequence[str], target: dict[str, str | None],
                   python_version: str) -> set[str]:
    """The resolved distributions the target may keep: it has them at a version that every
    requirement on them (the root requirements' and each resolved distribution's own, markers
    evaluated for the target) accepts, so `pip install` there keeps its own instead of needing a
    wheel. A version the resolution needs and the target does not have (an older typer) is not kept."""
    Requirement, Version, InvalidVersion = _packaging()
    env = {"python_version": python_version, "python_full_version": f"{python_version}.0", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix", "implementation_name": "cpython",
           "platform_python_implementation": "CPython"}
    specs: dict[str, list] = {}

    def add(line: str, extras: Sequence[str]) -> None:
        try:
            req = Requirement(line)
        except Exception:  # an unreadable requirement constrains nothing we can check
            return
        if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in ("", *extras)):
            return
        specs.setdefault(canonical(req.name), []).append(req.specifier)

    for line in requirements:
        add(line, ())
    for item in installs:
        meta = item.get("metadata") or {}
        for line in meta.get("requires_dist") or []:
            add(line, item.get("requested_extras") or ())
    kept = set()
    for item in installs:
        name = canonical((item.get("metadata") or {}).get("name", ""))
        have = target.get(name)
        if not have:
            continue
        try:
            version = Version(have)
        except InvalidVersion:
            continue
        if all(spec.contains(version, prereleases=True) for spec in specs.get(name, [])):
            kept.add(name)
    return kept


def excluded(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(canonical(name), canonical(p)) for p in patterns)


def download(pins: Sequence[tuple[str, str]], out: str | os.PathLike[str], *, python_version: str,
             platforms: Sequence[str] = (*DEFAULT_PLATFORMS,), find_links: Sequence[str] = (), no_index: bool = False,
             pip: Sequence[str] = (sys.executable, "-m", "pip")) -> None:
    """`pip download --no-deps` the wheels of these exact versions for the target into `out`."""
    if not pins:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    cmd = [*pip, "download", "--no-deps", "--disable-pip-version-check", "--quiet", "--dest", str(out),
           *_target_args(python_version, platforms)]
    for link in find_links:
        cmd += ["--find-links", str(link)]
    if no_index:
        cmd.append("--no-index")
    proc = subprocess.run(cmd + [f"{n}=={v}" for n, v in pins], capture_output=True, text=True)
    if proc.returncode != 0:
        raise _pip_failed(proc, "download")


def _target_constraints(constraints: Sequence[str], provided: Sequence[str], exclude: Sequence[str], folder: str) -> list[str]:
    """One constraints file for the target: the given files' pins, minus those of what the target
    provides or brings itself (this machine's torch pin is not the target's), plus `provided`."""
    override = {canonical(re.split(r"[=<>!~ ;\[]", p, maxsplit=1)[0]) for p in provided}
    lines = list(provided)
    for path in constraints:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            name = re.split(r"[=<>!~ ;\[]", line.strip(), maxsplit=1)[0]
            if not name or name.startswith("#") or canonical(name) in override or excluded(name, exclude):
                continue
            lines.append(line.strip())
    target = os.path.join(folder, "target-constraints.txt")
    Path(target).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [target]


def stub_wheels(provided: Sequence[str], folder: str, python_version: str, platform: str) -> list[str]:
    """Metadata-only wheels of what the target provides (`name==version`, no dependencies), with
    the target's best tags and a high build number, so that pip's resolution takes them instead
    of downloading the real torch (and, through it, gigabytes of CUDA libraries) for metadata."""
    import zipfile

    made = []
    tag = f"cp{python_version.replace('.', '')}"
    for pin in provided:
        m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([A-Za-z0-9.+!]+)\s*", pin)
        if m is None:
            raise WheelhouseError(f"--provided {pin!r}: write an exact pin, e.g. torch==2.11.0")
        name, version = m.group(1), m.group(2).split("+")[0]
        dist = re.sub(r"[-_.]+", "_", name)
        path = os.path.join(folder, f"{dist}-{version}-9999-{tag}-{tag}-{platform}.whl")
        info = f"{dist}-{version}.dist-info"
        files = {f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                 f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: autotriton-wheelhouse\nRoot-Is-Purelib: false\nBuild: 9999\nTag: {tag}-{tag}-{platform}\n"}
        files[f"{info}/RECORD"] = "".join(f"{k},,\n" for k in files) + f"{info}/RECORD,,\n"
        with zipfile.ZipFile(path, "w") as z:
            for k, v in files.items():
                z.writestr(k, v)
        made.append(path)
    return made


def left_to_target(installs: Sequence[dict], requirements: Sequence[str], target: dict[str, str | None],
                   exclude: Sequence[str], build_requirements: Sequence[str], python_version: str) -> set[str]:
    """The resolved distributions not to download: the excluded patterns (the target's torch,
    triton, CUDA libraries), what the target lists without a version, and what it has at a version
    every requirement accepts (kept_by_target), except the build backend (`build_requirements`):
    pip installs that into an isolated build environment from the wheelhouse, whatever the target has."""
    Requirement = _packaging()[0]
    isolated = set()
    for line in build_requirements:
        try:
            isolated.add(canonical(Requirement(line).name))
        except Exception:  # an unreadable build requirement: pip will say so on the target
            continue
    kept = kept_by_target(installs, requirements, target, python_version) - isolated
    unversioned = [n for n, v in target.items() if v is None and n not in isolated]
    names = {canonical((i.get("metadata") or {}).get("name", "")) for i in installs}
    return {n for n in names if excluded(n, exclude) or excluded(n, unversioned) or n in kept}


def build_wheelhouse(requirements: Sequence[str], out: str | os.PathLike[str], *, python_version: str = "3.12",
                     platforms: Sequence[str] = (*DEFAULT_PLATFORMS,), constraints: Sequence[str] = (),
                     provided: Sequence[str] = (), exclude: Sequence[str] = DEFAULT_EXCLUDE, find_links: Sequence[str] = (),
                     target: dict[str, str | None] | None = None, build_requirements: Sequence[str] = (),
                     pip: Sequence[str] = (sys.executable, "-m", "pip")) -> dict[str, object]:
    """Resolve for the target (whose own packages are pinned by `provided`, e.g. torch==2.11.0),
    download every resolved wheel but the excluded, and write `wheelhouse.json` (what was asked,
    resolved, downloaded and left to the target machine).

    `target`: what the target has installed (installed_versions): a distribution it has at a
    version every requirement accepts is left to it (kept_by_target), one it has at another
    version is downloaded, one listed without a version is excluded. `build_requirements` (the
    project's [build-system] requires) are always downloaded: pip installs them into an isolated
    build environment from the wheelhouse, whatever the target has."""
    with tempfile.TemporaryDirectory(prefix="wheelhouse-constraints-") as folder:
        stubs = os.path.join(folder, "provided")
        os.mkdir(stubs)
        stub_wheels(provided, stubs, python_version, platforms[0])
        installs = resolve_report(requirements, python_version=python_version, platforms=platforms,
                                  constraints=_target_constraints(constraints, provided, exclude, folder),
                                  find_links=[stubs, *find_links], pip=pip)
    pins = sorted((canonical(i["metadata"]["name"]), i["metadata"]["version"]) for i in installs)
    target = target or {}
    leave = left_to_target(installs, requirements, target, exclude, build_requirements, python_version)
    wanted = [(n, v) for n, v in pins if n not in leave]
    left = [f"{n}=={target[n]} (the target's)" if target.get(n) else f"{n}=={v}" for n, v in pins if n in leave]
    download(wanted, out, python_version=python_version, platforms=platforms, find_links=find_links, pip=pip)
    summary: dict[str, object] = {"python_version": python_version, "platforms": list(platforms), "requirements": list(requirements),
                                  "downloaded": [f"{n}=={v}" for n, v in wanted], "left_to_the_target": left,
                                  "exclude": list(exclude)}
    Path(out).mkdir(parents=True, exist_ok=True)  # nothing to download (all left to the target) still records the set
    manifest = Path(out) / "wheelhouse.json"
    previous = json.loads(manifest.read_text()) if manifest.exists() else {}
    merged = dict(summary)
    merged["downloaded"] = sorted(set(previous.get("downloaded", [])) | set(summary["downloaded"]))  # type: ignore[arg-type]
    manifest.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="wheel folder to fill (created)")
    ap.add_argument("--python-version", default="3.12", help="the target's Python (default 3.12, the H200 image's)")
    ap.add_argument("--platform", action="append", default=None, help="target platform tag (default: manylinux 2_28 down to manylinux1, x86_64); repeatable")
    ap.add_argument("--pyproject", help="take [build-system] requires and [project] dependencies from this pyproject.toml")
    ap.add_argument("--extra", action="append", default=[], help="also an optional-dependencies group of --pyproject")
    ap.add_argument("-r", "--requirement", action="append", default=[], help="a requirement (repeatable)")
    ap.add_argument("-c", "--constraint", action="append", default=[], help="a constraints file (exact pins)")
    ap.add_argument("--provided", action="append", default=[], help="a pin of what the target already has, e.g. torch==2.11.0 "
                    "(replaces this pin of the constraints files for the resolution; never downloaded when excluded)")
    ap.add_argument("--exclude", action="append", default=None, help=f"distributions the target brings itself (fnmatch; default {' '.join(DEFAULT_EXCLUDE)})")
    ap.add_argument("--exclude-from", action="append", default=[], help="a file of what the target has installed "
                    "(`python3 -m pip list --format=freeze` run there): what it has at a version every requirement "
                    "accepts is not downloaded (the target keeps its own); other versions are; bare names are excluded")
    ap.add_argument("--find-links", action="append", default=[], help="also look for wheels here")
    args = ap.parse_args(argv)
    exclude = list(args.exclude or DEFAULT_EXCLUDE)
    target: dict[str, str | None] = {}
    try:
        for listing in args.exclude_from:
            target.update(installed_versions(listing))
    except OSError as exc:
        ap.error(f"--exclude-from: {exc}")
    reqs = list(args.requirement)
    build: list[str] = []
    if args.pyproject:
        reqs = pyproject_requirements(args.pyproject, args.extra) + reqs
        build = list((tomllib.loads(Path(args.pyproject).read_text(encoding="utf-8")).get("build-system") or {}).get("requires") or [])
    if not reqs:
        ap.error("nothing to fetch: pass --pyproject and/or -r")
    try:
        summary = build_wheelhouse(reqs, args.out, python_version=args.python_version, platforms=args.platform or list(DEFAULT_PLATFORMS),
                                   constraints=args.constraint, provided=args.provided, exclude=exclude, find_links=args.find_links,
                                   target=target, build_requirements=build)
    except (WheelhouseError, OSError, tomllib.TOMLDecodeError) as exc:
        print(f"wheelhouse: {exc}", file=sys.stderr)
        return 2
    print(f"{len(summary['downloaded'])} wheel(s) in {args.out} for Python {args.python_version}; "  # type: ignore[arg-type]
          f"left to the target machine: {', '.join(summary['left_to_the_target']) or 'nothing'}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())

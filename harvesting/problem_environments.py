"""A harvested module's dependency environment grown or loosened until it installs and the module
imports (autotriton/environments.py builds and caches environments; harvesting/core.py calls these
while it probes):

- a package the probe finds missing that the module's requirements do not name (a dependency that
  imports one it does not declare: segment_anything -> torchvision) is added to them;
- a requirement whose upper bound or pin no release installable beside the judge's torch meets
  (audiocraft's `torchaudio<2.1.2,>=2.0.0`) loses that bound; a lower bound is never loosened;
- a requirement no index has, guessed from an import beside others, is left out: another of them
  may install that import under its own name (`audiotools` comes with descript-audio-codec).
The probe then says whether the module runs; the problem records the requirements installed.
"""

from __future__ import annotations

import subprocess
from collections import Counter

from packaging.requirements import InvalidRequirement, Requirement

from autotriton.environments import DependencyError, Environment, EnvironmentCache, canonical_name, requirement_name
from autotriton.harvesting.requirements import module_requirements


def without_upper_bounds(reqs: list[str], name: str) -> list[str] | None:
    """`reqs` with the upper bounds and pins (<, <=, ==, ~=, ===) of requirement `name` dropped, its
    lower bounds and exclusions kept (`torchaudio<2.1.2,>=2.0.0` -> `torchaudio>=2.0.0`); None when it
    has none (a lower bound no release meets is not loosened: the module wants something newer)."""
    out, changed = [], False
    for r in reqs:
        try:
            req = Requirement(r)
        except InvalidRequirement:
            out.append(r)
            continue
        if canonical_name(req.name) != canonical_name(name):
            out.append(r)
            continue
        kept = [spec for spec in req.specifier if spec.operator in (">=", ">", "!=")]
        if len(kept) == len(req.specifier):
            out.append(r)
            continue
        changed = True
        extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
        marker = f"; {req.marker}" if req.marker else ""
        out.append(f"{req.name}{extras}{','.join(sorted(str(s) for s in kept))}{marker}")
    return out if changed else None


def without_missing(reqs: list[str], name: str) -> list[str] | None:
    """`reqs` without requirement `name`, which no index or wheelhouse has (pip: "from versions:
    none"), when others remain: the import it was guessed from may come with one of them under
    another name (stable-audio-tools' `import audiotools`, installed by its declared
    descript-audio-codec as descript-audiotools); the probe says whether the module imports.
    None when `name` is the only one."""
    kept = [r for r in reqs if canonical_name(requirement_name(r)) != canonical_name(name)]
    return kept if kept and len(kept) < len(reqs) else None


def ensure_relaxing(cache: EnvironmentCache, reqs: list[str], relaxed: Counter) -> tuple[Environment, list[str]]:
    """The environment of `reqs`; where pip cannot meet a requirement's upper bound or pin, that
    bound is dropped (counted in `relaxed` under the requirement as declared), and a requirement
    no index has is left out beside others (`without_missing`; counted as "<requirement>
    (no such distribution)"), and the set tried again, up to three times. (environment, the
    requirements used); raises the last DependencyError when nothing is left to drop."""
    for _ in range(3):
        try:
            return cache.ensure(reqs), reqs
        except DependencyError as exc:
            if exc.reason.startswith("unresolvable_dependency:"):
                loosened, note = without_upper_bounds(reqs, exc.name), ""
            elif exc.reason.startswith("missing_dependency:"):
                loosened, note = without_missing(reqs, exc.name), " (no such distribution)"
            else:
                loosened, note = None, ""
            if loosened is None:
                raise
            relaxed[next(r for r in reqs if r not in loosened) + note] += 1
            reqs = loosened
    return cache.ensure(reqs), reqs


def with_missing_package(cache: EnvironmentCache, requirements: list[str], top: str | None, declared: dict[str, str],
                         local: frozenset[str]) -> tuple[tuple[Environment, list[str], list[str]] | None, str]:
    """The environment with the distribution of import `top` (a package the probe found missing)
    added to `requirements`: ((environment, requirements, added), "") when it installs; (None, why
    not, to append to the rejection's detail) when installing failed; (None, "") when nothing
    applies (no name, the repository's own package, or its distribution is named already)."""
    if top is None or top in local:
        return None, ""
    added = module_requirements(f"import {top}\n", declared, local_packages=local)
    have = {requirement_name(r) for r in requirements}
    added = [r for r in added if requirement_name(r) not in have]
    if not added:
        return None, ""
    grown = [*requirements, *added]
    try:
        env = cache.ensure(grown)
    except (DependencyError, ValueError, OSError, subprocess.SubprocessError) as exc:
        why = exc.detail if isinstance(exc, DependencyError) else f"{type(exc).__name__}: {exc}"
        return None, f" (not in its requirements; installing {', '.join(added)} failed: {why[:300]})"
    return (env, grown, added), ""

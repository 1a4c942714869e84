"""What a harvest does after each probe of a module's input guess (harvesting/core.py runs the
rounds): a guess that ran is accepted, or run again with a rewritten Model (its inputs copied);
a failed one steers the module's next guesses (a missing package installed, a rewrite of Model,
the shapes torch asked for, the optional parameter or input the error named) or, with none left,
ends in a rejection with the reason a user can act on.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from autotriton.environments import EnvironmentCache, EnvironmentConfig, requirement_key
from autotriton.harvesting.error_repairs import error_repairs
from autotriton.harvesting.keyword_arguments import keyword_rewrite
from autotriton.harvesting.perturbed import perturbed_parameters
from autotriton.harvesting.problem_environments import with_missing_package
from autotriton.harvesting.pure_inputs import copied_inputs
from autotriton.harvesting.signatures import optional_input_named_in, parameter_named_in
from autotriton.harvesting.structured_outputs import structured_output, tuple_outputs
from autotriton.harvesting.synthesis import Attempt, SynthesisError, synthesize
from autotriton.harvesting.uninitialised import filled_empties
from autotriton.records import Problem

# Probe reasons that another input guess cannot fix.
PERMANENT_REASONS = frozenset({"abstract_class", "missing_dependency", "needs_data_files", "nondeterministic",
                               "input_independent", "bad_format", "broken_dependency"})

# Model rewrites a module may be given beyond harvest.max_attempts (one each: tuple outputs, moved parameters)
REWRITES = 2
# Packages a module's probe found missing that its requirements did not name, each installed into its
# environment and the same guess run again (a dependency importing one it does not declare:
# segment_anything -> torchvision); beyond harvest.max_attempts too
ADDED_DEPENDENCIES = 3

# "needs package `einops`" (extraction), "No module named 'einops'" / "No module named 'a.b'" (probe)
_MISSING_PACKAGE = re.compile(r"needs package `([A-Za-z0-9_]+)|No module named '([A-Za-z0-9_]+)")


def missing_package(detail: str) -> str | None:
    """The top-level package a missing_dependency rejection names, or None."""
    m = _MISSING_PACKAGE.search(detail or "")
    return (m.group(1) or m.group(2)) if m else None


def result_field(result: Any, name: str, default: Any = None) -> Any:
    """A probe result's field (results are dicts from the sandbox, objects from test probes)."""
    if isinstance(result, dict):
        return result.get(name, default)
    return getattr(result, name, default)


def last_lines(text: str, n: int = 2) -> str:
    """The end of a traceback: the exception (and the frame that raised it) is what a reader needs."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip() and not set(line.strip()) <= set("^~ ")]
    return " | ".join(lines[-n:])[-500:] if lines else text


def _reorder_after_failure(attempts: list[Attempt], start: int, detail: str) -> None:
    """Let the error steer the next guesses: an int where a pair was expected ("'int' object is not
    subscriptable") moves the tuple-valued size guesses to the front."""
    if re.search(r"'int' object is not (subscriptable|iterable)|cannot unpack non-iterable int", detail):
        rest = attempts[start:]
        rest.sort(key=lambda a: 0 if "tuples" in a.label else 1)
        attempts[start:] = rest


@dataclass
class Pending:
    """A module being probed: its problem, its Model source and the input guesses left to try."""

    problem: Problem
    model_source: str
    attempts: list[Attempt]
    first_failure: tuple[str, str] | None = None
    done: bool = False
    env_paths: list[str] = field(default_factory=list)  # site-packages of its dependency environment
    demanded: set[str] = field(default_factory=set)  # optional constructor parameters errors asked for
    inputs: set[str] = field(default_factory=set)  # optional forward inputs errors showed forward uses
    rewrites: int = 0  # rounds granted beyond harvest.max_attempts: forward ran, only its Model was rewritten
    added: int = 0  # rounds granted beyond it for a dependency the probe found missing and installed
    declared: dict[str, str] = field(default_factory=dict)  # its repository's declared requirements ...
    local: frozenset[str] = frozenset()  # ... and own top-level packages (what a missing import maps to)

    def budget(self, max_attempts: int) -> int:
        return max_attempts + self.rewrites + self.added

    def _again(self, round_no: int, max_attempts: int) -> int:
        """The same guess once more, next round (within the budget): 1 attempt added."""
        self.attempts.insert(round_no + 1, self.attempts[round_no])
        del self.attempts[self.budget(max_attempts):]
        return 1


def after_success(p: Pending, round_no: int, result: Any, max_attempts: int) -> int | None:
    """A guess ran. None: accept it. Else forward wrote into its own inputs: the module is given
    copies of them (pure_inputs.py) and the same guess runs again; returns the attempts added."""
    if not result_field(result, "mutates_inputs") or p.rewrites >= REWRITES:
        return None
    pure = copied_inputs(p.model_source)
    if pure is None:
        return None
    p.model_source, p.rewrites = pure, p.rewrites + 1
    return p._again(round_no, max_attempts)


def after_failure(p: Pending, round_no: int, result: Any, *, max_attempts: int,
                  environments: EnvironmentConfig | None, extra: dict[str, Any]) -> tuple[int, tuple[str, str] | None]:
    """A guess failed: steer the module's next guesses. Returns (attempts added, the rejection
    (reason, detail) when the module is done). `extra` collects the harvest's added dependencies."""
    reason = result_field(result, "reason") or "runtime_error"
    detail = last_lines(str(result_field(result, "detail") or ""))
    if reason == "runtime_error" and "Can't instantiate abstract class" in detail:
        reason = "abstract_class"  # a base class of the package, not a model: no other guess can help
    last_round = round_no + 1 >= p.budget(max_attempts)
    if reason == "missing_dependency" and environments is not None and p.added < ADDED_DEPENDENCIES:
        # a package the module's requirements do not name: installed, no guess spent
        grown, note = with_missing_package(EnvironmentCache(environments), p.problem.requirements,
                                           missing_package(detail), p.declared, p.local)
        if grown is not None:  # the same guess again, in the grown environment
            env, p.problem.requirements, added = grown
            p.problem.environment_key = requirement_key(p.problem.requirements)
            p.env_paths = list(env.site_packages)
            p.added += 1
            extra.setdefault("added_dependencies", Counter())[", ".join(added)] += 1
            return p._again(round_no, max_attempts), None
        detail += note
    full_detail = str(result_field(result, "detail") or "")  # the whole traceback (`detail`: its end)
    grown_by = _rewritten(p, round_no, reason, detail, full_detail, max_attempts)
    if grown_by is not None:
        return grown_by, None
    if p.first_failure is None or (p.first_failure[0] in ("runtime_error",) and reason not in ("runtime_error",)):
        p.first_failure = (reason, detail)
    _reorder_after_failure(p.attempts, round_no + 1, detail)
    # what the error says to change, best first (error_repairs.py)
    fixed = error_repairs(p.model_source, p.attempts[round_no], full_detail, p.problem.name,
                          result_field(result, "suggested_shapes"), result_field(result, "suggested_init"))
    # an error that names an optional constructor parameter left at None ("n_chans could
    # not be inferred. Either specify n_chans or chs_info"): guesses that give it, first
    named = None if last_round else parameter_named_in(p.model_source, full_detail, p.demanded)
    # forward used an optional input left at None as a tensor (`tgt + query_pos`): guesses that give it
    used = None if last_round or named else optional_input_named_in(p.model_source, full_detail, p.inputs)
    if named is not None or used is not None:
        p.demanded.update([named] if named else [])
        p.inputs.update([used] if used else [])
        try:
            fixed = synthesize(p.model_source, max_attempts=2, demand=p.demanded, inputs=p.inputs)[:2] + fixed
        except SynthesisError:
            pass
    # a repair that leads back to a guess already tried (the bottleneck's channel
    # error undoing its broadcast repair) would only loop: it is left out
    tried = {a.functions() for a in p.attempts[:round_no + 1]}
    fixed = [f for f in fixed if f.functions() not in tried]
    grown = 0
    if fixed and reason not in PERMANENT_REASONS:
        # torch said which shape it wanted: try that next, within the attempt budget
        p.attempts[round_no + 1:round_no + 1] = fixed
        del p.attempts[p.budget(max_attempts):]
        grown = len(fixed)
    if reason not in PERMANENT_REASONS and round_no + 1 < len(p.attempts):
        return grown, None
    p.done = True
    if reason in PERMANENT_REASONS:
        return grown, (reason, detail)
    r, d = p.first_failure
    if r == "runtime_error":
        r = "no_working_inputs"
        d = f"{len(p.attempts)} input guesses failed; first error: {d}"
        if detail and detail != p.first_failure[1]:
            # the last guess is the problem source stored with the rejection
            d += f" || last error: {detail}"
    return grown, (r, d)


def _rewritten(p: Pending, round_no: int, reason: str, detail: str, full_detail: str, max_attempts: int) -> int | None:
    """It ran, but returned a dict or a dataclass (structured_outputs.py), or returned its input at
    its initial parameters, weight 1 and bias 0 (perturbed.py), or gave other outputs for the same
    seed, its parameters uninitialised memory (uninitialised.py): the same inputs again, with a Model
    that returns its tensors as a tuple / has its parameters moved / filled; or `**kwargs` lacked what it
    hands on (keyword_arguments.py): made parameters, fresh guesses in place of the rest. Returns
    the attempts added, None when no rewrite applies."""
    if p.rewrites >= REWRITES:
        return None
    rewritten, keyworded = None, None
    if structured_output(detail):
        rewritten = tuple_outputs(p.model_source)
    elif reason == "returns_input":
        rewritten = perturbed_parameters(p.model_source)
    elif reason == "nondeterministic":
        # parameters left as uninitialised memory (uninitialised.py): either of the probe's two
        # refusals, as the allocator may hand two runs the same garbage and a third other garbage
        rewritten = filled_empties(p.model_source)
    else:
        keyworded = keyword_rewrite(p.model_source, full_detail, p.demanded, p.inputs,
                                    max_attempts=p.budget(max_attempts) - round_no)
    if rewritten is None and keyworded is None:
        return None
    before = len(p.attempts)
    if keyworded is not None:  # its constructor changed: fresh guesses in place of the rest
        p.model_source, p.attempts[round_no + 1:] = keyworded
    else:  # the same guess again
        p.model_source = rewritten
        p.attempts.insert(round_no + 1, p.attempts[round_no])
    p.rewrites += 1
    del p.attempts[p.budget(max_attempts):]
    return len(p.attempts) - before

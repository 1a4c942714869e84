"""Executing a reference problem's source as a module, from memory: `load_problem_module`.

Shared by the worker's judgement (judge.py), GPU timing at full size (timing.full_size_setup)
and the candidate process, which builds the full-size inputs itself (candidate_runner binds it
before the judge's modules leave sys.modules). Standard library only, plus autotriton.hashing.
"""

from __future__ import annotations

import sys

from autotriton.hashing import source_key


class ProblemError(Exception):
    """The reference problem itself does not run; not the candidate's fault."""


def load_problem_module(source: str, directory: str, tag: str):
    """Execute the reference problem as a module, from memory: no file a candidate could find."""
    import linecache
    import types

    key = source_key(source)
    name = f"autotriton_problem_{key}_{tag}"
    filename = f"<reference problem {key}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # tracebacks
    module = types.ModuleType(name)
    module.__file__ = filename
    sys.modules[name] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)  # noqa: S102 (the reference problem, not candidate code)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise ProblemError(f"the problem defines no {attr}")
    return module

"""Constructor arguments a module only hands on through `**kwargs`.

    class AttentionPairBias(nn.Module):
        def __init__(self, *, heads, dim_pairwise, window_size=None, **attn_kwargs):
            ...
            self.attn = Attention(heads=heads, window_size=window_size, **attn_kwargs)

`Attention` needs `dim`, which only `**attn_kwargs` can bring, and KernelBench builds the module
positionally (`Model(*get_init_inputs())`), so no guess reaches it: the probe fails with
"Attention.__init__() missing 1 required keyword-only argument: 'dim'" (alphafold3-pytorch, moshi's
quantizers, set 28). The problem keeps the module as written, renamed `KeywordsModel`, and appends

    class Model(KeywordsModel):
        def __init__(self, heads, dim_pairwise, dim, window_size=None, **attn_kwargs):
            super().__init__(heads, dim_pairwise, window_size, **attn_kwargs, dim=dim)

so the arguments the error names are parameters of their own, guessed like any other.
"""

from __future__ import annotations

import ast
import re

from autotriton.harvesting.renaming import MODEL_NAME
from autotriton.harvesting.signatures import _method
from autotriton.harvesting.statement_inputs import failing_statements
from autotriton.harvesting.structured_outputs import rewrite_model
from autotriton.harvesting.synthesis import Attempt, SynthesisError, synthesize

_MISSING = re.compile(r"__init__\(\) missing \d+ required (?:positional|keyword-only) arguments?: ([^\n]+)")
_NAME = re.compile(r"'([A-Za-z_]\w*)'")
BASE = "KeywordsModel"

_TEMPLATE = '''

class {model}({base}):
    """{base}, with the arguments its `**{kwarg}` hands on given as parameters of their own."""

    def __init__({new_params}):
        super().__init__({new_call})
'''


def missing_arguments(detail: str) -> list[str]:
    """The names a "missing N required ... argument(s): 'a', 'b' and 'c'" error lists, when the
    statement that raised it hands on `**something` (or is a call the traceback shows by its first
    line, `self.attn = Attention(`); else []."""
    found = list(_MISSING.finditer(detail or ""))
    if not found:
        return []
    m = found[-1]
    statements = failing_statements(detail, m.start())
    # the call hands on `**something`, or (a call over several lines, shown by its first) may
    if not any("**" in line or line.rstrip().endswith(("(", ",")) for line in statements[-3:]):
        return []
    return _NAME.findall(m.group(1))


def keyword_model(model_source: str, names: list[str]) -> str | None:
    """The source with the `names` that `Model.__init__`'s `**kwargs` must carry made parameters of
    a `Model` subclass (module docstring); None when Model takes no `**kwargs`, already has such a
    parameter, or takes positional-only parameters."""
    try:
        classes = {n.name: n for n in ast.parse(model_source).body if isinstance(n, ast.ClassDef)}
    except SyntaxError:
        return None
    init = _method(classes, MODEL_NAME, "__init__") if MODEL_NAME in classes else None
    if init is None or not names:
        return None
    args = ast.parse(ast.unparse(init)).body[0].args  # a copy
    own = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    if args.kwarg is None or args.posonlyargs or own & set(names):
        return None
    for a in [*args.args, *args.kwonlyargs, args.kwarg, args.vararg]:
        if a is not None:
            a.annotation = None  # they may name what the subclass cannot see
    call = [a.arg for a in args.args[1:]] + ([f"*{args.vararg.arg}"] if args.vararg else [])
    call += [f"{a.arg}={a.arg}" for a in args.kwonlyargs] + [f"**{args.kwarg.arg}"]
    call += [f"{n}={n}" for n in names]
    first_default = len(args.args) - len(args.defaults)
    args.args[first_default:first_default] = [ast.arg(arg=n) for n in names]
    return rewrite_model(model_source, helper=BASE, base=BASE, method="__init__", template=_TEMPLATE,
                         new_params=ast.unparse(args), new_call=", ".join(call), kwarg=args.kwarg.arg)


def keyword_rewrite(model_source: str, detail: str, demand=(), inputs=(), max_attempts: int = 4) -> tuple[str, list[Attempt]] | None:
    """For a probe error that says `**kwargs` lacked arguments: the rewritten source and fresh
    guesses for it (its constructor's parameters changed, so the guesses made before are of no
    use); None when the error is not of that kind or the source cannot be rewritten so."""
    rewritten = keyword_model(model_source, missing_arguments(detail))
    if rewritten is None:
        return None
    try:
        return rewritten, synthesize(rewritten, max_attempts=max(1, max_attempts), demand=demand, inputs=inputs)
    except SynthesisError:
        return None

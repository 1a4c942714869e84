"""Randomness in forward: the sandbox reseeds before each run, so a forward that draws random
numbers looks deterministic there, yet no Triton rewrite can reproduce torch's RNG stream.
`random_calls` names the random-number calls a module's forward can reach, so the harvest
refuses such modules as `nondeterministic`.
"""

from __future__ import annotations

import ast


_RANDOM_CALLS = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
                 "randperm", "poisson", "normal_", "uniform_", "bernoulli_", "random_", "exponential_", "geometric_",
                 "cauchy_", "log_normal_"}


def random_calls(source: str) -> list[str]:
    """Random-number calls that forward can reach (e.g. `torch.rand_like(x)`), as `name (line N)`;
    dropout only when forced on with `training=True`. Reachability follows calls by name from
    every `forward`; functions that consult `training` (drop-path, noise injection) end the walk,
    since problems run in eval mode, and initialisers (`*init*`, `*reset*`) are never reached."""
    tree = ast.parse(source)
    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(fn.name, []).append(fn)

    def gated(fn: ast.AST) -> bool:
        return any((isinstance(n, ast.Name) and n.id == "training") or (isinstance(n, ast.Attribute) and n.attr == "training")
                   for n in ast.walk(fn))

    todo = list(functions.get("forward", [])) + list(functions.get("__call__", []))
    reached: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    seen: set[int] = set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen or "init" in fn.name or "reset" in fn.name or gated(fn):
            continue
        seen.add(id(fn))
        reached.append(fn)
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                callee = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
                todo.extend(functions.get(callee, []))
    found: list[str] = []
    for fn in sorted(reached, key=lambda f: f.lineno):
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            dotted = ast.unparse(node.func)
            last = dotted.split(".")[-1]
            forced_dropout = "dropout" in last and any(
                kw.arg == "training" and isinstance(kw.value, ast.Constant) and kw.value.value is True for kw in node.keywords)
            if last in _RANDOM_CALLS or forced_dropout or dotted.startswith(("np.random.", "numpy.random.", "random.")):
                entry = f"{dotted} (line {node.lineno})"
                if entry not in found:
                    found.append(entry)
    return found

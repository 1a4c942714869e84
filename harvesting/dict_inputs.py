"""Forward inputs that are dicts of tensors: sentence-transformers' modules (Pooling, Dense,
Normalize, WordEmbeddings) take a `features` dict, read `features["token_embeddings"]` and
`features["attention_mask"]`, write their result back (`features.update({...})`,
`features["sentence_embedding"] = ...`) and return it.

Such a parameter gets a dict with the keys forward reads (`features["k"]`, `features.get("k")`,
`"k" in features`, `features.pop("k")`) before it writes them; keys only written are outputs.
Each key's tensor is guessed as input_guesses.py guesses a plain input's: in a copy of forward
where each read of the key (and a local bound to it, `x = features["k"]`) is one plain name,
so the first layer applied, `b, t, d = x.shape`, `x.size(1)` and the name's kind (ids, mask,
time) all speak. A mask key next to other tensors covers all but their last (feature) axis,
as an attention mask covers the tokens of `[batch, tokens, features]` embeddings; it is integer
ones when forward converts it (`.float()`, `.bool()`, `.to(...)`), as tokenizers hand it over.
Only the AST is read; nothing here executes harvested code. Used by synthesis.py.
"""

from __future__ import annotations

import ast
import copy
import re
from typing import Any

from autotriton.harvesting.input_display import tensor_code
from autotriton.harvesting.input_guesses import _MASK_INPUT, _input_options
from autotriton.harvesting.signatures import _Param, unwrap_optional

# `Dict[str, Tensor]`, `dict[str, torch.Tensor]`, `Mapping[str, Tensor]`
_TENSOR_DICT = re.compile(r"^(?:typing\.)?(?:Dict|dict|Mapping|MutableMapping)\[\s*str\s*,\s*(?:torch\.)?Tensor\s*\]$")
# What a mask key is converted with when it is not already the dtype forward computes in.
_CONVERSIONS = {"float", "bool", "half", "double", "to", "type", "type_as"}
# Masks with one value per element of the tensor they go with, not one per token: which values are
# missing / observed / artificially held out (time-series imputation batches: `missing_mask`,
# `observed_mask`, `indicating_mask`), or not a number.
_ELEMENTWISE_MASK = re.compile(r"missing|observ|indicat|nan(?![a-z])")
# The key an annotated dict gets when forward reads none by name (it iterates the dict).
_ANY_KEY = "x"


class KeyConstant(str):
    """A key named by a constant of the module rather than written out (`data[AtomicDataDict.
    POSITIONS_KEY]`, `batch[CELL_KEY]`: nequip's graphs): its text is the expression, and its
    repr too, so a dict display of the input (`{k!r}: ...`) names the constant, which the
    problem's module imports, instead of guessing the string it holds."""

    def __repr__(self) -> str:
        return str(self)


# A constant that names a key: UPPER_CASE, in a name or a dotted path that says key or field
# (`POSITIONS_KEY`, `AtomicDataDict.EDGE_INDEX_KEY`, `DataKeys.INPUT`, `Fields.IMAGE`).
_KEY_WORD = re.compile(r"(?i)key|field")


def _constant_key(n: ast.AST, param: str) -> KeyConstant | None:
    parts: list[str] = []
    while isinstance(n, ast.Attribute):
        parts.insert(0, n.attr)
        n = n.value
    if not isinstance(n, ast.Name) or n.id in ("self", param):
        return None
    parts.insert(0, n.id)
    last = parts[-1]
    if not (last.isupper() and _KEY_WORD.search(".".join(parts))):
        return None
    return KeyConstant(".".join(parts))


def _key_of(node: ast.AST, param: str) -> tuple[str, str] | None:
    """("read" | "write", key) when `node` reads or writes string key `key` of dict `param` (a
    string, or a KeyConstant for a key named by a module constant)."""
    def is_param(n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id == param

    def text(n: ast.AST) -> str | None:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            return n.value
        return _constant_key(n, param)

    if isinstance(node, ast.Subscript) and is_param(node.value) and text(node.slice) is not None:
        return ("write" if isinstance(node.ctx, ast.Store) else "read"), text(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_param(node.func.value) \
            and node.func.attr in ("get", "pop") and node.args and text(node.args[0]) is not None:
        return "read", text(node.args[0])
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
            and is_param(node.comparators[0]) and text(node.left) is not None:
        return "read", text(node.left)
    return None


def _written_keys(node: ast.AST, param: str) -> list[str]:
    """Keys the statement or call `node` writes into `param`: `param["k"] = ...` (also unpacked,
    `param["a"], param["b"] = ...`), `param.update({"k": ...})`, `param.update(k=...)`,
    `param.setdefault("k", ...)`."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [found[1] for t in targets for n in ast.walk(t) for found in [_key_of(n, param)]
                if found is not None and found[0] == "write"]
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == param):
        return []
    if node.func.attr == "update":
        keys = [k.arg for k in node.keywords if k.arg]
        for arg in node.args:
            if isinstance(arg, ast.Dict):
                keys += [k.value for k in arg.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        return keys
    if node.func.attr == "setdefault" and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return [node.args[0].value]
    return []


def _guarded(node: ast.AST, key: str, param: str, parents: dict[int, ast.AST]) -> bool:
    """Whether `node` runs only when the dict holds `key`: under an `if "k" in param` (or a
    conditional expression, an `and`) that asks for it."""
    child, parent = node, parents.get(id(node))
    while parent is not None:
        test = parent.test if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test else \
            parent if isinstance(parent, ast.BoolOp) else None
        if test is not None and any(_key_of(n, param) == ("read", key) and isinstance(n, ast.Compare) for n in ast.walk(test)):
            return True
        child, parent = parent, parents.get(id(parent))
    return False


def read_keys(forward: ast.FunctionDef, param: str) -> list[str]:
    """The string keys forward reads from its input `param` before writing them itself (a write
    takes effect where its statement ends: `features["e"] = f(features["e"])` reads first), in
    the order first read. Keys read only optionally (`param.get("k")`, `"k" in param`, or under
    such a test) are left out when some key is read unconditionally: the module's plain path is
    the one without them."""
    parents = {id(c): n for n in ast.walk(forward) for c in ast.iter_child_nodes(n)}
    reads: dict[str, tuple[int, int]] = {}
    writes: dict[str, tuple[int, int]] = {}
    required: set[str] = set()
    for node in ast.walk(forward):
        found = _key_of(node, param)
        if found is not None and found[0] == "read":
            at = (node.lineno, node.col_offset)
            reads[found[1]] = min(reads.get(found[1], at), at)
            if isinstance(node, ast.Subscript) or (isinstance(node, ast.Call) and node.func.attr == "pop"):
                if not _guarded(node, found[1], param, parents):
                    required.add(found[1])
        for key in _written_keys(node, param):
            at = (node.end_lineno or node.lineno, node.end_col_offset or 0)
            writes[key] = min(writes.get(key, at), at)
    keys = [k for k, at in sorted(reads.items(), key=lambda kv: kv[1]) if k not in writes or at < writes[k]]
    return [k for k in keys if k in required] or keys


def _alias_name(key: str, param: str, taken: set[str]) -> str:
    """A plain name standing for the key's value: the key itself when it is free in forward (a
    constant's last part, lower case, without its `_KEY` / `_FIELD`: `POSITIONS_KEY` ->
    `positions`, which the guesses read as names)."""
    if isinstance(key, KeyConstant):
        key = re.sub(r"(?i)_?(key|field)$", "", key.rsplit(".", 1)[-1]).lower() or "value"
    name = re.sub(r"\W", "_", key) or "value"
    name = f"_{name}" if name[0].isdigit() else name
    return name if name not in taken else f"{param}_{name}"


class _KeysAsNames(ast.NodeTransformer):
    """Forward with each read of a key (and each local bound to one, `x = features["k"]`) as the
    key's plain name, and those bindings dropped: how input_guesses.py reads a plain input."""

    def __init__(self, param: str, names: dict[str, str], locals_: dict[str, str]):
        self.param, self.names, self.locals = param, names, locals_

    def visit_Assign(self, node: ast.Assign) -> Any:
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id in self.locals:
            return ast.Pass()
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts) \
                and any(isinstance(e, ast.Name) and e.id in self.locals for e in target.elts):
            # the pairs binding a key's local dropped, the others kept
            kept = [(t, v) for t, v in zip(target.elts, node.value.elts) if not (isinstance(t, ast.Name) and t.id in self.locals)]
            if not kept:
                return ast.Pass()
            node = ast.Assign([ast.Tuple([t for t, _ in kept], ast.Store())], ast.Tuple([v for _, v in kept], ast.Load()))
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> Any:
        if isinstance(node.ctx, ast.Load) and node.id in self.locals:
            return ast.copy_location(ast.Name(self.names[self.locals[node.id]], ast.Load()), node)
        return node

    def generic_visit(self, node: ast.AST) -> Any:
        found = _key_of(node, self.param)
        if found is not None and found[0] == "read" and found[1] in self.names and not isinstance(node, ast.Compare):
            return ast.copy_location(ast.Name(self.names[found[1]], ast.Load()), node)
        return super().generic_visit(node)


def _key_forward(forward: ast.FunctionDef, param: str, keys: list[str]) -> tuple[ast.FunctionDef, dict[str, str]]:
    """(forward with keys as names, key -> its name)."""
    bound: dict[str, list[str]] = {}  # local -> keys assigned to it
    for node in ast.walk(forward):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        # `x = p["x"]`, and unpacked: `x, edge_index = p["x"], p["edge_index"]`
        pairs = [(target, node.value)] if isinstance(target, ast.Name) else \
            list(zip(target.elts, node.value.elts)) if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
            and len(target.elts) == len(node.value.elts) else []
        for name, value in pairs:
            found = _key_of(value, param) if isinstance(name, ast.Name) else None
            if found is not None and found[0] == "read":
                bound.setdefault(name.id, []).append(found[1])
    stores = [n.id for n in ast.walk(forward) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    # a local bound once, to a key, and never rebound: the key's value under another name
    locals_ = {name: ks[0] for name, ks in bound.items() if len(ks) == 1 and stores.count(name) == 1 and ks[0] in keys}
    taken = {n.id for n in ast.walk(forward) if isinstance(n, ast.Name)} - set(locals_)
    names = {key: _alias_name(key, param, taken) for key in keys}
    tree = _KeysAsNames(param, names, locals_).visit(copy.deepcopy(forward))
    return ast.fix_missing_locations(tree), names


def _converted(forward: ast.FunctionDef, name: str) -> bool:
    """Whether forward converts `name` (`m.float()`, `m.unsqueeze(-1).expand(...).to(x.dtype)`)."""
    for node in ast.walk(forward):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CONVERSIONS:
            root = node.func.value
            while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id == name:
                return True
    return False


def _mask_option(key_options: list[tuple[str, dict[str, Any]]], main: dict[str, Any] | None, integer: bool,
                 elementwise: bool = False) -> tuple[str, dict[str, Any]]:
    """Ones over all but the last axis of `main` (another key's guess: embeddings' features), over
    all of it when `main` holds ids or the mask is `elementwise` (one value per element of `main`,
    as a mask of missing values is), else the shape of the key's own guess."""
    own = key_options[0] if key_options else ("torch.ones(2, 8)", {"kind": "tensor", "shape": [2, 8], "dtype": "float32"})
    beside = list(main.get("shape", [])) if main is not None else []
    if elementwise and main is not None:
        # one value per value, zeros among the ones: a mask of all ones (nothing missing) leaves an
        # imputer nothing to compute
        spec = {"kind": "tensor", "shape": beside, "dtype": "int64", "high": 2} if integer else \
            {"kind": "tensor", "shape": beside, "dtype": "float32", "range": "binary"}
        return tensor_code(beside, spec), spec
    if main is not None and main.get("dtype") == "int64":
        shape = beside  # token ids: one mask value per id
    else:
        shape = beside[:-1] if len(beside) >= 2 else list(own[1].get("shape", [2, 8]))
    dims = ", ".join(map(str, shape))
    if integer:
        return f"torch.ones(({dims},), dtype=torch.int64)", {"kind": "tensor", "shape": shape, "dtype": "int64"}
    return f"torch.ones({dims}{',' if len(shape) == 1 else ''})", {"kind": "tensor", "shape": shape, "dtype": "float32"}


def _masked_key(mask: str, tensors: list[str]) -> str | None:
    """The key `mask` is named after (`X_pred_missing_mask` -> `X_pred`, `src_key_padding_mask` ->
    `src`), the longest such, or None."""
    low = mask.lower()
    named = [k for k in tensors if low.startswith(k.lower() + "_")]
    return max(named, key=len) if named else None


class _KeyAttributes(ast.NodeTransformer):
    """`self.input_key` read in forward as the string it holds: the constructor set it to a
    string, or to a parameter whose value (its default, or our guess) is one."""

    def __init__(self, strings: dict[str, str]):
        self.strings = strings

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == "self" and isinstance(node.ctx, ast.Load) \
                and node.attr in self.strings:
            return ast.copy_location(ast.Constant(self.strings[node.attr]), node)
        return self.generic_visit(node)


def keys_as_strings(forward: ast.FunctionDef, init: ast.FunctionDef | None, values: dict[str, Any]) -> ast.FunctionDef:
    """Forward with the attributes that name its keys (`features[self.module_input_name]`,
    sentence-transformers' Dense: `module_input_name: str = "sentence_embedding"`) as their strings."""
    strings: dict[str, str] = {}
    assigned: dict[str, int] = {}
    for node in ast.walk(init) if init is not None else []:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    assigned[t.attr] = assigned.get(t.attr, 0) + 1
                    v = node.value
                    if isinstance(v, ast.Constant) and isinstance(v.value, str):
                        strings[t.attr] = v.value
                    elif isinstance(v, ast.Name) and isinstance(values.get(v.id), str):
                        strings[t.attr] = values[v.id]
    strings = {a: s for a, s in strings.items() if assigned[a] == 1}  # set once, to a string
    if not strings:
        return forward
    return ast.fix_missing_locations(_KeyAttributes(strings).visit(copy.deepcopy(forward)))


def dict_input_options(p: _Param, forward: ast.FunctionDef | None, calls: dict[str, ast.Call], values: dict[str, Any],
                       D: int, spatial: int, init: ast.FunctionDef | None = None,
                       first_indices: bool = False) -> list[tuple[str, dict[str, Any]]]:
    """Options (source, spec) for a forward input that is a dict of tensors, best first; [] when
    `p` is not one (no string key read, no `Dict[str, Tensor]` annotation). Option k holds each
    key's k-th guess (its last where it has fewer); with `first_indices`, an integer key keeps
    its first guess (a graph's `edge_index`, [2, 8], beside each guess of the node features).
    `init` (the constructor) and `values` (its arguments) resolve keys held in attributes
    (keys_as_strings)."""
    if forward is not None:
        forward = keys_as_strings(forward, init, values)
    keys = read_keys(forward, p.name) if forward is not None else []
    if not keys and not _TENSOR_DICT.match(unwrap_optional(p.annotation)):
        return []
    keys = keys or [_ANY_KEY]
    view, names = _key_forward(forward, p.name, keys) if forward is not None else (None, {_ANY_KEY: _ANY_KEY})
    per_key = {k: [o for o in _input_options(_Param(names[k], "", None, "pos"), view, calls, values, D, spatial)
                   if o[1].get("kind") == "tensor"] for k in keys}
    if first_indices:
        per_key = {k: o[:1] if o and o[0][1].get("dtype") == "int64" else o for k, o in per_key.items()}
    masks = {k for k in keys if _MASK_INPUT.search(k.lower())}
    main = next((k for k in keys if k not in masks and per_key[k]), None)
    out: list[tuple[str, dict[str, Any]]] = []
    for i in range(max((len(o) for o in per_key.values()), default=0)):
        items: dict[str, tuple[str, dict[str, Any]]] = {}
        for k in keys:
            options = per_key[k]
            if k in masks:
                # the tensor the mask is named after (`X_pred_missing_mask` beside `X_pred`), else the first one
                of = _masked_key(k, [j for j in keys if j not in masks and per_key[j]]) or main
                beside = per_key[of][min(i, len(per_key[of]) - 1)][1] if of is not None else None
                items[k] = _mask_option(options, beside, view is not None and _converted(view, names[k]),
                                        elementwise=bool(_ELEMENTWISE_MASK.search(k.lower())))
            elif options:
                items[k] = options[min(i, len(options) - 1)]
        code = "{" + ", ".join(f"{k!r}: {c}" for k, (c, _) in items.items()) + "}"
        if items and code not in {c for c, _ in out}:
            out.append((code, {"kind": "tensor_dict", "items": {k: s for k, (_, s) in items.items()}}))
    return out

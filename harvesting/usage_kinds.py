"""What kind of value a constructor parameter must be, read from how the code uses it.

A name says little (`f`, `blocks`, `shape`, `shifts`); the code says more: `tuple(shifts)` and
`len(shape)` want a sequence, `self.f(x)` a callable, `for f, g in blocks` a sequence of pairs of
callables, `**route` a mapping, `x.chunk(2, dim=self.dim)` an axis, `assert image_size is not None`
a value although the default is None. The parameter is followed where it flows: into `self.<attr>`
and every method that reads it, into local aliases, and into the constructors of the file's own
classes and the file's functions it is passed to (`Deterministic(f)`, `sort_indices(permutation)`).

Only the AST is read; nothing here executes harvested code. Used by synthesis.py.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from autotriton.harvesting.signatures import _method, _method_owner, _params, _source_bases, torch_params

# Builtins whose argument must be iterable: `tuple(p)`, `len(p)`, `zip(p, q)`, `sorted(p)`.
_ITERATING = {"len", "tuple", "list", "sorted", "enumerate", "zip", "reversed", "set", "iter", "map", "filter", "frozenset"}
# Builtins that iterate their one argument (`min(self.input_resolution)`, `sum(depths)`); with two
# (`max(a, b)`) they compare numbers.
_REDUCING = {"min", "max", "sum", "any", "all"}
# Methods that only a mapping has (a tensor or a module has none of them).
_MAPPING_METHODS = {"items", "values", "keys", "get", "update", "pop", "setdefault"}
# Callees that take a sequence of modules (`nn.ModuleList(p)`, `self.layers.extend(p)`) or one
# module (`self.add_module("net", p)`, its second argument).
_MODULE_SEQUENCES = {"ModuleList", "extend"}
_MODULE_SLOTS = {"add_module", "register_module"}
# Methods only a tensor has (called on the value: `p.ndimension()`, `p.view(1, -1)`), and its
# attributes (`p.shape`, `p.ndim`): the value is a tensor, not an object with fields.
_TENSOR_METHODS = {"ndimension", "dim", "numel", "view", "reshape", "unsqueeze", "squeeze", "float", "long", "double",
                   "half", "bool", "clone", "detach", "contiguous", "index_select", "masked_fill", "masked_select",
                   "type_as", "expand", "expand_as", "view_as", "new_zeros", "new_ones", "new_empty", "nonzero", "t"}
_TENSOR_ATTRIBUTES = {"shape", "ndim", "T"}
# Methods only a string has (`activation.endswith("glu")`, `p.lower()`): the value is text, not a module.
_STRING_METHODS = {"endswith", "startswith", "lower", "upper", "casefold", "strip", "lstrip", "rstrip", "replace",
                   "split", "rsplit", "capitalize", "title", "isdigit", "isalpha", "format", "removeprefix", "removesuffix"}
# String methods whose result is the same option in another case or spacing.
_SAME_TEXT = {"lower", "upper", "casefold", "strip", "lstrip", "rstrip"}
# Methods whose sequence arguments are permutations of a tensor's axes.
_PERMUTING = {"permute"}
# Tensor methods and torch functions whose `dim=` is an axis (not a layer's width, as the `dim=`
# of another package's `Attention(dim=dim)` is).
_AXIS_CALLS = {"chunk", "split", "softmax", "log_softmax", "cat", "stack", "sum", "mean", "max", "min", "argmax",
               "argmin", "norm", "normalize", "cumsum", "cumprod", "unbind", "squeeze", "unsqueeze", "narrow",
               "select", "gather", "var", "std", "prod", "all", "any", "logsumexp", "topk", "sort", "argsort",
               "index_select", "Softmax", "LogSoftmax", "GLU", "glu", "unflatten", "tensor_split", "amax", "amin"}
_MAX_DEPTH = 3
# Calls whose result is a copy of their one argument, used as the argument would be.
_COPIES = {"dict", "copy", "deepcopy"}


@dataclass
class Usage:
    """Evidence about one value, gathered over every place it reaches."""

    called: bool = False  # `p(x)`, `self.p(x)`: a module or function
    sequence: bool = False  # iterated, measured, unpacked, starred
    length: int | None = None  # `a, b = p`: exactly this many items
    item: Usage | None = None  # how each item is used (`for layer in p: layer(x)`)
    item_arity: int | None = None  # `for f, g in p`: items are tuples of this many
    item_parts: list[Usage] = field(default_factory=list)  # ... and how each part is used
    permutation: bool = False  # `x.permute(*p)`
    padding: bool = False  # `F.pad(x, p)`
    mapping: bool = False  # `**p`, `p.items()`, `p['key']`
    # `p["model_dim"]`: the string keys read by subscript; `f(x, **p)`: the parameters of the file's f left unfilled
    keys: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)  # `p.max_seq_len`: an object with fields
    methods: list[str] = field(default_factory=list)  # `p.get_output_dim()`: methods of its own it is asked
    required: bool = False  # `assert p is not None`
    axis: bool = False  # `x.chunk(2, dim=p)`: a tensor dimension, not a size
    indexed: int = 0  # `p[3]`: a sequence of at least 4 items (`p[i]`, `p[1:]`: at least 1)
    tensor: bool = False  # `p.ndimension()`, `p.view(...)`, `p.shape`: a tensor
    call_extra: bool = False  # called with more than one argument or with keywords: `p(x, times, cache=c)`
    call_results: int | None = None  # `out, weights = p(q, k, v)`: its result unpacked into this many
    string: bool = False  # `p.endswith("glu")`, `p.lower()`: text
    named: bool = False  # `p.__name__`: a function or class, whose name the code reads
    # `if p == "relu": ... elif p == "gelu"`: one of these strings; `assert p == 44100`: that number
    choices: list[str | int | float] = field(default_factory=list)
    truth_tested: list[str] = field(default_factory=list)  # attributes read as a condition: `if p.multiway:`
    value_read: list[str] = field(default_factory=list)  # attributes read as values: `nn.Linear(p.dim, ...)`
    # an attribute's own string choices: `Activation(cfg.activation)` with an Enum of the file, `cfg.norm == "ln"`
    attribute_choices: dict[str, list[str | int | float]] = field(default_factory=dict)

    def merge(self, other: Usage) -> None:
        for name in ("called", "sequence", "permutation", "padding", "mapping", "required", "axis", "tensor", "call_extra",
                     "string", "named"):
            setattr(self, name, getattr(self, name) or getattr(other, name))
        self.length = self.length or other.length
        self.call_results = self.call_results or other.call_results
        self.indexed = max(self.indexed, other.indexed)
        self.item_arity = self.item_arity or other.item_arity
        if other.item is not None:
            if self.item is None:
                self.item = Usage()
            self.item.merge(other.item)
        for i, part in enumerate(other.item_parts):
            if i < len(self.item_parts):
                self.item_parts[i].merge(part)
            else:
                self.item_parts.append(part)
        for name in ("attributes", "methods", "choices", "truth_tested", "value_read", "keys"):
            mine = getattr(self, name)
            mine += [a for a in getattr(other, name) if a not in mine]
        for attr, choices in other.attribute_choices.items():
            mine = self.attribute_choices.setdefault(attr, [])
            mine += [c for c in choices if c not in mine]

    def flags(self) -> list[str]:
        """Attributes only ever read as a condition (feature switches: `if args.multiway:`)."""
        return [a for a in self.truth_tested if a not in self.value_read]

    def anything(self) -> bool:
        return any((self.called, self.sequence, self.mapping, self.attributes, self.methods, self.required, self.axis,
                    self.indexed, self.tensor, self.string, self.choices))


class _Scope:
    """One function body being read, with the parent of each node and its local assignments."""

    def __init__(self, fn: ast.FunctionDef):
        self.fn = fn
        self.parent: dict[int, ast.AST] = {}
        self.assigned: dict[str, ast.expr] = {}
        for node in ast.walk(fn):
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigned.setdefault(node.targets[0].id, node.value)


class UsageReader:
    """Reads the usage of constructor parameters over the classes and functions of one file."""

    def __init__(self, classes: dict[str, ast.ClassDef], functions: dict[str, ast.FunctionDef],
                 constants: dict[str, ast.expr] | None = None):
        self.classes = classes
        self.functions = functions
        self.constants = constants or {}  # module-level `NAME = value`: `assert p in ACTIVATIONS`
        self._scopes: dict[int, _Scope] = {}

    def _scope(self, fn: ast.FunctionDef) -> _Scope:
        if id(fn) not in self._scopes:
            self._scopes[id(fn)] = _Scope(fn)
        return self._scopes[id(fn)]

    def _methods(self, class_name: str) -> list[ast.FunctionDef]:
        out, seen, todo = [], set(), [class_name]
        while todo:
            name = todo.pop()
            cls = self.classes.get(name)
            if cls is None or name in seen:
                continue
            seen.add(name)
            out += [n for n in cls.body if isinstance(n, ast.FunctionDef)]
            todo += [b.id for b in cls.bases if isinstance(b, ast.Name)]
        return out

    def parameter(self, class_name: str, param: str, depth: int = 0) -> Usage:
        """How `class_name`'s constructor (and what it hands `param` to) uses `param`."""
        init = _method(self.classes, class_name, "__init__")
        usage = Usage()
        if init is None or depth > _MAX_DEPTH:
            return usage
        usage.merge(self._in_function(init, param, depth, class_name))
        return usage

    def _function_parameter(self, fn: ast.FunctionDef, param: str, depth: int) -> Usage:
        return self._in_function(fn, param, depth, None) if depth <= _MAX_DEPTH else Usage()

    def _in_function(self, fn: ast.FunctionDef, name: str, depth: int, class_name: str | None,
                     bound_at: int | None = None) -> Usage:
        """Uses of the local `name` in `fn`, following `self.<attr> = name` into the class's methods.
        Uses after `name` is rebound (`size = (size, size)`) are another value's, and uses under a
        test of its kind (`tuple(k) if isinstance(k, list) else (k, k)`) say the code takes either:
        both are left out. `bound_at`: the line where a local followed here is bound (a loop's target,
        an alias `m = mode.lower()`); uses before it belong to another value of the same name."""
        usage = Usage()
        scope = self._scope(fn)
        stores = sorted(n.lineno for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
        if bound_at is not None:
            stores = [line for line in stores if line > bound_at]
        rebound = stores[0] if stores else None
        if class_name is not None and rebound is None and _stores_locals_on_self(fn):
            # `set_attributes(self, locals())`, `self.__dict__.update(locals())`: every parameter
            # becomes `self.<name>`, read as such in the other methods
            usage.merge(self._attribute(class_name, name, depth))
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                if ((rebound is not None and node.lineno > rebound) or (bound_at is not None and node.lineno < bound_at)
                        or _kind_tested(scope, node)):
                    continue
                usage.merge(self._use(scope, node, depth, class_name))
                parent = scope.parent.get(id(node))
                copied = parent
                if isinstance(copied, ast.Call) and _callee(copied) in ("list", "tuple", "ModuleList") and copied.args == [node]:
                    # `self.dims_in = list(dims_in)`, `self.layers = nn.ModuleList(layers)`: a copy, its items the same
                    node, parent = copied, scope.parent.get(id(copied))
                if class_name is not None and isinstance(parent, ast.Assign) and parent.value is node:
                    for target in parent.targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                            usage.merge(self._attribute(class_name, target.attr, depth))
        return usage

    def _attribute(self, class_name: str, attr: str, depth: int) -> Usage:
        usage = Usage()
        for method in self._methods(class_name):
            scope = self._scope(method)
            for node in ast.walk(method):
                if (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
                        and node.value.id == "self" and isinstance(node.ctx, ast.Load)):
                    usage.merge(self._use(scope, node, depth, class_name))
        return usage

    def _use(self, scope: _Scope, node: ast.expr, depth: int, class_name: str | None) -> Usage:
        """What the expression `node` (the value, or an alias of it) is used as where it appears."""
        usage = Usage()
        parent = scope.parent.get(id(node))
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "str" and parent.args == [node]:
            return self._use(scope, parent, depth, class_name)  # `str(p)`: the text of it, used as p would be
        if isinstance(parent, ast.Call):
            if parent.func is node:
                usage.called = True
                # (a `*args` / `**kwargs` pass-through may well be empty: not counted)
                usage.call_extra = (sum(not isinstance(a, ast.Starred) for a in parent.args) > 1
                                    or any(k.arg is not None for k in parent.keywords))
                grand = scope.parent.get(id(parent))
                if isinstance(grand, ast.Assign) and grand.value is parent and isinstance(grand.targets[0], (ast.Tuple, ast.List)) \
                        and not any(isinstance(e, ast.Starred) for e in grand.targets[0].elts):
                    usage.call_results = len(grand.targets[0].elts)
            else:
                self._argument(scope, parent, node, usage, depth, class_name)
        elif isinstance(parent, ast.Starred):
            usage.sequence = True
            call = scope.parent.get(id(parent))
            if isinstance(call, ast.Call) and _callee(call) in _PERMUTING:
                usage.permutation = True
        elif isinstance(parent, ast.keyword):
            call = scope.parent.get(id(parent))
            if parent.arg is None:
                usage.mapping = True
                if isinstance(call, ast.Call):  # `stft(x, **cfg, window=w)`: cfg holds what the call leaves unfilled
                    usage.keys += [k for k in self._unfilled(call, class_name) if k not in usage.keys]
            elif parent.arg == "dim" and isinstance(call, ast.Call) and _callee(call) in _AXIS_CALLS:
                usage.axis = True
            elif isinstance(call, ast.Call):
                self._argument(scope, call, parent, usage, depth, class_name)
        elif isinstance(parent, ast.Attribute) and parent.value is node:
            grand = scope.parent.get(id(parent))
            if parent.attr in _MAPPING_METHODS and isinstance(grand, ast.Call) and grand.func is parent:
                usage.mapping = True
            elif parent.attr in _STRING_METHODS and isinstance(grand, ast.Call) and grand.func is parent:
                usage.string = True
                if parent.attr in _SAME_TEXT and depth <= _MAX_DEPTH:
                    # `m = mode.lower()` then `if m == "dot"`: the choices compared are the parameter's
                    usage.merge(self._use(scope, grand, depth + 1, class_name))
            elif (parent.attr in _TENSOR_METHODS and isinstance(grand, ast.Call) and grand.func is parent) or (
                    parent.attr in _TENSOR_ATTRIBUTES and not (isinstance(grand, ast.Call) and grand.func is parent)):
                usage.tensor = True
            elif parent.attr.startswith("__"):
                usage.named = usage.named or parent.attr in ("__name__", "__qualname__")
            elif isinstance(grand, ast.Call) and grand.func is parent:
                if parent.attr not in usage.methods:
                    usage.methods.append(parent.attr)
            else:
                usage.attributes.append(parent.attr)
                (usage.truth_tested if _is_condition(parent, grand) else usage.value_read).append(parent.attr)
                if depth <= _MAX_DEPTH:
                    field_use = self._use(scope, parent, depth + 1, class_name)
                    if field_use.choices:
                        mine = usage.attribute_choices.setdefault(parent.attr, [])
                        mine += [c for c in field_use.choices if c not in mine]
        elif isinstance(parent, ast.Subscript) and parent.value is node:
            index = parent.slice
            if isinstance(index, ast.Constant) and isinstance(index.value, str):
                usage.mapping = True
                if index.value not in usage.keys and not isinstance(parent.ctx, ast.Store):
                    usage.keys.append(index.value)
            elif isinstance(index, ast.Constant) and isinstance(index.value, int) and not isinstance(index.value, bool):
                usage.indexed = max(usage.indexed, index.value + 1)
            elif (isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant)
                  and isinstance(index.operand.value, int)):
                usage.indexed = max(usage.indexed, index.operand.value)
            elif not isinstance(index, ast.Tuple):  # p[i], p[1:]; p[i, j] is a tensor's
                usage.indexed = max(usage.indexed, 1)
            if not isinstance(index, (ast.Slice, ast.Tuple)) and depth <= _MAX_DEPTH:
                # an item, used in its turn: `dims_in[0][0]`, `len(shapes[0])`, `self.blocks[i](x)`
                item = self._use(scope, parent, depth + 1, class_name)
                if item.anything():
                    usage.item = usage.item or Usage()
                    usage.item.merge(item)
        elif isinstance(parent, ast.Subscript) and parent.slice is node and isinstance(parent.value, ast.Name):
            # `ACT2FN[act]`: a key of the dict it looks up (a local or module-level dict display)
            table = scope.assigned.get(parent.value.id) or self.constants.get(parent.value.id)
            if isinstance(table, ast.Dict) and table.keys and all(
                    isinstance(k, ast.Constant) and isinstance(k.value, str) for k in table.keys):
                usage.choices += [k.value for k in table.keys if k.value not in usage.choices]
        elif isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            usage.merge(self._iterated(scope, parent, depth, class_name))
        elif isinstance(parent, ast.Assign) and parent.value is node:
            target = parent.targets[0]
            if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
                usage.sequence = True
                usage.length = len(target.elts)
            elif isinstance(target, ast.Name) and depth <= _MAX_DEPTH:
                usage.merge(self._in_function(scope.fn, target.id, depth + 1, class_name, target.lineno))  # a local alias
        elif (isinstance(parent, ast.Compare) and len(parent.ops) == 1
              and isinstance(parent.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn))):
            other = parent.comparators[0] if parent.left is node else parent.left
            if isinstance(other, ast.Name) and other.id in self.constants:
                other = self.constants[other.id]  # `ACTIVATIONS = ["ReLU", "Tanh"]` at module level
            values = (other.elts if isinstance(other, (ast.Set, ast.List, ast.Tuple))
                      else [k for k in other.keys if k is not None] if isinstance(other, ast.Dict) else [other])
            # `mode in {BINARY_MODE, MULTICLASS_MODE}`: the module's named string constants, by value
            values = [self.constants.get(v.id, v) if isinstance(v, ast.Name) else v for v in values]
            if values and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
                usage.choices += [v.value for v in values if v.value not in usage.choices]
            elif len(values) == 1 and isinstance(parent.ops[0], ast.Eq) and isinstance(values[0], ast.Constant) \
                    and type(values[0].value) in (int, float) and _in_assert(scope, parent):
                # `assert hp.wav_rate == 44100`: the one number the code accepts
                usage.choices += [values[0].value] if values[0].value not in usage.choices else []
        elif isinstance(parent, ast.Compare) and len(parent.ops) == 1 and isinstance(parent.ops[0], ast.IsNot):
            right = parent.comparators[0]
            if isinstance(right, ast.Constant) and right.value is None and _in_assert(scope, parent):
                usage.required = True
        return usage

    def _target(self, call: ast.Call, class_name: str | None) -> ast.FunctionDef | None:
        """The file's own function, class constructor or method (`self.<name>(...)`) `call` calls
        (a base's `__init__` reached through `super()` is _base_init's)."""
        callee = _callee(call)
        if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id == "self" and class_name:
            return _method(self.classes, class_name, callee)
        if isinstance(call.func, ast.Name):
            return _method(self.classes, callee, "__init__") if callee in self.classes else self.functions.get(callee)
        return None

    def _unfilled(self, call: ast.Call, class_name: str | None) -> list[str]:
        """Required parameters of the file's callable that `call` neither passes positionally nor by
        keyword: what a `**mapping` in it must hold (`Transformer(dim=d, **enc_params)`)."""
        if any(isinstance(a, ast.Starred) for a in call.args):
            return []
        base_init = _base_init(self.classes, call, class_name)  # `super().__init__(dim, **cfg)`, `Base.__init__(self, **cfg)`
        fn = base_init[1] if base_init is not None else self._target(call, class_name)
        params = [p for p in _params(fn) if p.kind in ("pos", "kwonly")] if fn is not None else torch_params(ast.unparse(call.func))
        if not params:
            return []
        skip = 1 if base_init is not None and not _is_super_init(call) else 0  # Base.__init__'s `self`
        positional = [p.name for p in params if p.kind == "pos"][:max(0, len(call.args) - skip)]
        named = {k.arg for k in call.keywords if k.arg is not None}
        return [p.name for p in params if p.default is None and p.name not in positional and p.name not in named]

    def _argument(self, scope: _Scope, call: ast.Call, arg: ast.AST, usage: Usage, depth: int, class_name: str | None) -> None:
        """`node` is an argument of `call` (`arg` is it, or the keyword holding it)."""
        callee = _callee(call)
        if callee in _COPIES and call.args == [arg] and not call.keywords and depth <= _MAX_DEPTH:
            # `cfg = dict(self.stft_cfg)`, `copy.deepcopy(params)`: the copy is used as the value would be
            usage.merge(self._use(scope, call, depth + 1, class_name))
            return
        if callee in _KIND_TESTS or callee.startswith("is_"):
            return  # asking what it is says nothing of what it must be
        if isinstance(call.func, ast.Name) and (callee in _ITERATING or (
                callee in _REDUCING and len(call.args) == 1 and not call.keywords)) and arg in call.args:
            usage.sequence = True
            if callee == "zip":
                for loop in _loops_over(scope, call):
                    if isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == len(call.args):
                        usage.merge(self._item_target(scope, loop, loop.target.elts[call.args.index(arg)], depth))
            return
        if callee in _MODULE_SEQUENCES and call.args and call.args[0] is arg:
            usage.sequence = True
            usage.item = usage.item or Usage()
            usage.item.called = True
            return
        if callee in _MODULE_SLOTS and len(call.args) > 1 and call.args[1] is arg:
            usage.called = True
            return
        if callee == "pad" and len(call.args) > 1 and call.args[1] is arg:
            usage.sequence = usage.padding = True
            return
        if callee in _PERMUTING and arg in call.args:
            usage.sequence = usage.permutation = True
            return
        if depth >= _MAX_DEPTH:
            return
        # Handed to one of the file's own classes or functions, or to a method of this class
        # (`self._make_layer(block, ...)`): read that one's parameter.
        method = None
        base_init = _base_init(self.classes, call, class_name)
        if base_init is not None:
            # `super().__init__(dims_in, dims_c)`, `Base.__init__(self, dims_in)`: the base's parameter
            base, target_fn = base_init
            skip_self = not _is_super_init(call)
            params = [p for p in _params(target_fn) if p.kind in ("pos", "kwonly")]
            bound = _bound_parameter(call, arg, params, skip=1 if skip_self else 0)
            if bound is not None:
                usage.merge(self._in_function(target_fn, bound, depth + 1, base))
            return
        owner = call.func.id if isinstance(call.func, ast.Name) else (
            call.func.value.id if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) else "")
        values = _enum_values(self.classes[owner]) if owner in self.classes and arg in call.args else []
        if values:
            # `Policy(p)`, `Policy.from_str(p)` with an Enum of the file (rtdl's `_TokenInitialization`):
            # one of its members' string values
            usage.choices += [v for v in values if v not in usage.choices]
            return
        target_fn = self._target(call, class_name)
        if target_fn is None:
            return
        if isinstance(call.func, ast.Attribute):  # `self.<method>(...)`
            method = target_fn
        params = [p for p in _params(target_fn) if p.kind in ("pos", "kwonly")]
        bound = _bound_parameter(call, arg, params)
        if bound is None:
            return
        if method is not None:
            usage.merge(self._in_function(method, bound, depth + 1, class_name))
        elif callee in self.classes:
            usage.merge(self.parameter(callee, bound, depth + 1))
        else:
            usage.merge(self._function_parameter(target_fn, bound, depth + 1))

    def _iterated(self, scope: _Scope, loop: ast.For | ast.comprehension, depth: int, class_name: str | None) -> Usage:
        usage = Usage(sequence=True)
        usage.merge(self._item_target(scope, loop, loop.target, depth, class_name))
        return usage

    def _item_target(self, scope: _Scope, loop: ast.For | ast.comprehension, target: ast.expr, depth: int,
                     class_name: str | None = None) -> Usage:
        """Usage of a sequence whose items are bound to `target` by `loop`."""
        usage = Usage(sequence=True)
        if isinstance(target, ast.Name):
            usage.item = self._in_function(scope.fn, target.id, depth + 1, None, target.lineno) if depth <= _MAX_DEPTH else Usage()
        elif isinstance(target, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in target.elts):
            usage.item_arity = len(target.elts)
            usage.item_parts = [self._in_function(scope.fn, e.id, depth + 1, None, e.lineno) if isinstance(e, ast.Name) and depth <= _MAX_DEPTH
                                else Usage() for e in target.elts]
        return usage



def _bound_parameter(call: ast.Call, arg: ast.AST, params: list, skip: int = 0) -> str | None:
    """The parameter of `params` that argument `arg` of `call` binds (`skip`: leading positional
    arguments that bind no listed parameter, the `self` of `Base.__init__(self, ...)`)."""
    if isinstance(arg, ast.keyword):
        return arg.arg if any(p.name == arg.arg for p in params) else None
    if arg not in call.args:
        return None
    index = call.args.index(arg) - skip
    if index < 0 or any(isinstance(a, ast.Starred) for a in call.args[:index + skip]):
        return None
    positional = [p for p in params if p.kind == "pos"]
    return positional[index].name if index < len(positional) else None


def _is_super_init(call: ast.Call) -> bool:
    f = call.func
    return (isinstance(f, ast.Attribute) and f.attr == "__init__" and isinstance(f.value, ast.Call)
            and isinstance(f.value.func, ast.Name) and f.value.func.id == "super")


def _base_init(classes: dict[str, ast.ClassDef], call: ast.Call, class_name: str | None) -> tuple[str, ast.FunctionDef] | None:
    """(class, __init__) a `super().__init__(...)` or `Base.__init__(self, ...)` call in
    `class_name` runs, when that class is one of the file's own."""
    f = call.func
    if class_name is None or not (isinstance(f, ast.Attribute) and f.attr == "__init__"):
        return None
    if _is_super_init(call):
        owner = next(iter(_source_bases(classes, class_name)), None)
    else:
        owner = f.value.id if isinstance(f.value, ast.Name) and f.value.id in classes else None
    if owner is None:
        return None
    return _method_owner(classes, owner, "__init__")


def _loops_over(scope: _Scope, value: ast.expr) -> list[ast.For | ast.comprehension]:
    """Loops over `value`, directly or through `list(...)` and a local it is assigned to
    (`pairs = list(zip(self.layers, args)); for (f, g), _ in pairs`)."""
    node, parent = value, scope.parent.get(id(value))
    while isinstance(parent, ast.Call) and _callee(parent) in ("list", "tuple") and parent.args and parent.args[0] is node:
        node, parent = parent, scope.parent.get(id(parent))
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return [parent]
    if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        local = parent.targets[0].id
        return [n for n in ast.walk(scope.fn) if isinstance(n, (ast.For, ast.comprehension))
                and isinstance(n.iter, ast.Name) and n.iter.id == local]
    return []


def _stores_locals_on_self(fn: ast.FunctionDef) -> bool:
    """Whether `fn` hands its `locals()` to a call that also gets `self` (an argument, or the
    object the call is on: `self.__dict__.update(locals())`, `vars(self).update(locals())`)."""
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        if not any(isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "locals" and not a.args
                   for a in node.args):
            continue
        mentions_self = any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(node.func)) or any(
            isinstance(a, ast.Name) and a.id == "self" for a in node.args)
        if mentions_self:
            return True
    return False


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _in_assert(scope: _Scope, node: ast.AST) -> bool:
    """Whether `node` is (a conjunct of) an assert that always runs: not under an `if`."""
    parent = scope.parent.get(id(node))
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.BoolOp) and not isinstance(parent.op, ast.And):
            return False
        parent = scope.parent.get(id(parent))
    return isinstance(parent, ast.Assert) and scope.parent.get(id(parent)) is scope.fn


# Tests of what kind a value is: code under them accepts more than one kind.
_KIND_TESTS = {"isinstance", "callable", "hasattr", "type", "is_tensor", "iterable", "is_iterable", "exists"}


def _kind_tested(scope: _Scope, node: ast.AST) -> bool:
    """Whether `node` sits in a branch (if, conditional expression, filtered comprehension) whose
    test asks what kind of value something is."""
    child, parent = node, scope.parent.get(id(node))
    while parent is not None and parent is not scope.fn:
        test = None
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
            test = parent.test
        elif isinstance(parent, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            test = ast.BoolOp(ast.And(), [c for g in parent.generators for c in g.ifs]) if any(g.ifs for g in parent.generators) else None
        if test is not None and any(isinstance(n, ast.Call) and (_callee(n) in _KIND_TESTS or _callee(n).startswith("is_"))
                                    for n in ast.walk(test)):
            return True
        child, parent = parent, scope.parent.get(id(parent))
    return False


def input_usages(classes: dict[str, ast.ClassDef], functions: dict[str, ast.FunctionDef], class_name: str,
                 forward: ast.FunctionDef, params: list[str]) -> dict[str, Usage]:
    """Usage of each of forward's parameters that the code gives evidence about (`**f_args`)."""
    reader = UsageReader(classes, functions)
    out = {}
    for name in params:
        usage = reader._in_function(forward, name, 0, class_name)
        if usage.anything():
            out[name] = usage
    return out


def _is_condition(node: ast.AST, parent: ast.AST | None) -> bool:
    """Whether `node` is read for its truth: an if/while test, an operand of and/or/not."""
    return ((isinstance(parent, (ast.If, ast.IfExp, ast.While)) and parent.test is node)
            or isinstance(parent, ast.BoolOp) or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)))


def _enum_values(cls: ast.ClassDef) -> list[str]:
    """The string values of an Enum class's members (`UNIFORM = 'uniform'`); [] for any other class."""
    if not any(ast.unparse(b).split(".")[-1] in ("Enum", "StrEnum") for b in cls.bases):
        return []
    return [s.value.value for s in cls.body if isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)]


def parameter_usages(classes: dict[str, ast.ClassDef], functions: dict[str, ast.FunctionDef], class_name: str,
                     params: list[str], constants: dict[str, ast.expr] | None = None) -> dict[str, Usage]:
    """Usage of each of `class_name`'s constructor parameters that the code gives evidence about
    (`constants`: the module-level assignments, for comparisons against a named list of choices)."""
    reader = UsageReader(classes, functions, constants)
    out = {}
    for name in params:
        usage = reader.parameter(class_name, name)
        if usage.anything():
            out[name] = usage
    return out

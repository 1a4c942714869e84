"""What a harvested module needs installed: its imports, mapped to distributions, with the
version specifiers its repository declares.

A problem's requirement set is per module, not per repository: only the third-party packages the
standalone module imports, so that a module using einops does not drag in the repository's
training stack, and many modules share one small environment (autotriton/environments.py).

Declared requirements are read statically, never by running the repository's code:
- pyproject.toml `[project] dependencies` (and optional dependencies),
- setup.py `install_requires=[...]` / `extras_require={...}` when they are literal lists
  (or names bound to literal lists in the same file), and setup.cfg's `[options] install_requires`,
- requirements*.txt (and requirements/*.txt) lines, minus options, URLs and -r/-c includes.
An import the repository does not declare becomes an unversioned requirement of the distribution
that provides it: IMPORT_TO_DISTRIBUTIONS for the well-known mismatches, else the installed
packages' own record (importlib.metadata.packages_distributions), else the import's name.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable

from autotriton.environments import JUDGE_PROVIDED, canonical_name
from autotriton.harvesting.signatures import module_names

#: Imports whose distribution has another name. The first entry is installed when the repository
#: declares none of them (opencv's headless build: no GUI libraries needed to run a module).
IMPORT_TO_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "PIL": ("pillow",),
    "cv2": ("opencv-python-headless", "opencv-python", "opencv-contrib-python", "opencv-contrib-python-headless"),
    "sklearn": ("scikit-learn",),
    "skimage": ("scikit-image",),
    "yaml": ("pyyaml",),
    "bs4": ("beautifulsoup4",),
    "attr": ("attrs",),
    "dateutil": ("python-dateutil",),
    "dotenv": ("python-dotenv",),
    "google.protobuf": ("protobuf",),
    "Crypto": ("pycryptodome",),
    "jwt": ("pyjwt",),
    "git": ("gitpython",),
    "mpl_toolkits": ("matplotlib",),
    "fvcore": ("fvcore",),
    "torch_geometric": ("torch-geometric",),
    "pytorch_lightning": ("pytorch-lightning",),
    "lightning": ("lightning",),
    "flash_attn": ("flash-attn",),
    "mamba_ssm": ("mamba-ssm",),
    "huggingface_hub": ("huggingface-hub",),
    "sentencepiece": ("sentencepiece",),
    "Levenshtein": ("levenshtein",),
    # found on real packages' imports (issue 13's held-out sets): the import is not the distribution's name
    "pywt": ("pywavelets",),
    "open_clip": ("open-clip-torch",),
    "pkg_resources": ("setuptools",),
    "faiss": ("faiss-cpu", "faiss-gpu"),
    "clip": ("openai-clip",),
    "umap": ("umap-learn",),
    "tree": ("dm-tree",),
    "haiku": ("dm-haiku",),
    "cpuinfo": ("py-cpuinfo",),
    "zmq": ("pyzmq",),
    "OpenGL": ("pyopengl",),
    "Bio": ("biopython",),
    "fitz": ("pymupdf",),
    "docx": ("python-docx",),
    "magic": ("python-magic",),
    "serial": ("pyserial",),
    "ruamel": ("ruamel-yaml",),
}

#: A specifier for a distribution chosen from an import, when the repository declares none: the
#: newest release no longer provides what the import needs (setuptools 81 removed pkg_resources).
IMPLIED_SPECIFIERS: dict[str, str] = {"setuptools": "setuptools<81"}

_NOT_DISTRIBUTIONS = frozenset({"__future__", "__main__"})


def _spec_name(text: str) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return canonical_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def _pyproject(text: str) -> list[str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    project = data.get("project") or {}
    out = [r for r in project.get("dependencies") or [] if isinstance(r, str)]
    for group in (project.get("optional-dependencies") or {}).values():
        out += [r for r in group or [] if isinstance(r, str)]
    poetry = ((data.get("tool") or {}).get("poetry") or {}).get("dependencies") or {}
    for name, spec in poetry.items():  # poetry's own table: name = "^1.2" is not PEP 440; keep the name only
        if name.lower() != "python":
            out.append(name)
    return out


def _literal_strings(node: ast.AST, names: dict[str, ast.AST]) -> list[str]:
    if isinstance(node, ast.Name) and node.id in names:
        node = names[node.id]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Dict):
        return [s for v in node.values for s in _literal_strings(v, names)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal_strings(node.left, names) + _literal_strings(node.right, names)
    return []


def _setup_py(text: str) -> list[str]:
    """install_requires / extras_require of a setup() call, when they are literals (or names bound
    to literals in the module): read with ast, never executed."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    names = module_names(tree)
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in ("install_requires", "extras_require"):
                    out += _literal_strings(kw.value, names)
    return out


def _setup_cfg(text: str) -> list[str]:
    """setuptools' declarative config: `[options] install_requires` and `[options.extras_require]`,
    one requirement a line (k-diffusion declares its dependencies there only)."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    values = [parser.get("options", "install_requires", fallback="")]
    if parser.has_section("options.extras_require"):
        values += [v for _, v in parser.items("options.extras_require")]
    return [line.split("#", 1)[0].strip() for v in values for line in v.splitlines()
            if line.split("#", 1)[0].strip() and not line.strip().startswith("file:")]


def remapped_packages(folder: Path) -> dict[str, str]:
    """Packages a source distribution keeps in a folder other than their import name (setuptools'
    `package-dir` / `package_dir`: `"spikingjelly._ops" = "ops"`), as {import name: folder};
    the src layout's `"" = "src"` is not one (the harvest reads src/ as a root already). Read from
    pyproject.toml, setup.cfg and a literal `package_dir=` of setup.py, never executed."""
    import configparser

    found: dict[str, Any] = {}
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace"))
            found.update(((data.get("tool") or {}).get("setuptools") or {}).get("package-dir") or {})
        except tomllib.TOMLDecodeError:
            pass
    cfg = folder / "setup.cfg"
    if cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(cfg.read_text(encoding="utf-8", errors="replace"))
            for line in parser.get("options", "package_dir", fallback="").splitlines():
                if "=" in line:
                    key, value = line.split("=", 1)
                    found[key.strip()] = value.strip()
        except configparser.Error:
            pass
    setup = folder / "setup.py"
    if setup.is_file():
        try:
            tree = ast.parse(setup.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            tree = None
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.keyword) and node.arg == "package_dir" and isinstance(node.value, ast.Dict):
                try:
                    found.update(ast.literal_eval(node.value))
                except ValueError:
                    pass
    return {k: v for k, v in found.items() if isinstance(k, str) and k and isinstance(v, str) and k.replace(".", "/") != v.strip("/")}


def _requirements_txt(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-", "git+", "http:", "https:", "file:", ".")):
            continue
        out.append(line)
    return out


def declared_requirements(read: Callable[[str], str | None], paths: Iterable[str] = ()) -> dict[str, str]:
    """{canonical distribution name: requirement as declared} from a repository's packaging files.
    `read(relative_path)` returns a file's text or None; `paths` lists the repository's files (for
    requirements*.txt in sub-folders such as requirements/base.txt)."""
    found: list[str] = []
    text = read("pyproject.toml")
    if text:
        found += _pyproject(text)
    text = read("setup.py")
    if text:
        found += _setup_py(text)
    text = read("setup.cfg")
    if text:
        found += _setup_cfg(text)
    listed = {p for p in paths if p.endswith(".txt") and (Path(p).name.startswith("requirements") or Path(p).parent.name == "requirements")
              and p.count("/") <= 1}
    for rel in sorted(listed | {"requirements.txt"}):
        text = read(rel)
        if text:
            found += _requirements_txt(text)
    out: dict[str, str] = {}
    for req in found:
        name = _spec_name(req)
        if name is not None and name not in out:
            out[name] = req.strip()
    return out


def declared_in_folder(root: Path) -> dict[str, str]:
    """declared_requirements of a local folder (its top level and requirements/)."""
    def read(rel: str) -> str | None:
        try:
            return (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    paths = [p.relative_to(root).as_posix() for p in [*root.glob("requirements*.txt"), *root.glob("requirements/*.txt")]]
    return declared_requirements(read, paths)


def _requires_dist(text: str) -> list[str]:
    """`Requires-Dist:` headers of a core-metadata file (a wheel's METADATA, an sdist's PKG-INFO),
    markers dropped: extras and platform conditions decide nothing here, since only the
    distributions a module really imports enter its requirement set."""
    headers = text.split("\n\n", 1)[0]  # the body is the long description
    return [m.group(1).split(";", 1)[0].strip() for m in re.finditer(r"^Requires-Dist:\s*(.+)$", headers, re.M)]


def declared_in_package(root: Path) -> dict[str, str]:
    """declared_requirements of unpacked package sources (harvesting/packages.py): an sdist's
    pyproject.toml / setup.py / requirements files and PKG-INFO, or a wheel's `*.dist-info/METADATA`;
    what the folder itself declares wins over the metadata."""
    found: dict[str, str] = {}
    for meta in [root / "PKG-INFO", *sorted(root.glob("*.dist-info/METADATA"))]:
        try:
            text = meta.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for spec in _requires_dist(text):
            name = _spec_name(spec)
            if name:
                found.setdefault(name, spec)
    return {**found, **declared_in_folder(root)}


def imported_modules(source: str) -> list[str]:
    """Absolute imports of a module's source, as dotted names (relative imports are the repository's own)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    optional: set[int] = set()  # imports guarded by `try/except ImportError` or `if TYPE_CHECKING`: not needed to run
    for node in ast.walk(tree):
        guarded: list[ast.stmt] = []
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            guarded = node.body
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            guarded = node.body
        for stmt in guarded:
            optional.update(id(n) for n in ast.walk(stmt))
    out: list[str] = []
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
    return list(dict.fromkeys(out))


# Calls that find a package's files or modules by the package's name (pkg_resources, importlib.resources,
# importlib, pkgutil): the name is a string, not an import, yet the call needs that package installed.
_LOOKUP_CALLS = frozenset({
    "resource_filename", "resource_stream", "resource_string", "resource_exists", "resource_listdir",
    "resource_isdir", "files", "open_binary", "open_text", "read_binary", "read_text", "contents", "is_resource",
    "as_file", "import_module", "get_data", "find_spec",
})


def packages_looked_up(source: str) -> list[str]:
    """Top-level package names that `source` passes as a string to a resource or import lookup
    (`pkg_resources.resource_filename("pkg", ...)`, `importlib.resources.files("pkg.data")`,
    `importlib.import_module("pkg.sub")`), in order of appearance."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        top = node.args[0].value.partition(".")[0]
        if name in _LOOKUP_CALLS and top.isidentifier():
            out.append(top)
    return list(dict.fromkeys(out))


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(handler.type) if isinstance(n, ast.Attribute)}
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@functools.lru_cache(maxsize=1)  # a scan of every installed distribution: once per process
def _installed_providers() -> dict[str, list[str]]:
    try:
        return metadata.packages_distributions()
    except Exception:  # noqa: BLE001 (a broken installed distribution must not stop a harvest)
        return {}


def package_import_source(repo: Any) -> str:
    """The import statements that importing the repository's packages runs: those of each
    top-level package's `__init__.py` and, transitively, of the package's own modules they import
    (the repository's own import resolution, `Repository.resolve_import`; imports guarded by
    try/if left out). Installing a release and importing it needs their third-party imports,
    declared or not (pytorch-wavelets 1.3.0 imports `pywt` in `__init__` without declaring
    PyWavelets). Returned as source for module_requirements."""
    todo = sorted(f for f in repo.paths if f.count("/") == 1 and f.endswith("/__init__.py"))
    seen: set[str] = set()
    lines: list[str] = []
    while todo:
        path = todo.pop()
        parsed = None if path in seen else repo.parsed(path)
        seen.add(path)
        if parsed is None:
            continue
        for idx, bindings in parsed.imports.items():
            if idx in parsed.guarded:
                continue
            lines.append(parsed.codes[idx].strip())
            for binding in bindings:
                target = repo.resolve_import(path, binding)
                target = target[0] if isinstance(target, tuple) else target
                if target and target not in seen:
                    todo.append(target)
    return "\n".join(dict.fromkeys(lines)) + "\n"


def _declared_by_affix(name: str, declared: dict[str, str]) -> str | None:
    """The one declared distribution whose name begins or ends with import `name`, separators aside
    (`zeta` -> `zetascale`, `cleanfid` -> `clean-fid`, `clip` -> `clip-anytorch`, `dateutil` ->
    `python-dateutil`), else whose words' initials spell it (`dac` -> `descript-audio-codec`): the
    repository says what it installs, and an import named unlike any of it (or than the usual
    distribution: `clip` is openai-clip elsewhere) is most likely one of those. None when no
    declared name, or more than one, fits, or the name is under three characters."""
    bare = name.replace("-", "")
    if len(bare) < 3:
        return None
    fits = [d for d in declared if d != name and (d.replace("-", "").startswith(bare) or d.replace("-", "").endswith(bare))]
    if not fits:
        fits = [d for d in declared if d.count("-") >= 2 and "".join(w[0] for w in d.split("-") if w) == bare]
    return fits[0] if len(fits) == 1 else None


def module_requirements(source: str, declared: dict[str, str] | None = None, *, local_packages: Iterable[str] = (),
                        providers: dict[str, list[str]] | None = None, own: str | None = None,
                        own_needs: Iterable[str] = ()) -> list[str]:
    """The requirement set of one module: for each third-party top-level import (not the standard
    library, not the judge's torch/triton/numpy, not one of the repository's own `local_packages`),
    the distribution that provides it, with the repository's declared specifier when it has one.
    `own`: the requirement of the harvested distribution itself (`compressai==1.2.8`), needed when
    the module still imports one of its `local_packages`, i.e. a part the extractor could not carry
    into the problem (a compiled extension such as `compressai._CXX`), or looks up that package's
    files or modules by name (`pkg_resources.resource_filename("pytorch_wavelets", "dtcwt/data")`:
    packaged data, which only the installed release has). `own_needs`: what importing that release
    needs besides (the requirements of package_import_source), added with it."""
    declared = declared or {}
    providers = _installed_providers() if providers is None else providers
    local = set(local_packages)
    out: list[str] = [own] if own and local & set(packages_looked_up(source)) else []
    for dotted in imported_modules(source):
        top = dotted.partition(".")[0]
        if top in local and own:
            out.append(own)
            continue
        if top in sys.stdlib_module_names or top in _NOT_DISTRIBUTIONS or top in local or top.startswith("_"):
            continue
        candidates = IMPORT_TO_DISTRIBUTIONS.get(dotted) or IMPORT_TO_DISTRIBUTIONS.get(top)
        if candidates is None:
            candidates = tuple(canonical_name(d) for d in providers.get(top, [])) or (canonical_name(top),)
        names = [canonical_name(c) for c in candidates]
        if any(n in JUDGE_PROVIDED for n in names):
            continue
        chosen = next((n for n in names if n in declared), None)
        if chosen is None and top not in providers:
            chosen = _declared_by_affix(canonical_name(top), declared)
        out.append(declared[chosen] if chosen else IMPLIED_SPECIFIERS.get(names[0], names[0]))
    if own and own in out:
        out += [r for r in own_needs if r != own]
    return list(dict.fromkeys(out))

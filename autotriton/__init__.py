"""autotriton: verified Triton-kernel training data, training and evaluation."""

from pathlib import Path as _Path

__version__ = "0.1.0"

# In a source checkout the stage folders (flows/, validation/, ...) sit beside this package at
# the repository root, the layout users asked for; installed wheels map them inside it
# (pyproject.toml, [tool.setuptools.package-dir]). Make both resolve as autotriton.<stage>, also
# when Python runs from the repository root, where ./autotriton shadows the installed package.
_root = _Path(__file__).resolve().parent.parent
if (_root / "pyproject.toml").is_file() and (_root / "validation").is_dir() and str(_root) not in __path__:
    __path__.append(str(_root))
del _Path, _root

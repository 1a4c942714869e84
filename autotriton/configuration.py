"""Layered configuration with provenance.

Values are merged from, lowest to highest precedence:
    defaults < profile < config file (TOML or YAML) < environment (AUTOTRITON_...) < CLI flags
and every leaf remembers which layer set it, so `autotriton config show` can say where each
value came from. Stage configs are pydantic models defined beside their stage; the pipeline
config (flows/config.py) composes them.
"""

from __future__ import annotations

import os
import tomllib
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

ENV_PREFIX = "AUTOTRITON_"
ENV_NESTING = "__"  # AUTOTRITON_VALIDATION__TRIALS=3 -> validation.trials = 3


class ConfigError(ValueError):
    """A configuration input is wrong; the message names the input and what to do."""


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}. Leaves are anything that is not a mapping."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, value in flat.items():
        node = tree
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        if isinstance(value, Mapping):  # an empty dict leaf: never share (and so mutate) the layer's object
            node.setdefault(leaf, {}).update(value)
        else:
            node[leaf] = value
    return tree


def _parents(path: str, field: str) -> list[str]:
    """The dotted prefixes of `path` from `field` down to `path` itself (field included)."""
    parts, head = path.split("."), field.count(".") + 1
    return [".".join(parts[:i]) for i in range(head, len(parts) + 1)]


def _parse_scalar(text: str) -> Any:
    """Parse an env/CLI value as TOML (numbers, booleans, lists, quoted strings), else keep the string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def known_paths(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """Every settable dotted path of a config model, mapped to its field info."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.update(known_paths(ann, f"{prefix}{name}."))
        else:
            out[f"{prefix}{name}"] = info
    return out


def _is_mapping_field(info: Any) -> bool:
    """A dict-typed field (validation.tolerances, training.sft_trl): its keys are the user's."""
    import typing

    ann = getattr(info, "annotation", None)
    return ann is dict or typing.get_origin(ann) is dict


def resolve_path(path: str, paths: Mapping[str, Any]) -> str | None:
    """`path` itself when it is a field, else the dict-typed field it reaches into
    (validation.tolerances.float32 -> validation.tolerances), else None."""
    if path in paths:
        return path
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head in paths:
            return head if _is_mapping_field(paths[head]) else None
    return None


def deprecated_paths(model: type[BaseModel], prefix: str = "") -> dict[str, str]:
    """{old dotted path: new dotted path} from each config model's DEPRECATED_KEYS
    (keys renamed to their trl / transformers names; old configs keep working, with a warning)."""
    out: dict[str, str] = {}
    for old, new in getattr(model, "DEPRECATED_KEYS", {}).items():
        out[f"{prefix}{old}"] = f"{prefix}{new}"
    for name, info in model.model_fields.items():
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out.update(deprecated_paths(ann, f"{prefix}{name}."))
    return out


def warn_deprecated(old: str, new: str, where: str) -> None:
    warnings.warn(f"{where}: config key {old!r} is deprecated; use {new!r} (trl's name).", FutureWarning, stacklevel=3)


YAML_SUFFIXES = (".yaml", ".yml")


def read_config_file(path: Path) -> dict[str, Any]:
    """A TOML or (by suffix .yaml/.yml) YAML config file as a nested dict."""
    if path.suffix.lower() in YAML_SUFFIXES:
        return read_yaml(path)
    return read_toml(path)


def read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc}). Fix the file or pass another with --config.") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror}).") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file holds a mapping of sections (e.g. `training:`), not a {type(data).__name__}.")
    return data


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}). Fix the file or pass another with --config.") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror}).") from exc


# AUTOTRITON_* variables that are not config keys: read elsewhere, on purpose.
ENV_NOT_CONFIG = frozenset({
    "AUTOTRITON_MODEL_CACHE",    # training/models.py: the converted-model cache when training.model_cache_dir is empty
    "AUTOTRITON_JUDGE_POOL_ID",  # validation/pool.py: marks the judge's own processes
    "AUTOTRITON_JUDGE_SERVICE", "AUTOTRITON_JUDGE_SERVICE_KEY",  # training/judge_service.py: the shared judge's socket
})


def env_layer(environ: Mapping[str, str], paths: Mapping[str, Any], aliases: Mapping[str, str],
              deprecated: Mapping[str, str] | None = None, exempt: frozenset[str] = frozenset()) -> dict[str, tuple[Any, str]]:
    """Config values from AUTOTRITON_* variables, each with the variable's name as its source.

    A variable with the prefix that names no config key is an error: a typo there would
    otherwise be ignored silently (secrets go in the variables named by *_env keys, e.g.
    distill.api_key_env, which need not carry the prefix)."""
    out: dict[str, tuple[Any, str]] = {}
    deprecated = deprecated or {}
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name in ENV_NOT_CONFIG or name in exempt:
            continue
        rest = name[len(ENV_PREFIX):].lower()
        path = aliases.get(rest) or rest.replace(ENV_NESTING, ".")
        if path in deprecated:
            warn_deprecated(path, deprecated[path], f"env:{name}")
            path = deprecated[path]
        if resolve_path(path, paths) is None:
            close = [p for p in paths if p.endswith("." + path.split(".")[-1])]
            hint = (f" Did you mean {ENV_PREFIX}{close[0].upper().replace('.', ENV_NESTING)}?" if close
                    else " See `autotriton config show` for the keys.")
            raise ConfigError(f"environment variable {name}: no config key {path!r}.{hint} Unset it, or rename it.")
        out[path] = (_parse_scalar(raw), f"env:{name}")
    return out


def parse_overrides(items: list[str], paths: Mapping[str, Any], deprecated: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`--set a.b=value` pairs from the command line (a.b may reach into a dict-typed key:
    --set validation.tolerances.float32=1e-3)."""
    out: dict[str, Any] = {}
    deprecated = deprecated or {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set validation.trials=3")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key in deprecated:
            warn_deprecated(key, deprecated[key], "--set")
            key = deprecated[key]
        if resolve_path(key, paths) is None:
            close = [p for p in paths if p.endswith("." + key.split(".")[-1])]
            hint = f" Did you mean {', '.join(close[:3])}?" if close else " See `autotriton config show` for the keys."
            raise ConfigError(f"--set {key}: no such config key.{hint}")
        out[key] = _parse_scalar(raw)
    return out


class Layered:
    """Accumulates layers of dotted-path values and the source of each."""

    def __init__(self, model: type[BaseModel]):
        self.model = model
        self.paths = known_paths(model)
        self.deprecated = deprecated_paths(model)
        defaults = flatten(model().model_dump())
        self.values: dict[str, Any] = dict(defaults)
        self.sources: dict[str, str] = {k: "default" for k in defaults}

    def apply(self, flat: Mapping[str, Any], source: str, *, origin: str | None = None) -> None:
        for path, value in flat.items():
            where = origin or source
            if path in self.deprecated:
                warn_deprecated(path, self.deprecated[path], where)
                path = self.deprecated[path]
            field = resolve_path(path, self.paths)
            if field is None:
                raise ConfigError(f"{where}: unknown config key {path!r}. See `autotriton config show` for the keys.")
            if isinstance(value, tuple):  # (value, per-key source) from env_layer
                value, src = value
            else:
                src = source
            if field != path or isinstance(value, Mapping):
                # A key inside a dict-typed field: drop the empty-dict placeholder of its parents,
                # and let a mapping value merge key by key, as a file's table does.
                for parent in _parents(path, field):
                    self.values.pop(parent, None)
                if isinstance(value, Mapping):
                    for sub, subvalue in flatten(value, path + ".").items():
                        self.values[sub], self.sources[sub] = subvalue, src
                    if not value:
                        self.values[path], self.sources[path] = {}, src
                    continue
            self.values[path] = value
            self.sources[path] = src

    def build(self) -> BaseModel:
        try:
            return self.model.model_validate(unflatten(self.values))
        except ValidationError as exc:
            problems = []
            for err in exc.errors():
                path = ".".join(str(p) for p in err["loc"])
                problems.append(f"{path} = {self.values.get(path)!r} (from {self.sources.get(path, '?')}): {err['msg']}")
            raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems)) from exc


def load_layers(
    model: type[BaseModel],
    *,
    profiles: Mapping[str, Mapping[str, Any]],
    config_file: Path | None,
    environ: Mapping[str, str] | None = None,
    cli: Mapping[str, Any] | None = None,
    env_aliases: Mapping[str, str] | None = None,
    default_file: str = "autotriton.toml",
) -> tuple[BaseModel, dict[str, str]]:
    """Build a config from all layers; returns (config, {dotted path: source})."""
    environ = os.environ if environ is None else environ
    cli = dict(cli or {})
    layered = Layered(model)
    aliases = dict(env_aliases or {})

    file_values: dict[str, Any] = {}
    if config_file is not None:
        if not config_file.exists():
            raise ConfigError(f"{config_file}: config file not found. Pass an existing file to --config.")
        file_values = flatten(read_config_file(config_file))
    else:
        for candidate in default_files(default_file):
            if candidate.exists():
                config_file = candidate
                file_values = flatten(read_config_file(config_file))
                break

    # Variables that config keys name (distill.api_key_env = "AUTOTRITON_OPENAI_KEY") hold secrets, not config.
    named = {str(v) for layer in (layered.values, file_values, cli) for k, v in layer.items()
             if k.endswith("_env") and isinstance(v, str)}
    env_values = env_layer(environ, layered.paths, aliases, layered.deprecated, frozenset(named))

    # The profile itself is chosen with the same precedence as any other value.
    profile = layered.values.get("profile")
    profile_source = "default"
    for layer, src in ((file_values, f"file:{config_file}"), ({k: v[0] for k, v in env_values.items()}, "env"), (cli, "cli")):
        if "profile" in layer:
            profile, profile_source = layer["profile"], src
    if profile not in profiles:
        raise ConfigError(f"profile {profile!r} (from {profile_source}) does not exist; choose one of: {', '.join(profiles)}")
    layered.apply(flatten(profiles[profile]), f"profile:{profile}")
    layered.apply(file_values, f"file:{config_file}")
    layered.apply(env_values, "env")
    layered.apply(cli, "cli")
    return layered.build(), dict(layered.sources)


def default_files(default_file: str) -> list[Path]:
    """autotriton.toml, then autotriton.yaml / .yml: the first that exists is read."""
    stem = Path(default_file).with_suffix("")
    return [Path(default_file)] + [stem.with_suffix(s) for s in YAML_SUFFIXES]


def config_hash(config: BaseModel) -> str:
    from autotriton.hashing import content_key

    return content_key("config", config.model_dump(mode="json"))

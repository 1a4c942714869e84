"""Layered configuration with provenance.

Values are merged from, lowest to highest precedence:
    defaults < profile < TOML file < environment (AUTOTRITON_...) < CLI flags
and every leaf remembers which layer set it, so `autotriton config show` can say where each
value came from. Stage configs are pydantic models defined beside their stage; the pipeline
config (flows/config.py) composes them.
"""

from __future__ import annotations

import os
import tomllib
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
        node[leaf] = value
    return tree


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


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}). Fix the file or pass another with --config.") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc.strerror}).") from exc


def env_layer(environ: Mapping[str, str], paths: Mapping[str, Any], aliases: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """Config values from AUTOTRITON_* variables, each with the variable's name as its source."""
    out: dict[str, tuple[Any, str]] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        rest = name[len(ENV_PREFIX):].lower()
        path = aliases.get(rest) or rest.replace(ENV_NESTING, ".")
        if path not in paths:
            continue  # unrelated AUTOTRITON_* variables (e.g. secrets) are not config
        out[path] = (_parse_scalar(raw), f"env:{name}")
    return out


def parse_overrides(items: list[str], paths: Mapping[str, Any]) -> dict[str, Any]:
    """`--set a.b=value` pairs from the command line."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set validation.trials=3")
        key, raw = item.split("=", 1)
        key = key.strip()
        if key not in paths:
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
        defaults = flatten(model().model_dump())
        self.values: dict[str, Any] = dict(defaults)
        self.sources: dict[str, str] = {k: "default" for k in defaults}

    def apply(self, flat: Mapping[str, Any], source: str, *, origin: str | None = None) -> None:
        for path, value in flat.items():
            if path not in self.paths:
                where = origin or source
                raise ConfigError(f"{where}: unknown config key {path!r}. See `autotriton config show` for the keys.")
            if isinstance(value, tuple):  # (value, per-key source) from env_layer
                value, src = value
            else:
                src = source
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
        file_values = flatten(read_toml(config_file))
    elif Path(default_file).exists():
        config_file = Path(default_file)
        file_values = flatten(read_toml(config_file))

    env_values = env_layer(environ, layered.paths, aliases)

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


def config_hash(config: BaseModel) -> str:
    from autotriton.hashing import content_key

    return content_key("config", config.model_dump(mode="json"))

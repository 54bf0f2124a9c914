"""Where a configuration comes from: defaults <- the TOML file's ``[crawl]`` table <- flags and
overrides (config.py is the configuration itself and its checks)."""

from __future__ import annotations

import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

from crawlspace.config import CrawlConfig, type_error
from crawlspace.config_checks import hints_of, is_tuple
from crawlspace.errors import ConfigError
from crawlspace.fetch.settings import ResolveOverride

__all__ = ["build_config", "coerce_setting", "given_settings"]

_FIELD_NAMES = {f.name for f in fields(CrawlConfig)}
# The list settings (a TOML list, a repeatable flag), as CrawlConfig's annotations say.
_TUPLE_FIELDS = {name for name, kind in hints_of(CrawlConfig).items() if is_tuple(kind)}


def _coerce(name: str, value: Any) -> Any:
    if name in _TUPLE_FIELDS:
        if isinstance(value, str | ResolveOverride):
            value = (value,)
        elif not isinstance(value, list | tuple):
            raise type_error(name, value, "a string or a list of strings")
    if name == "resolve":
        items = []
        for v in value:
            if not isinstance(v, str | ResolveOverride):
                raise type_error(name, v, "a HOST:PORT:ADDRESS string")
            items.append(v if isinstance(v, ResolveOverride) else ResolveOverride.parse(v))
        return tuple(items)
    if name in _TUPLE_FIELDS:
        return tuple(value)
    return value


def coerce_setting(name: str, value: Any) -> Any:
    """A setting's value as CrawlConfig holds it (tuples, parsed --resolve entries)."""
    return _coerce(name, value)


def build_config(config_file: Path | None = None, **overrides: Any) -> CrawlConfig:
    """Defaults, then the TOML file's ``[crawl]`` table (or top level), then non-None overrides."""
    values = _given_values(config_file, overrides)
    try:
        return CrawlConfig(**values)
    except TypeError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from None


def given_settings(config_file: Path | None = None, **overrides: Any) -> frozenset[str]:
    """The settings a TOML file and overrides give (crawl/settings.py: a resume keeps the
    others as the crawl stored them)."""
    return frozenset(_given_values(config_file, overrides))


def _given_values(config_file: Path | None, overrides: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if config_file is not None:
        try:
            data = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {config_file} does not exist") from None
        except UnicodeDecodeError:
            raise ConfigError(f"config file {config_file} is not UTF-8 text") from None
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {config_file} is not valid TOML: {exc}") from None
        table = data.get("crawl", data)
        if not isinstance(table, dict):
            raise ConfigError(f"config file {config_file}: [crawl] must be a table")
        for key, value in table.items():
            name = key.replace("-", "_")
            if name not in _FIELD_NAMES:
                raise ConfigError(f"config file {config_file}: unknown setting {key!r}")
            values[name] = _coerce(name, value)
    for name, value in overrides.items():
        if name not in _FIELD_NAMES:
            raise ConfigError(f"unknown setting {name!r}")
        if value is None or (name in _TUPLE_FIELDS and value == ()):
            continue
        if name in _TUPLE_FIELDS and name in values:
            values[name] = values[name] + _coerce(name, value)
        else:
            values[name] = _coerce(name, value)
    return values

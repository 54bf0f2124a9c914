"""The checks of a crawl's configuration (config.py): each value's type (what a TOML file or a
flag can give) and range, one clear ConfigError line for the first that is wrong. Given the
config object itself (config.py imports this module, not the other way round)."""

from __future__ import annotations

import ipaddress
import math
from dataclasses import fields
from typing import Any, Literal, get_args, get_origin, get_type_hints
from urllib.parse import urlsplit

from crawlspace.discovery.scope import parse_allow_entry
from crawlspace.errors import ConfigError
from crawlspace.fetch.request_headers import RequestHeaders
from crawlspace.frontier.budgets import compile_excludes
from crawlspace.frontier.front_queues import front_queues
from crawlspace.frontier.priority import PriorityRules, compile_priority_patterns

__all__ = ["Scope", "check_config", "hints_of", "is_tuple", "type_error"]

Scope = Literal["host", "domain", "any"]


def type_error(name: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(f"{name} must be {expected} (got {value!r})")


# -- checks: each value's type (what a TOML file or a flag can give) and range, one clear
# ConfigError line for the first that is wrong.


def check_config(config: Any) -> None:
    _check_types(config)
    _check_scope(config)
    _check_counts(config)
    _check_limits(config)
    _check_rules(config)


def _check_scope(config: Any) -> None:
    """Scope, hosts, networks and ports."""
    _check_types(config)
    if config.scope not in get_args(Scope):
        raise ConfigError(f"scope must be one of host, domain, any (got {config.scope!r})")
    for entry in config.allow_hosts:
        try:
            parse_allow_entry(entry)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if config.metrics_port is not None and not 0 <= config.metrics_port <= 65535:
        raise ConfigError(f"metrics_port must be 0-65535 (got {config.metrics_port})")


def _check_counts(config: Any) -> None:
    """Delays and timeouts are >= 0; counts of things are >= 1."""
    for name in (
        "min_delay",
        "min_delay_per_ip",
        "delay_factor",
        "connect_timeout",
        "read_timeout",
        "total_timeout",
        "max_throttled_seconds",
        "max_outage_seconds",
        "max_requisites_per_page",
    ):
        if getattr(config, name) < 0:
            raise ConfigError(f"{name} must be >= 0 (got {getattr(config, name)})")
    for name in (
        "max_depth",
        "max_url_length",
        "concurrency",
        "max_in_flight_per_host",
        "max_in_flight_per_ip",
        "max_redirects",
        "max_attempts",
        "max_throttled_attempts",
        "robots_max_attempts",
        "max_sitemaps_per_host",
    ):
        if getattr(config, name) < 1 and name != "max_depth":
            raise ConfigError(f"{name} must be >= 1 (got {getattr(config, name)})")
    if config.max_depth < 0:
        raise ConfigError(f"max_depth must be >= 0 (got {config.max_depth})")
    # Optional limits: unset means none; a limit of zero or less would end the crawl before
    # its first page, which no one means (leave the setting out for no limit).
    for name in (
        "max_pages",
        "max_pages_per_host",
        "max_pages_per_host_per_day",
        "max_bytes",
        "duration",
        "max_rate",
        "render_max_pages_per_host",
        "render_max_seconds_per_host",
        "render_max_pages",
        "render_max_seconds",
    ):
        value = getattr(config, name)
        if value is not None and value <= 0:
            raise ConfigError(f"{name} must be > 0, or left out for no limit (got {value})")


def _check_limits(config: Any) -> None:
    """Lease, robots, WARC, dedup and revisit limits."""
    if config.lease_grace <= 0:
        raise ConfigError(
            f"lease_grace must be > 0: how long after its grant a visit may start"
            f" (got {config.lease_grace})"
        )
    if not 0 <= config.robots_min_cache_seconds <= config.robots_cache_seconds:
        raise ConfigError(
            "robots cache lifetimes need 0 <= robots_min_cache_seconds <= robots_cache_seconds"
            f" (got {config.robots_min_cache_seconds} and {config.robots_cache_seconds})"
        )
    if config.robots_max_bytes < 500 * 1024:
        raise ConfigError("robots_max_bytes must be at least 500 KiB (RFC 9309 §2.5)")
    if config.event_loop not in ("asyncio", "uvloop"):
        raise ConfigError(f"event_loop must be asyncio or uvloop, not {config.event_loop!r}")
    if config.parse_cpu_seconds < 0:
        raise ConfigError(f"parse_cpu_seconds must be >= 0 (got {config.parse_cpu_seconds})")
    if config.parse_memory_mb < 0:
        raise ConfigError(f"parse_memory_mb must be >= 0 (got {config.parse_memory_mb})")
    RequestHeaders.parse(config.headers, config.host_headers, config.auth)  # one line if wrong
    if config.parse_retries < 0:
        raise ConfigError(f"parse_retries must be >= 0 (got {config.parse_retries})")
    if min(config.feed_text_chars, config.feed_stream_entries, config.warc_revisit_window) < 0:
        raise ConfigError(
            "feed_text_chars, feed_stream_entries and warc_revisit_window must be >= 0 (got"
            f" {config.feed_text_chars}, {config.feed_stream_entries},"
            f" {config.warc_revisit_window})"
        )
    if not 1 <= config.warc_gzip_level <= 9:
        raise ConfigError("warc_gzip_level must be 1..9")
    for name in ("user_agent", "warc_operator", "warc_is_part_of"):
        # Each is written as a header line (HTTP, the warcinfo record): one line, printable.
        text = getattr(config, name) or ""
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise ConfigError(f"{name} must be one line of printable text (got {text!r})")
    if config.bloom_expected_urls < 0 or not 0.0 < config.bloom_fp_rate < 1.0:
        raise ConfigError("bloom_expected_urls must be >= 0 and bloom_fp_rate in (0, 1)")
    if not 0 <= config.near_duplicate_bits < 64:
        raise ConfigError(f"near_duplicate_bits must be 0..63 (got {config.near_duplicate_bits})")
    if config.near_duplicate_max_pages < 0:
        raise ConfigError(
            f"near_duplicate_max_pages must be >= 0 (got {config.near_duplicate_max_pages})"
        )
    if not 0 < config.revisit_min_interval <= config.revisit_max_interval:
        raise ConfigError("revisit intervals need 0 < revisit_min_interval <= revisit_max_interval")
    for name in ("gone", "missing", "error", "failed"):
        if getattr(config, f"revisit_{name}_interval") <= 0:
            raise ConfigError(f"revisit_{name}_interval must be > 0")
    if not 0.0 <= config.revisit_share <= 1.0:
        raise ConfigError(f"revisit_share must be in [0, 1] (got {config.revisit_share})")
    if config.revisit_value_points < 0:
        raise ConfigError(f"revisit_value_points must be >= 0 (got {config.revisit_value_points})")
    if config.max_host_slowdown < 1:
        raise ConfigError(f"max_host_slowdown must be >= 1 (got {config.max_host_slowdown})")
    if config.retire_after_passes < 0:
        raise ConfigError(f"retire_after_passes must be >= 0 (got {config.retire_after_passes})")
    if config.discovery_window < 1:
        raise ConfigError(f"discovery_window must be >= 1 (got {config.discovery_window})")
    if config.trap_sample < 0 or not 0.0 < config.trap_sibling_share <= 1.0:
        raise ConfigError("trap_sample must be >= 0 and trap_sibling_share in (0, 1]")
    if config.trap_sibling_new_pairs < 0:
        raise ConfigError(
            f"trap_sibling_new_pairs must be >= 0 (got {config.trap_sibling_new_pairs})"
        )


def _check_rules(config: Any) -> None:
    """Patterns and rules that must compile."""
    try:
        compile_excludes(config.exclude)
        compile_excludes(config.include, "include")
        # Built as crawl/setup.py builds them, for the errors their constructors raise.
        PriorityRules(
            config.priority_policy,
            compile_priority_patterns(config.priority_patterns),
            config.inlink_weight,
            config.inlink_cap,
            config.aopic_tax,
        )
        front_queues(config.priority_policy, config.host_priority_aging)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if config.proxy is not None:
        _check_proxy(config.proxy)
    if config.render not in ("never", "auto", "always"):
        raise ConfigError(f"render must be one of never, auto, always (got {config.render!r})")
    if config.render_min_text < 0 or config.render_min_links < 0:
        raise ConfigError("render_min_text and render_min_links must be >= 0")
    if config.render_timeout <= 0:
        raise ConfigError(f"render_timeout must be > 0 (got {config.render_timeout})")
    if config.render_memory_mb < 256:
        raise ConfigError(
            f"render_memory_mb must be >= 256: a browser at rest takes about 200"
            f" (got {config.render_memory_mb})"
        )
    for net in config.allow_nets:
        try:
            ipaddress.ip_network(net, strict=False)
        except ValueError:
            raise ConfigError(
                f"--allow-net {net!r} is not a CIDR network such as 127.0.0.0/8"
            ) from None


def _check_proxy(proxy: str) -> None:
    """An HTTP proxy's URL: http://[USER:PASSWORD@]HOST:PORT and nothing else."""
    parts = urlsplit(proxy)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise ConfigError(
            f"--proxy {proxy!r}: expected http://[USER:PASSWORD@]HOST:PORT, e.g."
            " http://127.0.0.1:3128"
        )


def _check_value(name: str, value: Any, kind: Any) -> None:
    """``value`` against one annotation: the simple types a TOML file or a flag can give."""
    args = get_args(kind)
    if type(None) in args:  # X | None
        if value is None:
            return
        (kind,) = [a for a in args if a is not type(None)]
        args = get_args(kind)
    if kind is bool:
        if not isinstance(value, bool):
            raise type_error(name, value, "true or false")
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise type_error(name, value, "a whole number")
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise type_error(name, value, "a number")
        if not math.isfinite(value):
            raise type_error(name, value, "a finite number")
    elif kind is str:
        if not isinstance(value, str):
            raise type_error(name, value, "a string")
    elif get_origin(kind) is tuple:
        item = args[0]
        if not isinstance(value, tuple) or not all(isinstance(v, item) for v in value):
            raise type_error(name, value, f"a list of {'strings' if item is str else item}")
    elif get_origin(kind) is Literal and value not in args:
        raise type_error(name, value, "one of " + ", ".join(map(repr, args)))


def is_tuple(kind: Any) -> bool:
    """Whether an annotation is a tuple, or a tuple or None."""
    return get_origin(kind) is tuple or any(get_origin(a) is tuple for a in get_args(kind))


_HINTS: dict[type, dict[str, Any]] = {}


def hints_of(cls: type) -> dict[str, Any]:
    """The resolved annotations of a config class (computed once)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


def _check_types(config: Any) -> None:
    hints = hints_of(type(config))
    for f in fields(config):
        _check_value(f.name, getattr(config, f.name), hints[f.name])

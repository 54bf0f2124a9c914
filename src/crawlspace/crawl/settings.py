"""A crawl remembers the settings it started with. Pure: settings in, settings and changes out.

The effective settings are stored with the crawl at its first start (crawl.db ``meta``). A resume
uses them: a setting not given this time takes its stored value, not the default, so
``crawlspace crawl --out DIR`` continues DIR as it began. A setting given with another value is
refused unless ``--reconfigure`` says the change is meant; then it is applied, stored, and listed,
each change that lowers politeness saying so. Settings of one run only (budgets for this run,
worker counts, progress output) are never stored.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from crawlspace.config import CrawlConfig
from crawlspace.config_sources import coerce_setting
from crawlspace.errors import ConfigError
from crawlspace.lifecycle import BLOCKED_ADDRESS

__all__ = ["SettingChange", "given_by_default", "lifted_exclusions", "settle", "stored_form"]

# Settings of this run only: a resume may give any value without --reconfigure.
PER_RUN: Final = frozenset(
    {
        "max_pages",
        "max_bytes",
        "render_max_pages",  # crawl-wide totals, like max_pages: a resume may give more
        "render_max_seconds",
        "duration",
        "concurrency",
        "parse_workers",
        "event_loop",
        "progress",
        "sample_seconds",
        "metrics_port",
        "continuous",
        "sitemaps",
        "proxy",  # this machine's way out, and it may hold a password
    }
)
# Politeness: a change in this direction makes the crawl harder on the sites it visits.
_LESS_POLITE_WHEN_LOWER: Final = frozenset(
    {
        "min_delay",
        "min_delay_per_ip",
        "delay_factor",
        "max_crawl_delay",
        "backoff_base",
        "max_backoff",
        "retry_delay",
        "robots_retry_delay",
        "robots_min_cache_seconds",  # robots.txt refetched more often
    }
)
_LESS_POLITE_WHEN_HIGHER: Final = frozenset(
    {
        "max_in_flight_per_host",
        "max_in_flight_per_ip",
        "max_rate",
        "max_outage_seconds",
        "max_sitemaps_per_host",
        "max_attempts",
        "max_throttled_attempts",
        "max_throttled_seconds",
    }
)
_DEFAULTS: Final = CrawlConfig()
# Settings whose default changed what a crawl does when they were added: a crawl stored before
# one existed keeps what it did (unless a run gives it). A crawl seeded before query_order keyed
# URLs as linked; the new default's keys would take another order of each stored one for new.
_BEFORE_IT_EXISTED: Final = {"query_order": "learned"}


@dataclass(frozen=True, slots=True)
class SettingChange:
    name: str
    stored: Any
    given: Any

    @property
    def less_polite(self) -> bool:
        if self.name == "user_agent":
            return True  # sites identify us by it; robots.txt groups too
        if self.name == "max_rate" and self.given is None:
            return self.stored is not None  # the cap lifted
        try:
            if self.name in _LESS_POLITE_WHEN_LOWER:
                return bool(self.given < self.stored)
            if self.name in _LESS_POLITE_WHEN_HIGHER:
                return bool(self.given > self.stored)
        except TypeError:  # None against a number
            return False
        return False

    def describe(self) -> str:
        warning = " (lowers politeness)" if self.less_polite else ""
        return f"{self.name}: {_show(self.stored)} -> {_show(self.given)}{warning}"


def _show(value: Any) -> str:
    return json.dumps(_plain(value))


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return str(value)
    return value


def _stored_names() -> list[str]:
    return [f.name for f in dataclasses.fields(CrawlConfig) if f.name not in PER_RUN]


def stored_form(config: CrawlConfig) -> str:
    """The settings to store with the crawl, as JSON."""
    return json.dumps({name: _plain(getattr(config, name)) for name in _stored_names()})


def given_by_default(config: CrawlConfig) -> frozenset[str]:
    """The settings a config built in Python gives: those that differ from the defaults."""
    return frozenset(
        name for name in _stored_names() if getattr(config, name) != getattr(_DEFAULTS, name)
    )


def settle(
    config: CrawlConfig, stored_json: str | None, given: frozenset[str], *, reconfigure: bool
) -> tuple[CrawlConfig, list[SettingChange]]:
    """The config a run uses and the stored settings it changes (``given``: the settings this
    run was given). Raises ConfigError, in one line, for a change without ``reconfigure``."""
    if stored_json is None:
        return config, []
    stored = json.loads(stored_json)
    kept: dict[str, Any] = {}
    changes: list[SettingChange] = []
    for name in _stored_names():
        if name not in stored:  # a setting newer than the crawl: this run's value, or
            if name in _BEFORE_IT_EXISTED and name not in given:  # what the crawl did then
                kept[name] = _BEFORE_IT_EXISTED[name]
            continue
        value = coerce_setting(name, stored[name])
        if name not in given:
            kept[name] = value
        elif value != getattr(config, name):
            changes.append(SettingChange(name, value, getattr(config, name)))
    if changes and not reconfigure:
        listed = "; ".join(change.describe() for change in changes)
        raise ConfigError(
            f"this crawl was started with other settings ({listed}): resume without them, "
            "or add --reconfigure to change them"
        )
    return dataclasses.replace(config, **kept), changes


def lifted_exclusions(changes: Sequence[SettingChange]) -> frozenset[str]:
    """The exclusion reasons a reconfigured crawl lifts (Frontier.lift_exclusion): what the old
    settings refused and the new ones may allow. ``allow_nets`` given a network it did not have:
    the address guard's refusals (of pages, and of robots.txt, whose answer then excluded the
    host's pages), checked again when their fetch connects. Without this, the crawl a user
    reruns with ``--allow-net`` to reach a local site would still fetch nothing."""
    for change in changes:
        if change.name == "allow_nets" and set(change.given or ()) - set(change.stored or ()):
            return frozenset({BLOCKED_ADDRESS})
    return frozenset()

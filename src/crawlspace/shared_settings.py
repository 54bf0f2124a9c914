"""Which crawl settings a shared (Redis) frontier honours today, checked before a worker starts.

The crawl's policy was first written inside the SQLite store, and is moving above the store so that
every engine runs it (README, "Many workers"). Until a policy has moved, a worker must not accept
its setting and quietly crawl without it: ``check_shared_settings`` refuses every such setting
that differs from its default, in one line naming them all. Policies that are on by default and
not yet applied by workers are listed once at start-up by ``missing_on_shared``, so a user learns
what a worker crawl lacks without having asked for it.

Each entry leaves this table in the commit that makes workers honour it.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from crawlspace.config import CrawlConfig
from crawlspace.errors import ConfigError

__all__ = ["check_shared_settings", "missing_on_shared"]

# setting -> the policy it belongs to, as the refusal names it.
UNSUPPORTED: Final[dict[str, str]] = {
    "priority_policy": "AOPIC priority",
    "aopic_tax": "AOPIC priority",
    "inlink_weight": "in-link points",
    "inlink_cap": "in-link points",
    "discovery_window": "the discovery ratio",
    "discovery_trap_ratio": "the discovery ratio",
    "trap_priority_penalty": "the discovery ratio",
}

# Policies on by default that workers do not apply yet: the setting and value that turn the
# policy off (a worker accepts that value: it asks for what the worker does), or None, and what.
_DEFAULT_ON: Final[tuple[tuple[str | None, object, str], ...]] = (
    ("inlink_weight", 0, "in-link points"),
    ("trap_priority_penalty", 0, "the discovery-ratio demotion"),
)
_OFF: Final = {setting: off for setting, off, _ in _DEFAULT_ON if setting is not None}

_DEFAULTS: Final = CrawlConfig()


def _accepted(config: CrawlConfig, name: str) -> bool:
    value = getattr(config, name)
    return name not in UNSUPPORTED or value in (getattr(_DEFAULTS, name), _OFF.get(name))


def check_shared_settings(config: CrawlConfig) -> None:
    """Refuse, in one line, every setting a shared frontier would accept and not honour."""
    names = [f.name for f in dataclasses.fields(config) if not _accepted(config, f.name)]
    if not names:
        return
    what = sorted({UNSUPPORTED[name] for name in names})
    raise ConfigError(
        f"a shared frontier does not apply {', '.join(what)} yet; remove"
        f" {', '.join(names)} from the worker's settings, or crawl with `crawlspace crawl`"
    )


def missing_on_shared(config: CrawlConfig) -> list[str]:
    """The default-on policies this worker crawl will run without (for one line at start-up)."""
    missing = []
    for setting, off, what in _DEFAULT_ON:
        if setting is None or getattr(config, setting) != off:
            missing.append(what)
    return missing

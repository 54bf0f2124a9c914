"""Which crawl settings a shared (Redis) frontier honours today, checked before a worker starts.

The crawl's policies were first written inside the SQLite store and are moving above the store,
so that every engine runs them (README, "Many workers"). Until a policy has moved, a worker must
not accept its setting and quietly crawl without it: ``check_shared_settings`` refuses every
such setting that differs from its default, in one line naming them all.

Each entry leaves this table in the commit that makes workers honour it.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from crawlspace.config import CrawlConfig
from crawlspace.errors import ConfigError

__all__ = ["check_shared_settings"]

# setting -> the policy it belongs to, as the refusal names it.
UNSUPPORTED: Final[dict[str, str]] = {
    "priority_policy": "AOPIC priority",
    "aopic_tax": "AOPIC priority",
}

_DEFAULTS: Final = CrawlConfig()


def check_shared_settings(config: CrawlConfig) -> None:
    """Refuse, in one line, every setting a shared frontier would accept and not honour."""
    names = [
        f.name
        for f in dataclasses.fields(config)
        if f.name in UNSUPPORTED and getattr(config, f.name) != getattr(_DEFAULTS, f.name)
    ]
    if not names:
        return
    what = sorted({UNSUPPORTED[name] for name in names})
    raise ConfigError(
        f"a shared frontier does not apply {', '.join(what)} yet; remove"
        f" {', '.join(names)} from the worker's settings, or crawl with `crawlspace crawl`"
    )

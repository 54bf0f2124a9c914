"""Retirement: a URL that no page and no sitemap has linked for a few crawl passes leaves the
crawl. Pure.

A pass is ``revisit_max_interval``, the longest a fetched page waits for its next visit: a page
that still links a URL links it again within one pass, so a URL not linked for ``passes`` of
them has lost every page that led to it (Nutch's orphan scoring filter decides the same way, by
time since the last in-link). At its next revisit it is excluded with the reason ``retired``
instead of being fetched: excluded URLs are never revisited, and the index feed deletes its
document (frontier/feed.py).

The last time a URL was linked is kept by every engine while retirement is on
(``FrontierLimits.link_times``): set when a URL is admitted, and again each time a fetched page
or a sitemap links it. A URL admitted while it was off has no such time and is never retired.
Seeds and sitemap documents are never retired: the crawl was told to visit them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from crawlspace.records import Lease

__all__ = ["RETIRED", "RetirementPolicy"]

RETIRED: Final = "retired"
_KEPT_SOURCES: Final = frozenset({"seed", "sitemap"})


@dataclass(frozen=True, slots=True)
class RetirementPolicy:
    """``passes`` 0: never retire."""

    passes: int = 0
    pass_seconds: float = 30 * 86400.0

    def retired(self, lease: Lease, now: float) -> bool:
        """Whether the revisit ``lease`` ends the URL's life instead of fetching it."""
        if not self.passes or lease.version < 2 or lease.linked_at is None:
            return False
        if lease.source in _KEPT_SOURCES:
            return False
        return now - lease.linked_at >= self.passes * self.pass_seconds

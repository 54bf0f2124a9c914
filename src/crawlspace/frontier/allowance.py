"""A host's allowance: how far below its politeness limit the crawl keeps a host whose pages are
wasted, on errors or on duplicates of pages the crawl has. Pure.

Politeness sets the fastest a host may be asked (frontier/politeness.py); an allowance only ever
slows a host down from there. The host's discovery window (frontier/budgets.py, the host note
``discovery`` every engine writes with a page's completion) counts its fetched pages that were
wasted: an error status (400 or more) or an exact or near duplicate (frontier/duplicates.py).
At each window's end the window's wasted share is kept; until the next one ends, the host's gap
after an ordinary page is its politeness gap divided by ``1 - share``, at most ``max_slowdown``
times it. A host that wastes half its pages is asked half as often, one that wastes three in
four a quarter as often, and one that stops wasting is back at its limit when its next window
ends. Server errors that are retried, and requests that got no answer, are the backoff's and
the outage policy's (frontier/backoff.py, frontier/outage.py), not counted here.

Important pages are never slowed: after a page worth more than a depth-1 link (a seed, or a
page a sitemap's priority or its in-links put ahead: its queue priority when leased, read as
frontier/revisit.py reads value), the gap is politeness' own. A host's allowance for what
matters most on it stays at its limit while the rest of a wasteful host waits.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawlspace.bands import REVISIT_BAND
from crawlspace.frontier.budgets import DiscoveryWindow
from crawlspace.frontier.revisit import VALUE_REFERENCE

__all__ = ["AllowancePolicy"]


@dataclass(frozen=True, slots=True)
class AllowancePolicy:
    """``max_slowdown`` 1: no allowances (every host at its politeness limit)."""

    max_slowdown: float = 4.0

    def slowdown(self, window: DiscoveryWindow, priority: int | None) -> float:
        """What the host's politeness gap after a page of queue ``priority`` is multiplied by,
        given the host's discovery window (1.0: the host at its limit)."""
        share = window.last_waste
        if self.max_slowdown <= 1.0 or not share or _important(priority):
            return 1.0
        return min(self.max_slowdown, 1.0 / max(1.0 - share, 1e-9))


def _important(priority: int | None) -> bool:
    if priority is None:
        return False
    base = priority + REVISIT_BAND if priority < 0 else priority  # out of the revisit band
    return base < VALUE_REFERENCE

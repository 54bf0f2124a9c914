"""What every engine enforces the same way: the per-address token rule.

Politeness per server address: at most N requests in flight to one IP, and a gap between them.

A host's token bounds what one host name gets; a server that hosts a thousand names (virtual
hosts, a CDN edge, a shared blog platform) would still get a thousand requests at once. So every
request also holds a token of the address it connects to (BUbiNG keeps host and IP politeness
together the same way; Heritrix users ask for it as "queue groups"). Pure: callers pass ``now``.

The rule, the same on every engine (the embedded ones keep ``AddressTokens`` in memory, since
one process owns their crawl; a shared frontier keeps the same state in Redis, lua/address.lua):

- ``take``: granted while fewer than ``max_in_flight`` live holders hold the address and its
  gap has passed. A holder is live until it gives the token back or its lease expires, so a
  killed worker's tokens lapse with its leases. Refused, it says when to try again.
- ``give``: the holder's token back; the address's next start moves to ``ended + min_gap``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["BUSY_RETRY", "AddressPolicy", "RateCap", "RenderBudget", "token_retry_at"]

# How long a lease refused by a busy address waits before its host is tried again: long enough
# not to spin on a crowded server, short against the politeness gaps that space each host.
BUSY_RETRY: Final = 0.25


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    max_in_flight: int = 4
    min_gap: float = 0.0

    def retry_at(self, now: float, next_allowed_at: float, busy: bool) -> float:
        return token_retry_at(now, next_allowed_at, busy)


def token_retry_at(now: float, next_allowed_at: float, busy: bool) -> float:
    """When a refused take of a token (an address's, or a host's outside its leases) may
    succeed: after the gap, or a short wait for a free token."""
    return max(next_allowed_at, now + BUSY_RETRY) if busy else next_allowed_at


@dataclass(frozen=True, slots=True)
class RateCap:
    """At most ``per_second`` requests started per second, crawl-wide: on every worker of a
    shared crawl together (0: no cap). Over politeness, never instead of it: a host's and an
    address's gaps still hold, the cap only spaces the starts of all requests further.

    The rule, the same on every engine (the embedded ones keep the next free start in memory; a
    shared frontier in Redis, lua/rate.lua): a request asks for a start no later than
    ``latest_start`` (its lease must still hold when it ends). Its start is the later of now and
    the crawl's next free start; if that is no later than ``latest_start`` the start is taken and
    the next free start moves one interval past it, else nothing is taken and the request is
    refused (its lease goes back, its host tried again when a start could fit)."""

    per_second: float = 0.0

    @property
    def interval(self) -> float:
        return 1.0 / self.per_second if self.per_second > 0 else 0.0

    def reserve(self, next_free: float, now: float, latest_start: float) -> tuple[float, float]:
        """(the request's start, the crawl's next free start after this call): the start was
        taken when it is no later than ``latest_start``; the next free start is then unchanged
        otherwise."""
        start = max(now, next_free)
        if start > latest_start:
            return start, next_free
        return start, start + self.interval

    def retry_at(self, start: float, now: float, latest_start: float) -> float:
        """When a refused request's host may be tried again: when a lease as long as this one
        could reach ``start``."""
        return max(now, start - max(0.0, latest_start - now))


@dataclass(frozen=True, slots=True)
class RenderBudget:
    """The rendering tier's crawl-wide budget (issue #33): at most ``max_pages`` renders and
    ``max_seconds`` browser seconds in all, on every worker of a shared crawl together (None:
    no such budget). A headless browser costs a hundred times a parse, so the operator caps it
    for the crawl, not only per host (frontier/render_entry.py keeps the per-host budgets).

    The rule, the same on every engine (the embedded ones keep the totals in memory, from the
    crawl's counters on resume; a shared frontier in Redis, lua/render.lua): a render takes its
    page from the budget before it starts, only while both totals are under their caps; its
    browser seconds are added when it ends. So the page budget is exact, and the seconds budget
    is passed by at most the renders already running when it ran out (one per process)."""

    max_pages: int | None = None
    max_seconds: float | None = None

    @property
    def active(self) -> bool:
        return self.max_pages is not None or self.max_seconds is not None

    def refusal(self, pages: int, seconds: float) -> str | None:
        """Why one more render may not start after ``pages`` renders of ``seconds`` (None: it
        may): "crawl_pages" or "crawl_seconds"."""
        if self.max_pages is not None and pages >= self.max_pages:
            return "crawl_pages"
        if self.max_seconds is not None and seconds >= self.max_seconds:
            return "crawl_seconds"
        return None

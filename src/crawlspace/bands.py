"""Which ready host is leased first: Mercator's front queues, with aging. Pure vocabulary that
every engine keeps its ready index by; which bands a priority policy uses is
bands.py's choice.

Within a host, priority orders its queue (frontier/priority.py). Across hosts, each host sits in
one of ``count`` front bands by the priority of its best queued URL (its head): with the
``score`` policy one band per link depth (10 points), so a host whose next page is a seed's
neighbour goes before a host whose best page is nine links deep (Heydon & Najork, "Mercator: A
scalable, extensible web crawler", 1999, §3.2: front queues feed the per-host back queues).

Among the hosts whose politeness gap has passed, the lease goes first to the lowest

    rank = ready_at + band * aging

so a band-3 host that has been ready for 3 * aging seconds ranks with a band-0 host that just
became ready: bands move work between hosts, and no host waits more than about
(count - 1) * aging behind better ones. ``aging = 0`` is plain longest-waiting-first (the order
before bands); a very large aging is strict priority. Politeness is untouched: only hosts whose
next-allowed time has passed are ranked at all.

The rank is a static key per host (``now`` cancels out of the comparison), so every engine keeps
one ready index per band ordered by ready time, reads the ready head of each band and merges
them by rank: memory (one heap per band), SQLite (an index on (band, ready_at)) and Redis (one
zset per band and bucket, and per band in the crawl-wide bucket index).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, TypeVar

__all__ = ["BANDS", "REVISIT_BAND", "FrontQueues"]

# Bands per engine index; the last one holds everything at or beyond it.
BANDS: Final = 10
# A due revisit sits this far below new URLs in its host's queue (every store); its front band
# is that of the priority it was queued with.
REVISIT_BAND: Final = 1 << 40
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FrontQueues:
    """Band boundaries (``origin``, ``width``) and the aging rate (seconds of waiting per band)."""

    width: int = 10  # one link depth of the score policy (frontier/priority.py DEPTH_WEIGHT)
    origin: int = 0
    aging: float = 60.0
    count: int = BANDS

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError(f"front band width must be >= 1 (got {self.width})")
        if not (math.isfinite(self.aging) and self.aging >= 0.0):
            raise ValueError(f"host_priority_aging must be a finite number >= 0 (got {self.aging})")

    def band(self, priority: int) -> int:
        """The front band of a host whose best queued URL has ``priority``."""
        if priority < 0:
            priority += REVISIT_BAND
        return min(max((priority - self.origin) // self.width, 0), self.count - 1)

    def rank(self, band: int, ready_at: float) -> float:
        return ready_at + band * self.aging

    def merge(self, heads: Iterable[tuple[int, float, T]], limit: int) -> list[T]:
        """The first ``limit`` items by rank, from (band, ready_at, item) triples read off the
        band indexes (each band's ready hosts, oldest first). Ties keep the input order."""
        ranked = sorted(
            ((self.rank(b, at), i, item) for i, (b, at, item) in enumerate(heads)),
            key=lambda t: (t[0], t[1]),
        )
        return [item for _, _, item in ranked[:limit]]

    def sql_band(self, column: str) -> str:
        """``band`` as an SQL expression over an integer ``column`` (SQLite's ``/`` truncates
        toward zero, so the offset is clamped at 0 before dividing)."""
        base = f"(CASE WHEN {column} < 0 THEN {column} + {REVISIT_BAND} ELSE {column} END)"
        return f"MIN(MAX({base} - {self.origin}, 0) / {self.width}, {self.count - 1})"

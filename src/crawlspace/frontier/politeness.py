"""Politeness arithmetic: when may the next request to a host start? Pure; callers pass ``now``.

Mercator (Heydon & Najork, 1999) waits a multiple of the last fetch's duration before contacting
the host again, so a slow (loaded) server is automatically visited less often.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PolitenessPolicy:
    min_delay: float = 1.0
    delay_factor: float = 10.0
    max_crawl_delay: float = 30.0

    def gap(self, fetch_seconds: float, crawl_delay: float | None = None) -> float:
        """Seconds between the end of one request and the start of the next to the same host.

        Crawl-delay is not part of RFC 9309; we honour it as a lower bound on the gap (capped, so a
        robots.txt cannot park a host for days) and slow the host's queue instead of skipping it.
        """
        gap = max(self.min_delay, self.delay_factor * max(fetch_seconds, 0.0))
        if crawl_delay is not None and crawl_delay > 0:
            gap = max(gap, min(crawl_delay, self.max_crawl_delay))
        return gap

    def next_allowed_at(
        self, fetch_ended_at: float, fetch_seconds: float, crawl_delay: float | None = None
    ) -> float:
        return fetch_ended_at + self.gap(fetch_seconds, crawl_delay)

"""The memory engine's records: a URL, a host with its queue heaps, a granted lease.

A host's queue heaps hold (priority, seq, url_id) entries deleted lazily: a URL re-prioritised
while queued (in-links, AOPIC cash: links.py; a plan's sink) gets a new entry, and the old one
is stale because its seq is no longer the URL's ``queue_seq``; ``clean`` drops stale heads.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from crawlspace.lifecycle import UrlState
from crawlspace.plans import DayCount
from crawlspace.records import Lease, LeaseKind, RobotsRecord

NEVER = float("-inf")


def default_robots_url(host_key: str) -> str:
    """``http://h:1`` -> ``http://h:1/robots.txt`` (RFC 9309 §2.3: robots.txt is at the root)."""
    return f"{host_key}/robots.txt"


@dataclass(slots=True, eq=False)
class MemUrl:
    url_id: int
    url: str
    host_key: str
    depth: int
    priority: int
    redirect_hops: int
    state: UrlState
    version: int = 1
    attempts: int = 0
    reason: str | None = None
    lease_id: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    changefreq: str | None = None
    # Recrawl state (frontier/revisit.py): written from a completion's plan, read by the lease.
    revisit_interval: float | None = None
    content_hash: str | None = None
    next_fetch_at: float | None = None
    visited_at: float | None = None  # when its last visit's completion was written
    linked_at: float | None = None  # last linked by a page or sitemap (FrontierLimits.link_times)
    via_id: int | None = None  # the page that first led to it (records.py Lease.via_id)
    # Link policy (links.py): pages linking here, AOPIC cash and Lambda's total when last paid.
    inlinks: int = 0
    cash: float = 0.0
    lambda_paid: float = 0.0
    queue_seq: int = -1  # seq of this URL's live queue entry (see the module docstring)


@dataclass(slots=True, eq=False)
class MemHost:
    key: str
    next_allowed_at: float = NEVER
    in_flight: int = 0
    admitted: int = 0
    queue: list[tuple[int, int, int]] = field(default_factory=list)  # (priority, seq, url_id)
    revisits: list[tuple[int, int, int]] = field(default_factory=list)  # the revisit band
    band_tally: list[int] = field(default_factory=lambda: [0, 0])  # contested: revisits, new
    robots_excluded: set[int] = field(default_factory=set)  # url ids its robots.txt excluded
    robots: RobotsRecord | None = None
    robots_lease_id: str | None = None
    heap_seq: int = -1  # seq of this host's live ready-heap entry; -1 when it has none
    heap_band: int = 0  # the front band whose heap holds that entry
    budget_counts: dict[str, int] = field(default_factory=dict)  # keyed budgets' counters
    day: int = -1  # the UTC day of day_pages (a plan's DayCount, plans.py)
    day_pages: int = 0

    def count_page(self, day: DayCount) -> bool:
        """One more page on the plan's day (a new day starts at 0); True once at its cap."""
        if self.day != day.day:
            self.day, self.day_pages = day.day, 0
        self.day_pages += 1
        return self.day_pages >= day.cap

    def push(self, url: MemUrl, seq: int) -> None:
        """Queue ``url`` at its priority, in the revisit band if below 0."""
        url.queue_seq = seq
        heapq.heappush(
            self.revisits if url.priority < 0 else self.queue, (url.priority, seq, url.url_id)
        )

    def clean(self, urls: list[MemUrl | None]) -> None:
        """Drop stale entries from the heads of both heaps, so a non-empty heap's head is live."""
        for heap in (self.revisits, self.queue):
            while heap and _stale(heap[0], urls):
                heapq.heappop(heap)


@dataclass(slots=True, eq=False)
class Active:
    """A granted lease, so expiry can find it without the caller's Lease object."""

    host: MemHost
    url: MemUrl | None  # None for a robots lease
    expires_at: float


def _stale(entry: tuple[int, int, int], urls: list[MemUrl | None]) -> bool:
    url = urls[entry[2]]
    return url is None or url.queue_seq != entry[1] or url.state is not UrlState.QUEUED


def robots_lease(lease_id: str, host_key: str, robots_url: str, expires_at: float) -> Lease:
    return Lease(
        kind=LeaseKind.ROBOTS,
        lease_id=lease_id,
        host_key=host_key,
        url=robots_url,
        url_id=0,
        version=0,
        attempt=1,
        depth=0,
        redirect_hops=0,
        expires_at=expires_at,
    )


def page_lease(lease_id: str, host_key: str, url: MemUrl, expires_at: float) -> Lease:
    """The lease of ``url`` (already marked leased), with the recrawl state it carries."""
    return Lease(
        kind=LeaseKind.PAGE,
        lease_id=lease_id,
        host_key=host_key,
        url=url.url,
        url_id=url.url_id,
        version=url.version,
        attempt=url.attempts,
        depth=url.depth,
        redirect_hops=url.redirect_hops,
        expires_at=expires_at,
        etag=url.etag,
        last_modified=url.last_modified,
        crawl_delay=None,
        revisit_interval=url.revisit_interval,
        content_hash=url.content_hash,
        changefreq=url.changefreq,
        priority=url.priority,
        linked_at=url.linked_at,
        via_id=url.via_id,
    )

"""A visit whose event loop was held up past its lease grace sends nothing (crawl/visit.py,
crawl/crawler.py).

Once a lease expires, another worker may be given the host; a request sent on the expired lease
would then overlap that worker's. A store call riding out a Redis failover blocks the loop for
seconds, and the tasks of leases granted just before it start late. Here a store holds the loop
once, longer than the whole lease, right after granting page leases.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.ops.report import crawl_stats
from crawlspace.records import Lease, LeaseKind
from crawlspace.store.sqlite.store import SqliteStore
from tests.webs import linked_pages

TOTAL_TIMEOUT = 0.5
LEASE_GRACE = 0.2
STALL = 1.0  # longer than the lease (0.7 s)


@dataclass
class Grants:
    """Every lease the store granted (wall clock), and the one stall."""

    leases: list[Lease] = field(default_factory=list)
    granted_at: list[float] = field(default_factory=list)
    stalled: list[Lease] = field(default_factory=list)


class StallingStore(SqliteStore):
    grants: Grants

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        leases = super().lease(now, limit, lease_seconds)
        self.grants.leases += leases
        self.grants.granted_at += [now] * len(leases)
        pages = [lease for lease in leases if lease.kind is LeaseKind.PAGE]
        if pages and not self.grants.stalled:
            self.grants.stalled += pages
            time.sleep(STALL)  # holds the event loop, as a blocking store call does
        return leases


def test_a_visit_started_after_its_lease_grace_sends_nothing(tmp_path: Path) -> None:
    grants = Grants()

    def stalling_store(path: Path) -> SqliteStore:
        store = StallingStore(path)
        store.grants = grants
        return store

    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        scope="any",
        min_delay=0.0,
        delay_factor=0.0,
        total_timeout=TOTAL_TIMEOUT,
        lease_grace=LEASE_GRACE,
        progress=False,
    )
    pages = linked_pages(4)
    # The server stamps requests with time.monotonic(); leases are on the wall clock.
    wall_minus_mono = time.time() - time.monotonic()
    with WebFarm({"s": html_site("s", pages)}) as farm:
        crawler = Crawler(config, tmp_path / "out", store_factory=stalling_store)
        try:
            crawler.add_seeds([farm.url("s", "/")])
            summary = crawler.run()
        finally:
            crawler.close()
        assert farm.wait_idle(timeout=5.0)
    assert summary.stop_reason == "done"
    assert grants.stalled, "the store never stalled"

    # Every request started while a lease of its URL could still outlive it.
    for request in farm.requests_for("s"):
        started = request.started_at + wall_minus_mono
        url = farm.url("s", request.path_qs)
        held = [
            lease
            for lease, at in zip(grants.leases, grants.granted_at, strict=True)
            if lease.url == url and at <= started + 0.05
        ]
        assert held, f"{request.path_qs} was requested without a lease"
        latest = held[-1]
        assert started <= latest.expires_at - TOTAL_TIMEOUT + 0.05, (
            f"{request.path_qs} started {started - (latest.expires_at - TOTAL_TIMEOUT):.2f} s"
            " after its lease could outlive the fetch"
        )
    # The given-back URLs were leased again and fetched, each page once.
    fetched = [r.path_qs for r in farm.requests_for("s") if r.status == 200]
    assert sorted(fetched) == sorted(set(fetched))
    assert set(pages) <= set(fetched)
    assert crawler.leases_too_late == len(grants.stalled)
    # ... and the operator sees them in `crawlspace stats`.
    recovery = crawl_stats(tmp_path / "out")["recovery"]
    assert recovery.get("lease.too_late") == len(grants.stalled), recovery

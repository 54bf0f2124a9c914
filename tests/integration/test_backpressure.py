"""When parsing stalls, leasing stops: memory is bounded by the fetch slots, not by the frontier."""

from __future__ import annotations

import threading
from pathlib import Path

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.parse.processors import ProcessedContent, process_html
from crawlspace.records import Lease, LeaseKind
from tests.webs import linked_pages

CONCURRENCY = 3


def test_a_stalled_parser_stops_leasing(tmp_path: Path) -> None:
    sites = {f"h{i}": html_site(f"h{i}", linked_pages(4)) for i in range(8)}
    released = threading.Event()
    granted_while_stalled: list[Lease] = []
    outstanding: list[int] = []

    def stalled_html(body: bytes, **kwargs: str) -> ProcessedContent:
        released.wait(timeout=30)
        return process_html(body, **kwargs)  # type: ignore[arg-type]

    with WebFarm(sites) as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",),
            min_delay=0.01,
            delay_factor=1.0,
            concurrency=CONCURRENCY,
            scope="any",
            progress=False,
            parse_workers=2,
        )
        crawler = Crawler(config, tmp_path / "crawl")
        crawler.add_seeds(farm.url(name, "/") for name in farm.names)
        crawler.register_processor("text/html", stalled_html)
        lease = crawler.store.lease

        def counting_lease(now: float, limit: int, lease_seconds: float) -> list[Lease]:
            leases = lease(now, limit, lease_seconds)
            if not released.is_set():
                granted_while_stalled.extend(x for x in leases if x.kind is LeaseKind.PAGE)
            outstanding.append(crawler.store.in_flight())
            return leases

        crawler.store.lease = counting_lease  # type: ignore[method-assign]
        timer = threading.Timer(1.5, released.set)
        timer.start()
        try:
            summary = crawler.run()
        finally:
            timer.cancel()
            released.set()
            crawler.close()
    # Every page lease handed out while the parser was stuck still holds its fetch slot.
    assert 0 < len(granted_while_stalled) <= CONCURRENCY
    assert max(outstanding) <= CONCURRENCY
    assert summary.stop_reason == "done"
    assert summary.pages == 8 * 5

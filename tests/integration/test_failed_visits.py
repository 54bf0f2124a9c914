"""A visit that raises (crawl/crawler.py), a bug's exception rather than a fetch error.

A page visit spends an attempt and keeps its host waiting, and after max_attempts the URL fails;
a robots.txt visit counts as unreachable, so it is retried later and then disallows the host. A
plain release used to give the lease back with the host ready at once, so a fault that repeats
refetched the same URL back to back for as long as the crawl ran."""

from __future__ import annotations

import itertools
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.crawl.setup import fetch_settings
from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.fetch.aiohttp_transport import AiohttpTransport
from crawlspace.fetch.transport import FetchRequest, FetchResponse, Transport
from crawlspace.parse.processors import process_html
from tests.webs import linked_pages, run_and_close

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

MIN_DELAY = 0.2
MAX_ATTEMPTS = 3
BAD_PAGE = "/p3.html"


def broken_on_one_page(body: bytes, **kwargs: Any) -> Any:
    if str(kwargs["url"]).endswith(BAD_PAGE):
        raise ValueError("a processor bug on this page")
    return process_html(body, **kwargs)


def test_a_visit_that_keeps_raising_is_retried_politely_then_failed(tmp_path: Path) -> None:
    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        scope="any",
        min_delay=MIN_DELAY,
        delay_factor=0.0,
        max_attempts=MAX_ATTEMPTS,
        duration=30.0,  # a bound; the crawl ends long before
        progress=False,
    )
    pages = linked_pages(6)
    with WebFarm({"s": html_site("s", pages)}) as farm:
        crawler = Crawler(config, tmp_path / "out")
        crawler.register_processor("text/html", broken_on_one_page)
        summary = run_and_close(crawler, [farm.url("s", "/")])
        assert farm.wait_idle(timeout=5.0)
        requests = farm.requests_for("s")
    assert summary.stop_reason == "done"
    bad = [r for r in requests if r.path_qs == BAD_PAGE]
    assert len(bad) == MAX_ATTEMPTS, [r.started_at for r in bad]
    # Politeness holds through the failures: every request on the host, failed or not, starts
    # at least min_delay after the one before it ended.
    starts = sorted(requests, key=lambda r: r.started_at)
    gaps = [b.started_at - a.ended_at for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= MIN_DELAY - 0.02, gaps
    db = sqlite3.connect(tmp_path / "out" / "crawl.db")
    try:
        row = db.execute(
            "SELECT state, reason, attempts FROM urls WHERE url = ?", (farm.url("s", BAD_PAGE),)
        ).fetchone()
        others = db.execute(
            "SELECT COUNT(*) FROM urls WHERE state = 'fetched' AND url LIKE '%.html'"
        ).fetchone()[0]
    finally:
        db.close()
    assert row == ("failed", "internal_error", MAX_ATTEMPTS)
    assert others == sum(1 for path in pages if path.endswith(".html")) - 1


class RobotsFaultTransport(AiohttpTransport):
    """The real transport, except that fetching one host's robots.txt raises a bug's exception
    (not a FetchError): the visit fails before anything is sent."""

    def __init__(self, config: CrawlConfig, faulty_robots: str) -> None:
        super().__init__(fetch_settings(config))
        self.faulty_robots = faulty_robots
        self.faults: list[float] = []

    async def fetch(self, request: FetchRequest) -> FetchResponse:
        if request.url == self.faulty_robots:
            self.faults.append(time.monotonic())
            raise RuntimeError("a transport bug")
        return await super().fetch(request)


def test_a_robots_visit_that_keeps_raising_is_retried_then_disallows_the_host(
    tmp_path: Path,
) -> None:
    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        scope="any",
        min_delay=0.0,
        delay_factor=0.0,
        robots_retry_delay=0.2,
        robots_max_attempts=3,
        duration=30.0,  # a bound; the crawl ends long before
        progress=False,
    )
    with WebFarm({"ok": html_site("ok", linked_pages(3)), "bad": html_site("bad", {})}) as farm:
        transport = RobotsFaultTransport(config, farm.url("bad", "/robots.txt"))

        class FaultCrawler(Crawler):
            def _default_transport(self) -> Transport:
                return transport  # as the crawl's own transport, closed by the crawl

        crawler = FaultCrawler(config, tmp_path / "out")
        summary = run_and_close(crawler, [farm.url("ok", "/"), farm.url("bad", "/")])
        assert farm.wait_idle(timeout=5.0)
        bad_paths = farm.paths_for("bad")
    assert summary.stop_reason == "done"
    # Retried as an unreachable robots.txt is (the delay doubles), then the host is
    # disallowed: none of its pages is fetched before its robots.txt has been read.
    assert len(transport.faults) == 3, transport.faults
    gaps = [b - a for a, b in itertools.pairwise(transport.faults)]
    assert gaps[0] >= 0.2 - 0.02, gaps
    assert gaps[1] >= 0.4 - 0.02, gaps
    assert bad_paths == []
    db = sqlite3.connect(tmp_path / "out" / "crawl.db")
    try:
        robots = db.execute(
            "SELECT r.outcome, r.attempts, r.error FROM robots r JOIN hosts h ON h.id = r.host_id"
            " WHERE h.host_key = ?",
            (farm.host_key("bad"),),
        ).fetchone()
    finally:
        db.close()
    assert robots == ("disallow_all", 3, "robots_unavailable")

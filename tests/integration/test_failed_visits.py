"""A page visit that raises after its request went out (crawl.py): an attempt spent, the host
kept waiting, and after max_attempts the URL fails. A plain release used to give the attempt back
with the host ready at once, so a processor that always raised refetched its page back to back
for as long as the crawl ran."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Any

from crawlspace.config import CrawlConfig
from crawlspace.crawl import Crawler
from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.processors import process_html
from tests.webs import linked_pages

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
        try:
            crawler.register_processor("text/html", broken_on_one_page)
            crawler.add_seeds([farm.url("s", "/")])
            summary = crawler.run()
        finally:
            crawler.close()
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

"""The dispatcher sleeps while every fetch slot is taken (crawl/crawler.py): a ready host cannot be
served before a task ends, and each task's end wakes it. It used to poll the store every
millisecond instead, for as long as the slots stayed full."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import WebFarm
from tests.webs import slow_site

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

DELAY = 0.4  # each page answers this late: the single slot stays taken


def test_full_slots_do_not_poll_the_store(tmp_path: Path) -> None:
    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        scope="any",
        min_delay=0.0,
        delay_factor=0.0,
        concurrency=1,
        progress=False,
    )
    # Two slow pages each ("/" and /p0.html), behind a slow robots.txt.
    with WebFarm({"s1": slow_site("s1", 1, DELAY), "s2": slow_site("s2", 1, DELAY)}) as farm:
        crawler = Crawler(config, tmp_path / "out")
        polls = 0
        next_ready_at = crawler.store.next_ready_at

        def counting() -> float | None:
            nonlocal polls
            polls += 1
            return next_ready_at()

        crawler.store.next_ready_at = counting  # type: ignore[method-assign]
        try:
            crawler.add_seeds([farm.url("s1", "/"), farm.url("s2", "/")])
            summary = crawler.run()
        finally:
            crawler.close()
        assert farm.wait_idle(timeout=5.0)
    assert summary.stop_reason == "done"
    assert summary.pages == 4
    # Four slow pages (~2.4 s with the other host ready all along): a handful of wake-ups per
    # request, not one per millisecond.
    assert polls < 60, polls

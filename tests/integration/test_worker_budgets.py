"""Crawl-wide budgets on a shared frontier: `--max-pages N` given to every worker stops the whole
crawl at N pages, as `crawlspace crawl --max-pages N` does, judged from the server's own log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.ops.report import open_crawl_db
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import frontier_stats
from tests.redis_servers import RedisDeployment, start_single
from tests.webs import linked_pages, slow_site
from tests.workers import crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

SITES = 10
PAGES = 10
MAX_PAGES = 30
WORKERS = 3


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    deployment = start_single(tmp_path_factory.mktemp("redis"))
    yield deployment
    deployment.stop()


def fetch_rows(out: Path) -> int:
    db = open_crawl_db(out)
    try:
        return int(db.execute("SELECT COUNT(*) FROM fetches").fetchone()[0])
    finally:
        db.close()


def test_max_pages_is_crawl_wide_across_workers(tmp_path: Path, redis: RedisDeployment) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(
        "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.1\ndelay_factor = 0.0\n"
        f"scope = 'any'\nconcurrency = 2\nmax_pages = {MAX_PAGES}\n"
    )
    sites = {f"s{i}": html_site(f"s{i}", linked_pages(PAGES)) for i in range(SITES - 1)}
    sites["slow"] = slow_site("slow", PAGES, 0.2)  # holds leases open while others finish
    outs = [tmp_path / f"w{i}" for i in range(WORKERS)]
    with WebFarm(sites) as farm:
        seeds = [farm.url(name, "/") for name in farm.names]
        crawl_with_workers(redis.url, "budget", 8, config, seeds=seeds, outs=outs)
        farm.wait_idle()
        pages = [r for name in farm.names for r in farm.requests_for(name)]
    served = [r for r in pages if r.path_qs != "/robots.txt"]
    # Exactly the budget, from the server's side and in the workers' own records.
    assert len(served) == MAX_PAGES
    assert sum(fetch_rows(out) for out in outs) == MAX_PAGES
    # More than one worker took part: a per-worker budget would have allowed WORKERS times it.
    assert sum(fetch_rows(out) > 0 for out in outs) >= 2
    frontier = RedisFrontier(connect(redis.url), namespace="budget", buckets=8, epoch=0)
    try:
        assert frontier.settle_pages(0, 0, 0)[0] == MAX_PAGES
        assert frontier.queued() > 0  # stopped by the budget, not for want of work
        # `crawlspace stats --frontier` shows the crawl-wide figures.
        stats = frontier_stats(frontier)
        assert stats["budget"]["pages"] == MAX_PAGES
        assert stats["fetched"] == MAX_PAGES
    finally:
        frontier.close()

"""A host's sitemap budget (frontier/sitemap_budget.py), judged from the server's log on `crawlspace
crawl` and on four workers over a 3-master Redis Cluster: a robots.txt naming 30 sitemaps, the
first an index of 2,000, every one a 404, costs the host no more than max_sitemaps_per_host
sitemap requests, and its pages are fetched, interleaved with the index's documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import faultweb
from tests.integration.test_faults import FaultWeb, by_site
from tests.workers import crawl_urls, workers_urls

pytestmark = pytest.mark.slow  # a crawl and four workers over a cluster

CAP = 40  # the index and 29 more from robots.txt, then 10 of the index's 2,000
WORKERS = 4
BUCKETS = 16
TIMEOUT = 60.0
CONFIG = f"""
[crawl]
allow_nets = ["127.0.0.1/32"]
min_delay = 0.02
max_sitemaps_per_host = {CAP}
"""


@pytest.fixture(scope="module", params=["crawl", "workers"])
def crawled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[FaultWeb, dict[str, dict[str, Any]]]]:
    tmp = tmp_path_factory.mktemp(f"sitemap-budget-{request.param}")
    web = FaultWeb(tmp / "server.log")
    try:
        seeds = [web.url("sitemapflood")]
        if request.param == "crawl":
            urls = crawl_urls(tmp / "crawl", CONFIG, seeds, TIMEOUT)
        else:
            cluster = request.getfixturevalue("cluster")
            urls = workers_urls(
                cluster.url,
                "sitemaps",
                BUCKETS,
                CONFIG,
                seeds=seeds,
                tmp=tmp,
                workers=WORKERS,
                timeout=TIMEOUT,
            )
        web.settle()
        yield web, urls
    finally:
        web.stop()


def test_dead_sitemaps_cost_the_budget_and_the_pages_are_fetched(
    crawled: tuple[FaultWeb, dict[str, dict[str, Any]]],
) -> None:
    web, urls = crawled
    rows = by_site(web.requests())["sitemapflood"]
    sitemaps = [r["path"] for r in rows if r["path"].endswith(".xml")]
    assert len(sitemaps) == CAP, sitemaps
    assert len(set(sitemaps)) == CAP, "each once"
    assert "/index.xml" in sitemaps
    assert sum(path.startswith("/sm/") for path in sitemaps) == CAP - faultweb.SITEMAP_LINES
    # An index's documents are interleaved with the pages (a point of priority each), not all
    # fetched before the first of them.
    first_page = min(r["start"] for r in rows if r["path"].startswith("/p"))
    assert first_page < max(r["start"] for r in rows if r["path"].startswith("/sm/"))
    pages = {r["path"] for r in rows if r["status"] == 200 and not r["path"].endswith(".xml")}
    assert pages == {"/", "/robots.txt", *(f"/p{i}" for i in range(faultweb.SITEMAP_PAGES))}
    over = [u for u, r in urls.items() if r["reason"] == "sitemap_budget"]
    index_room = CAP - faultweb.SITEMAP_LINES
    assert len(over) == faultweb.SITEMAP_INDEX_SIZE - index_room
    assert all(r["state"] == "excluded" for u, r in urls.items() if u in over)

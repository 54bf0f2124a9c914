"""Outages lose nothing (frontier/outage.py), judged from the server's log, on `crawlspace crawl`
and on four workers over a 3-master Redis Cluster.

The outage sites of tests/faultweb.py, at a tenth of the issue's time scale (every duration below
and the crawl's retry delays; ``FAULTWEB_OUTAGE_SCALE=1`` runs the issue's own): a host that resets
every connection for 35 s after its 8th page gets a few requests while it is down, none of its
URLs fails, and every page is fetched within a minute of its return; a host whose robots.txt
resets for a minute gets every page once it answers; a host that never comes back is given up
after max_outage_seconds, its queued URLs failed as host_down, and the crawl ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests import faultweb
from tests.integration.test_faults import FaultWeb, by_site
from tests.workers import crawl_urls, workers_urls

pytestmark = pytest.mark.slow  # outages of seconds (README: the quick subset)

WORKERS = 4
BUCKETS = 16
SCALE = faultweb.OUTAGE_SCALE
TIMEOUT = 60.0 + 300.0 * SCALE
MAX_OUTAGE_SECONDS = 50.0 * SCALE  # longer than the outage site's 35 s, shorter than forever
BACK_WITHIN = 60.0 * SCALE  # the "every page within a minute after it answers again"
FEW = 6  # requests to a host while it is down: at 0, 2, 6, 14 and 30 s (jittered)

CONFIG = f"""
[crawl]
allow_nets = ["127.0.0.1/32"]
scope = "any"
min_delay = 0.05
concurrency = 8
total_timeout = 1.0
read_timeout = 1.0
retry_delay = {2.0 * SCALE}
max_outage_seconds = {MAX_OUTAGE_SECONDS}
robots_retry_delay = {10.0 * SCALE}
lease_grace = 2.0
"""


@dataclass
class OutageCrawl:
    web: FaultWeb
    urls: dict[str, dict[str, Any]]  # the crawl's URL records, by URL

    def site_urls(self, site: str) -> dict[str, dict[str, Any]]:
        base = self.web.url(site, "/")
        return {url: record for url, record in self.urls.items() if url.startswith(base)}


def seeds(web: FaultWeb) -> list[str]:
    return [web.url(site) for site in faultweb.OUTAGE_SITES]


@pytest.fixture(scope="module", params=["crawl", "workers"])
def crawled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OutageCrawl]:
    tmp = tmp_path_factory.mktemp(f"outages-{request.param}")
    web = FaultWeb(tmp / "server.log")
    try:
        if request.param == "crawl":
            urls = crawl_urls(tmp / "crawl", CONFIG, seeds(web), TIMEOUT)
        else:
            cluster = request.getfixturevalue("cluster")
            urls = workers_urls(
                cluster.url,
                "outages",
                BUCKETS,
                CONFIG,
                seeds=seeds(web),
                tmp=tmp,
                workers=WORKERS,
                timeout=TIMEOUT,
            )
        web.settle()
        yield OutageCrawl(web, urls)
    finally:
        web.stop()


def down_window(rows: list[dict[str, Any]]) -> tuple[float, float]:
    windows = {tuple(r["down"]) for r in rows if r.get("reset")}
    assert len(windows) == 1, windows
    (window,) = windows
    return window[0], window[1]


def pages(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Each page answered 200, and when it was first."""
    answered: dict[str, float] = {}
    for r in rows:
        if r["status"] == 200 and r["path"] != "/robots.txt":
            answered.setdefault(r["path"], r["start"])
    return answered


def test_a_host_down_for_a_while_loses_nothing(crawled: OutageCrawl) -> None:
    rows = by_site(crawled.web.requests())["outage"]
    begin, end = down_window(rows)
    while_down = [r for r in rows if begin <= r["start"] < end]
    assert 2 <= len(while_down) <= FEW, [round(r["start"] - begin, 2) for r in while_down]
    answered = pages(rows)
    assert set(answered) == {"/", *(f"/p{i}" for i in range(faultweb.OUTAGE_PAGES))}
    late = max(answered.values()) - end
    assert late <= BACK_WITHIN, f"the last page came {late:.1f} s after the host was back"
    states = {url: (r["state"], r["reason"]) for url, r in crawled.site_urls("outage").items()}
    assert all(state == "fetched" for state, _ in states.values()), states


def test_a_short_robots_outage_loses_no_page(crawled: OutageCrawl) -> None:
    rows = by_site(crawled.web.requests())["robotsdown"]
    _begin, end = down_window(rows)
    robots = [r for r in rows if r["path"] == "/robots.txt"]
    assert robots[-1]["status"] == 200
    assert robots[-1]["start"] >= end
    assert all(r["start"] >= end for r in rows if r["path"] != "/robots.txt"), "robots.txt first"
    answered = pages(rows)
    assert set(answered) == {"/", *(f"/p{i}" for i in range(faultweb.ROBOTS_DOWN_PAGES))}
    states = {r["state"] for r in crawled.site_urls("robotsdown").values()}
    assert states == {"fetched"}


def test_a_host_that_never_returns_is_given_up_and_the_crawl_ends(crawled: OutageCrawl) -> None:
    rows = by_site(crawled.web.requests())["dead"]
    begin, _ = down_window(rows)
    after = [r for r in rows if r["start"] >= begin]
    # Probed while max_outage_seconds lasted (and perhaps once more, if the crawl outlived the
    # time it was given up for), never once per queued URL.
    assert 2 <= len(after) <= FEW + 2, [round(r["start"] - begin, 2) for r in after]
    states = [(r["state"], r["reason"]) for r in crawled.site_urls("dead").values()]
    assert len(states) == faultweb.DEAD_PAGES + 1
    unfetched = [s for s in states if s[0] != "fetched"]
    assert len(unfetched) == faultweb.DEAD_PAGES + 1 - faultweb.DEAD_AFTER
    assert set(unfetched) == {("failed", "host_down")}, unfetched

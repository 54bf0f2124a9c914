"""--continuous recrawl against a real server with ETag/Last-Modified: unchanged pages are
revalidated with 304s (the conditional headers read from the server log), only the page that
changes is downloaded again, and every visit is a new version with its own event."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.request_log import LoggedRequest
from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from crawlspace.ops.export import iter_records
from crawlspace.ops.report import crawl_stats, open_crawl_db
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import completion_events
from tests.integration.test_crawl_politeness import assert_polite
from tests.redis_servers import RedisDeployment
from tests.workers import crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

STATIC = ["/a.html", "/b.html", "/c.html"]
LAST_MODIFIED = "Wed, 01 Jan 2025 00:00:00 GMT"


class ChangingPage:
    """/news.html gets a new version (and ETag) every time it is served: always changed."""

    def __init__(self) -> None:
        self.served = 0
        self._lock = threading.Lock()

    def __call__(self, path_qs: str) -> Response | None:
        if path_qs != "/news.html":
            return None
        with self._lock:
            self.served += 1
            n = self.served
        body = f"<html><body><p>news edition {n}</p></body></html>"
        return Response(200, {"Content-Type": "text/html", "ETag": f'"n{n}"'}, body.encode())


def build_site(news: ChangingPage) -> Site:
    links = "".join(f'<a href="{p}">{p}</a>' for p in [*STATIC, "/news.html"])
    routes = {"/": html(f"<html><body>{links}</body></html>"), "/robots.txt": html("", 404)}
    for i, path in enumerate(STATIC):
        body = f"<html><body><p>static page {path}</p></body></html>".encode()
        headers = {"Content-Type": "text/html", "Last-Modified": LAST_MODIFIED}
        if i % 2 == 0:
            headers["ETag"] = f'"s{i}"'  # a.html, c.html: ETag; b.html: Last-Modified only
        routes[path] = Response(200, headers, body)
    return Site("site", routes, news)


def assert_revalidated(log: list[Any]) -> None:
    """From the server's side: unchanged pages were downloaded once and then revalidated with
    the right conditional header; the changing page was downloaded every time, more often."""
    for path in STATIC:
        hits = [r for r in log if r.path_qs == path]
        assert len(hits) >= 3, path  # first fetch plus at least two revisits
        assert [r.status for r in hits].count(200) == 1, path  # one body, then 304s only
        for revisit in hits[1:]:
            assert revisit.status == 304
            if path == "/b.html":
                assert revisit.headers["if-modified-since"] == LAST_MODIFIED
            else:
                assert revisit.headers["if-none-match"].startswith('"s')
    news_hits = [r for r in log if r.path_qs == "/news.html"]
    assert len(news_hits) >= 3
    assert all(r.status == 200 for r in news_hits)  # changed every time: always a body
    # The changing page is revisited more often than the unchanged ones (interval halves).
    assert len(news_hits) > max(len([r for r in log if r.path_qs == p]) for p in STATIC)


def crawl_continuously(
    farm: WebFarm, out: Path, duration: float, **settings: Any
) -> list[LoggedRequest]:
    """A --continuous crawl of the farm's "site" from "/" for ``duration`` seconds (loopback
    allowed, no politeness delay to speak of), then the site's request log."""
    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        min_delay=0.01,
        delay_factor=0.0,
        progress=False,
        continuous=True,
        duration=duration,
        **settings,
    )
    crawler = Crawler(config, out)
    try:
        crawler.add_seeds([farm.url("site", "/")])
        assert crawler.run().stop_reason == "duration"
    finally:
        crawler.close()
    farm.wait_idle()
    return farm.requests_for("site")


def test_continuous_recrawl_revalidates_unchanged_pages(tmp_path: Path) -> None:
    out = tmp_path / "out"
    news = ChangingPage()
    with WebFarm({"site": build_site(news)}) as farm:
        log = crawl_continuously(
            farm,
            out,
            4.0,
            revisit_min_interval=0.3,
            revisit_max_interval=1.2,
            revisit_initial_interval=0.3,
        )
    assert_revalidated(log)

    # Events: one per (url, version); revisits of unchanged pages are not_modified.
    db = open_crawl_db(out)
    try:
        events = db.execute(
            "SELECT url, version, state, content_sha256, text_sha256 FROM events ORDER BY seq"
        ).fetchall()
        fetch_rows = db.execute(
            "SELECT status, content_type, content_sha256, text_sha256 FROM fetches WHERE url = ?"
            " ORDER BY id",
            (farm.url("site", "/a.html"),),
        ).fetchall()
    finally:
        db.close()
    # A 304's row and event describe the copy it validated, not its own empty body.
    first, *revalidated = [tuple(row) for row in fetch_rows]
    assert first[0] == 200
    assert first[1:] == ("text/html", *first[2:])
    assert revalidated
    assert all(row == (304, *first[1:]) for row in revalidated), revalidated
    a_events = [e for e in events if e["url"] == farm.url("site", "/a.html")]
    assert {(e["content_sha256"], e["text_sha256"]) for e in a_events} == {first[2:]}
    assert len({(e["url"], e["version"]) for e in events}) == len(events)
    a_url = farm.url("site", "/a.html")
    states = [e["state"] for e in events if e["url"] == a_url]
    assert states[0] == "fetched"
    assert set(states[1:]) == {"not_modified"}
    assert [e["version"] for e in events if e["url"] == a_url] == list(range(1, len(states) + 1))

    urls = {r["url"]: r for r in iter_records(out, "urls")}
    assert urls[a_url]["revisit_interval"] == 1.2  # doubled to the maximum
    assert urls[farm.url("site", "/news.html")]["revisit_interval"] == 0.3  # halved to the min
    # Its next visit is planned, or (the duration may end between a promotion and the fetch)
    # already queued as the visit after the last one recorded.
    a_row = urls[a_url]
    assert a_row["next_fetch_at"] is not None or (
        a_row["state"] in ("queued", "leased") and a_row["version"] == len(states) + 1
    ), a_row
    stats = crawl_stats(out)
    # "/" has no validators: each revisit is a 200 with the same text. Neither that nor the
    # next news edition makes a page a near duplicate of its own earlier version.
    root_hits = [r for r in log if r.path_qs == "/"]
    assert len(root_hits) >= 3
    assert all(r.status == 200 for r in root_hits)
    assert stats["dedup"]["near_duplicates"] == 0
    revisits = stats["revisits"]
    assert revisits["not_modified"] >= 6
    assert revisits["revisits_leased"] >= 6
    assert 0.0 <= revisits["due_to_lease_p50_s"] <= revisits["due_to_lease_p99_s"] < 2.0
    json.dumps(revisits)


def test_failed_urls_are_revisited_and_recover(tmp_path: Path) -> None:
    """A URL whose retries ran out is failed, not forgotten: recrawl comes back to it after the
    long (tombstone) interval, and a server that recovered gets the page fetched."""
    served = {"n": 0}

    def flaky(path_qs: str) -> Response | None:
        if path_qs != "/flaky.html":
            return None
        served["n"] += 1
        if served["n"] == 1:
            return html("<html><body>down</body></html>", 500)
        return html("<html><body><p>back up</p></body></html>")

    routes = {
        "/": html('<html><body><a href="/flaky.html">flaky</a></body></html>'),
        "/robots.txt": html("", 404),
    }
    out = tmp_path / "out"
    with WebFarm({"site": Site("site", routes, flaky)}) as farm:
        log = crawl_continuously(
            farm,
            out,
            4.0,
            max_attempts=1,
            retry_delay=0.1,  # the failure's host wait, kept short for the test
            backoff_base=0.1,
            revisit_min_interval=0.3,
            revisit_max_interval=60.0,
            revisit_initial_interval=60.0,
            revisit_error_interval=0.6,  # a 500 that used up its tries
        )
        hits = [r.status for r in log if r.path_qs == "/flaky.html"]
    assert hits[:2] == [500, 200]
    flaky_url = farm.url("site", "/flaky.html")
    urls = {r["url"]: r for r in iter_records(out, "urls")}
    assert urls[flaky_url]["state"] == "fetched"
    assert urls[flaky_url]["version"] >= 2
    db = open_crawl_db(out)
    try:
        events = db.execute(
            "SELECT version, state FROM events WHERE url = ? ORDER BY version", (flaky_url,)
        ).fetchall()
    finally:
        db.close()
    assert [(e["version"], e["state"]) for e in events][:2] == [(1, "failed"), (2, "fetched")]


@pytest.mark.slow
def test_workers_on_a_cluster_revalidate_unchanged_pages_too(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    """The same recrawl, by two `crawlspace worker --continuous` processes sharing a 3-master
    Redis Cluster: the plan travels with the lease, the due set lives in each bucket."""
    config = tmp_path / "crawl.toml"
    config.write_text(
        "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.01\ndelay_factor = 0.0\n"
        "continuous = true\nduration = 5.0\nrevisit_min_interval = 0.3\n"
        "revisit_max_interval = 1.2\nrevisit_initial_interval = 0.3\n"
    )
    news = ChangingPage()
    outs = [tmp_path / "w1", tmp_path / "w2"]
    with WebFarm({"site": build_site(news)}) as farm:
        crawl_with_workers(
            cluster.url, "recrawl", 16, config, seeds=[farm.url("site", "/")], outs=outs
        )
        farm.wait_idle()
        log = farm.requests_for("site")
    assert_polite(log, 0.01)
    assert_revalidated(log)
    frontier = RedisFrontier(connect(cluster.url), namespace="recrawl", buckets=16, epoch=0)
    try:
        events = completion_events(frontier)
    finally:
        frontier.close()
    per_visit = Counter((e["id"], e["version"]) for e in events)
    assert max(per_visit.values()) == 1  # one event per (url, version)
    assert max(int(e["version"]) for e in events) >= 3
    assert "not_modified" in {e["state"] for e in events}


def test_important_pages_are_revisited_more_often_than_deep_ones(tmp_path: Path) -> None:
    """Refresh by value (frontier/revisit.py), from the server's log: four pages that never
    change, the home page and a chain three links deep; the home page (a seed) comes back more
    than twice as often as the page three links down, whose change rate is the same."""
    chain = {
        "/": '<html><body><p>home</p><a href="/d1.html">1</a></body></html>',
        "/d1.html": '<html><body><p>one</p><a href="/d2.html">2</a></body></html>',
        "/d2.html": '<html><body><p>two</p><a href="/d3.html">3</a></body></html>',
        "/d3.html": "<html><body><p>three</p></body></html>",
    }
    with WebFarm({"site": Site("site", {p: html(t) for p, t in chain.items()})}) as farm:
        log = crawl_continuously(
            farm,
            tmp_path / "out",
            8.0,
            revisit_min_interval=0.3,
            revisit_max_interval=4.8,
            revisit_initial_interval=1.2,
        )
        hits = Counter(r.path_qs for r in log)
    assert hits["/d3.html"] >= 1
    assert hits["/"] >= 2 * hits["/d3.html"], hits
    assert hits["/"] >= hits["/d1.html"] >= hits["/d3.html"], hits


def test_a_continuous_crawl_keeps_waiting_for_an_unreachable_robots_txt(tmp_path: Path) -> None:
    """robots.txt answers 503 for its first 2.5 s, past robots_max_attempts: a --continuous
    crawl keeps the host's URLs queued and asks robots.txt again on its backoff schedule, with
    nothing new queued, and fetches every page once it answers (a finite crawl would exclude
    them as robots_unavailable and end)."""
    pages = {f"/p{i}.html": f"<html><body><p>page {i}</p></body></html>" for i in range(4)}
    pages["/"] = (
        "<html><body>" + "".join(f'<a href="{p}">{p}</a>' for p in pages) + "</body></html>"
    )
    first: list[float] = []

    def robots(path_qs: str) -> Response | None:
        if path_qs != "/robots.txt":
            return None
        first.append(time.monotonic())
        if first[-1] - first[0] < 2.5:
            return Response(503, {"Content-Type": "text/plain"}, b"down")
        return Response(200, {"Content-Type": "text/plain"}, b"User-agent: *\nAllow: /\n")

    site = Site("site", {p: html(t) for p, t in pages.items()}, robots)
    with WebFarm({"site": site}) as farm:
        log = crawl_continuously(
            farm, tmp_path / "out", 6.0, robots_retry_delay=0.2, robots_max_attempts=2
        )
    tries = [r for r in log if r.path_qs == "/robots.txt"]
    assert len(tries) >= 3, "asked again after it was given up"
    fetched = {r.path_qs for r in log if r.status == 200 and r.path_qs != "/robots.txt"}
    assert fetched == set(pages)
    assert all(r.started_at >= tries[0].started_at + 2.5 for r in log if r.path_qs in pages)

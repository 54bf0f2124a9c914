"""One crawler on every engine, end to end: `crawlspace crawl` (SQLite) and four `crawlspace
worker` processes on a 3-master Redis Cluster (one killed with SIGKILL mid-crawl and restarted)
crawl the same local web of four sites (a documentation site with robots.txt rules and a sitemap
that lists an orphan page, duplicate pages, three trap shapes, a page that changes) with the same
settings, `--continuous`, and end with the same fetched URLs, the same duplicate groups, the same
excluded URLs for the same reasons, and revalidations answered 304 on both. Politeness is judged
from the server's own log, across all workers together.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from crawlspace.demo.webfarm import Response, Site, WebFarm, html, robots_txt
from crawlspace.ops.export import iter_records
from crawlspace.ops.report import open_crawl_db
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import completion_events, iter_frontier_records
from crawlspace.urls import seen_key
from tests.integration.test_crawl_politeness import assert_polite
from tests.integration.test_dedup_crawl import _article
from tests.integration.test_dedup_crawl import build_site as dups_site
from tests.integration.test_recrawl import LAST_MODIFIED, ChangingPage
from tests.integration.test_redis_workers import wait_for
from tests.redis_servers import RedisDeployment
from tests.workers import cli

MIN_DELAY = 0.02
DURATION = 9.0
WORKERS = 4
BUCKETS = 32
SETTINGS = f"""
[crawl]
allow_nets = ["127.0.0.0/8"]
scope = "host"
min_delay = {MIN_DELAY}
delay_factor = 0.0
concurrency = 4
max_depth = 5
max_query_params = 3
total_timeout = 1.5
lease_grace = 0.5
continuous = true
duration = {DURATION}
revisit_min_interval = 1.0
revisit_max_interval = 2.0
revisit_initial_interval = 1.0
"""
NAMES = ["docs", "dups", "trap", "news"]


def article(path: str, links: list[str], site: str = "") -> Response:
    """A page of its own words (no two pages of the web are near duplicates by chance: the
    words are drawn from the site and the path, so two sites' home pages differ too)."""
    words = " ".join(_article(zlib.crc32((site + path).encode())))
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    return html(f"<html><body><p>{words}</p>{anchors}</body></html>")


def docs(base: str) -> Site:
    count = 12
    routes = {
        f"/p{i}.html": article(
            f"/p{i}.html", [f"/p{(i + 1) % count}.html", f"/p{i * 5 % count}.html"]
        )
        for i in range(count)
    }
    routes["/"] = article("/", ["/p0.html", "/p6.html", "/private/secret.html"])
    routes["/robots.txt"] = robots_txt(f"User-agent: *\nDisallow: /private/\nSitemap: {base}/s.xml")
    sitemap = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{base}/orphan.html</loc></url></urlset>'
    routes["/s.xml"] = Response(200, {"Content-Type": "application/xml"}, sitemap.encode())
    routes["/orphan.html"] = html("<html><body><p>found only in the sitemap</p></body></html>")
    return Site("docs", routes)


def trap_pages(path_qs: str) -> Response | None:
    """An endless calendar (next and previous month), a loop of relative links, faceted search."""
    if path_qs == "/":
        links = ["/cal/2031/01", "/loop/", "/shop?color=red"]
    elif path_qs.startswith("/cal/"):
        year, month = (int(x) for x in path_qs.split("/")[2:4])
        n = year * 12 + month - 1
        links = [f"/cal/{m // 12}/{m % 12 + 1:02d}" for m in (n - 1, n + 1)]
    elif path_qs.startswith("/loop/"):
        links = ["a/", "b/"]
    elif path_qs.startswith("/shop?"):
        links = [f"{path_qs}&{facet}=x" for facet in ("size", "brand", "fit")]
    else:
        return None
    return article(path_qs, links, site="trap")


def news_site(news: ChangingPage) -> Site:
    routes = {
        "/": html('<html><body><a href="/news.html">news</a><a href="/a.html">a</a></body></html>'),
        "/a.html": Response(
            200,
            {"Content-Type": "text/html", "ETag": '"a1"', "Last-Modified": LAST_MODIFIED},
            b"<html><body><p>an article that never changes</p></body></html>",
        ),
    }
    return Site("news", routes, news)


def build(ports: Mapping[str, int]) -> dict[str, Site]:
    return {
        "docs": docs(f"http://127.0.0.1:{ports['docs']}"),
        "dups": dups_site(),
        "trap": Site("trap", {"/robots.txt": html("", 404)}, trap_pages),
        "news": news_site(ChangingPage()),
    }


def outcome(farm: WebFarm, urls: list[dict[str, Any]], groups: Any) -> dict[str, Any]:
    """What a crawl ended with, in terms every engine can be compared on: site names for the
    farm's host:port, which differ from run to run, and each URL as its seen key (urls.py
    seen_key), as the crawl knows it: which order of a URL's parameters was linked first,
    and so is stored and requested, depends on which page was fetched first."""

    def site(url: str) -> str:
        url = seen_key(url) or url
        for name in NAMES:
            url = url.replace(farm.host_key(name), name)
        return url

    visited = ("fetched", "not_modified")
    return {
        "visited": {site(u["url"]) for u in urls if u["state"] in visited or u["version"] > 1},
        "excluded": {site(u["url"]): u["reason"] for u in urls if u["state"] == "excluded"},
        "duplicates": {frozenset(site(u) for u in group) for group in groups},
    }


def duplicate_groups(rows: list[tuple[str, int, Any, Any]], owner_url: Mapping[int, str]) -> Any:
    """Each original (or near cluster head) with the URLs judged its duplicates, as sets."""
    groups: dict[str, set[str]] = {}
    for url, _, dup_of, near_of in rows:
        for head in (dup_of, near_of):
            if head is not None:
                groups.setdefault(owner_url[head], {owner_url[head]}).add(url)
    return {frozenset(g) for g in groups.values()}


def local_dedup_rows(out: Path) -> list[tuple[str, int, Any, Any]]:
    db = open_crawl_db(out)
    try:
        return [tuple(r) for r in db.execute("SELECT url, id, dup_of, near_dup_of FROM fetches")]
    finally:
        db.close()


def run_single(tmp_path: Path, config: Path, farm: WebFarm) -> dict[str, Any]:
    out = tmp_path / "single"
    seeds = [farm.url(name, "/") for name in NAMES]
    args = [*cli("crawl", *seeds), "--out", str(out), "--config", str(config), "-q"]
    subprocess.run(args, check=True, timeout=60, stdout=subprocess.DEVNULL)
    rows = local_dedup_rows(out)
    groups = duplicate_groups(rows, {fid: url for url, fid, _, _ in rows})
    return outcome(farm, list(iter_records(out, "urls")), groups)


def run_workers(
    tmp_path: Path, config: Path, farm: WebFarm, cluster: RedisDeployment
) -> dict[str, Any]:
    shared = ["--frontier", cluster.url, "--namespace", "same", "--buckets", str(BUCKETS)]
    seeds = [farm.url(name, "/") for name in NAMES]
    subprocess.run([*cli("seed", *shared), "--config", str(config), "-q", *seeds], check=True)

    def start(i: int) -> subprocess.Popen[bytes]:
        args = [*cli("worker", *shared), "--config", str(config), "--out", str(tmp_path / f"w{i}")]
        return subprocess.Popen([*args, "-q"], stdout=subprocess.DEVNULL)

    workers = [start(i) for i in range(WORKERS)]
    # Kill worker 0 once the crawl is under way, then start it again on its directory.
    wait_for(lambda: len([r for n in NAMES for r in farm.requests_for(n)]) > 30, 30, "pages")
    os.kill(workers[0].pid, signal.SIGKILL)
    workers[0].wait(timeout=10)
    time.sleep(0.3)
    workers[0] = start(0)
    for worker in workers:
        assert worker.wait(timeout=90) == 0
    frontier = RedisFrontier(connect(cluster.url), namespace="same", buckets=BUCKETS, epoch=0)
    try:
        urls = list(iter_frontier_records(frontier, "urls"))
        events = completion_events(frontier)
    finally:
        frontier.close()
    rows = [r for i in range(WORKERS) for r in local_dedup_rows(tmp_path / f"w{i}")]
    groups = duplicate_groups(rows, {u["url_id"]: u["url"] for u in urls})
    per_visit = [(e["id"], e["version"]) for e in events]
    assert len(per_visit) == len(set(per_visit))  # one event per (url, version)
    return outcome(farm, urls, groups)


@pytest.mark.slow
def test_crawl_and_workers_on_a_cluster_end_the_same(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    results = {}
    for engine in ("sqlite", "workers"):
        with WebFarm.deferred(NAMES, build) as farm:
            if engine == "sqlite":
                results[engine] = run_single(tmp_path, config, farm)
            else:
                results[engine] = run_workers(tmp_path, config, farm, cluster)
            farm.wait_idle()
            for name in NAMES:
                assert_polite(farm.requests_for(name), MIN_DELAY)
            paths = {n: list(farm.requests_for(n)) for n in NAMES}
        # Both engines: the orphan came from the sitemap, nothing private was requested, the
        # traps stopped, and unchanged pages were revalidated with 304s.
        docs_paths = {r.path_qs for r in paths["docs"]}
        assert "/orphan.html" in docs_paths
        assert "/private/secret.html" not in docs_paths
        assert len({r.path_qs for r in paths["trap"]}) < 60
        assert [r.status for r in paths["news"] if r.path_qs == "/a.html"].count(304) >= 2
    single, workers = results["sqlite"], results["workers"]
    assert single["visited"] == workers["visited"]
    assert single["excluded"] == workers["excluded"]
    assert single["duplicates"] == workers["duplicates"]
    assert {"depth", "path_repeat", "query_params", "robots"} <= set(single["excluded"].values())
    assert len(single["duplicates"]) == 2  # the exact group and the near cluster

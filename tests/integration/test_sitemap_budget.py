"""A host's sitemap budget (frontier/sitemap_budget.py), judged from the server's log on `crawlspace
crawl` and on four workers over a 3-master Redis Cluster: a robots.txt naming 30 sitemaps, the
first an index of 2,000, every one a 404, costs the host no more than max_sitemaps_per_host
sitemap requests, and its pages are fetched."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crawlspace.ops.export import iter_records
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import iter_frontier_records
from tests import faultweb
from tests.integration.test_faults import FaultWeb, by_site
from tests.integration.test_faults_workers import wait_all
from tests.redis_servers import RedisDeployment
from tests.webs import crawl_command
from tests.workers import cli

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


def crawl(web: FaultWeb, tmp: Path) -> dict[str, dict[str, Any]]:
    out = tmp / "crawl"
    with (tmp / "crawl.stderr").open("wb") as stderr:
        proc = subprocess.Popen(
            crawl_command(out, CONFIG, [web.url("sitemapflood")]),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    wait_all([proc], TIMEOUT)
    assert proc.returncode == 0, (tmp / "crawl.stderr").read_text()
    return {r["url"]: r for r in iter_records(out, "urls")}


def workers(web: FaultWeb, tmp: Path, cluster: RedisDeployment) -> dict[str, dict[str, Any]]:
    config = tmp / "crawl.toml"
    config.write_text(CONFIG)
    shared = ["--frontier", cluster.url, "--namespace", "sitemaps", "--buckets", str(BUCKETS)]
    seed = [*cli("seed", *shared), "--config", str(config), "-q", web.url("sitemapflood")]
    subprocess.run(seed, check=True, timeout=30, stdout=subprocess.DEVNULL)
    procs, logs = [], [tmp / f"w{i}.stderr" for i in range(WORKERS)]
    for i, log in enumerate(logs):
        args = [*cli("worker", *shared), "--config", str(config), "--out", str(tmp / f"w{i}")]
        with log.open("wb") as sink:
            procs.append(subprocess.Popen([*args, "-q"], stdout=subprocess.DEVNULL, stderr=sink))
    wait_all(procs, TIMEOUT)
    assert [p.returncode for p in procs] == [0] * WORKERS, "".join(log.read_text() for log in logs)
    frontier = RedisFrontier(connect(cluster.url), namespace="sitemaps", buckets=BUCKETS, epoch=0)
    try:
        return {u["url"]: u for u in iter_frontier_records(frontier, "urls")}
    finally:
        frontier.close()


@pytest.fixture(scope="module", params=["crawl", "workers"])
def crawled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[FaultWeb, dict[str, dict[str, Any]]]]:
    tmp = tmp_path_factory.mktemp(f"sitemap-budget-{request.param}")
    web = FaultWeb(tmp / "server.log")
    try:
        if request.param == "crawl":
            urls = crawl(web, tmp)
        else:
            urls = workers(web, tmp, request.getfixturevalue("cluster"))
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
    pages = {r["path"] for r in rows if r["status"] == 200 and not r["path"].endswith(".xml")}
    assert pages == {"/", "/robots.txt", *(f"/p{i}" for i in range(faultweb.SITEMAP_PAGES))}
    over = [u for u, r in urls.items() if r["reason"] == "sitemap_budget"]
    index_room = CAP - faultweb.SITEMAP_LINES
    assert len(over) == faultweb.SITEMAP_INDEX_SIZE - index_room
    assert all(r["state"] == "excluded" for u, r in urls.items() if u in over)

"""The fault-heavy web of tests/faultweb.py crawled by four `crawlspace worker` processes over a
real 3-master Redis Cluster, judged as tests/integration/test_faults.py judges `crawlspace crawl`
on SQLite: from the server's own log (across all workers together) and the shared frontier.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from crawlspace.ops.export import iter_records
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import iter_frontier_records
from tests import faultweb
from tests.integration.test_faults import (
    CLOCK_SLACK,
    FACTOR,
    MAX_BODY,
    MAX_THROTTLED_SECONDS,
    MIN_DELAY,
    RSS_LIMIT_MB,
    FaultWeb,
    assert_retry_after_windows_kept,
    by_site,
    config_text,
)
from tests.redis_servers import RedisDeployment
from tests.workers import cli, wait_all

pytestmark = pytest.mark.slow  # fault-heavy crawls (README: the quick subset)

WORKERS = 4
BUCKETS = 16
NAMESPACE = "faults-workers"
TIMEOUT = 45.0  # the crawl takes ~10 s: the stuck host's streak of waits is 6 s


@dataclass
class WorkerCrawl:
    web: FaultWeb
    outs: list[Path]
    urls: dict[str, dict[str, Any]]
    events: list[dict[str, Any]]
    queued: int
    in_flight: int
    stderr: str
    rss: list[float]

    def state(self, site: str, path: str) -> tuple[str, str | None]:
        record = self.urls[self.web.url(site, path)]
        return record["state"], record["reason"]

    def fetches(self) -> dict[str, dict[str, Any]]:
        return {f["url"]: f for out in self.outs for f in iter_records(out, "fetches")}


def run_workers(web: FaultWeb, tmp: Path, cluster: RedisDeployment) -> WorkerCrawl:
    config = tmp / "crawl.toml"
    config.write_text(config_text(web))
    shared = ["--frontier", cluster.url, "--namespace", NAMESPACE, "--buckets", str(BUCKETS)]
    seeds = [web.url(site) for site in faultweb.SITES]
    seed = [*cli("seed", *shared), "--config", str(config), "-q", *seeds]
    subprocess.run(seed, check=True, timeout=30, stdout=subprocess.DEVNULL)
    outs = [tmp / f"w{i}" for i in range(WORKERS)]
    logs = [tmp / f"w{i}.stderr" for i in range(WORKERS)]
    procs = []
    for out, log in zip(outs, logs, strict=True):
        args = [*cli("worker", *shared), "--config", str(config), "--out", str(out), "-q"]
        with log.open("wb") as sink:
            procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=sink))
    rss = wait_all(procs, TIMEOUT)
    stderr = "".join(log.read_text() for log in logs)
    assert [p.returncode for p in procs] == [0] * WORKERS, stderr
    frontier = RedisFrontier(connect(cluster.url), namespace=NAMESPACE, buckets=BUCKETS, epoch=0)
    try:
        urls = {u["url"]: u for u in iter_frontier_records(frontier, "urls")}
        events = list(iter_frontier_records(frontier, "events"))
        queued, in_flight = frontier.queued(), frontier.in_flight()
    finally:
        frontier.close()
    return WorkerCrawl(web, outs, urls, events, queued, in_flight, stderr, rss)


@pytest.fixture(scope="module")
def crawled(
    tmp_path_factory: pytest.TempPathFactory, cluster: RedisDeployment
) -> Iterator[WorkerCrawl]:
    tmp = tmp_path_factory.mktemp("faults-workers")
    web = FaultWeb(tmp / "server.log")
    try:
        crawl = run_workers(web, tmp, cluster)
        web.settle()
        yield crawl
    finally:
        web.stop()


def test_every_worker_took_part(crawled: WorkerCrawl) -> None:
    """The audits below judge four workers together, not one that happened to do it all."""
    fetched = [sum(1 for _ in iter_records(out, "fetches")) for out in crawled.outs]
    assert sum(1 for n in fetched if n) >= 2, fetched


def test_politeness_holds_on_every_faulty_host(crawled: WorkerCrawl) -> None:
    rows_by_site = by_site(crawled.web.requests())
    assert set(rows_by_site) == set(faultweb.SITES) - {"private"}
    for site, rows in rows_by_site.items():
        assert rows[0]["path"] == "/robots.txt", site
        # One request in flight per host, and each a gap after the previous one ended.
        for prev, nxt in pairwise(rows):
            assert nxt["start"] >= prev["end"] + MIN_DELAY - CLOCK_SLACK, (site, prev, nxt)


def test_no_request_inside_a_retry_after_window(crawled: WorkerCrawl) -> None:
    rows = by_site(crawled.web.requests())["throttle"]
    assert_retry_after_windows_kept(rows)
    assert crawled.state("throttle", "/a") == ("fetched", None)
    assert crawled.state("throttle", "/b") == ("fetched", None)
    # Throttled more often than max_attempts (3): waited out each time, then fetched.
    paths = [r["path"] for r in rows]
    assert paths.count("/c") == faultweb.THROTTLED_TIMES + 1
    assert crawled.state("throttle", "/c") == ("fetched", None)


def test_a_host_that_keeps_throttling_is_given_up_on_saying_so(crawled: WorkerCrawl) -> None:
    rows = [r for r in by_site(crawled.web.requests())["stuck"] if r["path"] == "/forever"]
    assert all(r["status"] == 429 for r in rows)
    assert crawled.state("stuck", "/forever") == ("failed", "throttled")
    # The streak's start is a host note in the shared frontier: whichever worker got each
    # answer, the waits add up to max_throttled_seconds, not max_throttled_attempts (100).
    streak = rows[-1]["end"] - rows[0]["end"]
    assert MAX_THROTTLED_SECONDS - 0.1 <= streak < MAX_THROTTLED_SECONDS + 3.0
    assert len(rows) <= MAX_THROTTLED_SECONDS / faultweb.STUCK_RETRY_AFTER + 2
    assert "has asked us to wait for" in crawled.stderr
    assert "max_throttled_seconds 6.0" in crawled.stderr


def test_robots_redirect_hops_are_requests_like_any_other(crawled: WorkerCrawl) -> None:
    rows = by_site(crawled.web.requests())["redirects"]
    assert [r["path"] for r in rows[:3]] == ["/robots.txt", "/robots-hop", "/robots-final"]
    for prev, nxt in pairwise(rows[:3]):
        assert nxt["start"] >= prev["end"] + MIN_DELAY - CLOCK_SLACK, (prev, nxt)


def test_server_errors_retry_then_fail_with_the_reason(crawled: WorkerCrawl) -> None:
    paths = [r["path"] for r in by_site(crawled.web.requests())["unavail"]]
    assert paths.count("/x") == 3
    assert paths.count("/y") == 3
    assert crawled.state("unavail", "/x") == ("failed", "http_503")
    assert crawled.state("unavail", "/y") == ("failed", "http_500")
    assert crawled.state("unavail", "/ok") == ("fetched", None)


def test_slow_host_gap_scales_with_fetch_time(crawled: WorkerCrawl) -> None:
    rows = [r for r in by_site(crawled.web.requests())["slow"] if r["path"] != "/robots.txt"]
    assert len(rows) >= 5
    for prev, nxt in pairwise(rows):
        assert nxt["start"] - prev["end"] >= FACTOR * faultweb.SLOW_DELAY - CLOCK_SLACK


def test_redirect_loops_and_long_chains_end(crawled: WorkerCrawl) -> None:
    web = crawled.web
    paths = [r["path"] for r in by_site(web.requests())["redirects"]]
    assert paths.count("/loop-a") == 1
    assert paths.count("/loop-b") == 1
    assert [p for p in paths if p.startswith("/hop")] == [f"/hop{i}" for i in range(6)]
    assert crawled.state("redirects", "/hop5") == ("redirected", "redirect_limit")
    assert web.url("redirects", "/hop6") not in crawled.urls
    fetches = crawled.fetches()
    assert fetches[web.url("redirects", "/loop-a")]["redirect_to"] == web.url(
        "redirects", "/loop-b"
    )


def test_resets_and_drips_fail_within_the_timeout(crawled: WorkerCrawl) -> None:
    rows = by_site(crawled.web.requests())["broken"]
    drips = [r for r in rows if r["path"] == "/drip"]
    assert len(drips) == 3
    assert all(r["sent"] < 100 + 200 for r in drips), "the drip was cut before it finished"
    # total_timeout (1 s) cuts each drip, whichever worker holds it.
    assert all(r["end"] - r["start"] < 1.0 + 0.5 for r in drips), drips
    assert crawled.state("broken", "/reset")[0] == "failed"
    assert crawled.state("broken", "/drip") == ("failed", "total_timeout")


def test_bodies_and_bombs_stay_under_the_limits(crawled: WorkerCrawl) -> None:
    fetches = crawled.fetches()
    for path in ("/huge", "/gzbomb", "/brbomb"):
        record = fetches[crawled.web.url("big", path)]
        assert record["truncated"], path
        assert record["bytes"] <= MAX_BODY, path
    huge = next(r for r in by_site(crawled.web.requests())["big"] if r["path"] == "/huge")
    assert huge["sent"] < 16 * 1024 * 1024, "the crawler stopped reading long before 50 MB"
    assert max(crawled.rss) < RSS_LIMIT_MB, crawled.rss


def test_hostile_content_is_handled(crawled: WorkerCrawl) -> None:
    for path in ("/malformed", "/pdf", "/latin1", "/sjis", "/png-html"):
        assert crawled.state("weird", path) == ("fetched", None), path
    for path in ("/from-malformed", "/latin1-target", "/sjis-target"):
        assert crawled.state("weird", path)[0] == "fetched", path
    assert crawled.web.url("weird", "/never-followed") not in crawled.urls


def test_private_address_is_refused_without_a_connection(crawled: WorkerCrawl) -> None:
    assert not [r for r in crawled.web.requests() if r["site"] == "private"]
    assert crawled.state("private", "/") == ("excluded", "blocked_address")


def test_one_event_per_url_and_version(crawled: WorkerCrawl) -> None:
    assert (crawled.queued, crawled.in_flight) == (0, 0)
    per_visit = Counter((e["url"], e["version"]) for e in crawled.events)
    assert per_visit
    assert max(per_visit.values()) == 1, [k for k, n in per_visit.items() if n > 1]
    terminal = {u for u, r in crawled.urls.items() if r["state"] not in ("queued", "leased")}
    assert terminal == set(crawled.urls)
    assert {e["url"] for e in crawled.events} == terminal

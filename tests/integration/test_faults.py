"""A fault-heavy crawl of tests/faultweb.py, judged from the server's log and the crawl's export."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from crawlspace.ops.export import iter_records
from tests import faultweb
from tests.webs import crawl_command

pytestmark = pytest.mark.slow  # fault-heavy crawls (README: the quick subset)

MIN_DELAY = 0.05
FACTOR = 2.0
CLOCK_SLACK = 0.01
MAX_BODY = 1024 * 1024
MAX_DECODED = 4 * 1024 * 1024
RSS_LIMIT_MB = 300
MAX_THROTTLED_SECONDS = 6.0  # longer than the throttle site's streaks: it is fetched


class FaultWeb:
    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faultweb", str(log)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.ports: dict[str, int] = json.loads(self.proc.stdout.readline())["ports"]

    def url(self, site: str, path: str = "/") -> str:
        if site == "private":
            return f"http://private.test:{self.ports[site]}{path}"
        return f"http://127.0.0.1:{self.ports[site]}{path}"

    def settle(self, quiet: float = 0.5, limit: float = 10.0) -> None:
        """Wait until the log stops growing: a handler logs when it notices the client left."""
        deadline = time.monotonic() + limit
        size = -1
        while time.monotonic() < deadline and size != self.log.stat().st_size:
            size = self.log.stat().st_size
            time.sleep(quiet)

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def config_text(web: FaultWeb) -> str:
    return f"""
[crawl]
allow_nets = ["127.0.0.1/32"]
resolve = ["private.test:{web.ports["private"]}:127.0.0.2"]
scope = "any"
min_delay = {MIN_DELAY}
delay_factor = {FACTOR}
concurrency = 16
total_timeout = 1.0
read_timeout = 1.0
max_body_bytes = {MAX_BODY}
max_decompressed_bytes = {MAX_DECODED}
max_attempts = 3
max_throttled_attempts = 100
max_throttled_seconds = {MAX_THROTTLED_SECONDS}
backoff_base = 0.2
retry_delay = 0.1
lease_grace = 2.0
robots_retry_delay = 0.5
"""


def run_crawl(
    web: FaultWeb, out: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, float]:
    """Crawl every fault site; return (exit code, peak RSS in MB) of the crawler process."""
    seeds = [web.url(site) for site in faultweb.SITES]
    with (out.parent / f"{out.name}.stderr").open("ab") as stderr:
        proc = subprocess.Popen(
            crawl_command(out, config_text(web), seeds),
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FaultWeb, Path, float]]:
    tmp = tmp_path_factory.mktemp("faults")
    web = FaultWeb(tmp / "server.log")
    out = tmp / "crawl"
    code, rss = run_crawl(web, out)
    assert code == 0
    web.settle()
    yield web, out, rss
    web.stop()


def by_site(requests: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    sites: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in requests:
        if "start" in r:
            sites[r["site"]].append(r)
    for rows in sites.values():
        rows.sort(key=lambda r: r["start"])
    return sites


def states(out: Path) -> dict[str, tuple[str, str | None]]:
    return {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}


def test_politeness_holds_on_every_faulty_host(crawled: tuple[FaultWeb, Path, float]) -> None:
    web, _, _ = crawled
    for site, rows in by_site(web.requests()).items():
        assert rows[0]["path"] == "/robots.txt", site
        for prev, nxt in pairwise(rows):
            assert nxt["start"] >= prev["end"] + MIN_DELAY - CLOCK_SLACK, (site, prev, nxt)


def assert_retry_after_windows_kept(rows: list[dict[str, Any]]) -> None:
    """No request to the throttling site inside a Retry-After window it sent (in seconds, on
    the server's monotonic clock, and as an HTTP-date, on the wall clock)."""
    windows = [(r["end"], r["end"] + r["retry_after"]) for r in rows if "retry_after" in r]
    dates = [(r["end_wall"], r["retry_until"]) for r in rows if "retry_until" in r]
    assert windows
    assert dates
    for start, end in windows:
        assert not [r for r in rows if start < r["start"] < end - CLOCK_SLACK]
    for start_wall, until in dates:
        assert not [r for r in rows if start_wall < r["start_wall"] < until - CLOCK_SLACK]


def test_no_request_inside_a_retry_after_window(crawled: tuple[FaultWeb, Path, float]) -> None:
    web, out, _ = crawled
    rows = by_site(web.requests())["throttle"]
    assert_retry_after_windows_kept(rows)
    got = states(out)
    assert got[web.url("throttle", "/a")] == ("fetched", None)
    assert got[web.url("throttle", "/b")] == ("fetched", None)
    # Throttled more often than max_attempts (3): waited out each time, then fetched.
    paths = [r["path"] for r in rows]
    assert paths.count("/c") == faultweb.THROTTLED_TIMES + 1
    assert got[web.url("throttle", "/c")] == ("fetched", None)


def test_a_host_that_keeps_throttling_is_given_up_on_saying_so(
    crawled: tuple[FaultWeb, Path, float],
) -> None:
    web, out, _ = crawled
    rows = [r for r in by_site(web.requests())["stuck"] if r["path"] == "/forever"]
    assert all(r["status"] == 429 for r in rows)
    assert states(out)[web.url("stuck", "/forever")] == ("failed", "throttled")
    # Each Retry-After (2 s) waited out, until the host had asked us to wait for 6 s in a
    # row: then one more answer, and the URL failed. max_throttled_attempts (100) never bound.
    streak = rows[-1]["end"] - rows[0]["end"]
    assert MAX_THROTTLED_SECONDS - 0.1 <= streak < MAX_THROTTLED_SECONDS + 3.0
    assert len(rows) <= MAX_THROTTLED_SECONDS / faultweb.STUCK_RETRY_AFTER + 2
    stderr = (out.parent / f"{out.name}.stderr").read_text()
    assert "has asked us to wait for" in stderr
    assert "max_throttled_seconds 6.0" in stderr


def test_robots_redirect_hops_are_requests_like_any_other(
    crawled: tuple[FaultWeb, Path, float],
) -> None:
    web, _, _ = crawled
    rows = by_site(web.requests())["redirects"]
    assert [r["path"] for r in rows[:3]] == ["/robots.txt", "/robots-hop", "/robots-final"]
    # The politeness gap between hops is checked with every other request of the site
    # (test_politeness_holds_on_every_faulty_host); here, that the chain was followed to rules.
    for prev, nxt in pairwise(rows[:3]):
        assert nxt["start"] >= prev["end"] + MIN_DELAY - CLOCK_SLACK, (prev, nxt)


def test_server_errors_retry_then_fail_with_the_reason(
    crawled: tuple[FaultWeb, Path, float],
) -> None:
    web, out, _ = crawled
    paths = [r["path"] for r in by_site(web.requests())["unavail"]]
    assert paths.count("/x") == 3
    assert paths.count("/y") == 3
    got = states(out)
    assert got[web.url("unavail", "/x")] == ("failed", "http_503")
    assert got[web.url("unavail", "/y")] == ("failed", "http_500")
    assert got[web.url("unavail", "/ok")] == ("fetched", None)


def test_slow_host_gap_scales_with_fetch_time(crawled: tuple[FaultWeb, Path, float]) -> None:
    web, _, _ = crawled
    rows = [r for r in by_site(web.requests())["slow"] if r["path"] != "/robots.txt"]
    assert len(rows) >= 5
    for prev, nxt in pairwise(rows):
        assert nxt["start"] - prev["end"] >= FACTOR * faultweb.SLOW_DELAY - CLOCK_SLACK


def test_redirect_loops_and_long_chains_end(crawled: tuple[FaultWeb, Path, float]) -> None:
    web, out, _ = crawled
    paths = [r["path"] for r in by_site(web.requests())["redirects"]]
    assert paths.count("/loop-a") == 1
    assert paths.count("/loop-b") == 1
    assert [p for p in paths if p.startswith("/hop")] == [f"/hop{i}" for i in range(6)]
    got = states(out)
    assert got[web.url("redirects", "/hop5")] == ("redirected", "redirect_limit")
    assert web.url("redirects", "/hop6") not in got
    fetches = {f["url"]: f for f in iter_records(out, "fetches")}
    assert fetches[web.url("redirects", "/loop-a")]["redirect_to"] == web.url(
        "redirects", "/loop-b"
    )


def test_resets_and_drips_fail_within_the_timeout(crawled: tuple[FaultWeb, Path, float]) -> None:
    web, out, _ = crawled
    rows = by_site(web.requests())["broken"]
    drips = [r for r in rows if r["path"] == "/drip"]
    assert len(drips) == 3
    assert all(r["sent"] < 100 + 200 for r in drips), "the drip was cut before it finished"
    got = states(out)
    assert got[web.url("broken", "/reset")][0] == "failed"
    assert got[web.url("broken", "/drip")] == ("failed", "total_timeout")


def test_bodies_and_bombs_stay_under_the_limits(crawled: tuple[FaultWeb, Path, float]) -> None:
    web, out, rss = crawled
    fetches = {f["url"]: f for f in iter_records(out, "fetches")}
    for path in ("/huge", "/gzbomb", "/brbomb"):
        record = fetches[web.url("big", path)]
        assert record["truncated"], path
        assert record["bytes"] <= MAX_BODY, path
    huge = next(r for r in by_site(web.requests())["big"] if r["path"] == "/huge")
    assert huge["sent"] < 16 * 1024 * 1024, "the crawler stopped reading long before 50 MB"
    assert rss < RSS_LIMIT_MB


def test_hostile_content_is_handled(crawled: tuple[FaultWeb, Path, float]) -> None:
    web, out, _ = crawled
    got = states(out)
    for path in ("/malformed", "/pdf", "/latin1", "/sjis", "/png-html"):
        assert got[web.url("weird", path)] == ("fetched", None), path
    assert got[web.url("weird", "/from-malformed")][0] == "fetched"
    assert got[web.url("weird", "/latin1-target")][0] == "fetched"
    assert got[web.url("weird", "/sjis-target")][0] == "fetched"
    assert web.url("weird", "/never-followed") not in got, "image/png is not parsed as HTML"


def test_private_address_is_refused_without_a_connection(
    crawled: tuple[FaultWeb, Path, float],
) -> None:
    web, out, _ = crawled
    assert not [r for r in web.requests() if r["site"] == "private"]
    urls = {r["url"]: r for r in iter_records(out, "urls")}
    # robots.txt could not be fetched (refused), so the host's pages are never requested either.
    assert (urls[web.url("private")]["state"], urls[web.url("private")]["reason"]) == (
        "excluded",
        "blocked_address",
    )


def test_one_event_per_url_and_version(crawled: tuple[FaultWeb, Path, float]) -> None:
    _, out, _ = crawled
    events = list(iter_records(out, "events"))
    keys = [(e["url"], e["version"]) for e in events]
    assert len(keys) == len(set(keys))
    terminal = {u for u, (state, _) in states(out).items() if state not in ("queued", "leased")}
    assert {e["url"] for e in events} == terminal


def test_kill_9_repeatedly_during_a_fault_heavy_crawl(tmp_path: Path) -> None:
    web = FaultWeb(tmp_path / "server.log")
    out = tmp_path / "crawl"
    seed = int(os.environ.get("CRAWLSPACE_KILL_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    context = f"kill seed {seed}"
    try:
        command = crawl_command(out, config_text(web), (web.url(s) for s in faultweb.SITES))
        for _ in range(3):
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
            time.sleep(rng.uniform(1.0, 3.0))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        code, _ = run_crawl(web, out)
        assert code == 0, context
        web.settle()
        requests = web.requests()
    finally:
        web.stop()
    for site, rows in by_site(requests).items():
        for prev, nxt in pairwise(rows):
            assert nxt["start"] >= prev["end"] + MIN_DELAY - CLOCK_SLACK, (context, site, nxt)
    throttle = by_site(requests)["throttle"]
    for row in (r for r in throttle if "retry_after" in r):
        window = (row["end"], row["end"] + row["retry_after"] - CLOCK_SLACK)
        assert not [r for r in throttle if window[0] < r["start"] < window[1]], context
    urls = states(out)
    assert all(state not in ("queued", "leased") for state, _ in urls.values()), context
    events = list(iter_records(out, "events"))
    keys = [(e["url"], e["version"]) for e in events]
    assert len(keys) == len(set(keys)), context
    assert {e["url"] for e in events} == set(urls), context

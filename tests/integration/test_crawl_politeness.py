"""End-to-end crawls of a real multi-host web on loopback, judged from the server's request log."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import LoggedRequest, WebFarm, html_site, max_concurrency, min_gap
from crawlspace.ops.export import iter_records
from tests.webs import crawl_command, linked_pages, site_with_robots, slow_site, status_site

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

MIN_DELAY = 0.1
CLOCK_SLACK = 0.01
FACTOR = 10.0
SLOW_DELAY = 0.02


TEST_CONFIG = f"""
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = {MIN_DELAY}
delay_factor = {FACTOR}
concurrency = 16
robots_retry_delay = 0.2
robots_max_attempts = 2
total_timeout = 10.0
scope = "any"
"""


def crawl_in_subprocess(out: Path, seeds: list[str]) -> None:
    """The crawler runs in its own process so that the server's timestamps (taken in this
    process) are not delayed by the crawler holding the GIL."""
    subprocess.run(
        crawl_command(out, TEST_CONFIG, seeds),
        check=True,
        timeout=120,
    )


def assert_polite(requests: list[LoggedRequest], min_delay: float) -> None:
    """One request at a time, and at least ``min_delay`` from the end of one to the next start.

    The server stamps a request's end in Python after its socket write returns; on a loaded
    machine that stamp can lag the bytes on the wire by a few milliseconds, which shortens the
    measured gap. ``CLOCK_SLACK`` covers that lag only: a crawler that did not wait would show
    gaps near zero. Start-to-start distances carry no such lag and are held to the full delay.
    """
    ordered = sorted(requests, key=lambda r: r.started_at)
    overlapping = [
        (f"{a.path_qs} {a.started_at:.3f}-{a.ended_at:.3f}", f"{b.path_qs} {b.started_at:.3f}")
        for a, b in pairwise(ordered)
        if b.started_at < a.ended_at
    ]
    assert max_concurrency(requests) <= 1, overlapping
    for prev, nxt in pairwise(ordered):
        assert nxt.started_at - prev.ended_at >= min_delay - CLOCK_SLACK, (prev, nxt)
        assert nxt.started_at - prev.started_at >= min_delay, (prev, nxt)


@pytest.fixture(scope="module")
def farm_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebFarm, Path]]:
    out = tmp_path_factory.mktemp("crawl")
    rules_pages = linked_pages(12)
    rules_pages["/p0.html"] += (
        '<a href="/private/secret.html">s</a><a href="/private/ok.html">o</a>'
    )
    rules_pages["/private/ok.html"] = "<html><body>allowed inside a disallowed folder</body></html>"
    sites = {
        "rules": html_site(
            "rules",
            rules_pages,
            robots="User-agent: *\nAllow: /private/ok.html\nDisallow: /private/\n",
        ),
        "open": site_with_robots("open", 15, None),
        "down": status_site("down", 503),
        "slow": slow_site("slow", 6, SLOW_DELAY),
    }
    farm = WebFarm(sites)
    farm.start()
    seeds = [farm.url(name, "/") for name in sites]
    crawl_in_subprocess(out, seeds)
    assert farm.wait_idle()
    yield farm, out
    farm.stop()


def test_one_request_in_flight_per_host_and_gaps_held(farm_crawl: tuple[WebFarm, Path]) -> None:
    farm, _ = farm_crawl
    for name in farm.names:
        requests = farm.requests_for(name)
        assert requests, name
        assert_polite(requests, MIN_DELAY)
    gap = min_gap(farm.requests_for("open"))
    assert gap is not None
    assert gap >= MIN_DELAY - CLOCK_SLACK


def test_robots_txt_is_the_first_request_on_every_host(farm_crawl: tuple[WebFarm, Path]) -> None:
    farm, _ = farm_crawl
    for name in farm.names:
        first = min(farm.requests_for(name), key=lambda r: r.started_at)
        assert first.path_qs == "/robots.txt", name


def test_disallowed_urls_are_never_requested(farm_crawl: tuple[WebFarm, Path]) -> None:
    farm, out = farm_crawl
    paths = farm.paths_for("rules")
    assert "/private/secret.html" not in paths
    assert "/private/ok.html" in paths
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[farm.url("rules", "/private/secret.html")] == ("excluded", "robots")


def test_host_with_503_robots_gets_nothing_else(farm_crawl: tuple[WebFarm, Path]) -> None:
    farm, out = farm_crawl
    paths = farm.paths_for("down")
    assert set(paths) == {"/robots.txt"}
    assert len(paths) == 2  # robots_max_attempts
    root = farm.url("down", "/")
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[root] == ("excluded", "robots_unavailable")


def test_host_with_404_robots_is_crawled_fully(farm_crawl: tuple[WebFarm, Path]) -> None:
    farm, _ = farm_crawl
    fetched = set(farm.paths_for("open")) - {"/robots.txt"}
    assert fetched == set(linked_pages(15))


def test_slow_host_gap_scales_with_fetch_time(farm_crawl: tuple[WebFarm, Path]) -> None:
    farm, _ = farm_crawl
    # Every response of this host takes >= 20 ms, so each gap must be >= 10 x 20 ms.
    requests = sorted(farm.requests_for("slow"), key=lambda r: r.started_at)
    assert len(requests) >= 5
    for prev, nxt in pairwise(requests):
        assert nxt.started_at - prev.ended_at >= FACTOR * SLOW_DELAY - CLOCK_SLACK
    assert min(r.ended_at - r.started_at for r in requests) >= SLOW_DELAY


def test_every_fetch_has_a_record_and_export_round_trips(farm_crawl: tuple[WebFarm, Path]) -> None:
    farm, out = farm_crawl
    fetches = list(iter_records(out, "fetches"))
    served = sum(1 for r in farm.requests if r.path_qs != "/robots.txt")
    assert len(fetches) == served
    by_url = {f["url"]: f for f in fetches}
    page = by_url[farm.url("open", "/p3.html")]
    assert page["status"] == 200
    assert page["content_type"].startswith("text/html")
    assert page["warc_file"].endswith(".warc.gz")
    links = [link for link in iter_records(out, "links") if link["from_url"] == page["url"]]
    assert {link["to_url"] for link in links} >= {farm.url("open", "/p4.html")}


def test_the_uvloop_event_loop_crawls_as_politely(tmp_path: Path) -> None:
    pytest.importorskip("uvloop")
    sites = {"open": site_with_robots("open", 8, None), "slow": slow_site("slow", 4, SLOW_DELAY)}
    farm = WebFarm(sites)
    farm.start()
    try:
        out = tmp_path / "crawl"
        config = TEST_CONFIG + 'event_loop = "uvloop"\n'
        seeds = [farm.url(name, "/") for name in sites]
        subprocess.run(crawl_command(out, config, seeds), check=True, timeout=120)
        assert farm.wait_idle()
        for name in sites:
            requests = farm.requests_for(name)
            assert min(requests, key=lambda r: r.started_at).path_qs == "/robots.txt"
            assert_polite(requests, MIN_DELAY)
        fetched = [r for r in iter_records(out, "urls") if r["state"] == "fetched"]
        assert len(fetched) == len(farm.paths_for("open")) + len(farm.paths_for("slow")) - 2
    finally:
        farm.stop()

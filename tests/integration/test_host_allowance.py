"""Host allowances, judged by the servers' logs: three hosts of 30 chained pages, crawled at the
same politeness gap. On "clean" every page is its own; on "copies" every page after the first
has the same text (exact duplicates); on "broken" every page also links three missing pages
(404s). Once a discovery window has shown it, a wasteful host is asked at a quarter of its
politeness rate (max_host_slowdown 4), the clean one at its limit, and every host is crawled to
its end, never faster than politeness. `crawlspace crawl`, and two `crawlspace worker`
processes on a 3-master cluster."""

from __future__ import annotations

import statistics
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from crawlspace.demo.request_log import LoggedRequest
from crawlspace.demo.webfarm import Site, WebFarm, html
from tests.integration.test_crawl_politeness import assert_polite
from tests.redis_servers import RedisDeployment
from tests.trapweb import WORDS
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PAGES = 30
GAP = 0.05
WINDOW = 5
CONFIG = (
    "[crawl]\nallow_nets = ['127.0.0.0/8']\nscope = 'any'\n"
    f"min_delay = {GAP}\ndelay_factor = 0.0\nconcurrency = 6\nmax_depth = 100\n"
    f"discovery_window = {WINDOW}\nmax_host_slowdown = 4.0\n"
)


def _own_text(n: int) -> str:
    return " ".join(WORDS[(n * 7 + k * k) % len(WORDS)] for k in range(1, 40))


def chain(name: str, *, copies: bool = False, broken: bool = False) -> Site:
    routes = {"/robots.txt": html("", 404)}
    for n in range(PAGES):
        text = _own_text(0) if copies else _own_text(n)
        links = "".join(f'<a href="/p{m}.html">more</a>' for m in (n + 1, n + 2) if m < PAGES)
        if broken:
            links += "".join(f'<a href="/missing{n}-{k}.html">more</a>' for k in range(3))
        path = "/" if n == 0 else f"/p{n}.html"
        routes[path] = html(f"<html><body><p>{text}</p>{links}</body></html>")
    routes["/p0.html"] = routes["/"]
    return Site(name, routes)


def farm() -> WebFarm:
    return WebFarm(
        {
            "clean": chain("clean"),
            "copies": chain("copies", copies=True),
            "broken": chain("broken", broken=True),
        }
    )


def median_gap(log: list[LoggedRequest]) -> float:
    """Start to start, past the first two windows (before them nothing was measured)."""
    starts = sorted(r.started_at for r in log)[2 * WINDOW + 1 :]
    return statistics.median(b - a for a, b in pairwise(starts))


def assert_allowances(sites: WebFarm) -> None:
    gaps = {}
    for name in ("clean", "copies", "broken"):
        log = sites.requests_for(name)
        assert_polite(log, GAP)
        pages = {r.path_qs for r in log if r.path_qs.startswith("/p") or r.path_qs == "/"}
        assert len(pages) == PAGES, name  # every page, however slowly
        gaps[name] = median_gap(log)
    # Slowed 4x, a host waits at least 4 x GAP from a response's end to its next request;
    # at its limit it waits GAP (a loaded machine adds a little to every gap).
    assert gaps["clean"] < 3 * GAP, gaps
    assert gaps["copies"] > 3.5 * GAP, gaps
    assert gaps["broken"] > 3.5 * GAP, gaps


def test_a_crawl_slows_hosts_that_waste_its_visits(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    with farm() as sites:
        seeds = [sites.url(name, "/") for name in ("clean", "copies", "broken")]
        command = [*cli("crawl", *seeds), "--out", str(tmp_path / "out")]
        subprocess.run([*command, "--config", str(config), "-q"], check=True, timeout=120)
        sites.wait_idle()
        assert_allowances(sites)


def test_workers_slow_hosts_that_waste_their_visits(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    with farm() as sites:
        seeds = [sites.url(name, "/") for name in ("clean", "copies", "broken")]
        outs = [tmp_path / "w1", tmp_path / "w2"]
        crawl_with_workers(cluster.url, "allowance", 16, config, seeds=seeds, outs=outs)
        sites.wait_idle()
        assert_allowances(sites)

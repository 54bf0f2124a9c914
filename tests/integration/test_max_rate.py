"""``--max-rate``, judged by the server: eight host names (``--resolve``, one server of many
virtual hosts) with no per-host or per-address gap to slow them get their requests' starts
spaced at least 1 / max_rate apart in all, from `crawlspace crawl` and from two `crawlspace
worker` processes sharing one frontier on a 3-master Redis Cluster, and every host is still
crawled in full. Without the cap the crawl would send its 32 requests in well under a second."""

from __future__ import annotations

import subprocess
from itertools import combinations
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import LoggedRequest, Response, Site, WebFarm, html
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

HOSTS = 8
RATE = 8.0  # requests per second, crawl-wide
# A request's arrival at the server trails its start by the loopback's latency, which varies by
# a few milliseconds (more on a loaded machine): n starts apart is at least n intervals less it.
JITTER = 0.06
PAGES = {
    "/": '<a href="/a.html">a</a> <a href="/b.html">b</a>',
    "/a.html": "<p>page a</p>",
    "/b.html": "<p>page b</p>",
}


def vhosts() -> Site:
    routes = {path: html(text) for path, text in PAGES.items()}
    routes["/robots.txt"] = Response(404, b"")
    return Site("shared", routes)


def names() -> list[str]:
    return [f"v{i}.rate.test" for i in range(HOSTS)]


def write_config(path: Path, port: int) -> Path:
    resolve = ", ".join(f'"{name}:{port}:127.0.0.1"' for name in names())
    path.write_text(
        "[crawl]\nallow_nets = ['127.0.0.0/8']\nscope = 'any'\nmin_delay = 0.0\n"
        f"delay_factor = 0.0\nconcurrency = 16\nmax_in_flight_per_ip = {HOSTS}\n"
        f"max_rate = {RATE}\nresolve = [{resolve}]\n"
    )
    return path


def assert_rate_held(requests: list[LoggedRequest]) -> None:
    by_host: dict[str, set[str]] = {}
    for r in requests:
        by_host.setdefault(r.headers.get("host", "").split(":")[0], set()).add(r.path_qs)
    assert sorted(by_host) == sorted(names())  # every host crawled in full
    assert all(paths == {"/robots.txt", *PAGES} for paths in by_host.values()), by_host
    assert len(requests) == HOSTS * (len(PAGES) + 1)  # each fetched once
    starts = sorted(r.started_at for r in requests)
    interval = 1.0 / RATE
    for (i, early), (j, late) in combinations(enumerate(starts), 2):
        assert late - early >= (j - i) * interval - JITTER, (i, j, late - early)
    # And no slower than the cap needs: the requests kept coming (within a second's slack).
    assert starts[-1] - starts[0] <= (len(starts) - 1) * interval + 1.0 + 2.0


def test_a_single_crawl_holds_the_rate(tmp_path: Path) -> None:
    with WebFarm({"shared": vhosts()}) as farm:
        config = write_config(tmp_path / "crawl.toml", farm.port("shared"))
        seeds = [f"http://{name}:{farm.port('shared')}/" for name in names()]
        command = cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")
        subprocess.run([*command, *seeds], check=True, timeout=120, stdout=subprocess.DEVNULL)
        assert farm.wait_idle()
        requests = farm.requests_for("shared")
    assert_rate_held(requests)


def test_two_workers_hold_the_rate_together(tmp_path: Path, cluster: RedisDeployment) -> None:
    with WebFarm({"shared": vhosts()}) as farm:
        config = write_config(tmp_path / "crawl.toml", farm.port("shared"))
        seeds = [f"http://{name}:{farm.port('shared')}/" for name in names()]
        outs = [tmp_path / f"w{i}" for i in range(2)]
        crawl_with_workers(cluster.url, "rate", 16, config, seeds=seeds, outs=outs, timeout=120)
        assert farm.wait_idle()
        requests = farm.requests_for("shared")
    assert_rate_held(requests)

"""Politeness per server address, judged by the server: forty host names served by one address
(``--resolve``, as a server of many virtual hosts) get at most ``max_in_flight_per_ip`` requests
at once from `crawlspace crawl` and from four `crawlspace worker` processes on a 3-master Redis
Cluster, and every host is still crawled in full. Without the address token, forty host tokens
would let every one of the crawl's fetch slots hit the one server at once."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import LoggedRequest, Response, Site, WebFarm, html, max_concurrency
from crawlspace.ops.report import crawl_stats
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

HOSTS = 40
PER_IP = 3
SLOW = 0.05  # each answer takes this long, so requests would overlap if they could
PAGES = {
    "/": '<a href="/a.html">a</a> <a href="/b.html">b</a>',
    "/a.html": "<p>page a</p>",
    "/b.html": "<p>page b</p>",
}


def vhosts() -> Site:
    routes = {path: html(text, delay=SLOW) for path, text in PAGES.items()}
    routes["/robots.txt"] = Response(404, b"", delay=SLOW)
    return Site("shared", routes)


def names() -> list[str]:
    return [f"v{i}.shared.test" for i in range(HOSTS)]


def write_config(path: Path, port: int) -> Path:
    resolve = ", ".join(f'"{name}:{port}:127.0.0.1"' for name in names())
    path.write_text(
        "[crawl]\nallow_nets = ['127.0.0.0/8']\nscope = 'any'\nmin_delay = 0.0\n"
        f"delay_factor = 0.0\nconcurrency = 32\nmax_in_flight_per_ip = {PER_IP}\n"
        f"resolve = [{resolve}]\n"
    )
    return path


def assert_address_polite(requests: list[LoggedRequest]) -> None:
    assert max_concurrency(requests) <= PER_IP
    by_host: dict[str, set[str]] = {}
    for r in requests:
        by_host.setdefault(r.headers.get("host", "").split(":")[0], set()).add(r.path_qs)
    # Every virtual host crawled in full: robots.txt and its three pages.
    assert sorted(by_host) == sorted(names())
    assert all(paths == {"/robots.txt", *PAGES} for paths in by_host.values()), by_host


def test_a_single_crawl_holds_the_address_limit(tmp_path: Path) -> None:
    with WebFarm({"shared": vhosts()}) as farm:
        config = write_config(tmp_path / "crawl.toml", farm.port("shared"))
        seeds = [f"http://{name}:{farm.port('shared')}/" for name in names()]
        command = cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")
        subprocess.run([*command, *seeds], check=True, timeout=120, stdout=subprocess.DEVNULL)
        assert farm.wait_idle()
        requests = farm.requests_for("shared")
    assert_address_polite(requests)
    # The limit was what bounded it: more than one request was in flight at times, and leases
    # that found the address busy were given back (counted in `crawlspace stats`).
    assert max_concurrency(requests) == PER_IP
    assert crawl_stats(tmp_path / "out")["recovery"]["address.deferred"] > 0


@pytest.mark.slow
def test_four_workers_hold_the_address_limit_together(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    with WebFarm({"shared": vhosts()}) as farm:
        config = write_config(tmp_path / "crawl.toml", farm.port("shared"))
        seeds = [f"http://{name}:{farm.port('shared')}/" for name in names()]
        outs = [tmp_path / f"w{i}" for i in range(4)]
        crawl_with_workers(cluster.url, "vhosts", 16, config, seeds=seeds, outs=outs, timeout=120)
        assert farm.wait_idle()
        requests = farm.requests_for("shared")
    assert_address_polite(requests)

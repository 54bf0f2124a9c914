"""``--proxy``, judged by a real proxy (Debian's tinyproxy) and the server behind it: every
request of `crawlspace crawl` and of two `crawlspace worker` processes reaches the site through
the proxy (its log forwards each, the server sees its Via header); the proxy's own loopback
address needs no ``--allow-net``, while a target the address guard refuses is refused before
anything is sent, proxy or not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.sites import robots_txt
from crawlspace.demo.webfarm import LoggedRequest, Site, WebFarm, html
from crawlspace.ops.report import crawl_stats
from tests.forward_proxy import ForwardProxy, tinyproxy
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PAGES = {
    "/": '<a href="/a.html">a</a> <a href="/b.html">b</a>',
    "/a.html": '<p>page a</p> <a href="/c.html">c</a>',
    "/b.html": "<p>page b</p>",
    "/c.html": "<p>page c</p>",
}


def site() -> Site:
    routes = {path: html(text) for path, text in PAGES.items()}
    routes["/robots.txt"] = robots_txt("User-agent: *\nDisallow: /c.html\n")
    return Site("site", routes)


def write_config(
    path: Path, proxy: ForwardProxy, allow: str | None, *, by_name: bool = False
) -> Path:
    """``by_name``: the proxy named by a host name (resolved, as a target would be, but not
    judged by the guard) instead of its address."""
    nets = f"allow_nets = ['{allow}']\n" if allow else ""
    url = proxy.url
    if by_name:
        url = f"http://proxy.test:{proxy.port}"
        nets += f"resolve = ['proxy.test:{proxy.port}:{proxy.address}']\n"
    path.write_text(f"[crawl]\n{nets}min_delay = 0.0\ndelay_factor = 0.0\nproxy = '{url}'\n")
    return path


def assert_all_through(proxy: ForwardProxy, requests: list[LoggedRequest], port: int) -> None:
    paths = sorted(r.path_qs for r in requests)
    assert paths == ["/", "/a.html", "/b.html", "/robots.txt"]  # /c.html is disallowed
    assert all("tinyproxy" in r.headers.get("via", "") for r in requests), requests
    forwarded = proxy.forwarded()
    assert sorted(forwarded) == sorted(
        f"GET http://127.0.0.1:{port}{path} HTTP/1.1" for path in paths
    )


def test_a_crawl_goes_through_the_proxy(tmp_path: Path) -> None:
    with tinyproxy(tmp_path) as proxy, WebFarm({"site": site()}) as farm:
        port = farm.port("site")
        # Only the site's own address is opened: the proxy's (127.0.0.2) is the operator's.
        config = write_config(tmp_path / "crawl.toml", proxy, "127.0.0.1/32", by_name=True)
        out = tmp_path / "out"
        command = cli("crawl", "--out", str(out), "--config", str(config), "-q")
        subprocess.run([*command, f"http://127.0.0.1:{port}/"], check=True, timeout=60)
        assert farm.wait_idle()
        assert_all_through(proxy, farm.requests_for("site"), port)
    assert crawl_stats(out)["pages"] == 3


def test_the_guard_still_refuses_a_target_behind_the_proxy(tmp_path: Path) -> None:
    with tinyproxy(tmp_path) as proxy, WebFarm({"site": site()}) as farm:
        port = farm.port("site")
        config = write_config(tmp_path / "crawl.toml", proxy, None)  # loopback not opened
        command = cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")
        done = subprocess.run(
            [*command, f"http://127.0.0.1:{port}/"],
            check=False,
            timeout=60,
            capture_output=True,
            text=True,
        )
        assert farm.wait_idle()
        assert farm.requests_for("site") == []
        assert proxy.forwarded() == []
    assert "--allow-net 127.0.0.0/8" in done.stdout  # the hint says how to open it


def test_workers_go_through_the_proxy(tmp_path: Path, cluster: RedisDeployment) -> None:
    with tinyproxy(tmp_path) as proxy, WebFarm({"site": site()}) as farm:
        port = farm.port("site")
        config = write_config(tmp_path / "crawl.toml", proxy, "127.0.0.1/32")
        outs = [tmp_path / f"w{i}" for i in range(2)]
        seeds = [f"http://127.0.0.1:{port}/"]
        crawl_with_workers(cluster.url, "proxy", 16, config, seeds=seeds, outs=outs, timeout=60)
        assert farm.wait_idle()
        assert_all_through(proxy, farm.requests_for("site"), port)

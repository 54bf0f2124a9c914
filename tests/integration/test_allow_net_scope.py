"""Opt-ins are narrow (issue #18), judged from a bait server's own request log.

A "site" and a "bait" serve two ports of 127.0.0.1. The site links to the bait's cloud-metadata
and admin paths, redirects to it, lists it in a sitemap and redirects its robots.txt there. A
crawl that opted 127.0.0.0/8 in with ``--allow-net`` must send the bait nothing and record those
URLs as excluded by ``scope``, unless ``--allow-host 127.0.0.1:PORT`` opts that port in.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import Response, Site, WebFarm, html_site, sitemap_xml
from crawlspace.ops.export import iter_records
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import url_state
from crawlspace.urls import host_key
from tests.redis_servers import RedisDeployment
from tests.webs import stats_json
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

CONFIG = """
[crawl]
min_delay = 0.02
delay_factor = 1.0
concurrency = 4
total_timeout = 5.0
"""
BAIT_PATHS = ("/latest/meta-data/", "/admin/")


def _redirect(to: str, status: int = 302) -> Response:
    return Response(status, {"Location": to}, b"")


def _sites(ports: Mapping[str, int]) -> dict[str, Site]:
    bait = f"http://127.0.0.1:{ports['bait']}"
    site = f"http://127.0.0.1:{ports['site']}"
    # Another opted-in address on the site's own port: not the seed's host either.
    neighbour = f"http://127.0.0.2:{ports['site']}/"
    anchors = "".join(f'<a href="{bait}{path}">x</a>' for path in BAIT_PATHS)
    home = f'<html><body><a href="/a.html">a</a><a href="/go">go</a>{anchors}'
    home += f'<a href="{neighbour}">n</a></body></html>'
    return {
        "site": html_site(
            "site",
            {"/": home, "/a.html": '<html><body><a href="/">home</a></body></html>'},
            extra={
                "/go": _redirect(f"{bait}/admin/?via=redirect"),
                # RFC 9309 lets robots.txt redirect anywhere; not to an opted-out port.
                "/robots.txt": _redirect(f"{bait}/latest/meta-data/?via=robots", 301),
                "/sitemap.xml": sitemap_xml(site, ["/a.html"]),
                "/more.xml": sitemap_xml(bait, ["/admin/?via=sitemap"]),
            },
        ),
        "bait": html_site("bait", dict.fromkeys(BAIT_PATHS, "<html><body>secret</body></html>")),
    }


def _bait_urls(farm: WebFarm) -> list[str]:
    """Every bait URL the site leads to, as the crawl records it."""
    paths = [*BAIT_PATHS, "/admin/?via=redirect", "/admin/?via=sitemap"]
    return [farm.url("bait", path) for path in paths]


def _crawl(farm: WebFarm, out: Path, *extra: str) -> None:
    config = out.parent / f"{out.name}.toml"
    config.write_text(CONFIG)
    command = cli("crawl", "--out", str(out), "--config", str(config), "-q")
    command += ["--allow-net", "127.0.0.0/8", "--scope", "any", *extra]
    command += ["--sitemap", farm.url("site", "/sitemap.xml")]
    command += ["--sitemap", farm.url("site", "/more.xml"), farm.url("site", "/")]
    subprocess.run(command, check=True, timeout=120)
    assert farm.wait_idle()


def _states(out: Path) -> dict[str, tuple[str, str | None]]:
    return {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebFarm, Path]]:
    out = tmp_path_factory.mktemp("refused") / "crawl"
    with WebFarm.deferred(("site", "bait"), _sites) as farm:
        _crawl(farm, out)
        yield farm, out


def test_bait_port_gets_no_request(refused: tuple[WebFarm, Path]) -> None:
    farm, _ = refused
    assert farm.requests_for("bait") == []
    # The site itself was crawled: the links, the redirect and the sitemaps were all seen.
    served = set(farm.paths_for("site"))
    assert {"/robots.txt", "/", "/a.html", "/go", "/sitemap.xml", "/more.xml"} <= served


def test_bait_urls_are_excluded_by_scope(refused: tuple[WebFarm, Path]) -> None:
    farm, out = refused
    states = _states(out)
    for url in [*_bait_urls(farm), f"http://127.0.0.2:{farm.port('site')}/"]:
        assert states[url] == ("excluded", "scope"), url
    assert states[farm.url("site", "/a.html")][0] == "fetched"


def test_stats_count_the_scope_exclusions(refused: tuple[WebFarm, Path]) -> None:
    _, out = refused
    stats = stats_json(out)
    # Four bait URLs and the 127.0.0.2 neighbour.
    assert stats["reasons"]["excluded:scope"] == 5
    assert stats["rejections"]["scope"] >= 5


def test_allow_host_with_port_opts_the_bait_port_in(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    with WebFarm.deferred(("site", "bait"), _sites) as farm:
        _crawl(farm, out, "--allow-host", f"127.0.0.1:{farm.port('bait')}")
        served = set(farm.paths_for("bait"))
        states = _states(out)
        neighbour = f"http://127.0.0.2:{farm.port('site')}/"
    assert {*BAIT_PATHS, "/admin/?via=redirect", "/admin/?via=sitemap"} <= served
    # The site's robots.txt redirect was followed there too.
    assert "/latest/meta-data/?via=robots" in served
    for url in _bait_urls(farm):
        assert states[url][0] == "fetched", url
    # Only that port: the neighbour address is still out of scope.
    assert states[neighbour] == ("excluded", "scope")


def test_four_workers_refuse_the_bait_port_too(tmp_path: Path, cluster: RedisDeployment) -> None:
    """`seed` and `worker` build the scope as `crawl` does (crawl/setup.py crawl_scope); here
    in the default scope mode (domain), with four workers on a 3-master Redis Cluster."""
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG + 'allow_nets = ["127.0.0.0/8"]\n')
    outs = [tmp_path / f"w{i}" for i in range(4)]
    with WebFarm.deferred(("site", "bait"), _sites) as farm:
        seeds = [farm.url("site", "/")]
        crawl_with_workers(cluster.url, "optin", 16, config, seeds=seeds, outs=outs, timeout=120)
        assert farm.wait_idle()
        assert farm.requests_for("bait") == []
        assert {"/", "/a.html", "/go"} <= set(farm.paths_for("site"))
        urls = [*_bait_urls(farm)[:3], f"http://127.0.0.2:{farm.port('site')}/"]
    frontier = RedisFrontier(connect(cluster.url), namespace="optin", buckets=16, epoch=0)
    try:
        for url in urls:
            assert url_state(frontier, url, host_key(url)) == ("excluded", "scope"), url
    finally:
        frontier.close()

"""robots.txt redirects to another host hold that host's token (issue #18), judged from the
servers' own logs, on `crawlspace crawl` (SQLite) and on four workers over a 3-master Redis
Cluster.

Eight sites' robots.txt all redirect (301) to the robots.txt of one "hub" site, which is also
crawled itself and asks for a long gap: as if many subdomains pointed robots.txt at one central
file. Every hop is a request to the hub, so the hub's log must show one request at a time and
the politeness gap between all of them, hops and pages alike. The hub's rules are applied to
each redirecting site (RFC 9309 §2.3.1.2: in the context of the initial authority): its
disallowed path is never requested there.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from crawlspace.demo.webfarm import Response, Site, WebFarm, html_site
from tests.integration.test_crawl_politeness import assert_polite
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

MIN_DELAY = 0.2
SITES = [f"s{i}" for i in range(8)]
NAMES = ["hub", *SITES]
CONFIG = f"""
[crawl]
allow_nets = ["127.0.0.0/8"]
scope = "host"
min_delay = {MIN_DELAY}
delay_factor = 1.0
concurrency = 16
total_timeout = 5.0
lease_grace = 10.0
"""


def _sites(ports: Mapping[str, int]) -> dict[str, Site]:
    hub = f"http://127.0.0.1:{ports['hub']}"
    sites = {
        "hub": html_site(
            "hub",
            {f"/h{i}.html": f'<a href="/h{i + 1}.html">n</a>' for i in range(4)}
            | {"/": '<a href="/h0.html">h</a><a href="/no/x.html">x</a>'},
            robots="User-agent: *\nDisallow: /no/\n",
        )
    }
    for name in SITES:
        site = html_site(
            name,
            {"/": '<a href="/a.html">a</a><a href="/no/secret.html">s</a>', "/a.html": "a"},
        )
        site.routes["/robots.txt"] = Response(301, {"Location": f"{hub}/robots.txt"}, b"")
        sites[name] = site
    return sites


def _audit(farm: WebFarm) -> None:
    hub = farm.requests_for("hub")
    hops = [r for r in hub if r.path_qs == "/robots.txt"]
    # Each site's robots.txt hop reached the hub (one per site, maybe a few more on workers).
    assert len(hops) >= len(SITES) + 1
    assert_polite(hub, MIN_DELAY)
    for name in SITES:
        paths = farm.paths_for(name)
        assert paths[0] == "/robots.txt"
        assert "/a.html" in paths, name  # the hub's rules allow it
        assert "/no/secret.html" not in paths, name  # and forbid this, on every site
        assert_polite(farm.requests_for(name), MIN_DELAY)
    assert "/no/x.html" not in farm.paths_for("hub")


def test_hops_to_one_robots_txt_are_spaced_like_its_own_pages(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    with WebFarm.deferred(NAMES, _sites) as farm:
        seeds = [farm.url(name, "/") for name in NAMES]
        command = [*cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")]
        subprocess.run([*command, *seeds], check=True, timeout=120)
        assert farm.wait_idle()
        _audit(farm)


def test_workers_hold_the_hubs_token_for_every_hop(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    with WebFarm.deferred(NAMES, _sites) as farm:
        seeds = [farm.url(name, "/") for name in NAMES]
        outs = [tmp_path / f"w{i}" for i in range(4)]
        crawl_with_workers(cluster.url, "hops", 16, config, seeds=seeds, outs=outs, timeout=120)
        assert farm.wait_idle()
        _audit(farm)

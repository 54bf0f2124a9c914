"""robots.txt redirects to another host hold that host's token (issue #18), judged from the
servers' own logs, on `crawlspace crawl` (SQLite) and on four workers over a 3-master Redis
Cluster.

Eight sites' robots.txt all redirect (301) to the robots.txt of one "hub" site: as if many
subdomains pointed robots.txt at one central file. Every hop that is sent holds the hub's token,
so the hub's log must show one request at a time and the politeness gap between all of them,
across workers too; and a fresh answer (the hub's own, when it is crawled, or one a hop fetched)
serves the other hops: one fetch per crawling process. Either way the hub's rules are applied to
each redirecting site (RFC 9309 §2.3.1.2: in the context of the initial authority): its
disallowed path is never requested there.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import Response, Site, WebFarm, html, html_site
from crawlspace.ops.export import iter_records
from tests.integration.test_crawl_politeness import assert_polite
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

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


def _audit(farm: WebFarm, *, processes: int) -> None:
    hub = farm.requests_for("hub")
    hops = [r for r in hub if r.path_qs == "/robots.txt"]
    # Fetched once per crawling process: by the hub's own robots lease when it is crawled, else
    # by the first hop (its token held the others back meanwhile); every other hop took that
    # fresh answer.
    assert 1 <= len(hops) <= processes
    assert_polite(hub, MIN_DELAY)
    for name in SITES:
        paths = farm.paths_for(name)
        assert paths[0] == "/robots.txt"
        assert "/a.html" in paths, name  # the hub's rules allow it
        assert "/no/secret.html" not in paths, name  # and forbid this, on every site
        assert_polite(farm.requests_for(name), MIN_DELAY)
    assert "/no/x.html" not in farm.paths_for("hub")


def _config(tmp_path: Path, farm: WebFarm) -> Path:
    """The settings, with the hub's port opted in: not a seed when it is not crawled, and
    opt-ins of a loopback network are narrow (only the seeds' host:port pairs otherwise)."""
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG + f'allow_hosts = ["127.0.0.1:{farm.port("hub")}"]\n')
    return config


def _crawl(tmp_path: Path, farm: WebFarm, names: list[str]) -> None:
    config = _config(tmp_path, farm)
    seeds = [farm.url(name, "/") for name in names]
    command = [*cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")]
    subprocess.run([*command, *seeds], check=True, timeout=120)
    assert farm.wait_idle()


def test_hops_to_one_robots_txt_are_spaced_like_its_own_pages(tmp_path: Path) -> None:
    with WebFarm.deferred(NAMES, _sites) as farm:
        _crawl(tmp_path, farm, SITES)
        _audit(farm, processes=1)


def test_a_crawled_hubs_fresh_answer_serves_every_hop(tmp_path: Path) -> None:
    with WebFarm.deferred(NAMES, _sites) as farm:
        _crawl(tmp_path, farm, NAMES)
        _audit(farm, processes=1)


@pytest.mark.slow
def test_hops_take_the_answer_without_waiting_out_the_hubs_gap(tmp_path: Path) -> None:
    """The crawled hub answers robots.txt in 0.4 s and the gap is 10 x the response time: its
    token is not free for 4 s after it. The hops waiting for it take its fresh answer as soon
    as it is there, and the eight sites (fast, so short gaps of their own) start their pages
    long before the hub's gap ends."""
    hub_gap = 10 * 0.4

    def sites(ports: Mapping[str, int]) -> dict[str, Site]:
        made = _sites(ports)
        made["hub"].routes["/robots.txt"] = Response(
            200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /no/\n", delay=0.4
        )
        return made

    with WebFarm.deferred(NAMES, sites) as farm:
        config = _config(tmp_path, farm)
        config.write_text(config.read_text().replace("delay_factor = 1.0", "delay_factor = 10.0"))
        seeds = [farm.url(name, "/") for name in NAMES]
        command = [*cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")]
        subprocess.run([*command, *seeds], check=True, timeout=120)
        assert farm.wait_idle()
        hub_robots = [r for r in farm.requests_for("hub") if r.path_qs == "/robots.txt"]
        assert len(hub_robots) == 1
        answered_at = hub_robots[0].ended_at
        for name in SITES:
            first_page = farm.requests_for(name)[1]
            assert first_page.path_qs == "/", name
            assert first_page.started_at < answered_at + hub_gap - 1.5, name


def test_workers_hold_the_hubs_token_for_every_hop(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    with WebFarm.deferred(NAMES, _sites) as farm:
        config = _config(tmp_path, farm)
        seeds = [farm.url(name, "/") for name in SITES]
        outs = [tmp_path / f"w{i}" for i in range(4)]
        crawl_with_workers(cluster.url, "hops", 16, config, seeds=seeds, outs=outs, timeout=120)
        assert farm.wait_idle()
        _audit(farm, processes=len(outs))


CHAIN = {"/robots.txt": "/r1", "/r1": "/r2", "/r2": "/robots-final"}
CROWD = SITES[:4]


def _chain_and_crowd(ports: Mapping[str, int]) -> dict[str, Site]:
    """A site whose robots.txt is three same-host redirects away, among four busy sites on
    the same address."""
    chain = html_site("chain", {"/": '<a href="/a.html">a</a>', "/a.html": "a"})
    for path, to in CHAIN.items():
        # Slow hops: a gap of 0.2 s after each (delay_factor 1), for the crowd to take the
        # address in.
        chain.routes[path] = Response(301, {"Location": to}, b"", delay=0.2)
    chain.routes["/robots-final"] = Response(200, {"Content-Type": "text/plain"}, b"")
    sites = {"chain": chain}
    for name in CROWD:
        # Slow pages: the one address is busy most of the time.
        pages = {
            f"/p{i}.html": html(f'<a href="/p{i + 1}.html">n</a>', delay=0.2) for i in range(3)
        }
        sites[name] = Site(name, pages | {"/": html('<a href="/p0.html">p</a>', delay=0.2)})
    return sites


@pytest.mark.slow
def test_a_busy_address_mid_chain_is_waited_for_not_restarted(tmp_path: Path) -> None:
    """One request at a time to the shared address (max_in_flight_per_ip 1) and four slow
    sites wanting it: the chain's later hops meet a busy address. They wait for it within the
    lease; giving the lease back would send robots.txt and the first hops again."""
    config = tmp_path / "crawl.toml"
    config.write_text(
        CONFIG.replace(f"min_delay = {MIN_DELAY}", "min_delay = 0.05")
        + "max_in_flight_per_ip = 1\n"
    )
    with WebFarm.deferred(["chain", *CROWD], _chain_and_crowd) as farm:
        seeds = [farm.url(name, "/") for name in ["chain", *CROWD]]
        command = [*cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")]
        subprocess.run([*command, *seeds], check=True, timeout=120)
        assert farm.wait_idle()
        paths = farm.paths_for("chain")
        everything = farm.requests
    assert paths[:4] == ["/robots.txt", "/r1", "/r2", "/robots-final"]
    assert paths.count("/robots.txt") == 1
    assert "/a.html" in paths
    # The address limit held across all sites: no request began before the last one ended.
    ordered = sorted(everything, key=lambda r: r.started_at)
    ends = [r.ended_at for r in ordered]
    assert all(b.started_at >= max(ends[: i + 1]) - 0.005 for i, b in enumerate(ordered[1:]))


def test_a_chain_that_outlasts_its_lease_ends_as_unreachable(tmp_path: Path) -> None:
    """A lease too short for the chain (a slow first hop, a short grace): robots.txt is not
    reached, which counts as unreachable (RFC 9309 §2.3.1.4). Retried after the backoff, each
    time after the host's gap, and after robots_max_attempts the host's URLs are excluded:
    the crawl ends by itself instead of sending the first hop for ever."""
    delay = 0.5

    def sites(ports: Mapping[str, int]) -> dict[str, Site]:
        slow = html_site("slow", {"/": "home"})
        slow.routes["/robots.txt"] = Response(301, {"Location": "/next"}, b"", delay=0.4)
        return {"slow": slow}

    config = tmp_path / "crawl.toml"
    config.write_text(
        f'[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = {delay}\ndelay_factor = 1.0\n'
        "total_timeout = 1.0\nlease_grace = 0.3\nrobots_retry_delay = 0.5\n"
        "robots_max_attempts = 3\n"
    )
    out = tmp_path / "out"
    with WebFarm.deferred(["slow"], sites) as farm:
        command = [*cli("crawl", "--out", str(out), "--config", str(config), "-q")]
        subprocess.run([*command, farm.url("slow", "/")], check=True, timeout=60)
        assert farm.wait_idle()
        requests = farm.requests_for("slow")
        home = farm.url("slow", "/")
    assert [r.path_qs for r in requests] == ["/robots.txt"] * 3
    assert_polite(requests, delay)
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    assert states[home] == ("excluded", "robots_unavailable")

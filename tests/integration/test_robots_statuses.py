"""One crawl over one host per robots.txt outcome class (RFC 9309 §2.3.1), judged from the
server's request log: what was requested and, above all, what was not."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import Response, Site, WebFarm, html, robots_txt
from crawlspace.ops.export import iter_records
from crawlspace.ops.report import crawl_stats

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

TOTAL_TIMEOUT = 0.5
ROBOTS_ATTEMPTS = 2
RULES = "User-agent: *\nDisallow: /private/\n"
PAGES = ("/", "/a.html", "/b.html", "/private/secret.html")
KIB = 1024
RETRY_AFTER = 2


def pages(extra_links: tuple[str, ...] = ()) -> dict[str, Response]:
    links = "".join(f'<a href="{p}">{p}</a>' for p in (*PAGES[1:], *extra_links))
    routes = {p: html(f"<html><body><h1>{p}</h1>{links}</body></html>") for p in PAGES}
    for p in extra_links:
        routes[p] = html(f"<html><body>{p}</body></html>")
    return routes


def redirect(to: str) -> Response:
    return Response(301, {"Location": to}, b"")


def chain(hops: int, final: Response) -> dict[str, Response]:
    """/robots.txt -> /hop1 -> ... -> /hop<hops>, which answers ``final``."""
    names = ["/robots.txt"] + [f"/hop{i}" for i in range(1, hops + 1)]
    routes = {src: redirect(dst) for src, dst in pairwise(names)}
    routes[names[-1]] = final
    return routes


def big_robots() -> tuple[str, int, int]:
    """A robots.txt over 600 KiB: a rule at ~510 KiB (inside the 512 KiB we parse) and one
    after 600 KiB (outside it). RFC 9309 §2.5 requires parsing at least 500 KiB and lets a
    crawler ignore what follows its limit."""
    filler = "# " + "x" * 61 + "\n"  # 64 bytes
    head = "User-agent: *\nDisallow: /filler/\n"
    parts = [head]
    size = len(head)
    while size < 510 * KIB:
        parts.append(filler)
        size += len(filler)
    decisive_at = size
    parts.append("Disallow: /decisive/\n")
    size += len("Disallow: /decisive/\n")
    while size < 600 * KIB:
        parts.append(filler)
        size += len(filler)
    beyond_at = size
    parts.append("Disallow: /beyond/\n")
    return "".join(parts), decisive_at, beyond_at


def refusing_port() -> socket.socket:
    """A socket bound to a loopback port and never listening: connections to the port are
    refused, and while it is held no server (the farm's included) can be given the port. A
    port merely found free and released could be handed to one of the farm's sites, making
    the "refused" host the same host key as a real site."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def build_sites() -> dict[str, Site]:
    text, decisive_at, beyond_at = big_robots()
    assert 500 * KIB < decisive_at < 512 * KIB - 30
    assert beyond_at > 600 * KIB
    big = pages(("/decisive/x.html", "/beyond/y.html"))
    big["/robots.txt"] = robots_txt(text)
    # The same file gzip-encoded: ~3 KiB on the wire, so only the decoded size can stop it.
    bigzip = pages(("/decisive/x.html", "/beyond/y.html"))
    bigzip["/robots.txt"] = Response(200, {"Content-Type": "text/plain"}, text.encode(), 0.0, True)

    def status(code: int, **kw: float) -> dict[str, Response]:
        routes = pages()
        routes["/robots.txt"] = Response(code, {"Content-Type": "text/plain"}, b"Disallow: /", **kw)
        return routes

    return {
        "ok200": Site("ok200", {**pages(), "/robots.txt": robots_txt(RULES)}),
        "chain3": Site("chain3", {**pages(), **chain(3, robots_txt(RULES))}),
        # Six redirects: more than max_redirects (5), so robots.txt counts as unavailable
        # (RFC 9309 §2.3.1.2) = allow all, and the sixth target is never requested.
        "chain6": Site("chain6", {**pages(), **chain(6, robots_txt("User-agent: *\nDisallow: /"))}),
        "nf404": Site("nf404", status(404)),
        "forb403": Site("forb403", status(403)),
        "err500": Site("err500", status(500)),
        "err503": Site("err503", status(503)),
        "timeout": Site("timeout", status(200, delay=TOTAL_TIMEOUT + 1.0)),
        "big": Site("big", big),
        "bigzip": Site("bigzip", bigzip),
        # 429 means allow all (a 4xx), but its Retry-After holds the whole host.
        "slow429": Site(
            "slow429",
            {
                **pages(),
                "/robots.txt": Response(429, {"Retry-After": str(RETRY_AFTER)}, b""),
            },
        ),
    }


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebFarm, Path, str]]:
    out = tmp_path_factory.mktemp("robots-statuses")
    held = refusing_port()
    refused = f"http://127.0.0.1:{held.getsockname()[1]}"
    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        scope="any",
        min_delay=0.02,
        delay_factor=0.0,
        total_timeout=TOTAL_TIMEOUT,
        connect_timeout=TOTAL_TIMEOUT,
        read_timeout=TOTAL_TIMEOUT,
        robots_retry_delay=0.05,
        robots_max_attempts=ROBOTS_ATTEMPTS,
        progress=False,
    )
    with held, WebFarm(build_sites()) as farm:
        crawler = Crawler(config, out)
        try:
            crawler.add_seeds([farm.url(name, "/") for name in farm.names] + [refused + "/"])
            summary = crawler.run()
        finally:
            crawler.close()
        assert summary.stop_reason == "done"
        assert farm.wait_idle(timeout=5.0)
        yield farm, out, refused


def states(out: Path) -> dict[str, tuple[str, str | None]]:
    return {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}


def hosts(out: Path) -> dict[str, dict[str, object]]:
    return {r["host_key"]: r for r in iter_records(out, "hosts")}


def test_200_rules_are_obeyed(crawled: tuple[WebFarm, Path, str]) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for("ok200")
    assert paths[0] == "/robots.txt"
    assert set(paths) == {"/robots.txt", "/", "/a.html", "/b.html"}
    assert states(out)[farm.url("ok200", "/private/secret.html")] == ("excluded", "robots")
    host = hosts(out)[farm.host_key("ok200")]
    assert (host["robots_status"], host["robots_outcome"]) == (200, "rules")


def test_chain_of_3_redirects_is_followed(crawled: tuple[WebFarm, Path, str]) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for("chain3")
    assert paths[:4] == ["/robots.txt", "/hop1", "/hop2", "/hop3"]
    assert "/private/secret.html" not in paths
    assert {"/", "/a.html", "/b.html"} <= set(paths)
    assert hosts(out)[farm.host_key("chain3")]["robots_outcome"] == "rules"


def test_chain_of_6_redirects_means_allow_all(crawled: tuple[WebFarm, Path, str]) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for("chain6")
    assert paths[:6] == ["/robots.txt", "/hop1", "/hop2", "/hop3", "/hop4", "/hop5"]
    assert "/hop6" not in paths  # the sixth redirect is not followed
    assert "/private/secret.html" in paths
    host = hosts(out)[farm.host_key("chain6")]
    assert (host["robots_status"], host["robots_outcome"]) == (301, "allow_all")


@pytest.mark.parametrize("site", ["nf404", "forb403"])
def test_4xx_means_allow_all(crawled: tuple[WebFarm, Path, str], site: str) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for(site)
    assert paths.count("/robots.txt") == 1
    assert set(paths) == {"/robots.txt", *PAGES}
    assert hosts(out)[farm.host_key(site)]["robots_outcome"] == "allow_all"


@pytest.mark.parametrize("site", ["err500", "err503", "timeout"])
def test_5xx_and_timeout_mean_disallow_all_with_retries(
    crawled: tuple[WebFarm, Path, str], site: str
) -> None:
    farm, out, _ = crawled
    assert farm.paths_for(site) == ["/robots.txt"] * ROBOTS_ATTEMPTS
    assert states(out)[farm.url(site, "/")] == ("excluded", "robots_unavailable")
    host = hosts(out)[farm.host_key(site)]
    assert host["robots_outcome"] == "disallow_all"
    assert host["robots_attempts"] == ROBOTS_ATTEMPTS
    assert host["robots_error"] == "robots_unavailable"
    assert host["fetched"] == 0
    expected_status = None if site == "timeout" else int(site[-3:])
    assert host["robots_status"] == expected_status


def test_connection_refused_means_disallow_all(crawled: tuple[WebFarm, Path, str]) -> None:
    _, out, refused = crawled
    assert states(out)[refused + "/"] == ("excluded", "robots_unavailable")
    host = hosts(out)[refused]
    assert (host["robots_status"], host["robots_outcome"]) == (None, "disallow_all")
    assert host["robots_attempts"] == ROBOTS_ATTEMPTS


@pytest.mark.parametrize("site", ["big", "bigzip"])
def test_600_kib_robots_is_read_up_to_512_kib(
    crawled: tuple[WebFarm, Path, str], site: str
) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for(site)
    assert paths.count("/robots.txt") == 1
    assert "/decisive/x.html" not in paths  # the rule at ~510 KiB is obeyed
    # The rule after 600 KiB lies beyond what we parse (512 KiB; RFC 9309 §2.5 asks for at
    # least 500 KiB), so it is not seen and /beyond/ is crawled: documented behaviour.
    assert "/beyond/y.html" in paths
    db = sqlite3.connect(out / "crawl.db")
    (stored,) = db.execute(
        "SELECT length(r.body) FROM robots r JOIN hosts h ON h.id = r.host_id WHERE host_key = ?",
        (farm.host_key(site),),
    ).fetchone()
    db.close()
    # The fetch itself stops at the limit, counted after decoding: a gzip bomb served as
    # robots.txt would otherwise be stored (and cached in memory) at max_decompressed_bytes.
    assert stored == 512 * KIB


def test_robots_state_in_stats_and_hosts_export(crawled: tuple[WebFarm, Path, str]) -> None:
    farm, out, _ = crawled
    stats = crawl_stats(out)
    # rules: ok200, chain3, big, bigzip; allow_all: chain6, nf404, forb403, slow429
    assert stats["robots"] == {"rules": 4, "allow_all": 4, "disallow_all": 4}
    assert stats["robots_statuses"]["none"] == 2  # timeout and connection refused
    assert stats["robots_errors"] == {"robots_unavailable": 4}
    row = hosts(out)[farm.host_key("ok200")]
    assert set(row) >= {
        "host_key",
        "robots_status",
        "robots_outcome",
        "robots_fetched_at",
        "robots_expires_at",
        "robots_sha256",
        "robots_attempts",
        "robots_error",
        "fetched",
        "queued",
    }
    assert row["fetched"] == 3
    assert row["queued"] == 0
    assert isinstance(row["robots_expires_at"], float)
    assert row["robots_expires_at"] > row["robots_fetched_at"]  # type: ignore[operator]


def test_robots_rules_hold_when_the_parsed_cache_keeps_one_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The crawl keeps parsed robots.txt for the hosts leased lately only (memory must not grow
    # with the host count); an evicted host's rules come back from the store, still obeyed.
    monkeypatch.setattr("crawlspace.crawl.leases.ROBOTS_CACHE_HOSTS", 1)
    sites = {
        f"s{i}": Site(f"s{i}", {**pages(), "/robots.txt": robots_txt(RULES)}) for i in range(3)
    }
    config = CrawlConfig(allow_nets=("127.0.0.0/8",), scope="any", min_delay=0.0, progress=False)
    with WebFarm(sites) as farm:
        crawler = Crawler(config, tmp_path / "out")
        try:
            crawler.add_seeds([farm.url(name, "/") for name in farm.names])
            summary = crawler.run()
            cached = len(crawler.leases.robots)
        finally:
            crawler.close()
        assert farm.wait_idle(timeout=5.0)
        assert summary.stop_reason == "done"
        for name in farm.names:
            paths = farm.paths_for(name)
            assert paths.count("/robots.txt") == 1
            assert "/private/secret.html" not in paths
            assert {"/", "/a.html", "/b.html"} <= set(paths)
    assert cached == 1


def test_retry_after_on_robots_txt_holds_the_host(crawled: tuple[WebFarm, Path, str]) -> None:
    farm, _, _ = crawled
    requests = farm.requests_for("slow429")
    robots = [r for r in requests if r.path_qs == "/robots.txt"]
    pages_after = [r for r in requests if r.path_qs != "/robots.txt"]
    assert len(robots) == 1
    assert pages_after  # allowed (a 4xx), just later
    assert min(r.started_at for r in pages_after) >= robots[0].ended_at + RETRY_AFTER - 0.05

"""robots.txt is kept for its HTTP lifetime (RFC 9111, as RFC 9309 §2.4 allows), judged from the
server's request log during one SQLite crawl of a few seconds: a robots.txt with
``Cache-Control: max-age=1`` is fetched again once it expires, and the pages fetched after
that obey the new file; one without caching headers is fetched once; ``no-cache`` is refetched
no sooner than the configured floor, and never so often that a slow host gets no page."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import LoggedRequest, Response, RouteFn, Site, WebFarm, html
from crawlspace.ops.export import iter_records

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

MAX_AGE = 1.0
FLOOR = 0.5  # robots_min_cache_seconds: below the politeness gap would not show it
GAP = 0.15  # min_delay: a chain of CHAIN pages with a late page each lasts ~2 * CHAIN * GAP
CHAIN = 12
SLACK = 0.05  # server and crawler clocks read the same instants a little apart
RULES_1 = "User-agent: *\nDisallow: /private/\n"
RULES_2 = RULES_1 + "Disallow: /late/\n"
CRAWL_DELAY = 1.0  # longer than FLOOR: a no-cache robots.txt would expire before each turn


def robots(text: str, *cache_control: str) -> Response:
    headers = {"Content-Type": "text/plain"}
    if cache_control:
        headers["Cache-Control"] = ", ".join(cache_control)
    return Response(200, headers, text.encode())


def chain() -> dict[str, Response]:
    """/p0 -> /p1 -> ... each linking one /late/ page, so /late/ URLs keep being discovered
    (and leased) all through the crawl, before and after robots.txt is fetched again."""
    routes: dict[str, Response] = {}
    for i in range(CHAIN):
        links = f'<a href="/late/{i}.html">late</a><a href="/private/{i}.html">private</a>'
        if i + 1 < CHAIN:
            links += f'<a href="/p{i + 1}">next</a>'
        routes[f"/p{i}"] = html(f"<html><body><h1>{i}</h1>{links}</body></html>")
        routes[f"/late/{i}.html"] = html(f"<html><body>late {i}</body></html>")
    return routes


def changing(first: Response, then: Response) -> RouteFn:
    """/robots.txt answers ``first`` once, then ``then``: the site changed its file."""
    served = 0

    def route(path_qs: str) -> Response | None:
        nonlocal served
        if path_qs != "/robots.txt":
            return None
        served += 1
        return first if served == 1 else then

    return route


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebFarm, Path]]:
    out = tmp_path_factory.mktemp("robots-lifetime")
    sites = {
        "maxage": Site(
            "maxage",
            chain(),
            changing(
                robots(RULES_1, f"max-age={MAX_AGE:.0f}"), robots(RULES_2, f"max-age={MAX_AGE:.0f}")
            ),
        ),
        "plain": Site("plain", {**chain(), "/robots.txt": robots(RULES_1)}),
        "nocache": Site("nocache", {**chain(), "/robots.txt": robots(RULES_1, "no-cache")}),
        "delayed": Site(
            "delayed",
            {
                "/p0": html('<a href="/a">a</a><a href="/b">b</a>'),
                "/a": html("a"),
                "/b": html("b"),
                "/robots.txt": robots(f"User-agent: *\nCrawl-delay: {CRAWL_DELAY}\n", "no-cache"),
            },
        ),
    }
    config = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        scope="any",
        max_depth=CHAIN + 1,
        min_delay=GAP,
        delay_factor=0.0,
        robots_min_cache_seconds=FLOOR,
        progress=False,
        duration=30.0,  # a host stuck refetching robots.txt would keep the crawl from ending
    )
    with WebFarm(sites) as farm:
        crawler = Crawler(config, out)
        try:
            crawler.add_seeds([farm.url(name, "/p0") for name in farm.names])
            summary = crawler.run()
        finally:
            crawler.close()
        assert summary.stop_reason == "done"
        assert farm.wait_idle(timeout=5.0)
        yield farm, out


def robots_requests(farm: WebFarm, site: str) -> list[LoggedRequest]:
    return [r for r in farm.requests_for(site) if r.path_qs == "/robots.txt"]


def test_max_age_robots_is_fetched_again_once_it_expires(crawled: tuple[WebFarm, Path]) -> None:
    farm, _ = crawled
    fetches = robots_requests(farm, "maxage")
    assert len(fetches) >= 2
    for before, after in pairwise(fetches):
        waited = after.started_at - before.ended_at
        # Not before max-age has run out, and soon after (the crawl is a few seconds long).
        assert MAX_AGE - SLACK <= waited < MAX_AGE + 2.0


def test_pages_after_the_refetch_obey_the_new_robots_txt(crawled: tuple[WebFarm, Path]) -> None:
    farm, out = crawled
    refetched = robots_requests(farm, "maxage")[1]
    pages = [r for r in farm.requests_for("maxage") if r.path_qs != "/robots.txt"]
    late = [r for r in pages if r.path_qs.startswith("/late/")]
    assert late  # allowed by the first robots.txt, and fetched while it held
    assert all(r.ended_at <= refetched.started_at for r in late)
    # The crawl went on after the refetch (pages newly disallowed were not merely never due).
    assert any(r.started_at >= refetched.ended_at for r in pages)
    assert not any(r.path_qs.startswith("/private/") for r in pages)
    states = {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}
    fetched = {r.path_qs for r in late}
    for i in range(CHAIN):
        path = f"/late/{i}.html"
        if path not in fetched:
            assert states[farm.url("maxage", path)] == ("excluded", "robots")
    assert len(fetched) < CHAIN  # some /late/ pages came after the refetch and were excluded


def test_robots_without_caching_headers_is_fetched_once(crawled: tuple[WebFarm, Path]) -> None:
    farm, _ = crawled
    assert len(robots_requests(farm, "plain")) == 1
    # The same crawl, as long as the others: all its pages, /late/ included, were allowed.
    paths = farm.paths_for("plain")
    assert sum(p.startswith("/late/") for p in paths) == CHAIN
    assert farm.requests_for("plain")[-1].started_at > robots_requests(farm, "maxage")[1].ended_at


def test_no_cache_robots_is_refetched_no_sooner_than_the_floor(
    crawled: tuple[WebFarm, Path],
) -> None:
    farm, _ = crawled
    fetches = robots_requests(farm, "nocache")
    assert len(fetches) >= 2
    assert min(b.started_at - a.ended_at for a, b in pairwise(fetches)) >= FLOOR - SLACK
    # Between two robots.txt fetches the host still gets its pages: never robots.txt only.
    paths = farm.paths_for("nocache")
    assert sum(p.startswith("/late/") for p in paths) == CHAIN
    assert len(fetches) < len(paths) / 2


def test_a_short_lived_robots_txt_never_starves_a_slow_host(crawled: tuple[WebFarm, Path]) -> None:
    # Crawl-delay 1 s and no-cache (floor 0.5 s): the answer would expire before the host's
    # next turn and every turn would go to robots.txt; it is kept past one turn instead.
    farm, _ = crawled
    paths = farm.paths_for("delayed")
    assert {"/p0", "/a", "/b"} <= set(paths)
    assert paths.count("/robots.txt") <= 1 + 3
    requests = farm.requests_for("delayed")
    assert min(b.started_at - a.ended_at for a, b in pairwise(requests)) >= CRAWL_DELAY - SLACK

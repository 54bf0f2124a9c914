"""Crawler traps on real loopback servers, each bounded by a budget (counted from the server's
request log), while a normal site crawled alongside is fully covered."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from crawlspace.ops.report import crawl_stats
from tests.webs import linked_pages

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

NORMAL_PAGES = 30
TEMPLATE_CAP = 35  # above the normal site's 30 numbered pages (/p{n}.html)
PER_HOST = 60
NO_ROBOTS = html("", 404)


def _page(title: str, hrefs: list[str]) -> Response:
    anchors = "".join(f'<a href="{h}">{h}</a> ' for h in hrefs)
    return html(f"<html><body><h1>{title}</h1><p>{title} text</p>{anchors}</body></html>")


def calendar(path_qs: str) -> Response | None:
    """/cal/YYYY/MM links to the previous and next month, forever."""
    parts = path_qs.strip("/").split("/")
    if len(parts) != 3 or parts[0] != "cal" or not (parts[1].isdigit() and parts[2].isdigit()):
        return None
    month = int(parts[1]) * 12 + int(parts[2]) - 1
    prev, nxt = month - 1, month + 1
    return _page(
        f"month {month}",
        [f"/cal/{prev // 12}/{prev % 12 + 1:02d}", f"/cal/{nxt // 12}/{nxt % 12 + 1:02d}"],
    )


def sessions(path_qs: str) -> Response | None:
    """Every link carries a fresh session id (not one of the stripped parameter names)."""
    token = hashlib.sha256(path_qs.encode()).hexdigest()[:16]
    return _page(path_qs, [f"/shop/item{i}?session={token}{i}" for i in range(3)])


def path_growth(path_qs: str) -> Response | None:
    """A relative link that the server resolves for any path: /a/b/, /a/b/a/b/, ..."""
    return _page(path_qs, ["a/b/"])


FACETS = {"color": ["red", "blue", "green"], "size": ["s", "m", "l"], "fit": ["x", "y"]}
FACETS.update({"brand": ["p", "q"]})


def faceted(path_qs: str) -> Response | None:
    """Each page adds any one facet value to its query: combinatorial parameter sets."""
    if not path_qs.startswith("/shop"):
        return None
    query = path_qs.partition("?")[2]
    hrefs = [
        f"/shop?{query + '&' if query else ''}{name}={value}"
        for name, values in FACETS.items()
        for value in values
    ]
    return _page(path_qs, hrefs)


def invents(path_qs: str) -> Response | None:
    """Any path is a page with three new made-up word paths (no digits, so no template)."""
    digest = hashlib.sha256(path_qs.encode()).digest()
    words = ["".join(chr(97 + b % 26) for b in digest[i * 5 : i * 5 + 5]) for i in range(3)]
    return _page(path_qs, [f"/w/{w}" for w in words])


def build_farm() -> WebFarm:
    normal = {p: html(t) for p, t in linked_pages(NORMAL_PAGES).items()}
    normal["/robots.txt"] = NO_ROBOTS
    sites = {
        "normal": Site("normal", normal),
        "calendar": Site(
            "calendar", {"/": _page("cal", ["/cal/2030/06"]), "/robots.txt": NO_ROBOTS}, calendar
        ),
        "session": Site("session", {"/robots.txt": NO_ROBOTS}, sessions),
        "paths": Site("paths", {"/robots.txt": NO_ROBOTS}, path_growth),
        "facets": Site("facets", {"/": _page("f", ["/shop"]), "/robots.txt": NO_ROBOTS}, faceted),
        "invents": Site("invents", {"/robots.txt": NO_ROBOTS}, invents),
    }
    return WebFarm(sites)


def test_traps_are_bounded_while_a_normal_site_is_covered(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with build_farm() as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",),
            min_delay=0.01,
            delay_factor=0.0,
            progress=False,
            scope="any",
            max_urls_per_template=TEMPLATE_CAP,
            max_pages_per_host=PER_HOST,
            max_query_params=2,
            discovery_window=10,
        )
        crawler = Crawler(config, out)
        try:
            crawler.add_seeds([farm.url(name, "/") for name in farm.names])
            assert crawler.run().stop_reason == "done"
        finally:
            crawler.close()
        farm.wait_idle()
        pages = {
            name: [p for p in farm.paths_for(name) if p != "/robots.txt"] for name in farm.names
        }
    # The normal site: every page fetched once.
    expected = {f"/p{i}.html" for i in range(NORMAL_PAGES)} | {"/"}
    assert set(pages["normal"]) == expected
    assert len(pages["normal"]) == len(expected)
    # Template budget: /cal/{n}/{n} and /shop/item{n}?session= admit TEMPLATE_CAP URLs each.
    assert len(pages["calendar"]) <= 1 + TEMPLATE_CAP
    assert len(pages["session"]) <= 1 + TEMPLATE_CAP
    # Repeated segments: /a/b/a/b/a/b/ is refused, so / , /a/b/, /a/b/a/b/ only.
    assert sorted(pages["paths"]) == ["/", "/a/b/", "/a/b/a/b/"]
    # At most 2 query parameters; each parameter-name set is one template.
    assert all(p.count("&") <= 1 for p in pages["facets"])
    names = {
        frozenset(q.split("=")[0] for q in p.partition("?")[2].split("&")) for p in pages["facets"]
    }
    assert len(pages["facets"]) <= min(PER_HOST, 2 + TEMPLATE_CAP * len(names))
    # The server that invents pages: the per-host budget stops it, and it is flagged.
    assert len(pages["invents"]) <= PER_HOST
    stats = crawl_stats(out)
    rejected = stats["rejections"]
    for reason in ("budget_template", "path_repeat", "query_params", "budget_host"):
        assert rejected.get(reason, 0) > 0, reason
    flagged = {h["host"] for h in stats["traps"]["flagged_hosts"]}
    assert farm.host_key("invents") in flagged
    assert farm.host_key("normal") not in flagged


def _normal_farm() -> WebFarm:
    normal = {p: html(t) for p, t in linked_pages(NORMAL_PAGES).items()}
    normal["/robots.txt"] = NO_ROBOTS
    return WebFarm({"normal": Site("normal", normal)})


def test_pages_per_host_per_day_and_bandwidth_budgets(tmp_path: Path) -> None:
    base = CrawlConfig(
        allow_nets=("127.0.0.0/8",), min_delay=0.01, delay_factor=0.0, progress=False
    )
    with _normal_farm() as farm:
        crawler = Crawler(base.replace(max_pages_per_host_per_day=5, duration=1.5), tmp_path / "a")
        try:
            crawler.add_seeds([farm.url("normal", "/")])
            assert crawler.run().stop_reason == "duration"  # waiting for tomorrow
        finally:
            crawler.close()
        farm.wait_idle()
        assert len([p for p in farm.paths_for("normal") if p != "/robots.txt"]) == 5
        assert crawl_stats(tmp_path / "a")["rejections"]["budget_host_day"] == 1
        farm.clear_log()
        crawler = Crawler(base.replace(max_bytes=1500), tmp_path / "b")
        try:
            crawler.add_seeds([farm.url("normal", "/")])
            assert crawler.run().stop_reason == "max_bytes"
        finally:
            crawler.close()
        assert 1500 <= crawl_stats(tmp_path / "b")["bytes"] < 1500 + 2000
        assert len(farm.paths_for("normal")) < NORMAL_PAGES


def test_exclusion_patterns_per_host(tmp_path: Path) -> None:
    with _normal_farm() as farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",),
            min_delay=0.0,
            delay_factor=0.0,
            progress=False,
            exclude=("127.0.0.1 /p1*.html", r"*.example re:.*"),
        )
        crawler = Crawler(config, tmp_path / "out")
        try:
            crawler.add_seeds([farm.url("normal", "/")])
            crawler.run()
        finally:
            crawler.close()
        farm.wait_idle()
        paths = set(farm.paths_for("normal"))
    assert not {p for p in paths if p.startswith("/p1")}
    assert "/p20.html" in paths  # the rest of the host is crawled
    assert crawl_stats(tmp_path / "out")["rejections"]["excluded_pattern"] > 0

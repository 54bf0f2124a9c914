"""Sitemaps as seeds, against real loopback servers: robots.txt Sitemap lines and --sitemap,
an index over a plain and a gzipped sitemap, orphan pages, and hostile sitemaps."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import Response, Site, WebFarm, html, robots_txt
from crawlspace.ops.export import iter_records
from crawlspace.ops.report import crawl_stats
from tests.unit.test_sitemap_parser import BILLION_LAUGHS

XML = {"Content-Type": "application/xml"}
ORPHANS_A = [f"/orphan/a{i}.html" for i in range(3)]
ORPHANS_B = [f"/orphan/b{i}.html" for i in range(3)]


def urlset(base: str, entries: Mapping[str, str]) -> bytes:
    """``entries`` maps a path to the extra XML of its <url> (lastmod, priority, ...)."""
    urls = "".join(f"<url><loc>{base}{p}</loc>{extra}</url>" for p, extra in entries.items())
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    ).encode()


def index(base: str, paths: list[str]) -> bytes:
    items = "".join(f"<sitemap><loc>{base}{p}</loc></sitemap>" for p in paths)
    return f"<sitemapindex>{items}</sitemapindex>".encode()


def page(text: str) -> Response:
    return html(f"<html><body><p>{text}</p></body></html>")


def build(ports: Mapping[str, int]) -> dict[str, Site]:
    base = f"http://127.0.0.1:{ports['maps']}"
    routes: dict[str, Response] = {
        "/": page("home, linking nowhere"),
        "/robots.txt": robots_txt(
            f"User-agent: *\nDisallow: /private/\n\nSitemap: {base}/sitemap_index.xml\n"
        ),
        "/sitemap_index.xml": Response(
            200,
            XML,
            index(base, ["/sitemaps/a.xml", "/sitemaps/b.xml.gz", "/sitemaps/nested.xml"]),
        ),
        "/sitemaps/a.xml": Response(
            200,
            XML,
            urlset(
                base,
                {
                    **{p: f"<lastmod>2024-03-0{i + 1}</lastmod>" for i, p in enumerate(ORPHANS_A)},
                    "/private/listed.html": "",  # listed, but robots.txt forbids it
                },
            ),
        ),
        # Served as a file (no Content-Encoding): the sitemap reader inflates it.
        "/sitemaps/b.xml.gz": Response(
            200,
            {"Content-Type": "application/x-gzip"},
            gzip.compress(
                urlset(
                    base,
                    {
                        **{
                            p: f"<lastmod>2024-04-0{i + 1}T12:00:00Z</lastmod>"
                            f"<changefreq>daily</changefreq><priority>0.{i + 7}</priority>"
                            for i, p in enumerate(ORPHANS_B)
                        },
                        "/": "<priority>1.0</priority>",  # known already: metadata only
                    },
                ),
                mtime=0,
            ),
        ),
        # An index inside an index, with max_sitemap_depth = 1: its child is refused.
        "/sitemaps/nested.xml": Response(200, XML, index(base, ["/sitemaps/too-deep.xml"])),
        "/sitemaps/too-deep.xml": Response(200, XML, urlset(base, {"/orphan/deep.html": ""})),
        "/private/listed.html": page("private"),
        "/orphan/deep.html": page("deep"),
    }
    routes.update({p: page(p) for p in ORPHANS_A + ORPHANS_B})
    hostile: dict[str, Response] = {
        "/": page("hostile home"),
        "/bomb.xml": Response(200, XML, BILLION_LAUGHS),
        "/xxe.xml": Response(
            200,
            XML,
            (
                '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM'
                f' "http://127.0.0.1:{ports["hostile"]}/secret">]>'
                "<urlset><url><loc>&xxe;</loc></url></urlset>"
            ).encode(),
        ),
        "/secret": page("an external entity must never fetch this"),
        "/plain.txt": Response(
            200,
            {"Content-Type": "text/plain"},
            f"http://127.0.0.1:{ports['hostile']}/from-text.html\n".encode(),
        ),
        "/from-text.html": page("listed in a text sitemap"),
        # A sitemap that moved (as behind an http -> https redirect) is still read as one.
        "/moved.xml": Response(301, {"Location": "/moved-to.xml"}, b""),
        "/moved-to.xml": Response(
            200, XML, urlset(f"http://127.0.0.1:{ports['hostile']}", {"/from-moved.html": ""})
        ),
        "/from-moved.html": page("listed in a sitemap behind a redirect"),
    }
    return {"maps": Site("maps", routes), "hostile": Site("hostile", hostile)}


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WebFarm, Path, float]]:
    out = tmp_path_factory.mktemp("sitemaps")
    farm = WebFarm.deferred(["maps", "hostile"], build)
    with farm:
        config = CrawlConfig(
            allow_nets=("127.0.0.0/8",),
            scope="any",
            min_delay=0.02,
            delay_factor=0.0,
            max_sitemap_depth=1,
            sitemaps=tuple(
                farm.url("hostile", p)
                for p in ("/bomb.xml", "/xxe.xml", "/plain.txt", "/moved.xml")
            ),
            progress=False,
        )
        crawler = Crawler(config, out)
        started = time.monotonic()
        try:
            crawler.add_seeds([farm.url("maps", "/")])
            assert crawler.run().stop_reason == "done"
        finally:
            crawler.close()
        elapsed = time.monotonic() - started
        assert farm.wait_idle(timeout=5.0)
        yield farm, out, elapsed


def urls(out: Path) -> dict[str, dict[str, object]]:
    return {r["url"]: r for r in iter_records(out, "urls")}


def test_index_and_both_sitemaps_fetched_after_robots(
    crawled: tuple[WebFarm, Path, float],
) -> None:
    farm, _, _ = crawled
    paths = farm.paths_for("maps")
    assert paths[0] == "/robots.txt"
    for sitemap in ("/sitemap_index.xml", "/sitemaps/a.xml", "/sitemaps/b.xml.gz"):
        assert paths.count(sitemap) == 1
    assert paths.index("/sitemap_index.xml") < paths.index("/sitemaps/a.xml")


def test_all_orphans_are_fetched_with_lastmod_stored(crawled: tuple[WebFarm, Path, float]) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for("maps")
    for orphan in ORPHANS_A + ORPHANS_B:
        assert paths.count(orphan) == 1, orphan
    records = urls(out)
    a0 = records[farm.url("maps", ORPHANS_A[0])]
    assert (a0["state"], a0["source"], a0["lastmod"]) == ("fetched", "sitemap_entry", "2024-03-01")
    b2 = records[farm.url("maps", ORPHANS_B[2])]
    assert (b2["lastmod"], b2["changefreq"], b2["sitemap_priority"]) == (
        "2024-04-03T12:00:00Z",
        "daily",
        0.9,
    )
    home = records[farm.url("maps", "/")]
    assert (home["source"], home["sitemap_priority"]) == ("seed", 1.0)


def test_sitemap_urls_obey_robots_and_the_index_depth_limit(
    crawled: tuple[WebFarm, Path, float],
) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for("maps")
    assert "/private/listed.html" not in paths
    assert "/sitemaps/nested.xml" in paths
    assert "/sitemaps/too-deep.xml" not in paths
    assert "/orphan/deep.html" not in paths
    records = urls(out)
    assert records[farm.url("maps", "/private/listed.html")]["reason"] == "robots"
    assert records[farm.url("maps", "/sitemaps/too-deep.xml")]["reason"] == "sitemap_depth"


def test_bomb_and_external_entity_are_refused_at_no_cost(
    crawled: tuple[WebFarm, Path, float],
) -> None:
    farm, out, elapsed = crawled
    paths = farm.paths_for("hostile")
    assert "/secret" not in paths  # the external entity was never resolved
    assert paths.count("/bomb.xml") == 1
    assert paths.count("/xxe.xml") == 1
    assert "/from-text.html" in paths  # a text sitemap given with --sitemap works
    stats = crawl_stats(out)
    assert stats["rejections"]["sitemap_invalid"] == 2
    records = urls(out)
    assert records[farm.url("hostile", "/bomb.xml")]["reason"] == "sitemap_invalid"
    assert elapsed < 20.0  # 10^9 "lol"s expanded would take minutes and gigabytes


def test_a_redirected_sitemap_is_read_as_a_sitemap(crawled: tuple[WebFarm, Path, float]) -> None:
    farm, out, _ = crawled
    paths = farm.paths_for("hostile")
    assert paths.count("/moved.xml") == paths.count("/moved-to.xml") == 1
    assert "/from-moved.html" in paths
    moved_to = urls(out)[farm.url("hostile", "/moved-to.xml")]
    assert (moved_to["source"], moved_to["state"]) == ("sitemap", "fetched")


def test_stats_count_sitemaps(crawled: tuple[WebFarm, Path, float]) -> None:
    _, out, _ = crawled
    sitemaps = crawl_stats(out)["sitemaps"]
    # index, a, b, nested + bomb, xxe, plain.txt, moved, moved-to (too-deep is refused at the
    # entry, as a link)
    assert sitemaps["documents"] == 9
    # 6 orphans, from-text, from-moved, private/listed (excluded)
    assert sitemaps["listed"] == 9
    assert sitemaps["with_lastmod"] == 6


def test_cli_sitemap_option_without_seeds(tmp_path: Path) -> None:
    def build_one(ports: Mapping[str, int]) -> dict[str, Site]:
        base = f"http://127.0.0.1:{ports['solo']}"
        routes = {
            "/list.xml": Response(200, XML, urlset(base, {"/only-here.html": ""})),
            "/only-here.html": page("reached through --sitemap only"),
        }
        return {"solo": Site("solo", routes)}

    config = tmp_path / "crawl.toml"
    config.write_text(
        '[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = 0.02\ndelay_factor = 0.0\n'
    )
    with WebFarm.deferred(["solo"], build_one) as farm:
        out = tmp_path / "out"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "crawlspace.cli",
                "crawl",
                "--out",
                str(out),
                "--config",
                str(config),
                "--sitemap",
                farm.url("solo", "/list.xml"),
                "-q",
            ],
            check=True,
            timeout=60,
            capture_output=True,
        )
        assert farm.wait_idle()
        assert farm.paths_for("solo") == ["/robots.txt", "/list.xml", "/only-here.html"]
    exported = subprocess.run(
        [sys.executable, "-m", "crawlspace.cli", "export", str(out), "--what", "hosts"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    (host,) = [json.loads(line) for line in exported.splitlines()]
    assert (host["robots_status"], host["robots_outcome"], host["fetched"]) == (404, "allow_all", 2)

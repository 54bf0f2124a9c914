"""The index feed end to end, on both engines: `crawlspace crawl` (SQLite) and four `crawlspace
worker` processes on a 3-master Redis Cluster crawl one site of pages an index must hold, drop or
merge, and their feeds (`crawlspace feed`) say the same: one upsert per indexable page with its
title, language, text and outlinks with anchor texts, under its canonical's id; one delete per
page that is gone (404, 410), redirects, says noindex (meta or header) or is another page's
copy; one record per (URL, version); nothing for robots.txt or a sitemap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

import pyarrow.parquet as pq
import pytest

from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from crawlspace.feed_format import document_id
from crawlspace.ops.search_index import SearchIndex
from tests.integration.test_dedup_crawl import _article
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

SETTINGS = """
[crawl]
allow_nets = ["127.0.0.0/8"]
scope = "host"
min_delay = 0.0
delay_factor = 0.0
concurrency = 4
total_timeout = 2.0
"""


def words(path: str) -> str:
    """A page's own words (no two pages are near duplicates by chance), and one word only it
    has: its path's letters."""
    name = path.removeprefix("/").removesuffix(".html")
    return " ".join(_article(zlib.crc32(path.encode()))) + " only" + name


def page(path: str, *, head: str = "", links: str = "") -> Response:
    return html(
        f'<html lang="en-GB"><head><title>Title of {path}</title>{head}</head>'
        f"<body><p>{words(path)}</p>{links}</body></html>"
    )


def feed_site() -> Site:
    copy = html(f"<html><body><p>{words('/copy')}</p></body></html>")
    links = [
        ("/a.html", "The A page"),
        ("/b.html", "Bee"),
        ("/variant.html", "a variant"),
        ("/gone.html", "gone"),
        ("/missing.html", "missing"),
        ("/hidden.html", "hidden"),
        ("/tagged.html", "tagged"),
        ("/old.html", "moved"),
        ("/copy1.html", "copy"),
        ("/copy2.html", "copy"),
        ("/robots-only.txt", "text"),
    ]
    anchors = "".join(f'<a href="{href}">{text}</a>' for href, text in links)
    routes = {
        "/": page("/", links=anchors),
        "/a.html": page("/a.html", links='<a href="/b.html">B <b>again</b></a>'),
        "/b.html": page("/b.html", links='<a href="/a.html#top">back to A</a>'),
        "/variant.html": page("/variant.html", head='<link rel="canonical" href="/a.html">'),
        "/gone.html": html("<html><body>gone</body></html>", 410),
        "/hidden.html": page("/hidden.html", head='<meta name="robots" content="noindex">'),
        "/tagged.html": Response(
            200,
            {"Content-Type": "text/html", "X-Robots-Tag": "noindex"},
            f"<html><body><p>{words('/tagged.html')}</p></body></html>".encode(),
        ),
        "/old.html": Response(301, {"Location": "/a.html"}, b""),
        "/copy1.html": copy,
        "/copy2.html": copy,
        "/robots-only.txt": Response(200, {"Content-Type": "text/plain"}, b"plain text"),
        "/robots.txt": html("", 404),
    }
    return Site("feed", routes)


def feed_of(out: Path) -> list[dict[str, Any]]:
    """`crawlspace feed DIR`, as a consumer reads it."""
    done = subprocess.run(
        [*cli("feed", str(out))], check=True, capture_output=True, text=True, timeout=60
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def check_feed(records: list[dict[str, Any]], farm: WebFarm) -> None:
    base = farm.host_key("feed")
    path = {r["url"]: r["url"].removeprefix(base) for r in records}
    visits = [(r["url"], r["url_version"]) for r in records]
    assert len(visits) == len(set(visits))  # one record per (URL, version)
    kinds = {path[r["url"]]: (r["kind"], r["reason"]) for r in records}
    copies = sorted(kinds.pop(p) for p in ("/copy1.html", "/copy2.html"))
    assert copies == [("delete", "duplicate"), ("upsert", None)]
    assert kinds == {
        "/": ("upsert", None),
        "/a.html": ("upsert", None),
        "/b.html": ("upsert", None),
        "/variant.html": ("upsert", None),
        "/gone.html": ("delete", "gone"),
        "/missing.html": ("delete", "gone"),
        "/hidden.html": ("delete", "noindex"),
        "/tagged.html": ("delete", "noindex"),
        "/old.html": ("delete", "redirected"),
    }  # the plain-text file, robots.txt: nothing parsed, nothing to index or delete
    by_path = {path[r["url"]]: r for r in records}
    a = by_path["/a.html"]
    assert a["id"] == document_id(base + "/a.html")
    assert a["title"] == "Title of /a.html"
    assert a["lang"] == "en-gb"
    assert "onlya" in a["text"].split()
    assert "onlyb" not in a["text"].split()
    assert a["outlinks"] == [{"url": base + "/b.html", "anchors": ["B again"], "nofollow": False}]
    assert by_path["/b.html"]["outlinks"][0]["anchors"] == ["back to A"]
    assert a["status"] == 200
    assert a["warc"]["file"].endswith(".warc.gz")
    # A page and the canonical it names are one document.
    variant = by_path["/variant.html"]
    assert variant["id"] == a["id"]
    assert variant["canonical"] == base + "/a.html"
    assert "onlyvariant" in variant["text"].split()
    # A delete names the URL's own id; a redirect's says where it went.
    old = by_path["/old.html"]
    assert old["id"] == document_id(base + "/old.html")
    assert old["status"] == 301
    assert old["redirect_to"] == base + "/a.html"
    assert "text" not in old
    assert by_path["/gone.html"]["status"] == 410
    assert by_path["/missing.html"]["status"] == 404
    home = by_path["/"]
    anchors = {link["url"].removeprefix(base): link["anchors"] for link in home["outlinks"]}
    assert anchors["/copy1.html"] == ["copy"]
    assert anchors["/old.html"] == ["moved"]


def test_a_crawl_feeds_its_index(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    out = tmp_path / "out"
    with WebFarm({"feed": feed_site()}) as farm:
        args = [*cli("crawl", farm.url("feed", "/")), "--out", str(out), "--config", str(config)]
        subprocess.run([*args, "-q"], check=True, timeout=60, stdout=subprocess.DEVNULL)
        records = feed_of(out)
        check_feed(records, farm)
    assert [r["position"] for r in records] == list(range(1, len(records) + 1))
    # Read from a position on, as a consumer resumes.
    later = feed_of_from(out, records[3]["position"])
    assert later == records[3:]
    # As files for batch indexers: zstd-compressed JSON lines, and Parquet with the schema.
    jsonl, table = tmp_path / "feed.jsonl.zst", tmp_path / "feed.parquet"
    subprocess.run([*cli("feed", str(out), "--output", str(jsonl))], check=True, timeout=60)
    with zstd.open(jsonl, "rt", encoding="utf-8") as lines:
        assert [json.loads(line) for line in lines] == records
    parquet = [*cli("feed", str(out), "--format", "parquet", "--output", str(table))]
    subprocess.run(parquet, check=True, timeout=60)
    rows = pq.read_table(table).to_pylist()
    assert [(r["position"], r["id"], r["kind"], r["reason"]) for r in rows] == [
        (r["position"], r["id"], r["kind"], r["reason"]) for r in records
    ]
    by_url = {r["url"]: r for r in rows}
    upsert = next(r for r in records if r["url"].endswith("/a.html"))
    assert by_url[upsert["url"]]["outlinks"] == upsert["outlinks"]
    assert by_url[upsert["url"]]["text"] == upsert["text"]


def feed_of_from(out: Path, position: int) -> list[dict[str, Any]]:
    done = subprocess.run(
        [*cli("feed", str(out), "--from", str(position))],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_no_feed_when_it_is_turned_off(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS + "feed = false\n")
    out = tmp_path / "out"
    with WebFarm({"feed": feed_site()}) as farm:
        args = [*cli("crawl", farm.url("feed", "/")), "--out", str(out), "--config", str(config)]
        subprocess.run([*args, "-q"], check=True, timeout=60, stdout=subprocess.DEVNULL)
    assert feed_of(out) == []


@pytest.mark.slow
def test_workers_on_a_cluster_feed_the_same_records(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    outs = [tmp_path / f"w{i}" for i in range(4)]
    with WebFarm({"feed": feed_site()}) as farm:
        crawl_with_workers(
            cluster.url, "feed", 16, config, seeds=[farm.url("feed", "/")], outs=outs
        )
        records = [r for out in outs for r in feed_of(out)]
        check_feed(sorted(records, key=lambda r: r["version"]), farm)
        # The same records reached the frontier's feed streams: one index from them all.
        index = tmp_path / "index.db"
        shared = ["--frontier", cluster.url, "--namespace", "feed"]
        subprocess.run([*cli("index", *shared, "--into", str(index), "-q")], check=True)
        with SearchIndex(index) as searcher:
            # /, /a.html (with its variant), /b.html and one of the two copies.
            assert searcher.documents() == 4
            assert [h.url for h in searcher.search("onlyvariant")] == [farm.url("feed", "/a.html")]
            assert [h.url for h in searcher.search("onlyb")] == [farm.url("feed", "/b.html")]
            assert searcher.search("onlyhidden") == []

"""The search index kept from the feed (ops/search_index.py, ops/indexer.py): records applied by
version whatever their order or how often they come; an indexer killed with SIGKILL mid-way
resumes at what it committed and ends with every document once; a crawl finds a page by a word
only it has, and after the page answers 410 or says noindex on a revisit, no longer, on both
engines (the workers' through the frontier's feed streams); `crawl --index` keeps the index
current while it crawls.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from crawlspace.feed_codec import pack
from crawlspace.feed_format import document_id
from crawlspace.ops.search_index import SearchIndex, match_query
from crawlspace.store.sqlite.records import CrawlRecords
from tests.integration.test_index_feed import SETTINGS as LOOPBACK_SETTINGS
from tests.integration.test_index_feed import words
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers, kill_9_once

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

SETTINGS = (
    LOOPBACK_SETTINGS
    + """revisit_min_interval = 0.5
revisit_initial_interval = 0.5
revisit_max_interval = 1.0
"""
)


def upsert(position: int, url: str, version: int, text: str) -> dict[str, Any]:
    return {
        "position": position,
        "kind": "upsert",
        "id": document_id(url),
        "version": version,
        "url": url,
        "title": f"title {url}",
        "text": text,
    }


def delete(position: int, url: str, version: int) -> dict[str, Any]:
    return {"position": position, "kind": "delete", "id": document_id(url), "version": version}


def urls(index: SearchIndex, query: str) -> list[str]:
    return [hit.url for hit in index.search(query)]


def test_records_apply_by_version_whatever_their_order(tmp_path: Path) -> None:
    with SearchIndex(tmp_path / "index.db") as index:
        assert index.apply("feed", [upsert(1, "http://h/a", 20, "second edition")]) == 1
        # An older version arriving late (another worker's feed, a replay) changes nothing.
        index.apply("feed", [upsert(2, "http://h/a", 10, "first edition")])
        assert urls(index, "second") == ["http://h/a"]
        assert urls(index, "first") == []
        index.apply("feed", [delete(3, "http://h/a", 30)])
        assert urls(index, "second") == []
        # The tombstone keeps its version: the replayed upsert does not bring the page back.
        index.apply("feed", [upsert(1, "http://h/a", 20, "second edition")])
        assert urls(index, "second") == []
        index.apply("feed", [upsert(4, "http://h/a", 40, "third edition")])
        assert urls(index, "third") == ["http://h/a"]
        # A delete of a document never seen leaves a tombstone that wins over older upserts.
        index.apply("feed", [delete(5, "http://h/b", 50), upsert(6, "http://h/b", 45, "b words")])
        assert urls(index, "words") == []
        assert index.documents() == 1
        assert index.position("feed") == 7
        assert index.position("other") == 1
        index.db.execute("INSERT INTO pages(pages) VALUES('integrity-check')")


def test_a_query_is_words_never_syntax(tmp_path: Path) -> None:
    with SearchIndex(tmp_path / "index.db") as index:
        index.apply("f", [upsert(1, "http://h/x", 1, 'rock-and-roll "quoted" NEAR AND')])
        assert urls(index, 'rock-and-roll "quoted') == ["http://h/x"]
        assert urls(index, "AND NEAR -") == ["http://h/x"]
        assert urls(index, "---") == []
    assert match_query('a "b') == '"a" """b"'


def synthetic_crawl(directory: Path, records: int) -> None:
    """A crawl.db whose feed holds ``records`` upserts, each with a word of its own."""
    directory.mkdir()
    CrawlRecords(directory / "crawl.db").close()
    db = sqlite3.connect(directory / "crawl.db")
    with db:
        for n in range(records):
            url = f"http://h/{n}"
            meta = {"schema": 1, "kind": "upsert", "id": document_id(url), "version": n + 1}
            meta["url"] = url
            document = pack({"title": f"page {n}", "text": f"{words(str(n))} unique{n}"})
            db.execute(
                "INSERT INTO feed (event_id, doc_id, kind, meta, document) VALUES (?, ?, ?, ?, ?)",
                (f"e{n}", meta["id"], "upsert", json.dumps(meta), document),
            )
    db.close()


def committed_position(index_path: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{index_path}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT MAX(position) FROM consumed").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    return int(row[0] or 0)


def test_an_indexer_killed_mid_way_resumes_and_loses_nothing(tmp_path: Path) -> None:
    crawl = tmp_path / "crawl"
    total = 3000
    synthetic_crawl(crawl, total)
    index_path = crawl / "index.db"
    args = [*cli("index", str(crawl), "--batch", "50", "-q")]
    kill_9_once(args, lambda: committed_position(index_path) >= 200)
    killed_at = committed_position(index_path)
    assert 200 <= killed_at < total  # killed mid-way, with work committed and work left
    subprocess.run(args, check=True, timeout=120)
    with SearchIndex(index_path) as index:
        assert index.position(str(crawl.resolve())) == total + 1
        assert index.documents() == total
        for n in (0, killed_at - 2, killed_at - 1, killed_at, total - 1):
            assert urls(index, f"unique{n}") == [f"http://h/{n}"]
        (pages,) = index.db.execute("SELECT COUNT(*) FROM pages").fetchone()
        assert pages == total
        index.db.execute("INSERT INTO pages(pages) VALUES('integrity-check')")


class Turning:
    """/goes.html and /hides.html: pages of their own words on the first request; on every
    later one (a revisit), /goes.html answers 410 Gone and /hides.html says noindex."""

    def __init__(self) -> None:
        self.served: dict[str, int] = {"/goes.html": 0, "/hides.html": 0}
        self._lock = threading.Lock()

    def __call__(self, path_qs: str) -> Response | None:
        if path_qs not in self.served:
            return None
        with self._lock:
            self.served[path_qs] += 1
            first = self.served[path_qs] == 1
        if first:
            return html(f"<html><body><p>{words(path_qs)}</p></body></html>")
        if path_qs == "/goes.html":
            return html("<html><body>gone</body></html>", 410)
        head = '<meta name="robots" content="noindex">'
        return html(f"<html><head>{head}</head><body><p>{words(path_qs)}</p></body></html>")


def site(turning: Turning) -> Site:
    links = '<a href="/goes.html">g</a><a href="/hides.html">h</a>'
    routes = {
        "/": html(f"<html><body><p>{words('/')}</p>{links}</body></html>"),
        "/robots.txt": html("", 404),
    }
    return Site("s", routes, turning)


def search(out: Path, query: str) -> list[str]:
    done = subprocess.run(
        [*cli("search", str(out), query, "--json")],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: nothing found
    return [json.loads(line)["url"] for line in done.stdout.splitlines()]


def feed_of(*outs: Path) -> list[dict[str, Any]]:
    records = []
    for out in outs:
        done = subprocess.run(
            [*cli("feed", str(out))], check=True, capture_output=True, text=True, timeout=60
        )
        records += [json.loads(line) for line in done.stdout.splitlines()]
    return sorted(records, key=lambda r: r["version"])


def check_turns(records: list[dict[str, Any]], farm: WebFarm) -> None:
    """Each turning page: an upsert at its first visit, then the delete its revisit called for,
    under one id with a greater version."""
    for path, reason in (("/goes.html", "gone"), ("/hides.html", "noindex")):
        url = farm.url("s", path)
        mine = [r for r in records if r["url"] == url]
        assert [(r["kind"], r["url_version"]) for r in mine[:2]] == [("upsert", 1), ("delete", 2)]
        assert mine[1]["reason"] == reason
        assert mine[0]["id"] == mine[1]["id"] == document_id(url)
        assert mine[0]["version"] < mine[1]["version"]
        assert {r["kind"] for r in mine[1:]} == {"delete"}  # every revisit after says so too


def test_a_page_is_found_by_its_word_until_it_is_gone(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    out = tmp_path / "out"
    turning = Turning()
    with WebFarm({"s": site(turning)}) as farm:
        seed = farm.url("s", "/")
        crawl = [*cli("crawl"), "--out", str(out), "--config", str(config), "-q"]
        subprocess.run([*crawl, seed], check=True, timeout=60, stdout=subprocess.DEVNULL)
        subprocess.run([*cli("index", str(out), "-q")], check=True, timeout=60)
        assert search(out, "onlygoes") == [farm.url("s", "/goes.html")]
        assert search(out, "onlyhides") == [farm.url("s", "/hides.html")]
        # The revisits find one gone, one noindex: `crawl --index` has the index say so.
        again = [*crawl, "--continuous", "--duration", "3", "--index"]
        subprocess.run(again, check=True, timeout=60, stdout=subprocess.DEVNULL)
        assert min(turning.served.values()) >= 2
        check_turns(feed_of(out), farm)
    assert search(out, "onlygoes") == []
    assert search(out, "onlyhides") == []
    assert search(out, "only") == [farm.url("s", "/")]
    # `crawlspace stats` says what the feed holds and that the index has all of it.
    done = subprocess.run([*cli("stats", str(out), "--json")], check=True, capture_output=True)
    feed = json.loads(done.stdout)["feed"]
    assert feed["index"] == {"documents": 1, "behind": 0}
    assert feed["kinds"]["delete:gone"] >= 1
    assert feed["kinds"]["delete:noindex"] >= 1
    assert feed["records"] == sum(feed["kinds"].values())


@pytest.mark.slow
def test_workers_deletes_reach_the_stream_index(tmp_path: Path, cluster: RedisDeployment) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS + "continuous = true\nduration = 4.0\n")
    outs = [tmp_path / f"w{i}" for i in range(2)]
    index = tmp_path / "index.db"
    turning = Turning()
    with WebFarm({"s": site(turning)}) as farm:
        crawl_with_workers(cluster.url, "turns", 8, config, seeds=[farm.url("s", "/")], outs=outs)
        assert min(turning.served.values()) >= 2
        check_turns(feed_of(*outs), farm)
    shared = ["--frontier", cluster.url, "--namespace", "turns"]
    subprocess.run([*cli("index", *shared, "--into", str(index), "-q")], check=True, timeout=60)
    assert search(index, "onlygoes") == []
    assert search(index, "onlyhides") == []
    assert search(index, "only") == [farm.url("s", "/")]

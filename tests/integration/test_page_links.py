"""A fetched page's links are one ``page_links`` row (store/sqlite/schema.py), read back link by
link by ``export --what links`` and by SQL's json_each; a crawl.db from before keeps its row per
link in ``links``, and the export reads both."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from crawlspace.ops.export import iter_records
from crawlspace.records import Completion, FetchRecord, LeaseKind, LinkRecord
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.rows import pack_links, unpack_links
from crawlspace.store.sqlite.store import SqliteStore
from tests.conformance.conftest import LEASE_SECONDS, cand, robots_ok

HOST = "http://a.example"


@given(
    st.lists(
        st.builds(LinkRecord, st.text(min_size=1), st.booleans()),
        max_size=30,
    )
)
def test_a_pages_links_unpack_as_they_were_packed(links: list[LinkRecord]) -> None:
    urls, nofollow = pack_links(links)
    assert unpack_links(urls, nofollow) == [(link.to_url, link.nofollow) for link in links]
    assert (nofollow is None) == (not any(link.nofollow for link in links))


def crawl_one_page(out: Path, links: list[LinkRecord]) -> None:
    store = SqliteStore(out / "crawl.db", FrontierLimits())
    try:
        store.add([cand(HOST, "/")], 0.0)
        (robots,) = store.lease(0.0, 1, LEASE_SECONDS)
        assert robots.kind is LeaseKind.ROBOTS
        assert store.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
        (page,) = store.lease(1.0, 1, LEASE_SECONDS)
        fetch = FetchRecord(
            page.url, page.url, 200, 1.0, 5.0, "text/html", 100, False, None, None, None, None
        )
        done = Completion(state="fetched", fetch=fetch, next_allowed_at=1.0, links=links)
        assert store.complete(page, done, 1.0) is not None
    finally:
        store.close()


def test_the_export_and_json_each_read_a_pages_links_in_order(tmp_path: Path) -> None:
    links = [
        LinkRecord(f"{HOST}/b", False),
        LinkRecord(f"{HOST}/a", True),
        LinkRecord("http://other.example/", False),
    ]
    crawl_one_page(tmp_path, links)
    exported = list(iter_records(tmp_path, "links"))
    assert exported == [
        {"from_url": f"{HOST}/", "to_url": link.to_url, "nofollow": link.nofollow} for link in links
    ]
    with sqlite3.connect(tmp_path / "crawl.db") as db:
        # The query docs/output.md gives.
        rows = db.execute(
            "SELECT f.url, j.value FROM page_links p JOIN fetches f ON f.id = p.fetch_id,"
            " json_each(p.urls) j"
        ).fetchall()
        assert db.execute("SELECT COUNT(*) FROM links").fetchone() == (0,)
    assert rows == [(f"{HOST}/", link.to_url) for link in links]


def test_a_crawl_db_from_before_page_links_exports_its_rows_first(tmp_path: Path) -> None:
    crawl_one_page(tmp_path, [LinkRecord(f"{HOST}/new", False)])
    with sqlite3.connect(tmp_path / "crawl.db") as db:
        (fetch_id,) = db.execute("SELECT id FROM fetches").fetchone()
        db.execute(
            "INSERT INTO links (fetch_id, to_url, nofollow) VALUES (?, ?, 1)",
            (fetch_id, f"{HOST}/old"),
        )
    exported = [(r["to_url"], r["nofollow"]) for r in iter_records(tmp_path, "links")]
    assert exported == [(f"{HOST}/old", True), (f"{HOST}/new", False)]

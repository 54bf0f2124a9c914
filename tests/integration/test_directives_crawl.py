"""X-Robots-Tag on responses that are not HTML (crawl/visit.py): the header is what such files have,
so noindex must be recorded whether or not a processor parsed the body."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from crawlspace.config import CrawlConfig
from crawlspace.crawl.crawler import Crawler
from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from tests.webs import run_and_close


def test_x_robots_tag_noindex_is_recorded_for_any_content_type(tmp_path: Path) -> None:
    links = "".join(f'<a href="{p}">{p}</a>' for p in ("/doc.pdf", "/notes.txt", "/plain.txt"))
    site = Site(
        "files",
        {
            "/": html(f"<html><body>{links}</body></html>"),
            "/doc.pdf": Response(
                200, {"Content-Type": "application/pdf", "X-Robots-Tag": "noindex"}, b"%PDF-1.4"
            ),
            "/notes.txt": Response(
                200, {"Content-Type": "text/plain", "X-Robots-Tag": "none"}, b"notes"
            ),
            "/plain.txt": Response(200, {"Content-Type": "text/plain"}, b"plain"),
        },
    )
    config = CrawlConfig(allow_nets=("127.0.0.0/8",), min_delay=0.0, progress=False)
    with WebFarm({"files": site}) as farm:
        summary = run_and_close(Crawler(config, tmp_path / "out"), [farm.url("files", "/")])
        assert summary.stop_reason == "done"
        paths = ("/", "/doc.pdf", "/notes.txt", "/plain.txt")
        url = {path: farm.url("files", path) for path in paths}
    db = sqlite3.connect(tmp_path / "out" / "crawl.db")
    try:
        noindex = dict(db.execute("SELECT url, noindex FROM fetches"))
    finally:
        db.close()
    assert noindex == {
        url["/"]: 0,
        url["/doc.pdf"]: 1,
        url["/notes.txt"]: 1,
        url["/plain.txt"]: 0,
    }

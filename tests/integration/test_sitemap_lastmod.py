"""A sitemap's lastmod bump brings its URL back (frontier/revisit.py stale_before), judged from the
server's log: a --continuous crawl whose pages the sitemap lists as changing yearly fetches each
once; when the sitemap says one of them changed after its visit, the next reading of the sitemap
makes that one due, and it is fetched again within a lease round, the others not."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from tests.integration.test_recrawl import crawl_continuously

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PAGES = ("/a.html", "/b.html", "/c.html")
SETTLE = 1.0  # after /a.html's first visit, the sitemap says it changed


class ChangingSitemap:
    """Serves the pages and a sitemap of them (changefreq yearly), whose lastmod of /a.html
    moves to "now" once SETTLE seconds have passed since /a.html was first served."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.lock = threading.Lock()
        self.a_served_at: float | None = None
        self.bumped_at: float | None = None  # wall clock of the new lastmod
        self.bump_served_at: float | None = None  # monotonic: the first sitemap that said so

    def __call__(self, path: str) -> Response | None:
        with self.lock:
            if path in PAGES:
                if path == "/a.html" and self.a_served_at is None:
                    self.a_served_at = time.monotonic()
                return html(f"<html><body><p>page {path}</p></body></html>")
            if path == "/sitemap.xml":
                return self._sitemap()
        return None

    def _sitemap(self) -> Response:
        settled = self.a_served_at is not None and time.monotonic() - self.a_served_at >= SETTLE
        if self.bumped_at is None and settled:
            self.bumped_at = time.time()
            self.bump_served_at = time.monotonic()
        entries = []
        for path in PAGES:
            when = self.bumped_at if path == "/a.html" and self.bumped_at else 1_600_000_000.0
            lastmod = datetime.fromtimestamp(when, UTC).isoformat()
            entries.append(
                f"<url><loc>{self.base}{path}</loc><lastmod>{lastmod}</lastmod>"
                "<changefreq>yearly</changefreq></url>"
            )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(entries)
            + "</urlset>"
        ).encode()
        return Response(200, {"Content-Type": "application/xml"}, body)


def test_a_lastmod_bump_brings_its_url_back_within_a_lease_round(tmp_path: Path) -> None:
    holder: dict[str, ChangingSitemap] = {}

    def build(ports: dict[str, int]) -> dict[str, Site]:
        holder["site"] = ChangingSitemap(f"http://127.0.0.1:{ports['site']}")
        routes = {"/": html("<html><body><p>home</p></body></html>")}
        return {"site": Site("site", routes, holder["site"])}

    with WebFarm.deferred(["site"], build) as farm:
        log = crawl_continuously(
            farm,
            tmp_path / "out",
            6.0,
            revisit_min_interval=0.3,
            revisit_initial_interval=0.3,  # the sitemap itself is read again every ~second
            sitemaps=(farm.url("site", "/sitemap.xml"),),
        )
    changing = holder["site"]
    assert changing.bump_served_at is not None, "the sitemap was not read again after the bump"
    hits = {path: [r.started_at for r in log if r.path_qs == path] for path in PAGES}
    assert len(hits["/b.html"]) == len(hits["/c.html"]) == 1, hits
    assert len(hits["/a.html"]) == 2, hits
    again = hits["/a.html"][1]
    assert changing.bump_served_at <= again <= changing.bump_served_at + 1.0, (
        again - changing.bump_served_at
    )

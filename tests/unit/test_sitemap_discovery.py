"""discovery/sitemaps.py and frontier/priority.py: sitemap URLs through the common admission."""

from __future__ import annotations

import gzip

from crawlspace.discovery.links import Discovery, EntryRules
from crawlspace.discovery.scope import Scope
from crawlspace.discovery.sitemaps import (
    admit_declared_sitemaps,
    admit_parsed_sitemap,
    is_sitemap_response,
    read_sitemap,
)
from crawlspace.frontier.priority import url_priority


def discovery(max_depth: int = 10) -> Discovery:
    return Discovery(EntryRules(max_depth=max_depth), Scope("host", ["https://site.test/"]))


def test_priority_keeps_breadth_first_and_orders_by_sitemap_priority_within_a_depth() -> None:
    assert url_priority(0) == 5
    assert url_priority(1, 1.0) == 10
    assert url_priority(1, 1.0) < url_priority(1) < url_priority(1, 0.0)
    assert url_priority(1, 0.0) <= url_priority(2, 1.0)
    assert url_priority(0, 7.0) == url_priority(0, 1.0)  # clamped


def test_declared_sitemaps_are_normalized_and_scoped() -> None:
    out = admit_declared_sitemaps(
        discovery(),
        ["https://SITE.test:443/sitemap.xml", "https://other.test/sitemap.xml", "mailto:x"],
    )
    assert [(c.url, c.source, c.depth) for c in out.candidates] == [
        ("https://site.test/sitemap.xml", "sitemap", 0)
    ]
    assert out.rejections["scope"] == 1
    assert sum(out.rejections.values()) == 2


def test_urlset_entries_carry_metadata_and_priority() -> None:
    body = (
        b"<urlset>"
        b"<url><loc>/rel</loc><priority>0.9</priority><lastmod>2024-01-02</lastmod>"
        b"<changefreq>daily</changefreq></url>"
        b"<url><loc>https://site.test/a#frag</loc></url>"
        b"<url><loc>https://site.test/a</loc></url>"
        b"<url><loc>https://elsewhere.test/x</loc></url>"
        b"</urlset>"
    )
    out, reason = admit_parsed_sitemap(
        discovery(),
        read_sitemap(gzip.compress(body)),
        url="https://site.test/s.xml",
        depth=0,
        max_sitemap_depth=2,
    )
    assert reason is None
    first, second = out.candidates
    assert (first.url, first.source, first.depth) == ("https://site.test/rel", "sitemap_entry", 0)
    assert (first.lastmod, first.changefreq, first.sitemap_priority) == ("2024-01-02", "daily", 0.9)
    assert first.priority == url_priority(0, 0.9) < second.priority == url_priority(0)
    assert second.url == "https://site.test/a"
    assert out.excluded == [("https://elsewhere.test/x", "scope")]
    assert [link.to_url for link in out.links] == [
        "https://site.test/rel",
        "https://site.test/a",
        "https://elsewhere.test/x",
    ]


def test_index_children_are_sitemaps_one_level_deeper_up_to_the_limit() -> None:
    body = b"<sitemapindex><sitemap><loc>https://site.test/s1.xml</loc></sitemap></sitemapindex>"
    out, _ = admit_parsed_sitemap(
        discovery(), read_sitemap(body), url="https://site.test/i.xml", depth=0, max_sitemap_depth=1
    )
    (child,) = out.candidates
    assert (child.source, child.depth, child.lastmod) == ("sitemap", 1, None)
    too_deep, _ = admit_parsed_sitemap(
        discovery(), read_sitemap(body), url="https://site.test/i.xml", depth=1, max_sitemap_depth=1
    )
    assert too_deep.candidates == []
    assert too_deep.excluded == [("https://site.test/s1.xml", "sitemap_depth")]


def test_refused_and_cut_sitemaps_are_counted() -> None:
    bomb = b'<!DOCTYPE x [<!ENTITY a "aaaa">]><urlset><url><loc>&a;</loc></url></urlset>'
    out, reason = admit_parsed_sitemap(
        discovery(), read_sitemap(bomb), url="https://site.test/s.xml", depth=0, max_sitemap_depth=2
    )
    assert reason == "sitemap_invalid"
    assert out.candidates == []
    assert out.rejections == {"sitemap_invalid": 1}
    cut, reason = admit_parsed_sitemap(
        discovery(),
        read_sitemap(b"<urlset><url><loc>https://site.test/1</loc></url><url><loc>https://si"),
        url="https://site.test/s.xml",
        depth=0,
        max_sitemap_depth=2,
        cut_in_transfer=True,
    )
    assert reason is None
    assert [c.url for c in cut.candidates] == ["https://site.test/1"]
    assert cut.rejections["sitemap_truncated"] == 1


def test_only_sitemap_sources_are_read_as_sitemaps_and_html_never() -> None:
    assert is_sitemap_response("sitemap", "application/x-gzip")
    assert is_sitemap_response("sitemap", None)
    assert not is_sitemap_response("sitemap", "text/html; charset=utf-8")
    assert not is_sitemap_response("link", "application/xml")

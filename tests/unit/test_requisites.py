"""Page requisites, the pure parts: what a page and a stylesheet embed (parse/html.py,
parse/css.py) and how they are admitted (discovery/links.py admit_requisites)."""

from __future__ import annotations

from crawlspace.discovery.links import REQUISITE, Admission, Discovery, EntryRules, prenormalize
from crawlspace.discovery.scope import Scope
from crawlspace.parse.css import css_references
from crawlspace.parse.html import extract
from crawlspace.parse.processors import ProcessorRegistry, process_css, process_html

PAGE = b"""<html><head>
<link rel="stylesheet" href="/s.css"><link rel="canonical" href="/c"><link rel="next" href="/2">
<link rel="shortcut icon" href="/f.ico"><script src="/a.js"></script><script>inline()</script>
<style>@import "/i.css"; body { background: url(/bg.png) }</style></head>
<body><img src="/p.png" srcset="/p2.png 2x, /p3.png 3x"><img src="data:image/png;base64,AA">
<div style="background: url('/d.png')">text</div><a href="/next">next</a><a href="#top">top</a>
<video poster="/v.jpg"><source src="/v.mp4"></video><img src="/p.png"></body></html>"""


def test_a_page_names_what_it_embeds_in_document_order_each_once() -> None:
    page = extract(
        PAGE, base_url="http://h/", content_type="text/html", product_token="x", requisites=True
    )
    assert page.requisites == [
        "/s.css", "/f.ico", "/a.js", "/i.css", "/bg.png", "/p.png", "/p2.png", "/p3.png",
        "/d.png", "/v.jpg", "/v.mp4",
    ]  # fmt: skip
    assert [link.href for link in page.links] == ["/next"]  # links stay links
    assert "inline()" not in page.text
    plain = extract(PAGE, base_url="http://h/", content_type="text/html", product_token="x")
    assert plain.requisites == []  # only when asked


def test_a_stylesheet_names_its_imports_fonts_and_images_not_its_comments() -> None:
    css = """@import "a.css"; @import url('b.css') print; /* url(gone.png) */
    .x { background: URL( "c.png" ) } .y { filter: url(#svg) } .z { src: url(data:font/woff,AA) }
    .w { background: url(c.png) }"""
    assert css_references(css) == ["a.css", "b.css", "c.png"]
    assert css_references(css, limit=2) == ["a.css", "b.css"]
    content = process_css(
        css.encode(), url="http://h/t/s.css", content_type="text/css", product_token="x"
    )
    assert (content.base_url, content.requisites, content.links) == (
        "http://h/t/s.css",
        ["a.css", "b.css", "c.png"],
        [],
    )


def test_the_registry_reports_requisites_only_when_asked_and_keeps_a_users_processor() -> None:
    registry = ProcessorRegistry()
    assert registry.for_content_type("text/css") is None
    assert registry.for_content_type("text/html") is process_html
    mine = process_css  # a user's own processor for XHTML stays as it is
    registry.register("application/xhtml+xml", mine)
    registry.fetch_requisites()
    html = registry.for_content_type("text/html; charset=utf-8")
    assert html is not None
    assert html is not process_html
    assert html(PAGE, url="http://h/", content_type="text/html", product_token="x").requisites
    assert registry.for_content_type("application/xhtml+xml") is mine
    assert registry.for_content_type("text/css") is process_css


def test_requisites_are_admitted_at_the_pages_depth_within_scope_and_their_cap() -> None:
    discovery = Discovery(
        EntryRules(max_depth=2, max_requisites_per_page=2), Scope("host", ["http://h/"])
    )
    refs = ["/s.css", "http://elsewhere.test/x.png", "/a.js", "/b.png"]
    pre = prenormalize([(ref, False) for ref in refs], "http://h/page")
    into = Admission()
    discovery.admit_requisites(pre, parent_depth=2, into=into)
    assert [(c.url, c.depth, c.source) for c in into.candidates] == [
        ("http://h/s.css", 2, REQUISITE),
        ("http://h/a.js", 2, REQUISITE),
    ]
    assert into.rejections["requisite_budget"] == 1
    assert sum(into.rejections.values()) == 2  # and the other host's, out of scope

"""HTML extraction: links, base, canonical, robots meta, text, charsets, and never raising."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlspace.parse import html as html_module
from crawlspace.parse.directives import RobotsDirectives
from crawlspace.parse.html import (
    HtmlPage,
    RawLink,
    extract,
    nesting_cut,
    python_nesting_cut,
)

PAGE = "http://example.com/dir/page.html"
TOKEN = "CrawlspaceBot"


def parse(
    html: str | bytes, content_type: str | None = "text/html", max_bytes: int | None = None
) -> HtmlPage:
    body = html.encode() if isinstance(html, str) else html
    if max_bytes is None:
        return extract(body, base_url=PAGE, content_type=content_type, product_token=TOKEN)
    return extract(
        body, base_url=PAGE, content_type=content_type, product_token=TOKEN, max_bytes=max_bytes
    )


def test_link_kinds_in_document_order() -> None:
    page = parse(
        '<a href="/a">a</a><map><area href="area.html"></map>'
        '<iframe src="//cdn.example.com/if"></iframe><a href="b?x=1#y">b</a>'
        '<frameset><frame src="f.html"></frameset>'
    )
    assert [(link.tag, link.href) for link in page.links] == [
        ("a", "/a"),
        ("area", "area.html"),
        ("iframe", "//cdn.example.com/if"),
        ("a", "b?x=1#y"),
    ]


def test_frames() -> None:
    page = parse('<frameset><frame src="left.html"><frame src="right.html"></frameset>')
    assert [(link.tag, link.href) for link in page.links] == [
        ("frame", "left.html"),
        ("frame", "right.html"),
    ]


def test_hrefs_kept_raw_and_junk_skipped() -> None:
    page = parse(
        '<a href="">empty</a><a href="   ">blank</a><a href="#top">frag</a><a>none</a>'
        '<a href=" /spaced ">s</a><a href="javascript:void(0)">j</a>'
        '<a href="mailto:x@example.com">m</a><a href="page#frag">p</a>'
    )
    assert [link.href for link in page.links] == [
        " /spaced ",
        "javascript:void(0)",
        "mailto:x@example.com",
        "page#frag",
    ]


@pytest.mark.parametrize(
    ("rel", "nofollow"),
    [
        ("nofollow", True),
        ("NoFollow", True),
        ("ugc", True),
        ("sponsored", True),
        ("external nofollow noopener", True),
        ("noopener", False),
        ("", False),
        ("nofollowish", False),
    ],
)
def test_rel_nofollow_variants(rel: str, nofollow: bool) -> None:
    page = parse(f'<a href="/x" rel="{rel}">x</a>')
    assert page.links == [RawLink(href="/x", nofollow=nofollow, tag="a", anchor="x")]


def test_base_href_absolute() -> None:
    page = parse('<head><base href="https://other.example.org/root/"></head><a href="x">x</a>')
    assert page.base_url == "https://other.example.org/root/"
    assert page.links[0].href == "x"  # resolution is discovery's job


def test_base_href_relative_resolves_against_page() -> None:
    assert parse('<base href="../sub/">').base_url == "http://example.com/sub/"


def test_first_base_with_href_wins_and_missing_base_is_page() -> None:
    assert parse('<base target="_top"><base href="/one/"><base href="/two/">').base_url == (
        "http://example.com/one/"
    )
    assert parse("<p>no base</p>").base_url == PAGE
    assert parse('<base href="">').base_url == PAGE


def test_canonical() -> None:
    page = parse('<link rel="stylesheet" href="s.css"><link rel="Canonical" href="/canon">')
    assert page.canonical == "/canon"
    assert page.links == []  # canonical is not an outlink
    assert parse("<p>x</p>").canonical is None


def test_canonical_after_noscript_in_head_is_found() -> None:
    page = parse(
        '<head><noscript><img src="p.gif"></noscript>'
        '<link rel="canonical" href="/c"><meta name="robots" content="noindex"></head>'
    )
    assert page.canonical == "/c"
    assert page.directives.noindex


def test_meta_robots_and_product_token() -> None:
    page = parse(
        '<meta name="ROBOTS" content="noindex"><meta name="crawlspacebot" content="nofollow">'
        '<meta name="googlebot" content="none"><a href="/x">x</a>'
    )
    assert page.directives == RobotsDirectives(noindex=True, nofollow=True)
    assert page.links[0].nofollow is False  # page-level nofollow is left to the caller


def test_meta_for_other_bot_is_ignored() -> None:
    page = parse('<meta name="googlebot" content="noindex, nofollow">')
    assert page.directives == RobotsDirectives()


def test_title_and_text_exclude_invisible() -> None:
    page = parse(
        "<html><head><title>  My\n Title </title><style>p{color:red}</style></head><body>"
        "<h1>Hello</h1><script>var secret = 1;</script><p>world  and\n\tmore</p>"
        "<noscript>enable js</noscript><template><p>tmpl</p></template>"
        "<style>.x{}</style><div>end</div></body></html>"
    )
    assert page.title == "My Title"
    assert page.text == "Hello world and more end"
    for hidden in ("secret", "color", "enable js", "tmpl", ".x"):
        assert hidden not in page.text


def test_no_title() -> None:
    assert parse("<p>x</p>").title is None
    assert parse("<title>  </title>").title is None


@pytest.mark.parametrize(
    ("encoding", "content_type", "meta"),
    [
        ("windows-1252", "text/html; charset=windows-1252", ""),
        ("windows-1252", "text/html", '<meta charset="windows-1252">'),
        ("shift_jis", 'text/html; charset="Shift_JIS"', ""),
        ("shift_jis", None, '<meta charset="shift_jis">'),
        (
            "shift_jis",
            "text/html",
            '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">',
        ),
    ],
)
def test_charsets(encoding: str, content_type: str | None, meta: str) -> None:
    words = "café naïve" if encoding == "windows-1252" else "日本語のページ"
    body = f"<html><head>{meta}</head><body><p>{words}</p></body></html>".encode(encoding)
    page = parse(body, content_type=content_type)
    assert page.text == words


def test_header_charset_beats_meta() -> None:
    body = '<meta charset="shift_jis"><p>café</p>'.encode("cp1252")
    page = parse(body, content_type="text/html; charset=windows-1252")
    assert page.charset == "cp1252"
    assert page.text == "café"


def test_latin1_label_means_windows_1252() -> None:
    page = parse("<p>“quoted”</p>".encode("cp1252"), content_type="text/html; charset=ISO-8859-1")
    assert page.text == "“quoted”"


@pytest.mark.parametrize(
    "content_type",
    [
        "text/html; charset=no-such-charset",
        "text/html; charset=base64",
        "text/html; charset=idna",
        "text/html; charset=unicode_escape",
        "text/html; charset=",
        "text/html; charset=\x00",
    ],
)
def test_bogus_charset_falls_back_to_utf8(content_type: str) -> None:
    page = parse("<p>héllo \\u0041</p>".encode(), content_type=content_type)
    assert page.charset == "utf-8"
    assert page.text == "héllo \\u0041"


def test_default_utf8_with_invalid_bytes_replaced() -> None:
    page = parse(b"<p>ok \xff\xfe bad</p>", content_type=None)
    assert page.charset == "utf-8"
    assert page.text.startswith("ok ")
    assert "\ufffd" in page.text


def test_bom_wins() -> None:
    page = parse(b"\xef\xbb\xbf<p>bom</p>", content_type="text/html; charset=shift_jis")
    assert page.charset == "utf-8"
    assert page.text == "bom"


def test_meta_declaring_utf16_means_utf8() -> None:
    page = parse('<meta charset="utf-16"><p>é</p>'.encode(), content_type=None)
    assert page.charset == "utf-8"
    assert page.text == "é"


def test_truncated_to_max_bytes() -> None:
    page = parse('<a href="/1">1</a>' + "x" * 1000 + '<a href="/2">2</a>', max_bytes=500)
    assert [link.href for link in page.links] == ["/1"]


MALFORMED = [
    b"",
    b"<",
    b"<a href=",
    b'<a href="unterminated',
    b"<html><body><p><b><i>unclosed <a href=/x>link",
    b"<form><form><form><input></form></form><a href=/in-form>x</a>",
    b"<table><a href=/t>t</a><tr><td><table><td>x",
    b"<a href=/n\x00ul>\x00\x00</a>\x00<p>\x00",
    b"<!-- unterminated comment <a href=/c>",
    b"<![CDATA[ <a href=/cdata> ]]>",
    b"<svg><a href=/svg>s</a><math><mi><a href=/m>m</a></mi></math></svg>",
    b"<script><a href=/s></script><style></style></style>",
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8,
    b"<title>" * 5000,
    b"<a href='" + b"x" * 200_000 + b"'>long</a>",
    b"<" * 100_000,
    b"<p>" * 50_000,
    b"\xff\xfe<\x00p\x00>\x00",  # UTF-16LE BOM
    b"\xfe\xff\x00<",  # UTF-16BE BOM, odd length
]


@pytest.mark.parametrize("body", MALFORMED)
def test_malformed_corpus_never_raises(body: bytes) -> None:
    page = parse(body, content_type=None)
    assert isinstance(page.text, str)


def test_malformed_links_still_found() -> None:
    assert [link.href for link in parse(MALFORMED[5]).links] == ["/in-form"]
    assert [link.href for link in parse(MALFORMED[4]).links] == ["/x"]


def test_deep_nesting_is_bounded() -> None:
    # Without the nesting guard lexbor takes tens of seconds on this (quadratic in depth).
    body = b"<div>" * 100_000 + b"<a href=/deep>x</a>" + b"</div>" * 100_000
    started = time.perf_counter()
    page = parse(body)
    assert time.perf_counter() - started < 5.0
    assert isinstance(page.links, list)


def test_moderate_nesting_is_kept() -> None:
    body = b"<div>" * 2_000 + b"<a href=/deep>x</a>" + b"</div>" * 2_000
    assert [link.href for link in parse(body).links] == ["/deep"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.one_of(st.none(), st.text(max_size=40)))
def test_extract_never_raises_on_bytes(body: bytes, charset: str | None) -> None:
    content_type = None if charset is None else f"text/html; charset={charset}"
    page = extract(body, base_url=PAGE, content_type=content_type, product_token=TOKEN)
    assert isinstance(page.charset, str)


_FRAGMENTS = st.sampled_from(
    [
        "<a href=",
        "<a href='/x' rel=nofollow>",
        "</a>",
        "<base href=",
        "<meta name=robots ",
        "content=none>",
        "<div>",
        "</div>",
        "<script>",
        "</script>",
        "<table>",
        "<td>",
        "\x00",
        "<!--",
        "-->",
        "'",
        '"',
        ">",
        "<iframe src=",
        "<link rel=canonical href=",
        "é",
        "#",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=8)), max_size=60))
def test_extract_never_raises_on_tag_soup(parts: list[str]) -> None:
    page = parse("".join(parts))
    assert all(link.href.strip() and not link.href.strip().startswith("#") for link in page.links)


def test_unmatched_end_tags_do_not_hide_depth() -> None:
    # "</b>" closes nothing when no <b> is open: the depth of the <div>s keeps growing. The
    # guard used to count it as a close, and 1.4 MB of this took 113 s to parse.
    body = b"<div></b>" * 160_000 + b"<a href=/late>x</a>"
    assert nesting_cut(body.decode()) is not None
    started = time.perf_counter()
    page = parse(body)
    assert time.perf_counter() - started < 5.0
    assert isinstance(page.links, list)


def test_matched_end_tags_close_what_they_name() -> None:
    # A real page: deep only where it really is; no cut.
    row = "<tr><td><b>x</b><i>y</td></tr>"  # an unclosed <i>, closed by </td>
    html = "<table>" + row * 40_000 + "</table>"
    assert nesting_cut(html) is None
    assert nesting_cut("<div></b>" * 20_000) is not None


def test_junk_that_is_no_end_tag_cancels_nothing() -> None:
    # "</ " is not an end tag: it must not cancel the depth of the <div>s around it.
    assert nesting_cut("<div></ " * 30_000) is not None


def test_a_deep_page_under_the_tag_count_bound_parses_whole() -> None:
    # 14,000 nested <div>s: 98M of work, under the budget, so nothing is cut and the scan is
    # skipped; the link at the very end is found.
    body = "<div>" * 14_000 + "<a href=/end>end</a>"
    assert nesting_cut(body) is None
    assert [link.href for link in parse(body).links] == ["/end"]


# -- the compiled nesting scan against its Python twin -----------------------------------------

compiled = pytest.mark.skipif(
    html_module._nesting is None,
    reason="the compiled helper was not built (no C compiler): Python scans alone",
)
_TAG_SOUP = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "<div>",
                "</div>",
                "<b>",
                "</b>",
                "<br>",
                "<img src=x>",
                "</ ",
                "<",
                "</",
                "<<p>",
                "<ABCDEFGHIJKLMN>",
                "</abcdefghijz>",
                "<td>",
                "</tr>",
                "<9>",
                "<a1b2>",
                "</A1B2>",
                "<p",
                "x",
                " ",
                "\u00e9",
                "<\u00e9>",
                "</>",
                "<!-- c -->",
                "<input>",
                "</input>",
            ]
        ),
        st.text(alphabet="<>/abdivBDIV0 \u00e9", max_size=6),
    ),
    max_size=80,
)


@compiled
@settings(max_examples=500, deadline=None)
@given(_TAG_SOUP, st.integers(0, 400))
def test_the_compiled_nesting_scan_cuts_where_python_does(parts: list[str], budget: int) -> None:
    html = "".join(parts)
    assert html_module._nesting is not None
    assert html_module._nesting.nesting_cut(html, budget) == python_nesting_cut(html, budget)


@compiled
@pytest.mark.parametrize(
    "html",
    [
        "<abcdefghix>" * 3 + "</abcdefghiy>" + "<b>" * 5,  # names differ in their 10th letter
        "<abcdefghijk>" * 3 + "</abcdefghijz>" + "<b>" * 5,  # ... and agree in their first 10
        "<DIV>" * 4 + "</div>" + "<div>" * 4,  # names are lower-cased
        "<br><br><img>" * 6 + "<p>" * 6,  # void elements open nothing
        "</div>" * 5 + "<div>" * 6,  # closing what is not open changes nothing
        "<x><y><z>" * 3 + "</y>" + "<q>" * 6,  # an end tag closes all opened after its name
        "<</a><a/><a1>b</a 1>" * 4 + "<i>" * 6,
    ],
)
def test_the_compiled_nesting_scan_on_the_rules_edges(html: str) -> None:
    assert html_module._nesting is not None
    for budget in range(60):
        assert html_module._nesting.nesting_cut(html, budget) == python_nesting_cut(html, budget)


@compiled
def test_the_compiled_nesting_scan_on_large_documents() -> None:
    cases = [
        "<div></b>" * 20_000,
        "<div></ " * 30_000,
        "<table>" + "<tr><td><b>x</b><i>y</td></tr>" * 40_000 + "</table>",
        "<div>" * 14_000 + "<a href=/end>end</a>",
        "".join(f"<t{i % 5000}>" for i in range(20_000)) + "</t7>" * 100,  # many names
    ]
    for html in cases:
        assert nesting_cut(html) == python_nesting_cut(html)
        for budget in (1_000, 1_000_000):
            assert html_module._nesting is not None
            assert html_module._nesting.nesting_cut(html, budget) == python_nesting_cut(
                html, budget
            )

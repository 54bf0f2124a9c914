"""parse/sitemap.py: formats, limits, field validation, and hostile XML (bombs, XXE)."""

from __future__ import annotations

import contextlib
import gzip
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlspace.parse.sitemap import (
    MAX_GZIP_MEMBERS,
    MAX_SITEMAP_URLS,
    SitemapEntry,
    SitemapError,
    parse_sitemap,
)

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*entries: str, ns: str = NS) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {ns}>{"".join(entries)}</urlset>'.encode()
    )


def url(loc: str, extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>"


def test_urlset_with_all_fields() -> None:
    body = urlset(
        url(
            " http://a.test/x?a=1&amp;b=2 ",
            "<lastmod>2024-05-01T10:00:00+02:00</lastmod>"
            "<changefreq>Weekly</changefreq><priority>0.8</priority>",
        ),
        url("http://a.test/y"),
    )
    sitemap = parse_sitemap(body)
    assert sitemap.kind == "urlset"
    assert sitemap.entries == [
        SitemapEntry("http://a.test/x?a=1&b=2", "2024-05-01T10:00:00+02:00", "weekly", 0.8),
        SitemapEntry("http://a.test/y"),
    ]
    assert not sitemap.truncated
    assert not sitemap.warnings


def test_sitemap_index() -> None:
    body = (
        f"<sitemapindex {NS}><sitemap><loc>http://a.test/s1.xml</loc>"
        "<lastmod>2024-01-01</lastmod></sitemap>"
        "<sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap></sitemapindex>"
    ).encode()
    sitemap = parse_sitemap(body)
    assert sitemap.kind == "sitemapindex"
    assert [e.loc for e in sitemap.entries] == ["http://a.test/s1.xml", "http://a.test/s2.xml.gz"]
    assert sitemap.entries[0].lastmod == "2024-01-01"


def test_gzip_detected_by_magic_bytes_and_multi_member() -> None:
    body = urlset(url("http://a.test/1"), url("http://a.test/2"))
    assert parse_sitemap(gzip.compress(body)).entries == parse_sitemap(body).entries
    half = len(body) // 2
    two_members = gzip.compress(body[:half]) + gzip.compress(body[half:])
    assert [e.loc for e in parse_sitemap(two_members).entries] == [
        "http://a.test/1",
        "http://a.test/2",
    ]


def test_empty_gzip_members_are_skipped() -> None:
    body = urlset(url("http://a.test/1"), url("http://a.test/2"))
    half = body.index(b"<url>", body.index(b"<url>") + 1)
    data = gzip.compress(body[:half]) + gzip.compress(b"") + gzip.compress(body[half:])
    sitemap = parse_sitemap(data)
    assert [e.loc for e in sitemap.entries] == ["http://a.test/1", "http://a.test/2"]
    assert not sitemap.warnings


def test_gzip_members_past_the_cap_are_cut_with_a_warning() -> None:
    # Many tiny members: each is a decoder, and zlib copies what follows a member's end, so
    # the reader takes a bounded number of them (and bounded slices of input per member).
    head = gzip.compress(b"<urlset>" + url("http://a.test/first").encode())
    blank = gzip.compress(b" ")
    data = head + blank * (MAX_GZIP_MEMBERS + 5000) + gzip.compress(b"</urlset>")
    sitemap = parse_sitemap(data)
    assert [e.loc for e in sitemap.entries] == ["http://a.test/first"]
    assert sitemap.warnings["truncated_gzip_members"] == 1
    assert sitemap.truncated


def test_missing_or_wrong_namespace_and_extensions_are_tolerated() -> None:
    body = urlset(
        url(
            "http://a.test/p",
            '<image:image xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
            "<image:loc>http://a.test/img.png</image:loc></image:image>",
        ),
        ns="",
    )
    assert [e.loc for e in parse_sitemap(body).entries] == ["http://a.test/p"]


def test_cdata_bom_and_utf16() -> None:
    body = b"\xef\xbb\xbf" + urlset(url("<![CDATA[http://a.test/c?x=1&y=2]]>"))
    assert parse_sitemap(body).entries[0].loc == "http://a.test/c?x=1&y=2"
    text = '<?xml version="1.0" encoding="UTF-16"?><urlset><url><loc>http://a.test/é</loc></url></urlset>'
    assert parse_sitemap(text.encode("utf-16")).entries[0].loc == "http://a.test/é"


@pytest.mark.parametrize(
    ("extra", "warning", "field", "value"),
    [
        ("<lastmod>yesterday</lastmod>", "bad_lastmod", "lastmod", None),
        ("<lastmod>2024-13</lastmod>", None, "lastmod", "2024-13"),  # shape only, like Google
        ("<lastmod>2024-02-03T04:05Z</lastmod>", None, "lastmod", "2024-02-03T04:05Z"),
        ("<changefreq>sometimes</changefreq>", "bad_changefreq", "changefreq", None),
        ("<priority>1.5</priority>", "bad_priority", "priority", None),
        ("<priority>nan</priority>", "bad_priority", "priority", None),
        ("<priority>high</priority>", "bad_priority", "priority", None),
        ("<priority>0.0</priority>", None, "priority", 0.0),
    ],
)
def test_optional_fields_are_validated(
    extra: str, warning: str | None, field: str, value: object
) -> None:
    sitemap = parse_sitemap(urlset(url("http://a.test/", extra)))
    assert getattr(sitemap.entries[0], field) == value
    if warning:
        assert sitemap.warnings[warning] == 1


def test_entries_without_loc_are_skipped_and_counted() -> None:
    sitemap = parse_sitemap(urlset("<url><lastmod>2024-01-01</lastmod></url>", url("http://a/")))
    assert [e.loc for e in sitemap.entries] == ["http://a/"]
    assert sitemap.warnings["missing_loc"] == 1


def test_url_limit_truncates_with_a_warning() -> None:
    assert MAX_SITEMAP_URLS == 50_000
    body = urlset(*(url(f"http://a.test/{i}") for i in range(12)))
    sitemap = parse_sitemap(body, max_urls=10)
    assert len(sitemap.entries) == 10
    assert sitemap.truncated
    assert sitemap.warnings["truncated_urls"] == 1


def test_the_real_50000_limit() -> None:
    body = urlset(*(url(f"http://a.test/{i}") for i in range(MAX_SITEMAP_URLS + 5)))
    sitemap = parse_sitemap(body)
    assert len(sitemap.entries) == MAX_SITEMAP_URLS
    assert sitemap.entries[-1].loc == f"http://a.test/{MAX_SITEMAP_URLS - 1}"
    assert sitemap.truncated


def test_byte_limit_truncates_plain_and_gzip_keeping_what_came_before() -> None:
    body = urlset(*(url(f"http://a.test/{i}") for i in range(100)))
    for data in (body, gzip.compress(body)):
        sitemap = parse_sitemap(data, max_bytes=len(body) // 2)
        assert 0 < len(sitemap.entries) < 100
        assert sitemap.warnings["truncated_bytes"] == 1
    exact = parse_sitemap(gzip.compress(body), max_bytes=len(body))
    assert len(exact.entries) == 100
    assert not exact.truncated


def test_gzip_bomb_stops_at_the_byte_limit() -> None:
    # 1 GiB of spaces inside <urlset>, as one member followed by 64 members of 16 MiB each
    # (gzip allows concatenated members; compressing 16 MiB once keeps the test fast).
    spaces = gzip.compress(b" " * (16 << 20), compresslevel=9)
    bomb = gzip.compress(b"<urlset>" + url("http://a.test/first").encode()) + spaces * 64
    assert len(bomb) < 2 << 20
    started = time.process_time()
    sitemap = parse_sitemap(bomb, max_bytes=4 << 20)
    assert time.process_time() - started < 5.0
    assert [e.loc for e in sitemap.entries] == ["http://a.test/first"]
    assert sitemap.warnings["truncated_bytes"] == 1


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset><url><loc>http://a.test/&lol9;</loc></url></urlset>
"""

XXE_FILE = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>http://a.test/&xxe;</loc></url></urlset>
"""

XXE_PARAMETER = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY % ext SYSTEM "http://127.0.0.1:9/evil.dtd"> %ext;]>
<urlset><url><loc>http://a.test/</loc></url></urlset>
"""

EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/sitemap.dtd">
<urlset><url><loc>http://a.test/</loc></url></urlset>
"""


@pytest.mark.parametrize(
    "body",
    [BILLION_LAUGHS, XXE_FILE, XXE_PARAMETER, EXTERNAL_DTD],
    ids=["bomb", "xxe", "pe", "dtd"],
)
def test_any_dtd_is_refused_before_expansion(body: bytes) -> None:
    started = time.process_time()
    with pytest.raises(SitemapError, match="document type declaration"):
        parse_sitemap(body)
    assert time.process_time() - started < 0.5  # refused, not expanded then checked
    with pytest.raises(SitemapError):
        parse_sitemap(gzip.compress(body))


def test_undeclared_entity_keeps_entries_before_it() -> None:
    body = urlset(url("http://a.test/1"), url("http://a.test/&nope;"), url("http://a.test/3"))
    sitemap = parse_sitemap(body)
    assert [e.loc for e in sitemap.entries] == ["http://a.test/1"]
    assert sitemap.warnings["malformed"] == 1


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html><body>not a sitemap</body></html>",
        b"<rss version='2.0'></rss>",
        b"<<<>>>",
        b"\x1f\x8b\x08\x00garbage",
        b"just words\nno urls here\n",
    ],
)
def test_non_sitemaps_raise_our_error(body: bytes) -> None:
    with pytest.raises(SitemapError):
        parse_sitemap(body)


def test_text_sitemap() -> None:
    sitemap = parse_sitemap(b"http://a.test/1\r\n\r\nHTTPS://a.test/2\nftp://x/\n")
    assert sitemap.kind == "text"
    assert [e.loc for e in sitemap.entries] == ["http://a.test/1", "HTTPS://a.test/2"]
    assert sitemap.warnings["bad_loc"] == 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_parse_or_raise_our_error(body: bytes) -> None:
    with contextlib.suppress(SitemapError):
        parse_sitemap(body)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_xml_like_text_parses_or_raises_our_error(text: str) -> None:
    for body in (f"<urlset><url><loc>{text}</loc></url></urlset>", f"<urlset>{text}"):
        try:
            parse_sitemap(body.encode("utf-8", "surrogatepass"))
            parse_sitemap(gzip.compress(body.encode("utf-8", "surrogatepass")))
        except SitemapError:
            pass

"""Tests for crawlspace.urls: WHATWG resolution plus RFC 3986 §6.2.2 safe normalization."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlspace import urls
from crawlspace.urls import (
    REASON_INVALID,
    REASON_UNSUPPORTED_SCHEME,
    host_and_port,
    host_key,
    host_of,
    normalize,
    normalize_with_reason,
)

BASE = "http://example.org/foo/bar"
DATA = Path(__file__).parent.parent / "data" / "urls"

# (input, expected normalized form). Each row also yields an equivalence pair
# "input ~ expected" below, and the expected value must be a fixed point.
EXPECTED: list[tuple[str, str]] = [
    # RFC 3986 §6.2.2.1 case normalization: scheme and host, not path.
    ("HTTP://www.Example.COM/", "http://www.example.com/"),
    ("http://example.com/Path/File.HTML", "http://example.com/Path/File.HTML"),
    ("hTTpS://EXAMPLE.com/A", "https://example.com/A"),
    # RFC 3986 §6.2.2.1 example: lowercase hex in percent-encoding is upper-cased.
    ("http://example.com/a%c2%b1b", "http://example.com/a%C2%B1b"),
    ("http://example.com/?q=%e2%82%ac", "http://example.com/?q=%E2%82%AC"),
    ("http://example.com/%3a%3A", "http://example.com/%3A%3A"),
    # RFC 3986 §6.2.2 example: "eXAMPLE://a/./b/../b/%63/%7bfoo%7d" (with http).
    ("HTTP://a/./b/../b/%63/%7bfoo%7d", "http://a/b/c/%7Bfoo%7D"),
    # §6.2.2.2 decode unreserved in path and query.
    ("http://example.com/%7Euser", "http://example.com/~user"),
    ("http://example.com/%7euser", "http://example.com/~user"),
    ("http://example.com/%41%42%43", "http://example.com/ABC"),
    ("http://example.com/%61%62%63", "http://example.com/abc"),
    ("http://example.com/%30%39", "http://example.com/09"),
    ("http://example.com/a%2Db%2Ec%5Fd%7Ee", "http://example.com/a-b.c_d~e"),
    ("http://example.com/?a=%41&b=%7e", "http://example.com/?a=A&b=~"),
    # Reserved characters stay encoded (and %2F stays distinct from '/').
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/a%2Fb", "http://example.com/a%2Fb"),
    ("http://example.com/?q=a%26b%3Dc", "http://example.com/?q=a%26b%3Dc"),
    ("http://example.com/%3Fnot-a-query", "http://example.com/%3Fnot-a-query"),
    ("http://example.com/%23not-a-fragment", "http://example.com/%23not-a-fragment"),
    ("http://example.com/%25", "http://example.com/%25"),
    ("http://example.com/%20", "http://example.com/%20"),
    ("http://example.com/a+b?c+d", "http://example.com/a+b?c+d"),
    # Invalid or truncated percent sequences are kept as the browser sends them; a lone '%'
    # disables decoding so a second pass cannot find new escapes (idempotence).
    ("http://example.com/%zz", "http://example.com/%zz"),
    ("http://example.com/100%", "http://example.com/100%"),
    ("http://example.com/%4", "http://example.com/%4"),
    ("http://example.com/%%34%31", "http://example.com/%%34%31"),
    ("http://example.com/%%7e", "http://example.com/%%7E"),
    ("http://example.com/%4%31", "http://example.com/%4%31"),
    ("http://example.com/a%7e?%zz", "http://example.com/a%7E?%zz"),
    # Non-ASCII is percent-encoded by WHATWG (UTF-8, upper hex).
    ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
    ("http://example.com/?q=\u00fc", "http://example.com/?q=%C3%BC"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    # Default ports (RFC 3986 §6.2.3; WHATWG §4.4 drops them for special schemes).
    ("http://example.com:80/", "http://example.com/"),
    ("https://example.com:443/", "https://example.com/"),
    ("http://example.com:0080/", "http://example.com/"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://example.com:8080/", "http://example.com:8080/"),
    ("http://example.com:/", "http://example.com/"),
    # Empty path -> "/" (RFC 3986 §6.2.3).
    ("http://example.com", "http://example.com/"),
    ("https://example.com?x=1", "https://example.com/?x=1"),
    # Dot segments (RFC 3986 §5.2.4), including encoded dots and climbing above the root.
    ("http://example.com/a/./b", "http://example.com/a/b"),
    ("http://example.com/a/../b", "http://example.com/b"),
    ("http://example.com/../../b", "http://example.com/b"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/a/b/.", "http://example.com/a/b/"),
    ("http://example.com/a/%2e%2e/b", "http://example.com/b"),
    ("http://example.com/a/%2E/b", "http://example.com/a/b"),
    ("http://example.com/a/.%2e/b", "http://example.com/b"),
    ("http://example.com/a%2eb", "http://example.com/a.b"),
    ("http://example.com/a/..%2fb", "http://example.com/a/..%2Fb"),
    ("http://example.com//a//b", "http://example.com//a//b"),
    # Fragments are dropped.
    ("http://example.com/#top", "http://example.com/"),
    ("http://example.com/a?b#c", "http://example.com/a?b"),
    ("http://example.com/a#", "http://example.com/a"),
    ("http://example.com/a#b?c", "http://example.com/a"),
    # Userinfo is dropped.
    ("http://user:pass@example.com/", "http://example.com/"),
    ("http://user@example.com/", "http://example.com/"),
    ("http://:@example.com/", "http://example.com/"),
    ("http://a%40b:c@example.com:81/", "http://example.com:81/"),
    ("https://u:p@[::1]:8443/x", "https://[::1]:8443/x"),
    # Query order and content kept; an empty "?" is dropped (documented choice).
    ("http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"),
    ("http://example.com/?a=1&a=2", "http://example.com/?a=1&a=2"),
    ("http://example.com/p?", "http://example.com/p"),
    ("http://example.com/p?#x", "http://example.com/p"),
    ("http://example.com/p??", "http://example.com/p??"),
    ("http://example.com/p?a&", "http://example.com/p?a&"),
    ("http://example.com/p?=", "http://example.com/p?="),
    # IDN hosts become punycode (WHATWG §3.3, UTS #46).
    ("http://b\u00fccher.de/", "http://xn--bcher-kva.de/"),
    ("http://B\u00dcCHER.de/", "http://xn--bcher-kva.de/"),
    ("http://\u4f8b\u5b50.\u6d4b\u8bd5/", "http://xn--fsqu00a.xn--0zwm56d/"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    ("http://ex%41mple.com/", "http://example.com/"),
    ("http://example.com./", "http://example.com./"),
    # IPv4 notations (WHATWG §3.5).
    ("http://127.0.0.1/", "http://127.0.0.1/"),
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0177.0.0.1/", "http://127.0.0.1/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("http://0x7F000001:8080/", "http://127.0.0.1:8080/"),
    # IPv6 literals (WHATWG §3.6): lowercase, compressed, brackets kept.
    ("http://[::1]/", "http://[::1]/"),
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
    ("http://[2001:DB8::1]:80/", "http://[2001:db8::1]/"),
    ("https://[2001:db8:0:0:1:0:0:1]:443/a", "https://[2001:db8::1:0:0:1]/a"),
    ("http://[::ffff:192.0.2.1]/", "http://[::ffff:c000:201]/"),
    # Backslashes, tabs and newlines (WHATWG §4.4).
    ("http:\\\\example.com\\a\\b", "http://example.com/a/b"),
    ("http://exa\tmple.com/a\nb", "http://example.com/ab"),
    ("  http://example.com/  ", "http://example.com/"),
    ("http:/example.com/x", "http://example.com/x"),
]

# Pairs that must normalize to the same key.
SAME: list[tuple[str, str]] = [
    ("http://example.com", "http://example.com/"),
    ("http://example.com:80", "HTTP://EXAMPLE.COM/"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com/~a", "http://example.com/%7Ea"),
    ("http://example.com/~a", "http://example.com/%7ea"),
    ("http://example.com/a%c3%a9", "http://example.com/a%C3%A9"),
    ("http://example.com/a\u00e9", "http://example.com/a%C3%A9"),
    ("http://example.com/a/b/../c", "http://example.com/a/c"),
    ("http://example.com/a#x", "http://example.com/a#y"),
    ("http://u:p@example.com/", "http://example.com/"),
    ("http://example.com/?", "http://example.com/"),
    ("http://b\u00fccher.de", "http://xn--bcher-kva.de/"),
    ("http://[::1]:80/", "http://[0::1]/"),
    ("http://0x7f000001/", "http://127.0.0.1/"),
    ("http://example.com/%41", "http://example.com/A"),
    ("http://example.com/?q=%7e", "http://example.com/?q=~"),
    ("http://example.com/a/./b/./c", "http://example.com/a/b/c"),
    ("http://example.com/a/b/c/../../d", "http://example.com/a/d"),
    ("http://example.com/%2e%2e/a", "http://example.com/a"),
    ("http://example.com/a?x=%2d%2E%5f", "http://example.com/a?x=-._"),
    ("http://example.com/%5b", "http://example.com/%5B"),
    ("http://example.com/%e2%82%ac", "http://example.com/\u20ac"),
    ("https://user@example.com:443/#f", "https://example.com/"),
    ("http://EXAMPLE.com:80/A?B#C", "http://example.com/A?B"),
    ("http://example.com\\a", "http://example.com/a"),
    ("http://example.com/a\tb", "http://example.com/ab"),
    ("http://[2001:0db8:0000::0001]/", "http://[2001:db8::1]/"),
    ("https://[::FFFF:7F00:1]/", "https://[::ffff:7f00:1]/"),
    ("http://0.0.0.0/", "http://0/"),
    ("http://1.2.3.4:80/", "http://0x01020304/"),
    ("http://%62%C3%BCcher.de/", "http://xn--bcher-kva.de/"),
    ("http://xn--BCHER-KVA.de/", "http://b\u00fccher.de/"),
    ("http://example.com:/a", "http://example.com:80/a"),
    ("http://example.com/a?", "http://example.com/a#"),
    ("http://example.com/a?#", "http://example.com/a"),
    ("http://:pass@example.com/", "http://user:other@example.com/"),
]

# Pairs that must stay different.
DIFFERENT: list[tuple[str, str]] = [
    ("http://example.com/", "https://example.com/"),
    ("http://example.com/a", "http://example.com/A"),
    ("http://example.com/a%2Fb", "http://example.com/a/b"),
    ("http://example.com/?a=1&b=2", "http://example.com/?b=2&a=1"),
    ("http://example.com/a", "http://example.com/a/"),
    ("http://example.com:8080/", "http://example.com/"),
    ("http://example.com:443/", "https://example.com/"),
    ("http://example.com/a+b", "http://example.com/a%20b"),
    ("http://example.com/a%26b", "http://example.com/a&b"),
    ("http://example.com/?q=a%3Db", "http://example.com/?q=a=b"),
    ("http://example.com/%25", "http://example.com/%"),
    ("http://www.example.com/", "http://example.com/"),
    ("http://example.com./", "http://example.com/"),
    ("http://example.com/a;b", "http://example.com/a"),
    ("http://example.com//a", "http://example.com/a"),
    ("http://[::1]/", "http://127.0.0.1/"),
    ("http://example.com/a%2F", "http://example.com/a/"),
    ("http://example.com/a%3F", "http://example.com/a?"),
    ("http://example.com/a%23", "http://example.com/a"),
    ("http://example.com/?a=%26", "http://example.com/?a=&"),
    ("http://example.com/?a%3D1", "http://example.com/?a=1"),
    ("http://example.com/?a=1", "http://example.com/?A=1"),
    ("http://example.com/?q=%2B", "http://example.com/?q=+"),
    ("http://example.com/%252F", "http://example.com/%2F"),
    ("http://example.com/%2e%2e%2f", "http://example.com/"),
    ("http://example.com/a?b", "http://example.com/a/?b"),
    ("http://example.com/a?", "http://example.com/a??"),
    ("http://example.com/a;p", "http://example.com/a%3Bp"),
    ("http://sub.example.com/", "http://example.com/"),
    ("http://xn--bcher-kva.de/", "http://bucher.de/"),
    ("http://example.com:81/", "http://example.com:8081/"),
    ("http://[::1]:8080/", "http://[::1]/"),
    ("http://127.0.0.1/", "http://127.0.0.2/"),
    ("http://example.com/%C3%A9", "http://example.com/%E9"),
]

REJECTED: list[tuple[str, str]] = [
    ("mailto:someone@example.com", REASON_UNSUPPORTED_SCHEME),
    ("javascript:void(0)", REASON_UNSUPPORTED_SCHEME),
    ("JavaScript:alert(1)", REASON_UNSUPPORTED_SCHEME),
    ("data:text/html,hi", REASON_UNSUPPORTED_SCHEME),
    ("ftp://example.com/file", REASON_UNSUPPORTED_SCHEME),
    ("file:///etc/passwd", REASON_UNSUPPORTED_SCHEME),
    ("tel:+123", REASON_UNSUPPORTED_SCHEME),
    ("ws://example.com/", REASON_UNSUPPORTED_SCHEME),
    ("about:blank", REASON_UNSUPPORTED_SCHEME),
    ("http://[::1", REASON_INVALID),
    ("http://exa mple.com/", REASON_INVALID),
    ("http://example.com:99999/", REASON_INVALID),
    ("http://", REASON_INVALID),
    ("https://a\ud800b.com/", REASON_INVALID),
    ("http://1.2.3.4.5/", REASON_INVALID),
]

# (href, base, expected): resolution against a page URL.
RESOLVED: list[tuple[str, str, str]] = [
    ("g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    ("./g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
    ("g/", "http://a/b/c/d;p?q", "http://a/b/c/g/"),
    ("/g", "http://a/b/c/d;p?q", "http://a/g"),
    ("//g", "http://a/b/c/d;p?q", "http://g/"),
    ("?y", "http://a/b/c/d;p?q", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/d;p?q", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
    ("..", "http://a/b/c/d;p?q", "http://a/b/"),
    ("../../../g", "http://a/b/c/d;p?q", "http://a/g"),
    ("g;x=1/../y", "http://a/b/c/d;p?q", "http://a/b/c/y"),
    ("", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
    ("//cdn.example.net/x.js", "https://example.com/", "https://cdn.example.net/x.js"),
    ("\\img\\a.png", "https://example.com/d/p", "https://example.com/img/a.png"),
    ("  /a\t/b\n  ", "https://example.com/", "https://example.com/a/b"),
    ("https://other.example/", "http://example.com/", "https://other.example/"),
    ("?p=2#frag", "http://example.com/list?p=1", "http://example.com/list?p=2"),
]


def _case_id(value: Any) -> str:
    return repr(value)[:60]


@pytest.mark.parametrize(("raw", "expected"), EXPECTED, ids=_case_id)
def test_expected_form(raw: str, expected: str) -> None:
    assert normalize(raw) == expected
    assert normalize(expected) == expected


@pytest.mark.parametrize(("left", "right"), SAME, ids=_case_id)
def test_same(left: str, right: str) -> None:
    assert normalize(left) is not None
    assert normalize(left) == normalize(right)


@pytest.mark.parametrize(("left", "right"), DIFFERENT, ids=_case_id)
def test_different(left: str, right: str) -> None:
    assert normalize(left) is not None
    assert normalize(right) is not None
    assert normalize(left) != normalize(right)


@pytest.mark.parametrize(("raw", "reason"), REJECTED, ids=_case_id)
def test_rejected(raw: str, reason: str) -> None:
    assert normalize(raw) is None
    assert normalize(raw, BASE) is None
    assert normalize_with_reason(raw, BASE) == (None, reason)


@pytest.mark.parametrize(("href", "base", "expected"), RESOLVED, ids=_case_id)
def test_resolved(href: str, base: str, expected: str) -> None:
    assert normalize(href, base) == expected
    assert normalize_with_reason(href, base) == (expected, None)


def test_invalid_base_with_relative_href() -> None:
    assert normalize_with_reason("a/b", "not a url") == (None, REASON_INVALID)
    assert normalize_with_reason("a/b", "mailto:x@y") == (None, REASON_INVALID)
    # Deliberately laxer than `new URL(href, base)`: absolute http(s) hrefs ignore the base.
    assert normalize("http://ok.example/", "not a url") == "http://ok.example/"


def _wpt_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(
        (DATA / "wpt_urltestdata_subset.json").read_text(encoding="utf-8")
    )
    return cases


@pytest.mark.parametrize("case", _wpt_cases(), ids=lambda c: _case_id(c["input"]))
def test_wpt_resolution(case: dict[str, Any]) -> None:
    result, reason = normalize_with_reason(case["input"], case["base"])
    if case.get("failure"):
        assert (result, reason) == (None, REASON_INVALID)
        return
    href: str = case["href"]
    # Resolution must match the browser byte for byte, through both resolver paths.
    assert urls._resolve(case["input"], case["base"]) == href
    assert urls._resolve_public(case["input"], case["base"]) == href
    if href.startswith(("http://", "https://")):
        assert result == normalize(href)
        assert result is not None
        assert "#" not in result
    else:
        assert (result, reason) == (None, REASON_UNSUPPORTED_SCHEME)


def test_fast_and_public_resolvers_agree() -> None:
    assert urls._fast_resolve is not None, "ada_url private C API moved; fast path disabled"
    inputs = [raw for raw, _ in EXPECTED + REJECTED] + [h for h, _, _ in RESOLVED]
    for raw in inputs:
        for base in (None, BASE):
            assert urls._fast_resolve(raw, base) == urls._resolve_public(raw, base), raw


@pytest.mark.parametrize(
    ("url", "key", "host", "port"),
    [
        ("http://example.com/a?b", "http://example.com", "example.com", 80),
        ("https://example.com/", "https://example.com", "example.com", 443),
        ("http://example.com:8080/", "http://example.com:8080", "example.com", 8080),
        ("https://[::1]:8443/x", "https://[::1]:8443", "::1", 8443),
        ("http://[2001:db8::1]/", "http://[2001:db8::1]", "2001:db8::1", 80),
        ("http://127.0.0.1:5000/", "http://127.0.0.1:5000", "127.0.0.1", 5000),
    ],
)
def test_host_helpers(url: str, key: str, host: str, port: int) -> None:
    assert host_key(url) == key
    assert host_of(url) == host
    assert host_and_port(url) == (host, port)
    assert host_key(key) == key


def test_table_size() -> None:
    pairs = len(EXPECTED) + len(SAME) + len(DIFFERENT)
    assert pairs >= 150


_url_chars = st.sampled_from(
    [*"aZ09-._~%/?#[]@:!$&'()*+,;= \t\n\\", "%7e", "%2F", "%zz", "%e2%82%ac", "..", "\u00e9"]
)
_url_like = st.builds(
    lambda scheme, host, tail: scheme + host + "".join(tail),
    st.sampled_from(["http://", "https://", "HTTP://", "//", "", "/", "mailto:", "ftp://"]),
    st.sampled_from(["example.com", "EXAMPLE.com:80", "[::1]", "b\u00fccher.de", "u:p@h", ""]),
    st.lists(_url_chars, max_size=30),
)


@settings(max_examples=400)
@given(st.text(max_size=80), st.one_of(st.none(), st.just(BASE), st.text(max_size=30)))
def test_never_raises_on_arbitrary_text(raw: str, base: str | None) -> None:
    result, reason = normalize_with_reason(raw, base)
    assert (result is None) != (reason is None)
    if result is not None:
        assert normalize(result) == result


@settings(max_examples=1000)
@given(_url_like, st.sampled_from([None, BASE, "https://h.example/a/b/?q"]))
def test_idempotent_on_url_like_text(raw: str, base: str | None) -> None:
    once = normalize(raw, base)
    if once is not None:
        assert normalize(once) == once
        assert normalize(once, base) == once
        assert once.startswith(("http://", "https://"))
        assert "#" not in once


def test_seen_key_orders_query_parameters_by_name() -> None:
    key = urls.seen_key
    assert key("http://a/p") is None
    assert key("http://a/p?x=1") is None
    assert key("http://a/a&b/p?x=1") is None  # '&' in the path is not a parameter
    assert key("http://a/p?b=1&a=2") == "http://a/p?a=2&b=1"
    assert key("http://a/p?a=2&b=1") == "http://a/p?a=2&b=1"
    # Repeated names keep their order: x=1&x=2 and x=2&x=1 may mean different lists.
    assert key("http://a/p?x=2&b&x=1") == "http://a/p?b&x=2&x=1"
    assert key("http://a/p?x=1&x=2") != key("http://a/p?x=2&x=1")


_PARAM = st.tuples(st.sampled_from("abcxyz"), st.sampled_from(["", "=1", "=2", "=%26"]))


@given(st.lists(_PARAM, min_size=2, max_size=6, unique_by=lambda p: p[0]), st.randoms())
def test_seen_key_is_one_key_for_every_order_of_distinct_names(
    params: list[tuple[str, str]], rand: Any
) -> None:
    linked = "http://a/p?" + "&".join(n + v for n, v in params)
    rand.shuffle(params)
    other = "http://a/p?" + "&".join(n + v for n, v in params)
    key = urls.seen_key(linked)
    assert key is not None
    assert key == urls.seen_key(other) == urls.seen_key(key)

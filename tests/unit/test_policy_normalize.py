"""Policy normalization (discovery/policy_normalize.py) on top of crawlspace.urls.normalize."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawlspace.discovery.links import Discovery, EntryRules
from crawlspace.discovery.policy_normalize import UrlPolicy
from crawlspace.discovery.scope import Scope
from crawlspace.urls import normalize

DEFAULT = UrlPolicy()
SORTING = UrlPolicy(sort_query_hosts=("shop.example", ".sorted.example"))
FOLDING = UrlPolicy(fold_index_html=True, fold_trailing_slash=True)
INDEX_ONLY = UrlPolicy(fold_index_html=True)

# (policy, raw URL, expected) — raw goes through normalize() first, as in Discovery.
CASES: list[tuple[UrlPolicy, str, str]] = [
    # Tracking parameters go, the rest keeps its order.
    (DEFAULT, "http://a.example/p?utm_source=x", "http://a.example/p"),
    (DEFAULT, "http://a.example/p?utm_source=x&utm_medium=y&id=3", "http://a.example/p?id=3"),
    (DEFAULT, "http://a.example/p?id=3&UTM_Campaign=z", "http://a.example/p?id=3"),
    (DEFAULT, "http://a.example/p?b=2&fbclid=IwAR0&a=1", "http://a.example/p?b=2&a=1"),
    (DEFAULT, "http://a.example/p?gclid=1", "http://a.example/p"),
    (DEFAULT, "http://a.example/p?msclkid=abc&q=x", "http://a.example/p?q=x"),
    (DEFAULT, "http://a.example/p?PHPSESSID=ab12&page=2", "http://a.example/p?page=2"),
    (DEFAULT, "http://a.example/p?sessionid=1", "http://a.example/p"),
    (DEFAULT, "http://a.example/p?jsessionid=1&x", "http://a.example/p?x"),
    (DEFAULT, "http://a.example/p?%75tm_source=x", "http://a.example/p"),  # %75 = 'u'
    (DEFAULT, "http://a.example/p?utm_source", "http://a.example/p"),
    (DEFAULT, "http://a.example/p?a=1&&utm_x=1&b=2", "http://a.example/p?a=1&b=2"),
    # Names that merely resemble tracking parameters stay.
    (DEFAULT, "http://a.example/p?utmost=1", "http://a.example/p?utmost=1"),
    (DEFAULT, "http://a.example/p?q=utm_source", "http://a.example/p?q=utm_source"),
    (DEFAULT, "http://a.example/p?my_fbclid=1", "http://a.example/p?my_fbclid=1"),
    # Servlet ;jsessionid= path parameters (any case), with or without a query after them.
    (DEFAULT, "http://a.example/cart;jsessionid=0A1B2C", "http://a.example/cart"),
    (DEFAULT, "http://a.example/cart;JSESSIONID=0A1B?x=1", "http://a.example/cart?x=1"),
    (DEFAULT, "http://a.example/a;jsessionid=1/b", "http://a.example/a/b"),
    (DEFAULT, "http://a.example/a;v=2;jsessionid=9", "http://a.example/a;v=2"),
    (DEFAULT, "http://a.example/a;v=2", "http://a.example/a;v=2"),
    (DEFAULT, "http://a.example/a;jsessionid=1?jsessionid=2", "http://a.example/a"),
    # Query order is kept by default...
    (DEFAULT, "http://a.example/p?b=2&a=1", "http://a.example/p?b=2&a=1"),
    (DEFAULT, "http://shop.example/p?b=2&a=1", "http://shop.example/p?b=2&a=1"),
    # ...and sorted by name (stably) on configured hosts or domains.
    (SORTING, "http://shop.example/p?b=2&a=1", "http://shop.example/p?a=1&b=2"),
    (SORTING, "http://shop.example:8080/p?b=2&a=1", "http://shop.example:8080/p?a=1&b=2"),
    (SORTING, "http://shop.example/p?c=1&a=2&c=0", "http://shop.example/p?a=2&c=1&c=0"),
    (SORTING, "http://www.sorted.example/?z&y", "http://www.sorted.example/?y&z"),
    (SORTING, "http://sorted.example/?z&y", "http://sorted.example/?y&z"),
    (SORTING, "http://other.example/p?b=2&a=1", "http://other.example/p?b=2&a=1"),
    (SORTING, "http://www.shop.example/p?b=2&a=1", "http://www.shop.example/p?b=2&a=1"),
    (SORTING, "http://shop.example/p?b=2&utm_term=x&a=1", "http://shop.example/p?a=1&b=2"),
    # Folding is off by default.
    (DEFAULT, "http://a.example/d/index.html", "http://a.example/d/index.html"),
    (DEFAULT, "http://a.example/d/", "http://a.example/d/"),
    # index.html folding.
    (INDEX_ONLY, "http://a.example/d/index.html", "http://a.example/d/"),
    (INDEX_ONLY, "http://a.example/index.htm", "http://a.example/"),
    (INDEX_ONLY, "http://a.example/d/index.html?x=1", "http://a.example/d/?x=1"),
    (INDEX_ONLY, "http://a.example/d/Index.html", "http://a.example/d/Index.html"),
    (INDEX_ONLY, "http://a.example/d/myindex.html", "http://a.example/d/myindex.html"),
    (INDEX_ONLY, "http://a.example/d/", "http://a.example/d/"),
    # Trailing slash folding (never the root).
    (FOLDING, "http://a.example/d/", "http://a.example/d"),
    (FOLDING, "http://a.example/d//", "http://a.example/d"),
    (FOLDING, "http://a.example/", "http://a.example/"),
    (FOLDING, "http://a.example/d/index.html", "http://a.example/d"),
    (FOLDING, "http://a.example/index.html/index.html", "http://a.example/"),
    (FOLDING, "http://a.example/d/?q=1/", "http://a.example/d?q=1/"),
    # Custom list: only what is configured is stripped.
    (
        UrlPolicy(strip_params=("ref",)),
        "http://a.example/?ref=x&utm_a=1",
        "http://a.example/?utm_a=1",
    ),
    (
        UrlPolicy(strip_params=()),
        "http://a.example/;jsessionid=1?sid=2",
        "http://a.example/;jsessionid=1?sid=2",
    ),
]


@pytest.mark.parametrize(("policy", "raw", "expected"), CASES)
def test_policy(policy: UrlPolicy, raw: str, expected: str) -> None:
    safe = normalize(raw)
    assert safe is not None
    assert policy.apply(safe) == expected
    assert policy.apply(expected) == expected  # a fixed point


def test_equivalence_pairs() -> None:
    same = [
        ("http://a.example/x?utm_source=a", "http://a.example/x?utm_source=b"),
        ("http://a.example/x;jsessionid=1", "http://a.example/x;jsessionid=2"),
        ("http://a.example/x?PHPSESSID=1&id=4", "http://a.example/x?id=4&phpsessid=2"),
    ]
    different = [
        ("http://a.example/x?a=1&b=2", "http://a.example/x?b=2&a=1"),
        ("http://a.example/x/", "http://a.example/x"),
        ("http://a.example/x/index.html", "http://a.example/x/"),
    ]
    for left, right in same:
        assert DEFAULT.apply(normalize(left) or "") == DEFAULT.apply(normalize(right) or "")
    for left, right in different:
        assert DEFAULT.apply(normalize(left) or "") != DEFAULT.apply(normalize(right) or "")


_ALL = UrlPolicy(sort_query_hosts=(".example",), fold_index_html=True, fold_trailing_slash=True)


@given(
    st.lists(st.sampled_from(["a", "b=1", "utm_x=2", "", "c=%41", "fbclid=z", "a=0"]), max_size=6),
    st.sampled_from(["/", "/d/", "/d/index.html", "/d;jsessionid=x/", "/index.html/", "/a;b=c"]),
)
def test_idempotent(params: list[str], path: str) -> None:
    url = normalize(f"http://s.example{path}?{'&'.join(params)}")
    assert url is not None
    for policy in (DEFAULT, _ALL):
        once = policy.apply(url)
        assert policy.apply(once) == once
        assert normalize(once) == once  # still a safely normalized URL


def test_discovery_applies_the_policy_and_counts_duplicates() -> None:
    scope = Scope("any", [], ())
    discovery = Discovery(EntryRules(), scope)
    links = [
        ("/a?utm_source=x", False),
        ("/a?utm_source=y", False),
        ("/a", False),
        ("/%61", False),
        ("/a", False),
        ("mailto:x@y", False),
    ]
    out = discovery.admit_links(
        links, base_url="http://s.example/", parent_depth=0, page_nofollow=False
    )
    assert [c.url for c in out.candidates] == ["http://s.example/a"]
    assert out.counters == {
        "dedup.links_total": 5,
        "dedup.links_distinct_raw": 4,
        "dedup.links_distinct_normalized": 3,
        "dedup.links_distinct_policy": 1,
    }
    candidate, reason = discovery.admit_one("http://s.example/b?gclid=1", depth=0, source="seed")
    assert reason is None
    assert candidate is not None
    assert candidate.url == "http://s.example/b"

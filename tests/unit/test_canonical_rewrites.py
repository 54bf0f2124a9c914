"""rel=canonical rewrites learned per host (frontier/canonical.py): pure."""

from __future__ import annotations

import pytest

from crawlspace.frontier.canonical import (
    Rewrite,
    active_rewrites,
    apply_rewrite,
    observe_canonical,
    rewrite_of,
)

H = "http://h.example"


@pytest.mark.parametrize(
    ("url", "canonical", "rule"),
    [
        ("/print/2024/post.html", "/a/2024/post.html", Rewrite("/print/", "/a/")),
        ("/m/x/page", "/page", Rewrite("/m/x/", "/")),
        ("/amp/page?id=3", "/news/page?id=3", Rewrite("/amp/", "/news/")),
        ("/amp/page?id=3", "/news/page?id=4", None),  # another query: not a prefix rewrite
        ("/page", "/a/page", None),  # no source prefix: it would cover the whole site
        ("/a/one", "/a/two", None),  # another page, not a variant
        ("/x/y/z/page", "/page", None),  # a source prefix longer than two segments
        ("/print/dir/", "/a/dir/", None),  # directories are not learned from
    ],
)
def test_the_rewrite_a_canonical_shows(url: str, canonical: str, rule: Rewrite | None) -> None:
    assert rewrite_of(H + url, H + canonical) == rule
    assert rewrite_of(H + url, "http://other.example" + canonical) is None


def learn(note: str | None, url: str, canonical: str | None) -> str | None:
    target = None if canonical is None else H + canonical
    changed = observe_canonical(H + url, target, note)
    return note if changed is None else changed


def test_a_rewrite_is_active_after_two_confirmations() -> None:
    note = learn(None, "/print/1.html", "/a/1.html")
    assert active_rewrites(note) == ()
    note = learn(note, "/print/2.html", "/a/2.html")
    assert active_rewrites(note) == (Rewrite("/print/", "/a/"),)
    assert note == "/print/ /a/ 2 0"
    rules = active_rewrites(note)
    assert apply_rewrite(H + "/print/9.html?x=1", rules) == H + "/a/9.html?x=1"
    assert apply_rewrite(H + "/a/9.html", rules) is None


def test_a_contradiction_keeps_a_rewrite_off() -> None:
    note = learn(None, "/print/1.html", "/a/1.html")
    note = learn(note, "/print/2.html", None)  # a print page with no canonical
    note = learn(note, "/print/3.html", "/a/3.html")
    note = learn(note, "/print/4.html", "/a/4.html")
    assert active_rewrites(note) == ()
    # The prefix's own index page is no contradiction; pages elsewhere change nothing.
    assert observe_canonical(H + "/print/", None, note) is None
    assert observe_canonical(H + "/a/5.html", H + "/a/5.html", note) is None

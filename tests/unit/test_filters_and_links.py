from __future__ import annotations

from crawlspace.discovery.filters import domain_filter, prefix_filter, regex_filter
from crawlspace.discovery.links import Discovery, EntryRules
from crawlspace.discovery.scope import Scope


def test_domain_filter_keeps_subdomains_only() -> None:
    keep = domain_filter(["example.org"])
    assert keep("https://example.org/") is None
    assert keep("https://www.example.org/a") is None
    assert keep("https://badexample.org/") == "filter_domain"


def test_prefix_and_regex_filters() -> None:
    assert prefix_filter(["https://a.test/docs/"])("https://a.test/blog/") == "filter_prefix"
    assert prefix_filter(["https://a.test/docs/"])("https://a.test/docs/x") is None
    drop_pdf = regex_filter(r"\.pdf$")
    assert drop_pdf("https://a.test/x.pdf") == "filter_regex"
    assert drop_pdf("https://a.test/x.html") is None
    only_docs = regex_filter(r"/docs/", exclude=False)
    assert only_docs("https://a.test/blog/") == "filter_regex"


def discovery(**rules: int) -> Discovery:
    scope = Scope("domain", ["https://site.test/"])
    return Discovery(EntryRules(**rules), scope, [regex_filter(r"/logout")])  # type: ignore[arg-type]


def test_admit_links_counts_every_rejection_by_reason() -> None:
    links = [
        ("/a", False),
        ("/a#frag", False),  # same URL after normalization: admitted once
        ("https://other.test/", False),
        ("mailto:x@site.test", False),
        ("/logout", False),
        ("/n", True),
        ("/" + "x" * 100, False),
        ("http://[bad", False),
    ]
    out = discovery(max_url_length=60).admit_links(
        links, base_url="https://site.test/p/", parent_depth=0, page_nofollow=False
    )
    assert [c.url for c in out.candidates] == ["https://site.test/a"]
    assert out.candidates[0].depth == 1
    assert out.candidates[0].host_key == "https://site.test"
    assert dict(out.rejections) == {
        "scope": 1,
        "unsupported_scheme": 1,
        "filter_regex": 1,
        "nofollow": 1,
        "url_length": 1,
        "invalid_url": 1,
    }
    assert ("https://other.test/", "scope") in out.excluded
    assert {link.to_url for link in out.links} >= {"https://site.test/a", "https://site.test/n"}
    assert [link.nofollow for link in out.links if link.to_url.endswith("/n")] == [True]


def test_depth_limit_and_page_level_nofollow() -> None:
    deep = discovery(max_depth=1).admit_links(
        [("/a", False)], base_url="https://site.test/", parent_depth=1, page_nofollow=False
    )
    assert deep.candidates == []
    assert deep.excluded == [("https://site.test/a", "depth")]
    nofollow = discovery().admit_links(
        [("/a", False)], base_url="https://site.test/", parent_depth=0, page_nofollow=True
    )
    assert nofollow.candidates == []
    assert nofollow.rejections == {"nofollow": 1}


def test_repeated_links_are_admitted_once_and_followed_if_any_occurrence_may_be() -> None:
    links = [("/a#top", True), ("/a", False), ("/a#x", True), ("/b", True), ("/b#y", True)]
    out = discovery().admit_links(
        links, base_url="https://site.test/", parent_depth=0, page_nofollow=False
    )
    assert [c.url for c in out.candidates] == ["https://site.test/a"]
    assert [(link.to_url, link.nofollow) for link in out.links] == [
        ("https://site.test/a", False),
        ("https://site.test/b", True),
    ]
    assert out.rejections == {"nofollow": 1}

"""Page-level robots directives from <meta name="robots"> and X-Robots-Tag."""

from __future__ import annotations

import pytest

from crawlspace.parse.directives import RobotsDirectives, parse_robots_meta, parse_x_robots_tag

NONE = RobotsDirectives()
NOINDEX = RobotsDirectives(noindex=True)
NOFOLLOW = RobotsDirectives(nofollow=True)
BOTH = RobotsDirectives(noindex=True, nofollow=True)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("noindex", NOINDEX),
        ("nofollow", NOFOLLOW),
        ("noindex, nofollow", BOTH),
        ("NOINDEX,NOFOLLOW", BOTH),
        ("none", BOTH),
        ("None", BOTH),
        ("all", NONE),
        ("index, follow", NONE),
        ("", NONE),
        ("noindex nofollow", BOTH),
        ("noarchive, nosnippet, max-snippet:-1", NONE),
        ("max-image-preview: none", NONE),  # "none" here is a value, not the directive
        ("unavailable_after: 2030-01-01, nofollow", NOFOLLOW),
        ("bogus, noindex, whatever", NOINDEX),
        ("  noindex  ", NOINDEX),
    ],
)
def test_parse_robots_meta(content: str, expected: RobotsDirectives) -> None:
    assert parse_robots_meta(content) == expected


def test_merge_is_most_restrictive() -> None:
    assert NOINDEX.merge(NOFOLLOW) == BOTH
    assert NONE.merge(NONE) == NONE
    assert BOTH.merge(NONE) == BOTH


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], NONE),
        (["noindex"], NOINDEX),
        (["noindex, nofollow"], BOTH),
        (["none"], BOTH),
        (["googlebot: noindex"], NONE),
        (["CrawlspaceBot: nofollow"], NOFOLLOW),
        (["crawlspacebot: none"], BOTH),
        (["googlebot: noindex", "CrawlspaceBot: nofollow"], NOFOLLOW),
        (["googlebot: noindex, nofollow"], NONE),  # scope lasts for the rest of the value
        (["googlebot: noindex, crawlspacebot: nofollow"], NOFOLLOW),
        (["crawlspacebot: noindex, googlebot: nofollow"], NOINDEX),
        (["googlebot: noindex", "nofollow"], NOFOLLOW),  # separate lines are unscoped again
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], NONE),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST, noindex"], NOINDEX),
        (["max-image-preview: none"], NONE),
        (["max-snippet: 20, nofollow"], NOFOLLOW),
        (["crawlspacebot: unavailable_after: 25 Jun 2010"], NONE),
        (["otherbot: max-image-preview: none"], NONE),
        (["NoIndex"], NOINDEX),
    ],
)
def test_parse_x_robots_tag(values: list[str], expected: RobotsDirectives) -> None:
    assert parse_x_robots_tag(values, "CrawlspaceBot") == expected


def test_x_robots_tag_product_token_is_case_insensitive() -> None:
    assert parse_x_robots_tag(["CRAWLSPACEBOT: noindex"], "crawlspacebot") == NOINDEX

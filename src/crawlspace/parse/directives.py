"""Page-level robots directives: ``<meta name="robots">`` and the ``X-Robots-Tag`` header.

These are not robots.txt rules (that is ``crawlspace.robots``); they say whether a fetched page
may be indexed and whether its links may be followed. Only ``noindex`` and ``nofollow`` matter to
a crawler; snippet, preview and archive directives are search-engine display rules and are ignored.

Reference: https://developers.google.com/search/docs/crawling-indexing/robots-meta-tag
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["RobotsDirectives", "parse_robots_meta", "parse_x_robots_tag"]


@dataclass(frozen=True, slots=True)
class RobotsDirectives:
    """What a page allows. The default (both False) means no restriction."""

    noindex: bool = False
    nofollow: bool = False

    def merge(self, other: RobotsDirectives) -> RobotsDirectives:
        """Combine two sources; the most restrictive wins, as Google documents for conflicts."""
        return RobotsDirectives(
            noindex=self.noindex or other.noindex,
            nofollow=self.nofollow or other.nofollow,
        )


NO_DIRECTIVES: Final = RobotsDirectives()

# Every directive name a header value may start with. A "name:" prefix that is one of these is a
# directive with a value (e.g. "unavailable_after: 25 Jun 2010"), not a user-agent scope.
_KNOWN_DIRECTIVES: Final = frozenset(
    {
        "all",
        "none",
        "index",
        "follow",
        "noindex",
        "nofollow",
        "noarchive",
        "nocache",
        "nosnippet",
        "notranslate",
        "noimageindex",
        "indexifembedded",
        "noodp",
        "noydir",
        "unavailable_after",
        "max-snippet",
        "max-image-preview",
        "max-video-preview",
    }
)

# "name: rest" where name has no spaces. Used both to spot UA prefixes and valued directives.
_PREFIX_RE: Final = re.compile(r"^\s*([^\s:,]+)\s*:(.*)$", re.DOTALL)
_WORDS_RE: Final = re.compile(r"[\s;]+")


def _apply_words(words: str, into: RobotsDirectives) -> RobotsDirectives:
    """Apply space-separated bare directive words (no "key: value") to ``into``."""
    noindex, nofollow = into.noindex, into.nofollow
    # Lenient split: "noindex nofollow" and "noindex;nofollow" occur in the wild. Unknown words
    # are ignored, and "index"/"follow"/"all" never lift a restriction from another source.
    for word in _WORDS_RE.split(words.lower()):
        if word == "noindex":
            noindex = True
        elif word == "nofollow":
            nofollow = True
        elif word == "none":
            noindex = nofollow = True
    return RobotsDirectives(noindex=noindex, nofollow=nofollow)


def _apply_part(part: str, into: RobotsDirectives) -> RobotsDirectives:
    """Apply one comma-separated part; a part with a "key:" is a valued directive we ignore."""
    # Without this check "max-image-preview: none" would read as the bare word "none".
    if ":" in part:
        return into
    return _apply_words(part, into)


def parse_robots_meta(content: str) -> RobotsDirectives:
    """Parse the ``content`` of ``<meta name="robots">`` (or ``<meta name="ourbot">``).

    >>> parse_robots_meta("NoIndex, follow")
    RobotsDirectives(noindex=True, nofollow=False)
    """
    result = NO_DIRECTIVES
    for part in content.split(","):
        result = _apply_part(part, result)
    return result


def parse_x_robots_tag(values: list[str], product_token: str) -> RobotsDirectives:
    """Parse every ``X-Robots-Tag`` header value of a response, as seen by ``product_token``.

    A value may be scoped to one crawler ("googlebot: noindex"); the scope lasts until the next
    scoped part of the same value. Unscoped parts apply to every crawler. Pass each header line
    as its own value: once lines are joined with commas, a later unscoped line is
    indistinguishable from a continuation of an earlier scoped one.

    >>> parse_x_robots_tag(["googlebot: noindex", "CrawlspaceBot: nofollow"], "crawlspacebot")
    RobotsDirectives(noindex=False, nofollow=True)
    """
    ours = product_token.strip().lower()
    result = NO_DIRECTIVES
    for value in values:
        applies = True
        for part in value.split(","):
            match = _PREFIX_RE.match(part)
            if match is not None and match.group(1).lower() not in _KNOWN_DIRECTIVES:
                applies = match.group(1).lower() == ours
                part = match.group(2)  # noqa: PLW2901 - the rest after the UA scope
            if applies:
                result = _apply_part(part, result)
    return result

"""Trap detection by yield: a URL family whose pages keep linking into the family while adding
nothing new is a trap, whatever its URLs look like. Pure; the crawl (crawl/host_rules.py) keeps
each family's state as a host note in the store (every engine has them) and applies the
verdicts through the host's "learned" note (frontier/learned.py).

URL shape alone cannot tell an endless calendar (``/calendar/2029/11/18``) from a blog's dated
posts (``/2024/05/12/slug.html``), a loop of relative links (``/loop/b/a/b/b/a/``) from a deep
documentation tree, or faceted navigation (``/shop?size=m&color=green``) from a paginated catalog
(``/products?category=shoes&page=2``): budgets on the shape either cut the real site or let the
trap run to the cap. What they *yield* differs. A trap's pages are made from one template with
next to nothing of their own, and each links to more members of its own family. A real site's
siblings carry text of their own.

So per host and URL family (``url_family``: the first path segment, digit runs generalized, and
query variants of a path apart from its sub-paths) the crawl counts, over tumbling windows of
``sample`` fetched pages: how many were near a sibling (at most ``sibling_new_pairs`` word pairs
that the family's first page or its previous page lack, estimated from bottom-k sketches,
dedup/sketch.py; a trap's pages need not look like its entry page), and how many of them minted
new URLs of the family (queued as never seen, by the store's seen test). A window with at least
``sibling_share`` near siblings and at least ``minting_share`` minting pages flags the family
for good, with the reason that names its shape: ``trap_facets`` (query variants), ``trap_loop``
(the path depth kept growing) or ``trap_template``. A flagged family's new links are refused and
its queued URLs are excluded when leased, each with that reason; the host's other families are
untouched.

Neither test is enough alone. A catalog paginated by "next" links mints a member on every page,
as a calendar does; a docs tree mints its children. But their pages carry text of their own
(five products: 13 or more new word pairs; a calendar's day: 2 or 3). And a real family whose
pages look alike (listings dominated by forty page-number links) stops minting: its pages link
to members already known, one hub page may have found them all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from crawlspace.dedup.sketch import Sketch, new_pairs

__all__ = [
    "NOTE_PREFIX",
    "TRAP_REASONS",
    "FamilyYield",
    "YieldRules",
    "decode",
    "encode",
    "family_members",
    "observe",
    "url_family",
]

NOTE_PREFIX: Final = "yield:"  # host notes holding a family's state: "yield:" + family
TRAP_REASONS: Final = ("trap_template", "trap_facets", "trap_loop")
# The path depth range over one window from which a family reads as a loop of relative links.
LOOP_DEPTH_RANGE: Final = 3

_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class YieldRules:
    sample: int = 20  # pages per window; 0 turns detection off
    sibling_share: float = 0.7  # share of a window's pages near a sibling
    sibling_new_pairs: int = 8  # "near": at most this many word pairs the sibling lacks
    minting_share: float = 0.5  # share of a window's pages that queued a new member


@dataclass(frozen=True, slots=True)
class FamilyYield:
    """One family's counters: the current window, its reference fingerprints, the verdict."""

    pages: int = 0  # pages in the current window
    siblings: int = 0  # of them, near a sibling
    minting: int = 0  # of them, pages that queued a new member of the family
    min_depth: int = 0  # path depths (segments) seen in the window
    max_depth: int = 0
    reference: Sketch | None = None  # the family's first page's text
    last: Sketch | None = None  # the family's previous page's text
    total: int = 0  # pages of the family observed in all
    verdict: str | None = None  # a TRAP_REASONS slug once flagged


def url_family(url: str) -> str | None:
    """The family a URL is judged in: ``/calendar/`` for ``/calendar/2029/11/18``, ``/{n}/`` for
    ``/2024/05/12/post.html``, ``/shop?`` for ``/shop?color=green``. None for a top-level page
    without a query (``/about``): it has no siblings to be compared with."""
    path, query = _path_query(url)
    if not path:
        return None
    if query:
        return _DIGITS.sub("{n}", path) + "?"
    first, sep, _ = path[1:].partition("/")
    if not sep:
        return None
    return "/" + _DIGITS.sub("{n}", first) + "/"


def _path_query(url: str) -> tuple[str, str]:
    """(path, query) of a normalized URL (scheme://authority/path?query, no fragment), by
    string slicing: url_family runs for every lease and every new link, urlsplit costs 4x."""
    slash = url.find("/", url.find("//") + 2)
    if slash < 0:
        return "", ""
    path, _, query = url[slash:].partition("?")
    return path, query


def _depth(url: str) -> int:
    return len([s for s in _path_query(url)[0].split("/") if s])


def family_members(family: str, urls: Iterable[str]) -> int:
    """How many of ``urls`` (new on the page's host) are of ``family``."""
    return sum(1 for url in urls if url_family(url) == family)


def _near(sketch: Sketch, state: FamilyYield, most: int) -> bool:
    # The previous page first: a trap's pages are closest to each other.
    for ref in (state.last, state.reference):
        if ref is not None and new_pairs(sketch, ref) <= most:
            return True
    return False


def _reason(family: str, state: FamilyYield) -> str:
    if family.endswith("?"):
        return "trap_facets"
    if state.max_depth - state.min_depth >= LOOP_DEPTH_RANGE:
        return "trap_loop"
    return "trap_template"


def observe(
    state: FamilyYield,
    family: str,
    *,
    url: str,
    sketch: Sketch,
    minted: int,
    rules: YieldRules,
) -> FamilyYield:
    """Count one fetched page of ``family`` (its first visit) with text ``sketch`` that queued
    ``minted`` new members. At the window's end the family is flagged, or a new window starts."""
    if state.verdict is not None or not rules.sample:
        return state
    depth = _depth(url)
    first = state.pages == 0
    window = FamilyYield(
        pages=state.pages + 1,
        siblings=state.siblings + _near(sketch, state, rules.sibling_new_pairs),
        minting=state.minting + (minted > 0),
        min_depth=depth if first else min(state.min_depth, depth),
        max_depth=depth if first else max(state.max_depth, depth),
        reference=sketch if state.reference is None else state.reference,
        last=sketch,
        total=state.total + 1,
    )
    if window.pages < rules.sample:
        return window
    trap = (
        window.siblings >= rules.sibling_share * window.pages
        and window.minting >= rules.minting_share * window.pages
    )
    if trap:
        return FamilyYield(
            window.pages,
            window.siblings,
            window.minting,
            window.min_depth,
            window.max_depth,
            window.reference,
            window.last,
            window.total,
            _reason(family, window),
        )
    return FamilyYield(reference=window.reference, last=window.last, total=window.total)


def encode(state: FamilyYield) -> str:
    """A host note's text: space-separated fields, "-" for None."""
    refs = ("-" if ref is None else ref.encode() for ref in (state.reference, state.last))
    fields = (
        state.pages,
        state.siblings,
        state.minting,
        state.min_depth,
        state.max_depth,
        *refs,
        state.total,
        state.verdict,
    )
    return " ".join("-" if f is None else str(f) for f in fields)


def decode(text: str | None) -> FamilyYield:
    """The state a note holds; a missing or unreadable note is a fresh family (a note written
    by another version only delays a verdict by one window)."""
    if not text:
        return FamilyYield()
    fields = text.split(" ")
    if len(fields) != 9:
        return FamilyYield()
    try:
        pages, siblings, minting, min_depth, max_depth = (int(f) for f in fields[:5])
        reference, last = (None if f == "-" else Sketch.decode(f) for f in fields[5:7])
        total = int(fields[7])
    except ValueError:
        return FamilyYield()
    verdict = fields[8] if fields[8] in TRAP_REASONS else None
    return FamilyYield(
        pages, siblings, minting, min_depth, max_depth, reference, last, total, verdict
    )

"""rel=canonical rewrites learned per host: when a host's pages keep naming a URL of another path
prefix as their canonical (``/print/X`` -> ``/a/X``), the variants need not be fetched. Pure;
the crawl (crawl/host_rules.py) keeps the counts in the host note "canon" and applies the
active rewrites through the host's "learned" note (frontier/learned.py).

A fetched page whose canonical is another URL of its host, with the same query and the same
path after a short prefix, confirms the prefix rewrite (``/print/`` -> ``/a/``). After
``CONFIRMATIONS`` pages confirmed it and none under the source prefix contradicted it (a page
there that is its own canonical, or names another), the rewrite is active: links under the
source prefix are admitted as their rewritten form and the variant is excluded with the reason
``canonical_variant``; a queued variant is excluded when leased, its rewritten form queued. Short
prefixes only (at most ``MAX_PREFIX`` segments): a rule learned from one page's odd canonical
must not swallow a site.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "CONFIRMATIONS",
    "NOTE",
    "Rewrite",
    "active_rewrites",
    "apply_rewrite",
    "observe_canonical",
    "rewrite_of",
]

NOTE: Final = "canon"  # the host note: one "SOURCE TARGET HITS MISSES" line per rewrite
CONFIRMATIONS: Final = 2
MAX_PREFIX: Final = 2  # segments in a rewrite's source or target prefix
MAX_RULES: Final = 50  # rewrites tracked per host


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Paths under ``source`` (a segment-aligned prefix, ending "/") are ``target`` + the rest."""

    source: str
    target: str


def _prefix(segments: list[str]) -> str:
    return "/" + "".join(f"{s}/" for s in segments)


def rewrite_of(url: str, canonical: str) -> Rewrite | None:
    """The prefix rewrite that maps ``url`` onto its ``canonical`` (both normalized), if any."""
    page, canon = urlsplit(url), urlsplit(canonical)
    if (page.scheme, page.netloc, page.query) != (canon.scheme, canon.netloc, canon.query):
        return None
    a, b = page.path.split("/")[1:], canon.path.split("/")[1:]
    shared = 0
    while shared < min(len(a), len(b)) and a[-1 - shared] == b[-1 - shared]:
        shared += 1
    if not shared or not a[-1]:  # the pages' own names must match (a directory: no rule)
        return None
    source, target = a[: len(a) - shared], b[: len(b) - shared]
    if not source or source == target or max(len(source), len(target)) > MAX_PREFIX:
        return None
    return Rewrite(_prefix(source), _prefix(target))


def _rules(note: str | None) -> dict[Rewrite, tuple[int, int]]:
    out = {}
    for line in (note or "").split("\n"):
        fields = line.split(" ")
        if len(fields) == 4 and fields[2].isdigit() and fields[3].isdigit():
            out[Rewrite(fields[0], fields[1])] = (int(fields[2]), int(fields[3]))
    return out


def _encode(rules: dict[Rewrite, tuple[int, int]]) -> str:
    return "\n".join(f"{r.source} {r.target} {h} {m}" for r, (h, m) in rules.items())


def active_rewrites(note: str | None) -> tuple[Rewrite, ...]:
    """The rewrites with enough confirmations and no contradiction."""
    return tuple(
        rule
        for rule, (hits, misses) in _rules(note).items()
        if hits >= CONFIRMATIONS and not misses
    )


def observe_canonical(url: str, canonical: str | None, note: str | None) -> str | None:
    """The host's "canon" note after a fetched page: a confirmation of the rewrite its
    canonical shows, a contradiction of each known rewrite whose source it is under but does
    not follow. None when nothing changes."""
    path = urlsplit(url).path
    learned = None if canonical is None or canonical == url else rewrite_of(url, canonical)
    rules = _rules(note)
    changed = False
    for rule, (hits, misses) in rules.items():
        # The prefix's own index page (/print/) is not a variant of anything.
        if path.startswith(rule.source) and path != rule.source and rule != learned:
            rules[rule] = (hits, misses + 1)
            changed = True
    if learned is not None and (learned in rules or len(rules) < MAX_RULES):
        hits, misses = rules.get(learned, (0, 0))
        rules[learned] = (hits + 1, misses)
        changed = True
    return _encode(rules) if changed else None


def apply_rewrite(url: str, rules: Iterable[Rewrite]) -> str | None:
    """``url`` rewritten by the first rule whose source prefix it is under, else None."""
    parts = urlsplit(url)
    for rule in rules:
        if parts.path.startswith(rule.source):
            path = rule.target + parts.path[len(rule.source) :]
            return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    return None

"""How many sitemap documents a host may cost: ``max_sitemaps_per_host`` distinct ones. Pure.

A robots.txt may name thousands of sitemaps, and a sitemap index list thousands more, all dead:
each admitted document is one fetch of the host, and sitemap documents go before its pages
(discovery/sitemaps.py), so an index of 2,000 404s cost that host 2,000 requests before its
first page. The documents a host has admitted are kept as a host note (``SITEMAP_NOTE``: a short
hash of each, space-separated; at most ``cap`` of them), read before the visit that finds more
and written with it, so every worker of a shared frontier counts into the same budget (one
request in flight per host: no two visits of a host count at once). Every document admitted
counts, whatever it turns out to hold (a 404 or an empty sitemap cost its request); one admitted
before is admitted again without counting (a robots.txt read again, an index revisited).
Documents past the budget are excluded (``SITEMAP_BUDGET``); the pages a sitemap lists and
sitemaps given with ``--sitemap`` are not counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["SITEMAP_BUDGET", "SITEMAP_NOTE", "SitemapCount", "count_sitemaps"]

SITEMAP_NOTE: Final = "sitemaps"
SITEMAP_BUDGET: Final = "sitemap_budget"


@dataclass(frozen=True, slots=True)
class SitemapCount:
    """What a visit's sitemap documents came to: those admitted, those over the budget, and the
    host's new note (None: unchanged)."""

    admitted: tuple[str, ...]
    over: tuple[str, ...]
    note: str | None


def _key(url: str) -> str:
    return hashlib.blake2b(url.encode(), digest_size=6).hexdigest()


def count_sitemaps(documents: Sequence[str], note: str | None, cap: int) -> SitemapCount:
    """Admit ``documents`` (sitemap URLs a visit of the host found, in order) while the host's
    distinct documents (``note``) are fewer than ``cap``."""
    known = note.split() if note else []
    seen = set(known)
    admitted: list[str] = []
    over: list[str] = []
    for url in documents:
        key = _key(url)
        if key in seen:
            admitted.append(url)
        elif len(known) < cap:
            seen.add(key)
            known.append(key)
            admitted.append(url)
        else:
            over.append(url)
    grown = len(known) > (len(note.split()) if note else 0)
    return SitemapCount(tuple(admitted), tuple(over), " ".join(known) if grown else None)

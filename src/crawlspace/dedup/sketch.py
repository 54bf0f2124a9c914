"""A page's text as a bottom-k sketch of its word-pair hashes (Broder, "On the resemblance and
containment of documents", 1997): the ``K`` smallest distinct shingle hashes and how many distinct
shingles there were. Two sketches estimate how many word pairs one page has that the other lacks.

Simhash answers "are these two pages the same?" and is noisy on short pages: a calendar's days
and a catalog's listing pages (forty page-number links, five products) both sit 5-25 bits apart.
Trap detection asks another question, "does this page add text of its own?", which a count of
new word pairs answers with a wide margin (tests/trapweb.py pages: trap siblings add 0-6, real
siblings 12 or more). Pure; built where the page is parsed (dedup/simhash.py), used by
frontier/trap_yield.py.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["K", "Sketch", "new_pairs", "sketch_of"]

K: Final = 64


@dataclass(frozen=True, slots=True)
class Sketch:
    hashes: tuple[int, ...]  # the K smallest distinct shingle hashes, ascending
    size: int  # distinct shingles in the text

    def encode(self) -> str:
        return f"{self.size}:" + ",".join(f"{h:x}" for h in self.hashes)

    @classmethod
    def decode(cls, text: str) -> Sketch | None:
        size, sep, rest = text.partition(":")
        try:
            return cls(tuple(int(h, 16) for h in rest.split(",") if h), int(size)) if sep else None
        except ValueError:
            return None


def sketch_of(shingle_hashes: Iterable[int]) -> Sketch:
    distinct = set(shingle_hashes)
    return Sketch(tuple(heapq.nsmallest(K, distinct)), len(distinct))


def new_pairs(page: Sketch, other: Sketch) -> int:
    """About how many of ``page``'s distinct word pairs ``other`` lacks: the resemblance J from
    the union's K smallest hashes, the shared count J (|A| + |B|) / (1 + J), the rest new."""
    if not page.hashes:
        return 0
    mine, theirs = set(page.hashes), set(other.hashes)
    union = heapq.nsmallest(K, mine | theirs)
    resemblance = sum(1 for h in union if h in mine and h in theirs) / len(union)
    shared = resemblance * (page.size + other.size) / (1 + resemblance)
    return max(0, round(page.size - shared))

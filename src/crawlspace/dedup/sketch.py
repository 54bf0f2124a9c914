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

import base64
import heapq
import sys
from array import array
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
        """``SIZE:BASE64``, the hashes packed as little-endian uint64: host notes carry two
        sketches per URL family and are read and written on every first visit, so this is
        decoded in C (base64, array) rather than parsed number by number."""
        packed = array("Q", self.hashes)
        if sys.byteorder != "little":
            packed.byteswap()
        return f"{self.size}:" + base64.b64encode(packed.tobytes()).decode("ascii")

    @classmethod
    def decode(cls, text: str) -> Sketch | None:
        size, sep, rest = text.partition(":")
        if not sep:
            return None
        try:
            raw = base64.b64decode(rest, validate=True)
            packed = array("Q", raw[: len(raw) - len(raw) % 8])
            count = int(size)
        except ValueError:
            return None
        if sys.byteorder != "little":
            packed.byteswap()
        return cls(tuple(packed), count)


def sketch_of(shingle_hashes: Iterable[int]) -> Sketch:
    distinct = set(shingle_hashes)
    n = len(distinct)
    if n > 4 * K:
        # The hashes are uniform over 64 bits, so the K smallest are almost surely below
        # 4K/n of the range: filter in C, sort a few hundred (3x faster than a heap of n).
        below = (4 * K << 64) // n
        small = sorted(h for h in distinct if h < below)
        if len(small) >= K:
            return Sketch(tuple(small[:K]), n)
        return Sketch(tuple(heapq.nsmallest(K, distinct)), n)
    return Sketch(tuple(sorted(distinct)[:K]), n)


def new_pairs(page: Sketch, other: Sketch) -> int:
    """About how many of ``page``'s distinct word pairs ``other`` lacks: the resemblance J from
    the union's K smallest hashes, the shared count J (|A| + |B|) / (1 + J), the rest new."""
    if not page.hashes:
        return 0
    mine, theirs = set(page.hashes), set(other.hashes)
    union = sorted(mine | theirs)[:K]  # at most 2K: a C sort beats a heap here
    resemblance = sum(1 for h in union if h in mine and h in theirs) / len(union)
    shared = resemblance * (page.size + other.size) / (1 + resemblance)
    return max(0, round(page.size - shared))

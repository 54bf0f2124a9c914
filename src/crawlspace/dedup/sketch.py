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
import functools
import heapq
import re
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from crawlspace.pickling import by_fields

__all__ = ["K", "Sketch", "new_pairs", "sketch_of"]

K: Final = 64


@by_fields
@dataclass(frozen=True, slots=True)
class Sketch:
    hashes: tuple[int, ...]  # the K smallest distinct shingle hashes, ascending
    size: int  # shingles in the text (word pairs, repeats counted)

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


def sketch_of(shingle_hashes: Sequence[int], packed: bytes | None = None) -> Sketch:
    """The K smallest distinct hashes, and the count of shingles (with repeats: a set of
    thousands costs more than the rest of the sketch; repeats are few in a page's word pairs
    and scale both sides of new_pairs alike). ``packed``: the hashes as little-endian uint64s
    (dedup/simhash.py has them), which lets a C scan of their top bytes pick the candidates."""
    n = len(shingle_hashes)
    if n <= 4 * K:
        return Sketch(tuple(sorted(set(shingle_hashes))[:K]), n)
    if packed is not None:
        # Uniform hashes: about 2K of them have a top byte below `top`, and the K smallest are
        # almost surely among those. The regex scans the n top bytes in C.
        top = -(-256 * 2 * K // n)
        picked = {shingle_hashes[m.start()] for m in _top_byte(top).finditer(packed[7::8])}
        if len(picked) >= K:
            return Sketch(tuple(sorted(picked)[:K]), n)
    return Sketch(tuple(heapq.nsmallest(K, set(shingle_hashes))), n)


@functools.cache
def _top_byte(top: int) -> re.Pattern[bytes]:
    """A pattern matching a byte below ``top`` (1 <= top <= 256), compiled on first use: the
    256 of them took ~10 ms of every crawl and parse worker process's start."""
    return re.compile(b"[" + re.escape(bytes([0])) + b"-" + re.escape(bytes([top - 1])) + b"]")


def new_pairs(page: Sketch, other: Sketch) -> int:
    """About how many of ``page``'s distinct word pairs ``other`` lacks: the resemblance J from
    the union's K smallest hashes, the shared count J (|A| + |B|) / (1 + J), the rest new."""
    if not page.hashes:
        return 0
    mine, theirs = set(page.hashes), set(other.hashes)
    union = sorted(mine | theirs)[:K]  # at most 2K: a C sort beats a heap here
    cut = union[-1]  # the shared hashes among the union's K smallest: those up to its last
    resemblance = sum(1 for h in mine & theirs if h <= cut) / len(union)
    shared = resemblance * (page.size + other.size) / (1 + resemblance)
    return max(0, round(page.size - shared))

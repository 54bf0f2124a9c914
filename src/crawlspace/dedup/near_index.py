"""Near-duplicate lookup: all stored 64-bit fingerprints within Hamming distance k. Pure.

Manku, Jain, Das Sarma, "Detecting Near-Duplicates for Web Crawling", WWW 2007, §3: split the
64 bits into k+1 blocks; two fingerprints that differ in at most k bits agree exactly on at least
one block (pigeonhole). One table per block maps the block's value to the entries having it, so
a query probes k+1 buckets and checks only their members, not every stored fingerprint. With k=3
the blocks are 16 bits wide: at a million fingerprints a bucket holds ~15, a query checks ~60.

Memory: buckets are ``array('I')`` of entry numbers, fingerprints and ids live in two parallel
``array('q')``/``array('Q')`` columns, so an entry costs ~32 bytes plus the tables' fixed part.
"""

from __future__ import annotations

from array import array
from typing import Final

__all__ = ["NearDuplicateIndex", "blocks"]

_BITS: Final = 64


def blocks(k: int) -> list[tuple[int, int]]:
    """(shift, mask) of each of k+1 contiguous blocks covering the 64 bits."""
    count = k + 1
    out = []
    shift = 0
    for i in range(count):
        width = _BITS // count + (1 if i < _BITS % count else 0)
        out.append((shift, (1 << width) - 1))
        shift += width
    return out


class NearDuplicateIndex:
    """``max_entries`` bounds memory (~32 bytes an entry): once full, further fingerprints are
    not stored (``full_skips`` counts them), so later pages are still compared with the ones
    stored but not with each other."""

    def __init__(self, k: int = 3, max_entries: int | None = None) -> None:
        if not 0 <= k < _BITS:
            raise ValueError(f"k must be in 0..63 (got {k})")
        if max_entries is not None and max_entries < 0:
            raise ValueError(f"max_entries must be >= 0 (got {max_entries})")
        self.k = k
        self.max_entries = max_entries
        self.full_skips = 0
        self._blocks = blocks(k)
        self._tables: list[dict[int, array[int]]] = [{} for _ in self._blocks]
        self._fps: array[int] = array("Q")
        self._ids: array[int] = array("q")

    def __len__(self) -> int:
        return len(self._fps)

    def add(self, fingerprint: int, ident: int) -> None:
        """Store ``fingerprint`` (unsigned 64-bit) under ``ident`` (e.g. its cluster id)."""
        entry = len(self._fps)
        if self.max_entries is not None and entry >= self.max_entries:
            self.full_skips += 1
            return
        self._fps.append(fingerprint)
        self._ids.append(ident)
        for table, (shift, mask) in zip(self._tables, self._blocks, strict=True):
            key = (fingerprint >> shift) & mask
            bucket = table.get(key)
            if bucket is None:
                table[key] = array("I", (entry,))
            else:
                bucket.append(entry)

    def truncate(self, size: int) -> None:
        """Forget the entries added after the first ``size`` (the store's transaction that
        added them rolled back). Entries are numbered in order, so each bucket's are at its
        end."""
        if size >= len(self._fps):
            return
        for table, (shift, mask) in zip(self._tables, self._blocks, strict=True):
            for entry in range(size, len(self._fps)):
                key = (self._fps[entry] >> shift) & mask
                bucket = table.get(key)
                while bucket and bucket[-1] >= size:
                    bucket.pop()
                if bucket is not None and not bucket:
                    del table[key]
        del self._fps[size:]
        del self._ids[size:]

    def _candidates(self, fingerprint: int) -> set[int]:
        found: set[int] = set()
        fps, k = self._fps, self.k
        for table, (shift, mask) in zip(self._tables, self._blocks, strict=True):
            bucket = table.get((fingerprint >> shift) & mask)
            if bucket is None:
                continue
            for entry in bucket:
                if (fps[entry] ^ fingerprint).bit_count() <= k:
                    found.add(entry)
        return found

    def find_all(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every stored (ident, distance) within k, nearest first, then oldest entry first."""
        fps, ids = self._fps, self._ids
        entries = sorted(
            self._candidates(fingerprint), key=lambda e: ((fps[e] ^ fingerprint).bit_count(), e)
        )
        return [(ids[e], (fps[e] ^ fingerprint).bit_count()) for e in entries]

    def find(self, fingerprint: int) -> tuple[int, int] | None:
        """The nearest stored (ident, distance) within k, or None."""
        best: tuple[int, int, int] | None = None
        fps, k = self._fps, self.k
        for table, (shift, mask) in zip(self._tables, self._blocks, strict=True):
            bucket = table.get((fingerprint >> shift) & mask)
            if bucket is None:
                continue
            for entry in bucket:
                d = (fps[entry] ^ fingerprint).bit_count()
                if d <= k and (best is None or (d, entry) < (best[0], best[1])):
                    best = (d, entry, self._ids[entry])
        return None if best is None else (best[2], best[0])

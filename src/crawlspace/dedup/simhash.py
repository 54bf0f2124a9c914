"""64-bit simhash of extracted page text (Charikar, STOC 2002; Manku et al., WWW 2007). Pure.

Features are word shingles (w-shingling, Broder 1997): runs of ``SHINGLE`` consecutive
lower-cased words, weighted by how often they occur. Bit i of the fingerprint is 1 when the
total weight of features whose 64-bit hash has bit i set exceeds half of all weight. Changing a
few words flips few bits, so near-identical texts have a small Hamming distance.

Hashes must be stable across processes and Python versions (``hash()`` is not): each word is
hashed once with XXH3-64, a shingle's hash mixes its words' hashes (multiply, rotate, then the
MurmurHash3 64-bit finalizer), and the vote over every shingle occurrence (the same as weighting
distinct shingles by their count) is one numpy bit-unpack and column sum. It runs in the parse
worker (processors.py); on python3.11-doc pages it is ~2.3x faster than the earlier BLAKE2b
per shingle with byte histograms (benchmarks/simhash_bench.py). ``SCHEME`` names the hash
recipe: fingerprints of another scheme are not comparable (store/sqlite_dedup.py keeps them out
of the near-duplicate index).
"""

from __future__ import annotations

import re
from operator import methodcaller
from typing import Final

import numpy as np
import xxhash

__all__ = ["SCHEME", "SHINGLE", "hamming", "simhash64", "to_signed", "to_unsigned"]

SCHEME: Final = "xxh3-mix-v2"
SHINGLE: Final = 2  # bigrams: see benchmarks/simhash_bench.py for recall by shingle size
_WORD: Final = re.compile(r"\w+")
_MASK64: Final = (1 << 64) - 1

_ENCODE: Final = methodcaller("encode", "utf-8", "surrogatepass")
_GOLDEN: Final = np.uint64(0x9E3779B97F4A7C15)
_FMIX1: Final = np.uint64(0xFF51AFD7ED558CCD)
_FMIX2: Final = np.uint64(0xC4CEB9FE1A85EC53)
_R31, _L33 = np.uint64(31), np.uint64(33)


def _shingle_hashes(words: list[str], shingle: int) -> np.ndarray:
    """One uint64 per shingle occurrence (per word when there are fewer words than a shingle)."""
    n = len(words)
    h = np.fromiter(map(xxhash.xxh3_64_intdigest, map(_ENCODE, words)), np.uint64, count=n)
    if n < shingle or shingle == 1:
        return h
    count = n - shingle + 1
    x = h[:count].copy()
    for i in range(1, shingle):
        nxt = h[i : i + count]
        x *= _GOLDEN
        x ^= (nxt << _R31) | (nxt >> _L33)
    x ^= x >> _L33
    x *= _FMIX1
    x ^= x >> _L33
    x *= _FMIX2
    x ^= x >> _L33
    return x


def simhash64(text: str, shingle: int = SHINGLE) -> int:
    """The unsigned 64-bit simhash of ``text``; 0 for text without words."""
    words = _WORD.findall(text.lower())
    if not words:
        return 0
    hashes = _shingle_hashes(words, shingle)
    # Row r holds hash r's 64 bits, least significant first (little-endian bytes and bits).
    little = hashes.astype("<u8", copy=False).view(np.uint8)
    bits = np.unpackbits(little, bitorder="little").reshape(-1, 64)
    majority = 2 * bits.sum(axis=0, dtype=np.int64) > len(hashes)
    return int.from_bytes(np.packbits(majority, bitorder="little").tobytes(), "little")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def to_signed(h: int) -> int:
    """SQLite INTEGER is a signed 64-bit value: store the fingerprint's bits as one."""
    return h - (1 << 64) if h >= 1 << 63 else h


def to_unsigned(h: int) -> int:
    return h & _MASK64

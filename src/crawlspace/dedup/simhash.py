"""64-bit simhash of extracted page text (Charikar, STOC 2002; Manku et al., WWW 2007). Pure.

Features are word shingles (w-shingling, Broder 1997): runs of ``SHINGLE`` consecutive
lower-cased words, weighted by how often they occur. Each feature is hashed to 64 bits
(BLAKE2b, stable across processes and Python versions, unlike ``hash()``); bit i of the
fingerprint is 1 when the total weight of features with bit i set exceeds half of all weight.
Changing a few words flips few bits, so near-identical texts have a small Hamming distance.

The per-bit vote is summed with one big integer holding 64 lanes of 32 bits ("SIMD within a
register"): a feature adds ``weight * spread(hash)`` where ``spread`` puts bit i into lane i,
built from eight 256-entry tables. That is ~8 table lookups per feature instead of 64 bit tests.
"""

from __future__ import annotations

import re
from collections import Counter
from hashlib import blake2b
from typing import Final

__all__ = ["SHINGLE", "hamming", "simhash64", "to_signed", "to_unsigned"]

SHINGLE: Final = 2  # bigrams: see benchmarks/simhash_bench.py for recall by shingle size
_LANE: Final = 32  # bits per vote lane: weights of one page stay far below 2**32
_WORD: Final = re.compile(r"\w+")
_MASK64: Final = (1 << 64) - 1


def _spread_tables() -> list[list[int]]:
    """tables[k][b]: byte value b at byte position k, its bit j moved to lane 8k+j."""
    tables = []
    for k in range(8):
        row = []
        for b in range(256):
            v = 0
            for j in range(8):
                if b >> j & 1:
                    v |= 1 << ((8 * k + j) * _LANE)
            row.append(v)
        tables.append(row)
    return tables


_T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7 = _spread_tables()
_LANE_MASK: Final = (1 << _LANE) - 1


def features(text: str, shingle: int = SHINGLE) -> Counter[str]:
    """Weighted features: shingle -> count (texts shorter than a shingle use single words)."""
    words = _WORD.findall(text.lower())
    if len(words) < shingle:
        return Counter(words)
    return Counter(" ".join(words[i : i + shingle]) for i in range(len(words) - shingle + 1))


def simhash64(text: str, shingle: int = SHINGLE) -> int:
    """The unsigned 64-bit simhash of ``text``; 0 for text without words."""
    acc = 0
    total = 0
    for feature, weight in features(text, shingle).items():
        d = blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        spread = (
            _T0[d[0]] | _T1[d[1]] | _T2[d[2]] | _T3[d[3]] | _T4[d[4]] | _T5[d[5]] | _T6[d[6]]
        ) | _T7[d[7]]
        acc += spread if weight == 1 else weight * spread
        total += weight
    result = 0
    for i in range(64):
        if 2 * ((acc >> (i * _LANE)) & _LANE_MASK) > total:
            result |= 1 << i
    return result


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def to_signed(h: int) -> int:
    """SQLite INTEGER is a signed 64-bit value: store the fingerprint's bits as one."""
    return h - (1 << 64) if h >= 1 << 63 else h


def to_unsigned(h: int) -> int:
    return h & _MASK64

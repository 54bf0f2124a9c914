"""64-bit simhash of extracted page text (Charikar, STOC 2002; Manku et al., WWW 2007). Pure.

Features are word shingles (w-shingling, Broder 1997): runs of ``SHINGLE`` consecutive
lower-cased words, weighted by how often they occur. Bit i of the fingerprint is 1 when the
total weight of features whose 64-bit hash has bit i set exceeds half of all weight. Changing a
few words flips few bits, so near-identical texts have a small Hamming distance.

Hashes must be stable across processes and Python versions (``hash()`` is not): each word is
hashed once with XXH64, and a shingle's hash is XXH64 of its last word seeded with the hash of
the words before it. ``SCHEME`` names the hash recipe: fingerprints of another scheme are not
comparable (store/sqlite/dedup.py keeps them out of the near-duplicate index).

Two implementations compute the same bits: ``_shingles.c``, the compiled helper (setup.py builds
it wherever a C compiler is found: a pass over the text with no Python object per word, ~10x
faster, benchmarks/README.md "Near the limit"), and the Python below, used without it and as the
reference the tests hold the C to. The Python vote over every shingle occurrence (the same as
weighting distinct shingles by their count) counts bits with big-integer popcounts: the hashes
packed little-endian, each byte column read as one integer, masked per bit and ``bit_count``-ed,
C-speed work without numpy, whose 16 MB import every parse worker process would otherwise carry.
XXH64 rather than the XXH3 of the scheme before: its specification is short enough to implement
in the helper, and through the xxhash package both cost the same per call.
"""

from __future__ import annotations

import re
import sys
from array import array
from typing import Final

import xxhash

from crawlspace.dedup.sketch import K, Sketch, sketch_of

try:
    from crawlspace.dedup import _shingles  # the compiled helper (setup.py)
except ImportError:  # built without a C compiler: the Python below
    _shingles = None  # type: ignore[assignment]

NATIVE: Final = _shingles is not None

__all__ = [
    "SCHEME",
    "SHINGLE",
    "hamming",
    "simhash64",
    "simhash_and_sketch",
    "to_signed",
    "to_unsigned",
]

SCHEME: Final = "xxh64-seeded-v4"
SHINGLE: Final = 2  # bigrams: see benchmarks/simhash_bench.py for recall by shingle size
_WORD: Final = re.compile(r"\w+")
_MASK64: Final = (1 << 64) - 1
_XXH64: Final = xxhash.xxh64_intdigest
_BIT_BYTES: Final = tuple(bytes([1 << bit]) for bit in range(8))


def _shingle_hashes(words: list[str], shingle: int) -> list[int]:
    """One 64-bit hash per shingle occurrence (per word when there are fewer words than a
    shingle): word i's XXH64 seeded with the hash of the shingle's earlier words."""
    # One encode of the joined words, split back apart: 4x cheaper than an encode per word
    # (words are runs of \w, so they never contain NUL).
    encoded = "\0".join(words).encode("utf-8", "surrogatepass").split(b"\0")
    hashes = list(map(_XXH64, encoded))
    if len(encoded) < shingle:
        return hashes
    for i in range(1, shingle):
        hashes = list(map(_XXH64, encoded[i:], hashes))
    return hashes


def _packed(hashes: list[int]) -> bytes:
    """The hashes as little-endian uint64s, one after another."""
    packed = array("Q", hashes)
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tobytes()


def _majority_bits(hashes: list[int], raw: bytes | None = None) -> int:
    """Bit i is 1 when more than half of ``hashes`` (``raw``: them packed) have bit i set."""
    n = len(hashes)
    raw = _packed(hashes) if raw is None else raw
    masks = [int.from_bytes(bit * n, "little") for bit in _BIT_BYTES]
    result = 0
    for column in range(8):  # byte `column` of every hash, as one n-byte integer
        column_bits = int.from_bytes(raw[column::8], "little")
        for bit, mask in enumerate(masks):
            if 2 * (column_bits & mask).bit_count() > n:
                result |= 1 << (8 * column + bit)
    return result


def simhash64(text: str, shingle: int = SHINGLE) -> int:
    """The unsigned 64-bit simhash of ``text``; 0 for text without words."""
    if _shingles is not None:
        return int(_shingles.simhash_sketch(text.lower(), shingle, 0)[0])
    words = _WORD.findall(text.lower())
    if not words:
        return 0
    return _majority_bits(_shingle_hashes(words, shingle))


def simhash_and_sketch(text: str, shingle: int = SHINGLE) -> tuple[int, Sketch]:
    """The simhash and the bottom-k sketch (dedup/sketch.py) of ``text``, shingled once."""
    if _shingles is not None:
        simhash, smallest, size = _shingles.simhash_sketch(text.lower(), shingle, K)
        return simhash, Sketch(smallest, size)
    return python_simhash_and_sketch(text, shingle)


def python_simhash_and_sketch(text: str, shingle: int = SHINGLE) -> tuple[int, Sketch]:
    """``simhash_and_sketch`` without the compiled helper: the reference it is tested against."""
    words = _WORD.findall(text.lower())
    if not words:
        return 0, sketch_of(())
    hashes = _shingle_hashes(words, shingle)
    raw = _packed(hashes)
    return _majority_bits(hashes, raw), sketch_of(hashes, raw)


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def to_signed(h: int) -> int:
    """SQLite INTEGER is a signed 64-bit value: store the fingerprint's bits as one."""
    return h - (1 << 64) if h >= 1 << 63 else h


def to_unsigned(h: int) -> int:
    return h & _MASK64

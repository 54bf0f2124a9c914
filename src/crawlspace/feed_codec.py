"""How the index feed's page parts are packed: zstd-compressed JSON (feed_format.py says what a
record holds). Built where a page is parsed, unpacked only by the feed's readers, so the crawl
loop never encodes or decodes one.

JSON by orjson: a page part (its text and ~20-300 outlinks) took ~110 µs with the standard
library's encoder and ~8 µs with orjson, on a parse worker's every page (benchmarks/README.md,
"Search index")."""

from __future__ import annotations

import sys
import threading
from typing import Any, Final

import orjson

if sys.version_info >= (3, 14):
    from compression import zstd
else:  # the same module, backported (pyproject.toml)
    from backports import zstd

__all__ = ["pack", "unpack"]

# Level 1: ~28 µs for a page part of 7 KB (level 3: ~37 µs, 2.5% smaller), about zlib's
# size at a quarter of its time.
_LEVEL: Final = 1
# One compressor per thread (making one costs more than compressing a page's text; parsing may
# run on several threads, and a compressor is not to be shared between them).
_local = threading.local()


def pack(value: dict[str, Any]) -> bytes:
    """``value`` as zstd-compressed JSON."""
    compressor = getattr(_local, "compressor", None)
    if compressor is None:
        compressor = _local.compressor = zstd.ZstdCompressor(level=_LEVEL)
    data = orjson.dumps(value)
    return bytes(compressor.compress(data, mode=zstd.ZstdCompressor.FLUSH_FRAME))


def unpack(data: bytes) -> dict[str, Any]:
    value = orjson.loads(zstd.decompress(data))
    if not isinstance(value, dict):
        raise ValueError("a packed feed document is a JSON object")
    return value

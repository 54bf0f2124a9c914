"""`crawlspace feed --output FILE`: a crawl's index feed as a file for batch indexers: JSON lines
(zstd-compressed when FILE ends in .zst) or Parquet with the feed's schema (docs/feed.md).

Records stream in batches, so memory stays bounded by one batch whatever the feed's size.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from crawlspace.errors import ConfigError
from crawlspace.ops.feed import feed_records

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

__all__ = ["write_feed"]

ROW_GROUP = 10_000


def write_feed(
    db: sqlite3.Connection, output: Path, fmt: str, start: int = 1, limit: int | None = None
) -> int:
    """Write the feed's records from position ``start`` (at most ``limit``) to ``output`` as
    ``fmt`` (jsonl or parquet); returns how many were written."""
    records = feed_records(db, start, limit)
    if fmt == "parquet":
        return _parquet(records, output)
    opened = zstd.open(output, "wb") if output.suffix == ".zst" else output.open("wb")
    count = 0
    with opened as out:
        for record in records:
            out.write(orjson.dumps(record) + b"\n")
            count += 1
    return count


def _schema() -> Any:
    """The feed's columns (docs/feed.md); a delete leaves its page's columns null."""
    import pyarrow as pa

    outlink = pa.struct(
        [("url", pa.string()), ("anchors", pa.list_(pa.string())), ("nofollow", pa.bool_())]
    )
    warc = pa.struct([("file", pa.string()), ("offset", pa.int64()), ("length", pa.int64())])
    strings = ["kind", "id", "url", "reason", "final_url", "canonical", "content_type"]
    strings += ["content_sha256", "text_sha256", "simhash", "redirect_to", "title", "lang", "text"]
    integers = ["position", "schema", "version", "url_version", "status", "bytes"]
    return pa.schema(
        [(name, pa.int64()) for name in integers]
        + [(name, pa.string()) for name in strings]
        + [
            ("fetched_at", pa.float64()),
            ("text_truncated", pa.bool_()),
            ("warc", warc),
            ("outlinks", pa.list_(outlink)),
        ]
    )


def _parquet(records: Iterator[dict[str, Any]], output: Path) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("--format parquet needs pyarrow: pip install pyarrow") from None
    schema = _schema()
    count = 0
    with pq.ParquetWriter(output, schema) as writer:
        while batch := list(islice(records, ROW_GROUP)):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            count += len(batch)
    return count

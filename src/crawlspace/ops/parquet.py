"""`crawlspace export --format parquet`: any ``--what`` of export.iter_records as a Parquet file.

Records stream in row groups, so memory stays bounded by one group. The schema is inferred
from the Python types of the first group (SQLite is dynamically typed; a column only ever NULL
there becomes a string column).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from crawlspace.errors import ConfigError
from crawlspace.ops.export import iter_records

ROW_GROUP = 50_000


def _arrow_type(values: list[Any]) -> Any:
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return pa.bool_()
    if kinds and kinds <= {int, bool}:
        return pa.int64()
    if kinds and kinds <= {int, float}:
        return pa.float64()
    if kinds == {bytes}:
        return pa.binary()
    return pa.string()


def _schema(batch: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    names = list(batch[0])
    return pa.schema([(name, _arrow_type([r.get(name) for r in batch])) for name in names])


def _column(values: list[Any], arrow_type: Any) -> list[Any]:
    import pyarrow as pa

    if pa.types.is_string(arrow_type):
        return [None if v is None else str(v) for v in values]
    if pa.types.is_floating(arrow_type):
        return [None if v is None else float(v) for v in values]
    return values


def write_parquet(out_dir: Path | str, what: str, output: Path | None) -> int:
    """Write the records to ``output``; returns how many were written."""
    if output is None:
        raise ConfigError("--format parquet writes a binary file: give it with --output FILE")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("--format parquet needs pyarrow: pip install pyarrow") from None
    records: Iterator[dict[str, Any]] = iter_records(out_dir, what)
    first = list(islice(records, ROW_GROUP))
    if not first:
        pq.write_table(pa.table({}), output)
        return 0
    schema = _schema(first)
    count = 0
    with pq.ParquetWriter(output, schema) as writer:
        batch = first
        while batch:
            columns = {f.name: _column([r.get(f.name) for r in batch], f.type) for f in schema}
            writer.write_table(pa.table(columns, schema=schema))
            count += len(batch)
            batch = list(islice(records, ROW_GROUP))
    return count

"""Crash recovery of WARC files: cut each ``.open`` file back to its last complete record.

A crawl killed mid-write leaves ``NAME.warc.gz.open`` files (``warc.py`` writes under that name
and renames when done, as Heritrix does). Every record is one gzip member, so the last complete
one is found by walking the members, CRC checked by zlib and the WARC framing checked here.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from warcio.archiveiterator import ArchiveIterator

from crawlspace.archive.warc import OPEN_SUFFIX, WARC_SUFFIX

_GZIP_WBITS: Final = zlib.MAX_WBITS | 16
_READ_CHUNK: Final = 1 << 20
_HEAD_KEEP: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class RecoveredFile:
    """What ``recover_open_files`` did with one leftover ``.open`` file."""

    path: Path  # final path, or the ``.open`` path when deleted or left in place
    records: int  # complete records kept (including warcinfo)
    kept_bytes: int
    dropped_bytes: int  # an incomplete or corrupt tail cut off
    deleted: bool  # no capture records survived, so the file was removed
    error: str | None = None  # set when the file could not be finalized; it is left untouched


def response_offsets(path: Path) -> list[int]:
    """Byte offsets of the ``response`` records in a (complete) WARC file."""
    offsets = []
    with path.open("rb") as stream:
        records = ArchiveIterator(stream)
        for record in records:
            if record.rec_type == "response":
                offsets.append(records.get_record_offset())
    return offsets


def recover_open_files(directory: Path) -> list[RecoveredFile]:
    """Finalize every ``*.warc.gz.open`` left by a crash; never raises on corrupt content.

    Each file is cut after its last complete, valid gzip member (CRC checked by zlib, WARC
    Content-Length matching the block), then renamed to its final name. A file left with no
    record besides warcinfo is deleted: it holds no capture, so no DB row can point into it.
    Run this before starting a ``WarcWriter`` on the directory.
    """
    results = []
    for open_path in sorted(Path(directory).glob(f"*{WARC_SUFFIX}{OPEN_SUFFIX}")):
        results.append(_recover_one(open_path))
    return results


def _recover_one(open_path: Path) -> RecoveredFile:
    final_path = open_path.with_name(open_path.name.removesuffix(OPEN_SUFFIX))
    try:
        total = open_path.stat().st_size
        with open_path.open("rb") as stream:
            kept, types = _complete_prefix(stream)
        if not any(t != "warcinfo" for t in types):
            open_path.unlink()
            return RecoveredFile(open_path, len(types), 0, total, deleted=True)
        if final_path.exists():
            raise FileExistsError(f"{final_path} already exists; not overwriting it")
        if kept < total:
            os.truncate(open_path, kept)
        os.replace(open_path, final_path)
        return RecoveredFile(final_path, len(types), kept, total - kept, deleted=False)
    except OSError as exc:
        return RecoveredFile(open_path, 0, 0, 0, deleted=False, error=str(exc))


def _complete_prefix(stream: IO[bytes]) -> tuple[int, list[str]]:
    """Walk gzip members; return the end offset of the last valid record and the record types."""
    types: list[str] = []
    good_end = 0
    offset = 0  # file offset of ``data[0]``
    decompressor = zlib.decompressobj(_GZIP_WBITS)
    head = bytearray()  # first bytes of the member's record, for its WARC headers
    tail = b""  # last bytes of the member's record, for the closing CRLFCRLF
    size = 0  # uncompressed length of the member so far
    while chunk := stream.read(_READ_CHUNK):
        data = chunk
        while data:
            try:
                out = decompressor.decompress(data)
            except zlib.error:
                return good_end, types  # not gzip, or a CRC mismatch: stop at the last good member
            if len(head) < _HEAD_KEEP:
                head += out[: _HEAD_KEEP - len(head)]
            size += len(out)
            tail = (tail + out)[-4:]
            if not decompressor.eof:
                offset += len(data)
                break
            used = len(data) - len(decompressor.unused_data)
            record_type = _valid_record(bytes(head), size, tail)
            if record_type is None:
                return good_end, types
            types.append(record_type)
            offset += used
            good_end = offset
            data = decompressor.unused_data
            decompressor = zlib.decompressobj(_GZIP_WBITS)
            head, tail, size = bytearray(), b"", 0
    return good_end, types


def _valid_record(head: bytes, size: int, tail: bytes) -> str | None:
    """The WARC-Type of a complete record, or None when its framing is wrong."""
    if not head.startswith(b"WARC/1.") or tail != b"\r\n\r\n":
        return None
    header_end = head.find(b"\r\n\r\n")
    if header_end < 0:
        return None
    fields: dict[str, str] = {}
    for line in head[:header_end].decode("utf-8", "replace").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    length = fields.get("content-length", "")
    if not length.isdigit() or header_end + 4 + int(length) + 4 != size:
        return None
    return fields.get("warc-type", "unknown")

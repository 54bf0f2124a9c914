"""A response read back from the crawl's own WARC files, by the location its fetch row keeps.

A page whose parse failed (a parse worker that crashed, ran out of memory or of CPU time) is
parsed again from its archived record rather than fetched again: the host is not asked twice
for bytes the crawl already holds (crawl/visit.py). A location is one gzip member; the file may
still be the one being written (``NAME.warc.gz.open``), whose records reach the OS before their
location is handed out (warc.py).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Final

from warcio.archiveiterator import ArchiveIterator

from crawlspace.archive.records import payload_digest
from crawlspace.archive.warc import OPEN_SUFFIX, WarcLocation

__all__ = ["ArchiveReadError", "StoredResponse", "read_response"]

_GZIP_WBITS: Final = zlib.MAX_WBITS | 16


class ArchiveReadError(Exception):
    """The record is not where its location says, or is not a readable response."""


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A WARC response record's HTTP part: its payload as stored (still content-encoded)."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    payload: bytes


def read_response(
    directory: Path, location: WarcLocation, *, earlier: WarcLocation | None = None
) -> StoredResponse:
    """The response record at ``location`` in ``directory``. When that record is a revisit
    (its payload was archived before), the payload is read from ``earlier``, the capture it
    repeats; the status and headers stay the revisit's own."""
    record = _read_record(directory, location)
    if record.payload is not None:
        return record.response
    if earlier is None or not earlier.file:  # ("": another worker's, not in this directory)
        raise ArchiveReadError(f"{location.file}@{location.offset} is a revisit of an unknown one")
    first = _read_record(directory, earlier)
    if first.payload is None:
        raise ArchiveReadError(f"{earlier.file}@{earlier.offset} is a revisit, not a response")
    if payload_digest(first.payload) != record.digest:
        raise ArchiveReadError(f"{earlier.file}@{earlier.offset} holds another payload")
    return StoredResponse(
        record.response.url, record.response.status, record.response.headers, first.payload
    )


@dataclass(frozen=True, slots=True)
class _Record:
    response: StoredResponse
    payload: bytes | None  # None: a revisit record
    digest: str | None  # its WARC-Payload-Digest


def _read_record(directory: Path, location: WarcLocation) -> _Record:
    member = _read_member(directory, location)
    try:
        data = zlib.decompress(member, _GZIP_WBITS)
        record = next(iter(ArchiveIterator(BytesIO(data))), None)
    except (zlib.error, ValueError, OSError) as exc:  # warcio raises ValueError-like errors
        raise ArchiveReadError(f"{location.file}@{location.offset}: {exc}") from exc
    if record is None or record.rec_type not in ("response", "revisit"):
        kind = None if record is None else record.rec_type
        raise ArchiveReadError(f"{location.file}@{location.offset} holds {kind}, not a response")
    http = record.http_headers
    if http is None:
        raise ArchiveReadError(f"{location.file}@{location.offset} has no HTTP response")
    url = record.rec_headers.get_header("WARC-Target-URI") or ""
    digest = record.rec_headers.get_header("WARC-Payload-Digest")
    status = int(http.get_statuscode() or 0)
    response = StoredResponse(url, status, list(http.headers), b"")
    if record.rec_type == "revisit":
        return _Record(response, None, digest)
    payload = record.raw_stream.read()  # as stored: warcio would undo Content-Encoding itself
    return _Record(StoredResponse(url, status, response.headers, payload), payload, digest)


def _read_member(directory: Path, location: WarcLocation) -> bytes:
    # Rotated since (renamed), or not yet; the third try covers a rename between the two.
    for name in (location.file, location.file + OPEN_SUFFIX, location.file):
        try:
            with (directory / name).open("rb") as stream:
                stream.seek(location.offset)
                member = stream.read(location.length)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ArchiveReadError(f"{name}: {exc}") from exc
        if len(member) != location.length:
            raise ArchiveReadError(f"{name} ends before its record at {location.offset}")
        return member
    raise ArchiveReadError(f"no WARC file {location.file} in {directory}")

"""WARC/1.1 output: one gzip member per record, rotated files, crash recovery.

Durability contract with the metadata DB: ``write_exchange`` returns only after the records reached
the OS (``file.flush()``), so a DB row committed afterwards never points at bytes a ``kill -9`` can
lose: the kernel keeps them. Power loss is different: unless ``fsync=True`` the page cache may be
lost while the DB (which fsyncs) survives. Pass ``fsync=True`` when that matters; it costs a disk
round trip per exchange.

Files are written as ``NAME.warc.gz.open`` and renamed to ``NAME.warc.gz`` when finished (as
Heritrix does), so a reader never sees a half-written file under its final name; locations returned
to callers always carry the final name. After a crash, ``recover_open_files`` cuts every ``.open``
file back to its last complete record and renames it (``recovery.py``).

Not thread-safe: call one writer from one thread (the crawl loop, or one worker thread).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Final

from crawlspace.archive.records import (
    TRUNCATED_REASONS,
    Exchange,
    ExchangeRecords,
    RecordBuilder,
    Revisit,
    uuid_record_id,
)

__all__ = ["TRUNCATED_REASONS", "WarcLocation", "WarcWriter"]

GIB: Final = 1024**3
OPEN_SUFFIX: Final = ".open"
WARC_SUFFIX: Final = ".warc.gz"
CONFORMS_TO: Final = (
    "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
)


@dataclass(frozen=True, slots=True)
class WarcLocation:
    """Where a response record lives: its gzip member is ``file[offset : offset + length]``."""

    file: str  # final file name (no directory, no ``.open``)
    offset: int
    length: int
    payload_sha256: str | None  # hex sha256 of the payload as stored (still content-encoded)
    payload_digest: str | None = None  # the record's WARC-Payload-Digest, for later revisits
    # The payload's key among the crawl's captures when this record holds it in full
    # (archive/captures.py; None: a revisit, or a payload not looked up).
    payload_key: str | None = None
    record_id: str | None = None  # its WARC-Record-ID (what a conversion record refers to)


class WarcWriter:
    """Appends HTTP exchanges to rotated ``{prefix}-{UTC timestamp}-{serial:05d}.warc.gz`` files."""

    def __init__(
        self,
        directory: Path,
        *,
        prefix: str = "crawlspace",
        max_bytes: int = GIB,
        software: str,
        operator_info: Mapping[str, str] | None = None,
        record_id_factory: Callable[[], str] | None = None,
        clock: Callable[[], float] | None = None,
        compress_level: int = 6,
        fsync: bool = False,
        hostname: str | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.software = software
        self.operator_info = dict(operator_info or {})
        self.fsync = fsync
        self.hostname = hostname if hostname is not None else socket.gethostname()
        self._clock = clock or time.time
        self.builder = RecordBuilder(compress_level, record_id_factory or uuid_record_id)
        self._next_serial = _next_serial(self.directory, prefix)
        self._file: IO[bytes] | None = None
        self._name = ""  # final name of the open file
        self._size = 0
        self.files_written: list[str] = []

    # -- public API -------------------------------------------------------------------------------

    def write_exchange(
        self,
        *,
        url: str,
        request_headers: list[tuple[str, str]],
        method: str = "GET",
        http_version: str = "1.1",
        status: int,
        reason: str,
        response_headers: list[tuple[str, str]],
        payload: bytes,
        fetched_at: float,
        ip_address: str | None = None,
        truncated: str | None = None,
    ) -> WarcLocation:
        """Write a request and a response record; return the response's location once flushed."""
        exchange = Exchange(
            url=url,
            request_headers=request_headers,
            status=status,
            reason=reason,
            response_headers=response_headers,
            payload=payload,
            fetched_at=fetched_at,
            method=method,
            http_version=http_version,
            ip_address=ip_address,
            truncated=truncated,
        )
        return self.append(self.builder.exchange(exchange))

    def write_revisit(
        self,
        *,
        url: str,
        request_headers: list[tuple[str, str]],
        method: str = "GET",
        http_version: str = "1.1",
        status: int,
        reason: str,
        response_headers: list[tuple[str, str]],
        payload_digest: str,
        refers_to_url: str,
        refers_to_date: float,
        fetched_at: float,
        ip_address: str | None = None,
    ) -> WarcLocation:
        """Write a request and an identical-payload-digest revisit (headers only, no payload).

        ``payload_digest`` is the earlier record's WARC-Payload-Digest (``WarcLocation``'s
        ``payload_digest``); the earlier capture is named by its URL and fetch time.
        """
        revisit = Revisit(
            url=url,
            request_headers=request_headers,
            status=status,
            reason=reason,
            response_headers=response_headers,
            payload_digest=payload_digest,
            refers_to_url=refers_to_url,
            refers_to_date=refers_to_date,
            fetched_at=fetched_at,
            method=method,
            http_version=http_version,
            ip_address=ip_address,
        )
        return self.append(self.builder.revisit(revisit))

    def append(self, records: ExchangeRecords) -> WarcLocation:
        """Append an exchange's records built elsewhere (archive/records.py: a parse worker
        builds a page's); return the response's location once flushed."""
        out = self._current_file()
        # One write for both members: a crash mid-write leaves at worst one torn tail to cut.
        self._append(out, records.request_member + records.response_member)
        offset = self._size + len(records.request_member)
        self._size = offset + len(records.response_member)
        self.flush()
        location = WarcLocation(
            file=self._name,
            offset=offset,
            length=len(records.response_member),
            payload_sha256=records.payload_sha256,
            payload_digest=records.payload_digest,
            record_id=records.response_id,
        )
        if self._size >= self.max_bytes:
            self.close()
        return location

    def append_member(self, member: bytes) -> None:
        """Append one record built elsewhere (a rendered page's conversion record)."""
        out = self._current_file()
        self._append(out, member)
        self._size += len(member)
        self.flush()
        if self._size >= self.max_bytes:
            self.close()

    def flush(self) -> None:
        """Hand buffered bytes to the OS (and to the disk when ``fsync`` is set)."""
        if self._file is None:
            return
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Finish the current file: flush it and rename it to its final name. Idempotent."""
        if self._file is None:
            return
        self.flush()
        self._file.close()
        self._file = None
        open_path = self.directory / (self._name + OPEN_SUFFIX)
        os.replace(open_path, self.directory / self._name)
        self.files_written.append(self._name)

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------------

    def _append(self, out: IO[bytes], data: bytes) -> None:
        """Write all of ``data`` or nothing: on a failed write (disk full, file size limit) the
        torn tail is cut off again, so the file stays valid and the error reaches the caller."""
        view = memoryview(data)
        try:
            while view:
                written = out.write(view)
                view = view[written or 0 :]
        except OSError:
            with contextlib.suppress(OSError):
                out.seek(self._size)
                out.truncate(self._size)
            raise

    def _current_file(self) -> IO[bytes]:
        if self._file is not None:
            return self._file
        opened_at = self._clock()
        stamp = datetime.fromtimestamp(opened_at, UTC).strftime("%Y%m%d%H%M%S")
        self._name = f"{self.prefix}-{stamp}-{self._next_serial:05d}{WARC_SUFFIX}"
        self._next_serial += 1
        # "x": never clobber an existing file, even if two writers share a directory by mistake.
        # Unbuffered: every record is one write() we can undo, and nothing lingers in a buffer.
        path = self.directory / (self._name + OPEN_SUFFIX)
        self._file = open(path, "xb", buffering=0)  # noqa: SIM115
        member = self.builder.warcinfo(self._name, opened_at, self._warcinfo_fields())
        self._size = 0
        self._append(self._file, member)
        self._size = len(member)
        return self._file

    def _warcinfo_fields(self) -> dict[str, str]:
        return {
            "software": self.software,
            "format": "WARC File Format 1.1",
            "conformsTo": CONFORMS_TO,
            "hostname": self.hostname,
            **self.operator_info,
        }


def _name_pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(prefix)}-\d{{14}}-(\d{{5,}})\.warc\.gz(?:\.open)?")


def _next_serial(directory: Path, prefix: str) -> int:
    """One past the highest serial in ``directory``, so numbering continues across restarts."""
    pattern = _name_pattern(prefix)
    serials = [int(m.group(1)) for p in directory.iterdir() if (m := pattern.fullmatch(p.name))]
    return max(serials, default=-1) + 1

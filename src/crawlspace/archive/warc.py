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
import hashlib
import os
import re
import socket
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from typing import IO, Any, Final
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from zlib_ng import zlib_ng

GIB: Final = 1024**3
OPEN_SUFFIX: Final = ".open"
WARC_SUFFIX: Final = ".warc.gz"
TRUNCATED_REASONS: Final = frozenset({"length", "time", "disconnect", "unspecified"})
CONFORMS_TO: Final = (
    "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
)
# Replay tools (pywb) de-chunk bodies whose headers say "chunked"; our bodies arrive de-chunked
# from the HTTP client, so the original header is kept under a name nobody acts on.
_GZIP_WBITS: Final = zlib.MAX_WBITS | 16  # a gzip member per record
_HIDDEN_HEADERS: Final = {"transfer-encoding": "X-Crawlspace-Original-Transfer-Encoding"}


@dataclass(frozen=True, slots=True)
class WarcLocation:
    """Where a response record lives: its gzip member is ``file[offset : offset + length]``."""

    file: str  # final file name (no directory, no ``.open``)
    offset: int
    length: int
    payload_sha256: str | None  # hex sha256 of the payload as stored (still content-encoded)
    payload_digest: str | None = None  # the record's WARC-Payload-Digest, for later revisits


class _RecordWriter(WARCWriter):  # type: ignore[misc]  # warcio ships no type hints
    """warcio's record builder with our record ids; serializes uncompressed into a buffer."""

    def __init__(self, make_id: Callable[[], str]) -> None:
        super().__init__(BytesIO(), gzip=False, warc_version="1.1")
        self._make_id = make_id

    def _make_warc_id(self) -> str:
        return self._make_id()

    def serialize(self, record: Any) -> bytes:
        self.out = BytesIO()
        self.write_record(record)
        return bytes(self.out.getbuffer())


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
        self.compress_level = compress_level
        self.fsync = fsync
        self.hostname = hostname if hostname is not None else socket.gethostname()
        self._clock = clock or time.time
        self._records = _RecordWriter(record_id_factory or _uuid_record_id)
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
        if truncated is not None and truncated not in TRUNCATED_REASONS:
            raise ValueError(f"truncated must be one of {sorted(TRUNCATED_REASONS)}: {truncated!r}")
        response = self._records.create_warc_record(
            url,
            "response",
            payload=BytesIO(payload),
            length=len(payload),
            warc_headers_dict=self._capture_headers("response", fetched_at, ip_address, truncated),
            http_headers=StatusAndHeaders(
                _status_line(status, reason),
                _visible(response_headers),
                protocol=f"HTTP/{http_version}",
            ),
        )
        request = _request_head(method, url, http_version, request_headers)
        return self._write_pair(response, request, payload)

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
        revisit = self._records.create_revisit_record(
            url,
            payload_digest,
            refers_to_url,
            _warc_date(refers_to_date),
            http_headers=StatusAndHeaders(
                _status_line(status, reason),
                _visible(response_headers),
                protocol=f"HTTP/{http_version}",
            ),
            warc_headers_dict=self._capture_headers("revisit", fetched_at, ip_address, None),
        )
        request = _request_head(method, url, http_version, request_headers)
        return self._write_pair(revisit, request, None)

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

    def _capture_headers(
        self, record_type: str, fetched_at: float, ip_address: str | None, truncated: str | None
    ) -> dict[str, str]:
        # WARC-Type first: warcio keeps the given order, and readers expect the type up front.
        headers = {
            "WARC-Type": record_type,
            "WARC-Record-ID": self._records._make_warc_id(),
            "WARC-Date": _warc_date(fetched_at),
        }
        if ip_address:
            headers["WARC-IP-Address"] = ip_address
        if truncated:
            headers["WARC-Truncated"] = truncated
        return headers

    def _write_pair(
        self, response: Any, request_head: StatusAndHeaders, payload: bytes | None
    ) -> WarcLocation:
        url: str = response.rec_headers.get_header("WARC-Target-URI")
        response_id: str = response.rec_headers.get_header("WARC-Record-ID")
        request_id = self._records._make_warc_id()
        request = self._records.create_warc_record(
            url,
            "request",
            payload=BytesIO(),
            length=0,
            warc_headers_dict={
                "WARC-Type": "request",
                "WARC-Record-ID": request_id,
                "WARC-Date": response.rec_headers.get_header("WARC-Date"),
                "WARC-Concurrent-To": response_id,
            },
            http_headers=request_head,
        )
        # WARC 1.1 WARC-Concurrent-To may appear on either record; linking both ways is cheap.
        response.rec_headers.add_header("WARC-Concurrent-To", request_id)
        request_member = self._compress(self._records.serialize(request))
        response_member = self._compress(self._records.serialize(response))

        out = self._current_file()
        # One write for both members: a crash mid-write leaves at worst one torn tail to cut.
        self._append(out, request_member + response_member)
        offset = self._size + len(request_member)
        self._size = offset + len(response_member)
        self.flush()
        location = WarcLocation(
            file=self._name,
            offset=offset,
            length=len(response_member),
            payload_sha256=hashlib.sha256(payload).hexdigest() if payload is not None else None,
            payload_digest=response.rec_headers.get_header("WARC-Payload-Digest"),
        )
        if self._size >= self.max_bytes:
            self.close()
        return location

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

    def _compress(self, data: bytes) -> bytes:
        # warcio's GzippingWrapper hard-codes level 9: ~1.4x the time of level 6 on HTML for <1%
        # smaller output (benchmarks/warc_bench.py). zlib-ng writes the same gzip format at the
        # same ratio level for level, in half the time of the stdlib's zlib on HTML; level 1 is
        # ~4x faster again, ~50% larger.
        compressor = zlib_ng.compressobj(self.compress_level, zlib_ng.DEFLATED, _GZIP_WBITS)
        return compressor.compress(data) + compressor.flush()

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
        member = self._compress(self._records.serialize(self._warcinfo(opened_at)))
        self._size = 0
        self._append(self._file, member)
        self._size = len(member)
        return self._file

    def _warcinfo(self, opened_at: float) -> Any:
        fields = {
            "software": self.software,
            "format": "WARC File Format 1.1",
            "conformsTo": CONFORMS_TO,
            "hostname": self.hostname,
            **self.operator_info,
        }
        body = "".join(f"{k}: {v}\r\n" for k, v in fields.items() if v).encode()
        return self._records.create_warc_record(
            "",
            "warcinfo",
            payload=BytesIO(body),
            length=len(body),
            warc_headers_dict={
                "WARC-Type": "warcinfo",
                "WARC-Record-ID": self._records._make_warc_id(),
                "WARC-Date": _warc_date(opened_at),
                "WARC-Filename": self._name,
            },
        )


def _uuid_record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


def _warc_date(timestamp: float) -> str:
    # WARC 1.1 allows sub-second WARC-Date; microseconds keep same-second fetches ordered.
    moment = datetime.fromtimestamp(timestamp, UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds") + "Z"


def _request_head(
    method: str, url: str, http_version: str, headers: list[tuple[str, str]]
) -> StatusAndHeaders:
    parts = urlsplit(url)
    target = f"{parts.path or '/'}?{parts.query}" if parts.query else parts.path or "/"
    line = f"{method} {target} HTTP/{http_version}"
    return StatusAndHeaders(line, list(headers), is_http_request=True)


def _visible(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [
        (_header_text(_HIDDEN_HEADERS.get(name.lower(), name)), _header_text(value))
        for name, value in headers
    ]


def _header_text(text: str) -> str:
    """A header as warcio can write it. Bytes that were not UTF-8 reach us as surrogate
    escapes (aiohttp), which warcio cannot encode: the record, and with it the page (or the
    host's robots.txt), failed. Such a value is read as ISO-8859-1, HTTP's historical charset,
    a lossless mapping of its bytes; warcio then percent-encodes non-ASCII (RFC 8187)."""
    if text.isascii():
        return text
    raw = text.encode("utf-8", "surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _status_line(status: int, reason: str) -> str:
    """warcio writes the status line as ASCII as given: non-ASCII reason bytes are %-encoded."""
    if not reason.isascii():
        raw = reason.encode("utf-8", "surrogateescape")
        reason = "".join(chr(b) if b < 0x80 else f"%{b:02X}" for b in raw)
    return f"{status} {reason}"


def _name_pattern(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(prefix)}-\d{{14}}-(\d{{5,}})\.warc\.gz(?:\.open)?")


def _next_serial(directory: Path, prefix: str) -> int:
    """One past the highest serial in ``directory``, so numbering continues across restarts."""
    pattern = _name_pattern(prefix)
    serials = [int(m.group(1)) for p in directory.iterdir() if (m := pattern.fullmatch(p.name))]
    return max(serials, default=-1) + 1

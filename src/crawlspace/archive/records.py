"""WARC/1.1 records built as bytes, one gzip member each, with no file in sight.

Building a page's records (digests, headers, gzip) is most of what archiving costs, and it needs
nothing but the exchange: a parse worker that already holds the body builds them there, and the
crawl loop only appends the bytes (warc.py). Everything here is pure and picklable.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from io import BytesIO
from typing import Any, Final
from urllib.parse import urlsplit

from zlib_ng import zlib_ng

from crawlspace.archive.warc_bytes import (
    EMPTY_SHA1,
    REQUEST_TYPE,
    RESPONSE_TYPE,
    REVISIT_PROFILE,
    HttpHead,
    sha1_digest,
    warc_record,
)
from crawlspace.pickling import by_fields

TRUNCATED_REASONS: Final = frozenset({"length", "time", "disconnect", "unspecified"})
_GZIP_WBITS: Final = zlib.MAX_WBITS | 16  # a gzip member per record
# Replay tools (pywb) de-chunk bodies whose headers say "chunked"; our bodies arrive de-chunked
# from the HTTP client, so the original header is kept under a name nobody acts on.
_HIDDEN_HEADERS: Final = {"transfer-encoding": "X-Crawlspace-Original-Transfer-Encoding"}


@by_fields
@dataclass(frozen=True, slots=True)
class Exchange:
    """One HTTP request and its response, as the WARC keeps them."""

    url: str
    request_headers: list[tuple[str, str]]
    status: int
    reason: str
    response_headers: list[tuple[str, str]]
    payload: bytes  # de-chunked, still content-encoded
    fetched_at: float
    method: str = "GET"
    http_version: str = "1.1"
    ip_address: str | None = None
    truncated: str | None = None  # a WARC-Truncated reason


@by_fields
@dataclass(frozen=True, slots=True)
class ExchangeRecords:
    """An exchange's request and response records, each one gzip member, ready to append."""

    request_member: bytes
    response_member: bytes
    payload_sha256: str | None  # hex sha256 of the payload as stored (still content-encoded)
    payload_digest: str | None  # the response's WARC-Payload-Digest, for later revisits
    revisit: bool = False  # the second record is a revisit of an earlier capture
    response_id: str | None = None  # the second record's WARC-Record-ID


@dataclass(frozen=True, slots=True)
class EarlierCapture:
    """A capture whose payload a response may repeat (archive/captures.py): what its revisit
    record names."""

    payload_digest: str  # its WARC-Payload-Digest
    url: str
    fetched_at: float


@dataclass(frozen=True, slots=True)
class Revisit:
    """A request and an identical-payload-digest revisit of an earlier capture."""

    url: str
    request_headers: list[tuple[str, str]]
    status: int
    reason: str
    response_headers: list[tuple[str, str]]
    payload_digest: str  # the earlier record's WARC-Payload-Digest
    refers_to_url: str
    refers_to_date: float
    fetched_at: float
    method: str = "GET"
    http_version: str = "1.1"
    ip_address: str | None = None


def uuid_record_id() -> str:
    return f"<urn:uuid:{uuid.uuid4()}>"


@dataclass(slots=True)
class RecordBuilder:
    """Builds records with ``make_id``'s record ids, compressed at ``compress_level``: a page's
    request, response and revisit records as bytes here (warc_bytes.py), the rare warcinfo and
    conversion records through warcio's writer, imported when one is first built."""

    compress_level: int = 6
    make_id: Callable[[], str] = uuid_record_id
    _writer: Any = field(init=False, default=None)

    def exchange(self, exchange: Exchange, digest: str | None = None) -> ExchangeRecords:
        """The request and the full response (``digest``: the payload's WARC-Payload-Digest,
        when the caller already has it)."""
        if exchange.truncated is not None and exchange.truncated not in TRUNCATED_REASONS:
            raise ValueError(
                f"truncated must be one of {sorted(TRUNCATED_REASONS)}: {exchange.truncated!r}"
            )
        payload = exchange.payload
        head, response_id, date, request_id = self._start(exchange)
        # The field order is warcio's: the ones given, the target, then what it adds.
        fields = _capture_fields("response", response_id, date, exchange.ip_address)
        if exchange.truncated:
            fields.append(("WARC-Truncated", exchange.truncated))
        digest = digest or payload_digest(payload)
        fields += [
            ("WARC-Target-URI", exchange.url),
            ("WARC-Payload-Digest", digest),
            ("WARC-Concurrent-To", request_id),
            ("WARC-Block-Digest", sha1_digest(head, payload)),
            ("Content-Type", RESPONSE_TYPE),
            ("Content-Length", str(len(head) + len(payload))),
        ]
        request = self._request(exchange, record_id=request_id, date=date, response_id=response_id)
        return ExchangeRecords(
            request_member=self.compress(request),
            response_member=self.compress(warc_record(fields, head, payload)),
            payload_sha256=hashlib.sha256(payload).hexdigest(),
            payload_digest=digest,
            response_id=response_id,
        )

    def capture(self, exchange: Exchange, earlier: EarlierCapture | None) -> ExchangeRecords:
        """The exchange's records: a revisit of ``earlier`` if its payload is that capture's
        (by WARC-Payload-Digest, computed here: the crawl looked it up by a fast hash that a
        hostile page could collide), else the full response."""
        if earlier is None or exchange.truncated is not None:
            return self.exchange(exchange)
        digest = payload_digest(exchange.payload)
        if digest != earlier.payload_digest:
            return self.exchange(exchange, digest)
        records = self.revisit(
            Revisit(
                url=exchange.url,
                request_headers=exchange.request_headers,
                status=exchange.status,
                reason=exchange.reason,
                response_headers=exchange.response_headers,
                payload_digest=earlier.payload_digest,
                refers_to_url=earlier.url,
                refers_to_date=earlier.fetched_at,
                fetched_at=exchange.fetched_at,
                method=exchange.method,
                http_version=exchange.http_version,
                ip_address=exchange.ip_address,
            )
        )
        return dataclasses.replace(records, revisit=True)

    def revisit(self, revisit: Revisit) -> ExchangeRecords:
        """The request and an identical-payload-digest revisit record (its block the response's
        head only)."""
        head, record_id, date, request_id = self._start(revisit)
        fields = _capture_fields("revisit", record_id, date, revisit.ip_address)
        fields += [
            ("WARC-Target-URI", revisit.url),
            ("WARC-Profile", REVISIT_PROFILE),
            ("WARC-Refers-To-Target-URI", revisit.refers_to_url),
            ("WARC-Refers-To-Date", warc_date(revisit.refers_to_date)),
            ("WARC-Payload-Digest", revisit.payload_digest),
            ("WARC-Concurrent-To", request_id),
            ("WARC-Block-Digest", sha1_digest(head)),
            ("Content-Type", RESPONSE_TYPE),
            ("Content-Length", str(len(head))),
        ]
        request = self._request(revisit, record_id=request_id, date=date, response_id=record_id)
        return ExchangeRecords(
            request_member=self.compress(request),
            response_member=self.compress(warc_record(fields, head)),
            payload_sha256=None,
            payload_digest=revisit.payload_digest,
            response_id=record_id,
        )

    def _start(self, answered: Exchange | Revisit) -> tuple[bytes, str, str, str]:
        """The response's head as its block begins, its record id and date, and its request's
        record id (made in that order, as warcio made them)."""
        head = _response_head(
            answered.status, answered.reason, answered.response_headers, answered.http_version
        ).block()
        return head, self.make_id(), warc_date(answered.fetched_at), self.make_id()

    def _request(
        self, sent: Exchange | Revisit, *, record_id: str, date: str, response_id: str
    ) -> bytes:
        """The request record (WARC 1.1 WARC-Concurrent-To may be on either record; both
        records name the other)."""
        url = sent.url
        head = _request_head(sent.method, url, sent.http_version, sent.request_headers).block()
        fields = [
            ("WARC-Type", "request"),
            ("WARC-Record-ID", record_id),
            ("WARC-Date", date),
            ("WARC-Concurrent-To", response_id),
            ("WARC-Target-URI", url),
            ("WARC-Payload-Digest", EMPTY_SHA1),
            ("WARC-Block-Digest", sha1_digest(head)),
            ("Content-Type", REQUEST_TYPE),
            ("Content-Length", str(len(head))),
        ]
        return warc_record(fields, head)

    def warcinfo(self, name: str, opened_at: float, fields: dict[str, str]) -> bytes:
        body = "".join(f"{k}: {v}\r\n" for k, v in fields.items() if v).encode()
        record = self._warcio().create_warc_record(
            "",
            "warcinfo",
            payload=BytesIO(body),
            length=len(body),
            warc_headers_dict={
                "WARC-Type": "warcinfo",
                "WARC-Record-ID": self.make_id(),
                "WARC-Date": warc_date(opened_at),
                "WARC-Filename": name,
            },
        )
        return self.compress(self._warcio().serialize(record))

    def compress(self, data: bytes) -> bytes:
        # warcio's GzippingWrapper hard-codes level 9: ~1.4x the time of level 6 on HTML for <1%
        # smaller output (benchmarks/warc_bench.py). zlib-ng writes the same gzip format at the
        # same ratio level for level, in half the time of the stdlib's zlib on HTML; level 1 is
        # ~4x faster again, ~50% larger.
        compressor = zlib_ng.compressobj(self.compress_level, zlib_ng.DEFLATED, _GZIP_WBITS)
        return compressor.compress(data) + compressor.flush()

    def conversion(self, url: str, html: bytes, made_at: float, refers_to: str | None) -> bytes:
        """A rendered page's DOM as a WARC 1.1 conversion record (one gzip member) that refers
        to the response it was rendered from (its WARC-Record-ID; None: not known)."""
        headers = {
            "WARC-Type": "conversion",
            "WARC-Record-ID": self.make_id(),
            "WARC-Date": warc_date(made_at),
        }
        if refers_to:
            headers["WARC-Refers-To"] = refers_to
        record = self._warcio().create_warc_record(
            url,
            "conversion",
            payload=BytesIO(html),
            length=len(html),
            warc_content_type="text/html; charset=utf-8",
            warc_headers_dict=headers,
        )
        return self.compress(self._warcio().serialize(record))

    def _warcio(self) -> Any:
        """warcio's record builder with our record ids, made on first use (warc_bytes.py)."""
        if self._writer is None:
            self._writer = _warcio_writer(self.make_id)
        return self._writer

    def __getstate__(self) -> tuple[int, Callable[[], str]]:
        return self.compress_level, self.make_id

    def __setstate__(self, state: tuple[int, Callable[[], str]]) -> None:
        self.compress_level, self.make_id = state
        self._writer = None


def _capture_fields(
    record_type: str, record_id: str, date: str, ip_address: str | None
) -> list[tuple[str, str]]:
    fields = [("WARC-Type", record_type), ("WARC-Record-ID", record_id), ("WARC-Date", date)]
    if ip_address:
        fields.append(("WARC-IP-Address", ip_address))
    return fields


def _warcio_writer(make_id: Callable[[], str]) -> Any:
    """warcio's writer, serializing uncompressed into a buffer of its own per record, so threads
    may share one (the crawl loop writes a new file's warcinfo while the WARC thread builds an
    exchange's records)."""
    from warcio.warcwriter import WARCWriter

    class RecordWriter(WARCWriter):  # type: ignore[misc]  # warcio ships no type hints
        def _make_warc_id(self) -> str:
            return make_id()

        def serialize(self, record: Any) -> bytes:
            out = BytesIO()
            self._write_warc_record(out, record)
            return out.getvalue()

    return RecordWriter(BytesIO(), gzip=False, warc_version="1.1")


def payload_digest(payload: bytes) -> str:
    """A payload's WARC-Payload-Digest as warcio writes it: SHA-1, base32."""
    return "sha1:" + base64.b32encode(hashlib.sha1(payload).digest()).decode("ascii")


def warc_date(timestamp: float) -> str:
    # WARC 1.1 allows sub-second WARC-Date; microseconds keep same-second fetches ordered.
    moment = datetime.fromtimestamp(timestamp, UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="microseconds") + "Z"


def _request_head(
    method: str, url: str, http_version: str, headers: list[tuple[str, str]]
) -> HttpHead:
    parts = urlsplit(url)
    target = f"{parts.path or '/'}?{parts.query}" if parts.query else parts.path or "/"
    return HttpHead("", f"{method} {target} HTTP/{http_version}", list(headers))


def _response_head(
    status: int, reason: str, headers: list[tuple[str, str]], http_version: str
) -> HttpHead:
    visible = [
        (_header_text(_HIDDEN_HEADERS.get(name.lower(), name)), _header_text(value))
        for name, value in headers
    ]
    return HttpHead(f"HTTP/{http_version}", _status_line(status, reason), visible)


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

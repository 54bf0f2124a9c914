"""A page's records as written by archive/warc_bytes.py, held to warcio's bytes for the same
exchange, and read back by warcio's ArchiveIterator."""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Callable
from io import BytesIO
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlspace.archive import records as records_module
from crawlspace.archive.records import (
    TRUNCATED_REASONS,
    EarlierCapture,
    Exchange,
    RecordBuilder,
    Revisit,
    payload_digest,
    warc_date,
)
from crawlspace.archive.warc_bytes import HttpHead


def _ids() -> Callable[[], str]:
    counter = itertools.count(1)
    return lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(counter):012d}>"


class _Reference(WARCWriter):  # type: ignore[misc]
    """warcio building the records as records.py did before warc_bytes.py (the reference)."""

    def __init__(self, make_id: Callable[[], str]) -> None:
        super().__init__(BytesIO(), gzip=False, warc_version="1.1")
        self.make_id = make_id

    def serialize(self, record: Any) -> bytes:
        out = BytesIO()
        self._write_warc_record(out, record)
        return out.getvalue()

    def capture_headers(
        self, record_type: str, fetched_at: float, ip: str | None, truncated: str | None
    ) -> dict[str, str]:
        headers = {
            "WARC-Type": record_type,
            "WARC-Record-ID": self.make_id(),
            "WARC-Date": warc_date(fetched_at),
        }
        if ip:
            headers["WARC-IP-Address"] = ip
        if truncated:
            headers["WARC-Truncated"] = truncated
        return headers

    def pair(self, response: Any, request_head: HttpHead) -> tuple[bytes, bytes]:
        request_id = self.make_id()
        request = self.create_warc_record(
            response.rec_headers.get_header("WARC-Target-URI"),
            "request",
            payload=BytesIO(),
            length=0,
            warc_headers_dict={
                "WARC-Type": "request",
                "WARC-Record-ID": request_id,
                "WARC-Date": response.rec_headers.get_header("WARC-Date"),
                "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID"),
            },
            http_headers=_warcio_head(request_head),
        )
        response.rec_headers.add_header("WARC-Concurrent-To", request_id)
        return self.serialize(request), self.serialize(response)

    def exchange(self, ex: Exchange) -> tuple[bytes, bytes]:
        head = records_module._response_head(
            ex.status, ex.reason, ex.response_headers, ex.http_version
        )
        response = self.create_warc_record(
            ex.url,
            "response",
            payload=BytesIO(ex.payload),
            length=len(ex.payload),
            warc_headers_dict=self.capture_headers(
                "response", ex.fetched_at, ex.ip_address, ex.truncated
            ),
            http_headers=_warcio_head(head),
        )
        request = records_module._request_head(
            ex.method, ex.url, ex.http_version, ex.request_headers
        )
        return self.pair(response, request)

    def revisit(self, rv: Revisit) -> tuple[bytes, bytes]:
        head = records_module._response_head(
            rv.status, rv.reason, rv.response_headers, rv.http_version
        )
        record = self.create_revisit_record(
            rv.url,
            rv.payload_digest,
            rv.refers_to_url,
            warc_date(rv.refers_to_date),
            http_headers=_warcio_head(head),
            warc_headers_dict=self.capture_headers("revisit", rv.fetched_at, rv.ip_address, None),
        )
        request = records_module._request_head(
            rv.method, rv.url, rv.http_version, rv.request_headers
        )
        return self.pair(record, request)


def _warcio_head(head: HttpHead) -> StatusAndHeaders:
    return StatusAndHeaders(head.line, list(head.fields), protocol=head.protocol)


def _ours(records: Any) -> tuple[bytes, bytes]:
    return gzip.decompress(records.request_member), gzip.decompress(records.response_member)


_TOKEN = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789",
    min_size=1,
    max_size=12,
)
_VALUE = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    st.text(max_size=12).map(lambda t: t.replace("\r", "").replace("\n", "")),  # non-ASCII
    st.sampled_from(["caf\udce9", "\udcff\udcfe", "text/html; charset=\u00e9", "a;b=\u00fc"]),
)
_HEADERS = st.lists(
    st.tuples(st.one_of(_TOKEN, st.sampled_from(["Transfer-Encoding", "Content-Type"])), _VALUE),
    max_size=8,
)
_URLS = st.sampled_from(
    [
        "http://127.0.0.1:8000/index.html",
        "http://h.test",
        "http://h.test/a/b?q=1&r=2",
        "https://xn--caf-dma.test/%C3%A9t%C3%A9?x",
    ]
)
_EXCHANGES = st.builds(
    Exchange,
    url=_URLS,
    request_headers=_HEADERS,
    status=st.integers(100, 599),
    reason=st.one_of(st.sampled_from(["OK", "", "Not Found"]), st.text(max_size=8)),
    response_headers=_HEADERS,
    payload=st.binary(max_size=3000),
    fetched_at=st.floats(1e9, 2e9),
    method=st.sampled_from(["GET", "HEAD"]),
    http_version=st.sampled_from(["1.1", "1.0"]),
    ip_address=st.sampled_from([None, "127.0.0.1", "::1"]),
    truncated=st.one_of(st.none(), st.sampled_from(sorted(TRUNCATED_REASONS))),
)


def _same_or_both_fail(ours: Callable[[], Any], theirs: Callable[[], Any]) -> None:
    try:
        expected = theirs()
    except UnicodeError:  # a head warcio cannot write either: ours must fail too
        try:
            ours()
        except UnicodeError:
            return
        raise AssertionError("warcio failed where warc_bytes.py wrote a record") from None
    assert _ours(ours()) == expected


@settings(max_examples=400, deadline=None)
@given(_EXCHANGES)
def test_a_full_exchange_is_warcios_to_the_byte(exchange: Exchange) -> None:
    _same_or_both_fail(
        lambda: RecordBuilder(make_id=_ids()).exchange(exchange),
        lambda: _Reference(_ids()).exchange(exchange),
    )


@settings(max_examples=300, deadline=None)
@given(_EXCHANGES, _URLS, st.floats(1e9, 2e9))
def test_a_revisit_is_warcios_to_the_byte(exchange: Exchange, earlier: str, when: float) -> None:
    revisit = Revisit(
        url=exchange.url,
        request_headers=exchange.request_headers,
        status=exchange.status,
        reason=exchange.reason,
        response_headers=exchange.response_headers,
        payload_digest=payload_digest(exchange.payload),
        refers_to_url=earlier,
        refers_to_date=when,
        fetched_at=exchange.fetched_at,
        method=exchange.method,
        http_version=exchange.http_version,
        ip_address=exchange.ip_address,
    )
    _same_or_both_fail(
        lambda: RecordBuilder(make_id=_ids()).revisit(revisit),
        lambda: _Reference(_ids()).revisit(revisit),
    )


def test_the_records_read_back_with_warcio() -> None:
    exchange = Exchange(
        url="http://h.test/page?x=1",
        request_headers=[("User-Agent", "crawlspace"), ("Accept", "*/*")],
        status=200,
        reason="OK",
        response_headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")],
        payload=b"<html><body>hello</body></html>",
        fetched_at=1.7e9,
        ip_address="127.0.0.1",
    )
    builder = RecordBuilder()
    full = builder.exchange(exchange)
    earlier = EarlierCapture(full.payload_digest or "", "http://h.test/first", 1.6e9)
    again = builder.capture(exchange, earlier)
    assert again.revisit
    members = (full.request_member, full.response_member)
    stream = BytesIO(b"".join((*members, again.request_member, again.response_member)))
    read = [
        (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
        for r in ArchiveIterator(stream, check_digests="raise")
    ]
    assert [(kind, url) for kind, url, _ in read] == [
        ("request", exchange.url),
        ("response", exchange.url),
        ("request", exchange.url),
        ("revisit", exchange.url),
    ]
    assert read[1][2] == exchange.payload  # the payload, as fetched, behind the HTTP head
    assert read[3][2] == b""  # a revisit keeps the head only

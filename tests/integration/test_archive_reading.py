"""A response read back from the crawl's own WARC files (archive/reading.py), as a page whose
parse failed is parsed again (crawl/visit.py): from the file still being written and after its
rotation, a revisit through the capture it repeats, and a wrong location refused."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from crawlspace.archive.reading import ArchiveReadError, read_response
from crawlspace.archive.warc import WarcLocation, WarcWriter

BODY = b"<html><body>" + b"<p>archived words</p>" * 200 + b"</body></html>"
HEADERS = [("Content-Type", "text/html"), ("Content-Encoding", "gzip")]


def _write(writer: WarcWriter, url: str, payload: bytes) -> WarcLocation:
    return writer.write_exchange(
        url=url,
        request_headers=[("User-Agent", "test")],
        status=200,
        reason="OK",
        response_headers=HEADERS,
        payload=payload,
        fetched_at=1_700_000_000.0,
    )


def _revisit_of(writer: WarcWriter, first: WarcLocation) -> WarcLocation:
    """http://a.test/two, written as a revisit of ``first`` (http://a.test/one's capture)."""
    assert first.payload_digest is not None
    return writer.write_revisit(
        url="http://a.test/two",
        request_headers=[],
        status=200,
        reason="OK",
        response_headers=HEADERS,
        payload_digest=first.payload_digest,
        refers_to_url="http://a.test/one",
        refers_to_date=1_700_000_000.0,
        fetched_at=1_700_000_001.0,
    )


def test_a_response_reads_back_from_the_open_file_and_after_rotation(tmp_path: Path) -> None:
    payload = gzip.compress(BODY)
    writer = WarcWriter(tmp_path, software="test")
    _write(writer, "http://a.test/first", b"x" * 100)
    location = _write(writer, "http://a.test/page", payload)
    assert (tmp_path / (location.file + ".open")).exists()
    stored = read_response(tmp_path, location)
    assert (stored.url, stored.status, stored.payload) == ("http://a.test/page", 200, payload)
    assert ("Content-Encoding", "gzip") in stored.headers  # still encoded, as received
    writer.close()
    assert read_response(tmp_path, location).payload == payload


def test_a_revisit_reads_the_payload_of_the_capture_it_repeats(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, software="test") as writer:
        first = _write(writer, "http://a.test/one", BODY)
        again = _revisit_of(writer, first)
    stored = read_response(tmp_path, again, earlier=first)
    assert (stored.url, stored.payload) == ("http://a.test/two", BODY)
    with pytest.raises(ArchiveReadError, match="revisit"):
        read_response(tmp_path, again)


def test_a_location_that_is_not_a_response_is_refused(tmp_path: Path) -> None:
    with WarcWriter(tmp_path, software="test") as writer:
        location = _write(writer, "http://a.test/page", BODY)
    with pytest.raises(ArchiveReadError):
        read_response(tmp_path, WarcLocation(location.file, 0, location.length, None))
    with pytest.raises(ArchiveReadError, match="ends before"):
        read_response(tmp_path, WarcLocation(location.file, location.offset, 10**7, None))
    with pytest.raises(ArchiveReadError, match="no WARC file"):
        read_response(tmp_path, WarcLocation("missing.warc.gz", 0, 10, None))


def test_a_revisit_of_another_payload_or_of_another_workers_record_is_refused(
    tmp_path: Path,
) -> None:
    with WarcWriter(tmp_path, software="test") as writer:
        first = _write(writer, "http://a.test/one", BODY)
        other = _write(writer, "http://a.test/other", BODY + b"<!-- changed -->")
        again = _revisit_of(writer, first)
    with pytest.raises(ArchiveReadError, match="another payload"):
        read_response(tmp_path, again, earlier=other)
    elsewhere = WarcLocation("", 0, 0, None, first.payload_digest)  # another worker's capture
    with pytest.raises(ArchiveReadError, match="unknown"):
        read_response(tmp_path, again, earlier=elsewhere)

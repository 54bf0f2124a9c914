"""WarcWriter against real files and warcio's own tools (check, index, ArchiveIterator)."""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlspace.archive.recovery import recover_open_files
from crawlspace.archive.warc import WarcLocation, WarcWriter

HTML = b"<!doctype html><html><body>" + b"<p>crawlspace test page</p>\n" * 200 + b"</body></html>"


def _warcio_cli() -> list[str]:
    # The console script sits next to the interpreter in a venv; warcio has no __main__ module.
    script = Path(sys.executable).parent / "warcio"
    if script.exists():
        return [str(script)]
    found = shutil.which("warcio")
    if found is None:
        pytest.skip("warcio CLI not installed")
    return [found]


def _warcio(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_warcio_cli(), *args], capture_output=True, text=True, timeout=60, check=False
    )


def _writer(directory: Path, **kwargs: Any) -> WarcWriter:
    return WarcWriter(directory, software="crawlspace-test/0.1", **kwargs)


def _exchange(writer: WarcWriter, n: int, **overrides: Any) -> WarcLocation:
    fields: dict[str, Any] = {
        "url": f"http://127.0.0.1:8080/page/{n}?q={n}",
        "request_headers": [("Host", "127.0.0.1:8080"), ("User-Agent", "crawlspace-test")],
        "status": 200,
        "reason": "OK",
        "response_headers": [("Content-Type", "text/html; charset=utf-8")],
        "payload": HTML + str(n).encode(),
        "fetched_at": 1_700_000_000.0 + n + 0.123456,
        "ip_address": "127.0.0.1",
    }
    fields.update(overrides)
    return writer.write_exchange(**fields)


def _record_at(directory: Path, location: WarcLocation) -> tuple[Any, bytes]:
    """The record at ``location`` and its raw (still content-encoded) payload."""
    with (directory / location.file).open("rb") as stream:
        stream.seek(location.offset)
        record = next(iter(ArchiveIterator(stream)))
        return record, record.raw_stream.read()


def _final_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.warc.gz"))


def _fixed_ids() -> Any:
    counter = itertools.count()
    return lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(counter):012d}>"


def test_check_and_index_list_every_url(tmp_path: Path) -> None:
    with _writer(tmp_path) as writer:
        locations = [_exchange(writer, n) for n in range(5)]
    files = _final_files(tmp_path)
    assert [f.name for f in files] == [locations[0].file]
    assert not list(tmp_path.glob("*.open"))

    check = _warcio("check", "-v", str(files[0]))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest pass" in check.stdout

    index = _warcio("index", "-f", "offset,length,warc-type,warc-target-uri", str(files[0]))
    assert index.returncode == 0, index.stderr
    rows = [json.loads(line) for line in index.stdout.splitlines()]
    assert [r["warc-type"] for r in rows] == ["warcinfo"] + ["request", "response"] * 5
    responses = [r for r in rows if r["warc-type"] == "response"]
    assert [r["warc-target-uri"] for r in responses] == [
        f"http://127.0.0.1:8080/page/{n}?q={n}" for n in range(5)
    ]
    # The returned location is exactly what an indexer computes for the response member.
    assert [(int(r["offset"]), int(r["length"])) for r in responses] == [
        (loc.offset, loc.length) for loc in locations
    ]


def test_read_back_at_offset(tmp_path: Path) -> None:
    with _writer(tmp_path) as writer:
        locations = [_exchange(writer, n) for n in range(3)]
        # Readable by offset before close: the DB row may be used while the file is still open.
        open_name = locations[1].file + ".open"
        with (tmp_path / open_name).open("rb") as stream:
            stream.seek(locations[1].offset)
            assert gzip.decompress(stream.read(locations[1].length)).startswith(b"WARC/1.1\r\n")

    record, payload = _record_at(tmp_path, locations[1])
    assert record.rec_type == "response"
    assert record.rec_headers.get_header("WARC-Target-URI") == "http://127.0.0.1:8080/page/1?q=1"
    assert record.rec_headers.get_header("WARC-Date") == "2023-11-14T22:13:21.123456Z"
    assert record.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
    assert record.rec_headers.get_header("WARC-Payload-Digest") == locations[1].payload_digest
    assert record.http_headers.get_statuscode() == "200"
    assert record.http_headers.get_header("Content-Type") == "text/html; charset=utf-8"
    assert payload == HTML + b"1"

    # Request and response name each other.
    with (tmp_path / locations[1].file).open("rb") as stream:
        records = [(r.rec_type, r.rec_headers) for r in ArchiveIterator(stream)]
    request_headers, response_headers = records[3][1], records[4][1]
    assert records[3][0] == "request"
    assert request_headers.get_header("WARC-Concurrent-To") == response_headers.get_header(
        "WARC-Record-ID"
    )
    assert response_headers.get_header("WARC-Concurrent-To") == request_headers.get_header(
        "WARC-Record-ID"
    )


def test_gzip_content_encoding_round_trips(tmp_path: Path) -> None:
    body = gzip.compress(HTML, mtime=0)
    with _writer(tmp_path) as writer:
        location = _exchange(
            writer,
            0,
            payload=body,
            response_headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
        )
    record, raw = _record_at(tmp_path, location)
    assert raw == body  # stored as received
    assert record.http_headers.get_header("Content-Encoding") == "gzip"
    with (tmp_path / location.file).open("rb") as stream:
        stream.seek(location.offset)
        decoded = next(iter(ArchiveIterator(stream))).content_stream().read()
    assert decoded == HTML
    assert _warcio("check", str(tmp_path / location.file)).returncode == 0


def test_truncated_and_chunked_headers(tmp_path: Path) -> None:
    with _writer(tmp_path) as writer:
        location = _exchange(
            writer,
            0,
            truncated="length",
            ip_address=None,
            response_headers=[("Transfer-Encoding", "chunked")],
        )
        with pytest.raises(ValueError, match="truncated"):
            _exchange(writer, 1, truncated="bogus")
    record, _ = _record_at(tmp_path, location)
    assert record.rec_headers.get_header("WARC-Truncated") == "length"
    assert record.rec_headers.get_header("WARC-IP-Address") is None
    # The body is stored de-chunked, so replay tools must not see "chunked".
    assert record.http_headers.get_header("Transfer-Encoding") is None
    assert record.http_headers.get_header("X-Crawlspace-Original-Transfer-Encoding") == "chunked"


def test_revisit_record(tmp_path: Path) -> None:
    with _writer(tmp_path) as writer:
        original = _exchange(writer, 0)
        assert original.payload_digest is not None
        revisit = writer.write_revisit(
            url="http://127.0.0.1:8080/page/0?q=0",
            request_headers=[("Host", "127.0.0.1:8080")],
            status=200,
            reason="OK",
            response_headers=[("Content-Type", "text/html")],
            payload_digest=original.payload_digest,
            refers_to_url="http://127.0.0.1:8080/page/0?q=0",
            refers_to_date=1_700_000_000.123456,
            fetched_at=1_700_100_000.0,
        )
    record, payload = _record_at(tmp_path, revisit)
    assert record.rec_type == "revisit"
    assert payload == b""
    assert record.rec_headers.get_header("WARC-Payload-Digest") == original.payload_digest
    assert record.rec_headers.get_header("WARC-Refers-To-Date") == "2023-11-14T22:13:20.123456Z"
    assert "identical-payload-digest" in record.rec_headers.get_header("WARC-Profile")
    assert _warcio("check", str(tmp_path / revisit.file)).returncode == 0


def test_rotation_and_serials_continue_across_writers(tmp_path: Path) -> None:
    with _writer(tmp_path, max_bytes=1_000) as writer:
        locations = [_exchange(writer, n) for n in range(6)]
    first_run = _final_files(tmp_path)
    assert len(first_run) >= 3
    assert [f.name for f in first_run] == sorted({loc.file for loc in locations})
    serials = [int(f.name.removesuffix(".warc.gz").rsplit("-", 1)[1]) for f in first_run]
    assert serials == list(range(len(first_run)))

    with _writer(tmp_path, max_bytes=1_000) as writer:
        later = _exchange(writer, 99)
    assert later.file.endswith(f"-{len(first_run):05d}.warc.gz")
    for path in _final_files(tmp_path):
        with path.open("rb") as stream:
            assert next(iter(ArchiveIterator(stream))).rec_type == "warcinfo"
        assert _warcio("check", str(path)).returncode == 0


def test_no_file_without_records(tmp_path: Path) -> None:
    with _writer(tmp_path / "new" / "dir"):
        pass
    assert list((tmp_path / "new" / "dir").iterdir()) == []


def test_fixed_ids_and_clock_give_identical_bytes(tmp_path: Path) -> None:
    outputs = []
    for run in ("a", "b"):
        with _writer(
            tmp_path / run,
            record_id_factory=_fixed_ids(),
            clock=lambda: 1_700_000_000.5,
            hostname="golden-host",
            operator_info={"operator": "tests@example.org"},
        ) as writer:
            for n in range(3):
                _exchange(writer, n)
        (path,) = _final_files(tmp_path / run)
        outputs.append((path.name, path.read_bytes()))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == "crawlspace-20231114221320-00000.warc.gz"
    text = gzip.decompress(outputs[0][1])
    assert b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>" in text
    assert b"hostname: golden-host\r\noperator: tests@example.org\r\n" in text


_CRASH_SCRIPT = """
import os, sys
from pathlib import Path
from crawlspace.archive.warc import WarcWriter
writer = WarcWriter(Path(sys.argv[1]), software="crash-test")
for n in range(4):
    writer.write_exchange(url=f"http://127.0.0.1/{n}", request_headers=[], status=200,
                          reason="OK", response_headers=[], payload=b"x" * 5000 * (n + 1),
                          fetched_at=1.0 + n)
os._exit(9)  # like kill -9: no close(), no rename, no atexit
"""


def _crash(directory: Path) -> Path:
    subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(directory)], check=False, timeout=60)
    (open_file,) = directory.glob("*.warc.gz.open")
    return open_file


def _urls(path: Path) -> list[str]:
    with path.open("rb") as stream:
        return [
            r.rec_headers.get_header("WARC-Target-URI")
            for r in ArchiveIterator(stream)
            if r.rec_type == "response"
        ]


def test_recover_cuts_a_torn_tail(tmp_path: Path) -> None:
    open_file = _crash(tmp_path)
    intact = open_file.stat().st_size
    compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    member = compressor.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + b"y" * 9000)
    member += compressor.flush()
    with open_file.open("ab") as stream:
        stream.write(member[: len(member) // 2])

    (result,) = recover_open_files(tmp_path)
    final = open_file.with_name(open_file.name.removesuffix(".open"))
    assert result == type(result)(final, 9, intact, len(member) // 2, deleted=False)
    assert not open_file.exists()
    assert final.stat().st_size == intact
    assert _warcio("check", str(final)).returncode == 0
    assert _urls(final) == [f"http://127.0.0.1/{n}" for n in range(4)]
    assert recover_open_files(tmp_path) == []  # nothing left to do


def test_recover_cuts_a_record_truncated_mid_member(tmp_path: Path) -> None:
    open_file = _crash(tmp_path)
    size = open_file.stat().st_size
    with open_file.open("r+b") as stream:
        stream.truncate(size - 100)  # tear the last response member
    (result,) = recover_open_files(tmp_path)
    assert result.records == 8
    assert not result.deleted
    assert _urls(result.path) == [f"http://127.0.0.1/{n}" for n in range(3)]
    assert _warcio("check", str(result.path)).returncode == 0


def test_recover_drops_a_complete_gzip_member_that_is_not_a_record(tmp_path: Path) -> None:
    open_file = _crash(tmp_path)
    intact = open_file.stat().st_size
    with open_file.open("ab") as stream:
        stream.write(gzip.compress(b"WARC/1.1\r\nContent-Length: 99\r\n\r\nshort\r\n\r\n"))
    (result,) = recover_open_files(tmp_path)
    assert result.kept_bytes == intact
    assert result.dropped_bytes > 0


def test_recover_never_raises_on_garbage(tmp_path: Path) -> None:
    name = "crawlspace-20240101000000-{:05d}.warc.gz.open"
    (tmp_path / name.format(0)).write_bytes(b"")
    (tmp_path / name.format(1)).write_bytes(b"\x00" * 4096)
    (tmp_path / name.format(2)).write_bytes(b"\x1f\x8b\x08\x00garbage" * 100)
    with _writer(tmp_path, clock=lambda: 1.0) as writer:
        writer.flush()  # nothing written: no file is created
    results = recover_open_files(tmp_path)
    assert [r.deleted for r in results] == [True, True, True]
    assert all(r.error is None for r in results)
    assert list(tmp_path.iterdir()) == []


def test_recover_deletes_a_warcinfo_only_file(tmp_path: Path) -> None:
    with _writer(tmp_path) as writer:
        _exchange(writer, 0)
    (done,) = _final_files(tmp_path)
    # Keep only the warcinfo member, as if the crash came before the first exchange landed.
    with done.open("rb") as stream:
        it = ArchiveIterator(stream)
        next(iter(it)).raw_stream.read()
        it.read_to_end()
        warcinfo_end = it.get_record_offset() + it.get_record_length()
    leftover = done.with_name(done.name + ".open")
    leftover.write_bytes(done.read_bytes()[:warcinfo_end])
    done.unlink()
    (result,) = recover_open_files(tmp_path)
    assert result.deleted
    assert result.records == 1
    assert list(tmp_path.iterdir()) == []


def test_header_bytes_that_are_not_utf8_are_written_not_refused(tmp_path: Path) -> None:
    # aiohttp hands over such bytes as surrogate escapes ("\udce9" for 0xE9); warcio could not
    # encode them, so the whole record (the page, or a host's robots.txt) used to fail.
    with _writer(tmp_path) as writer:
        location = _exchange(
            writer,
            0,
            reason="D\udce9j\udce0 vu",  # latin-1 bytes in the reason phrase
            response_headers=[
                ("Content-Type", "text/html"),
                ("X-Latin1", "caf\udce9"),  # latin-1 bytes
                ("X-Utf8", "café"),  # valid UTF-8
            ],
        )
    record, payload = _record_at(tmp_path, location)
    assert payload == HTML + b"0"
    headers = record.http_headers
    assert headers.get_statuscode() == "200"
    assert headers.statusline == "200 D%E9j%E0 vu"
    # Non-ASCII values are percent-encoded as UTF-8 (RFC 8187), the latin-1 bytes read as such.
    assert headers.get_header("X-Latin1") == "caf%C3%A9"
    assert headers.get_header("X-Utf8") == "caf%C3%A9"
    (checked,) = _final_files(tmp_path)
    assert _warcio("check", str(checked)).returncode == 0

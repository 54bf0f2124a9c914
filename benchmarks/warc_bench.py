"""WARC writing throughput: crawlspace's WarcWriter (warcio) vs stock warcio vs FastWARC.

Writes N request/response exchanges of ~30 KB HTML each and prints a Markdown table.
Run: python benchmarks/warc_bench.py [--pages 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import tempfile
import time
import zlib
from collections.abc import Callable
from io import BytesIO
from pathlib import Path

from fastwarc.stream_io import GzipWriter
from fastwarc.warc import WarcRecord, WarcRecordType
from isal import isal_zlib
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter
from zlib_ng import zlib_ng

from crawlspace.archive.warc import WarcWriter

REQUEST_HEADERS = [("Host", "example.com"), ("User-Agent", "crawlspace-bench/0.1")]
RESPONSE_HEADERS = [("Content-Type", "text/html; charset=utf-8"), ("Server", "bench")]


def make_pages(count: int, size: int = 30_000) -> list[bytes]:
    """Seeded pseudo-HTML, Zipf-distributed words in repeated markup (gzip -6 shrinks it ~3x)."""
    rng = random.Random(42)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    vocab = [
        "".join(rng.choices(letters, weights=range(26, 0, -1), k=rng.randint(2, 9)))
        for _ in range(2000)
    ]
    weights = [1 / (rank + 1) for rank in range(len(vocab))]  # Zipf, like natural text
    pages = []
    for n in range(count):
        parts = [f"<!doctype html><html><head><title>Page {n}</title></head><body>"]
        length = len(parts[0])
        while length < size:
            words = " ".join(rng.choices(vocab, weights, k=rng.randint(8, 40)))
            href = f"/p/{rng.randint(0, 10**6)}"
            part = (
                f'<div class="item"><p class="text">{words} <a href="{href}">more</a></p></div>\n'
            )
            parts.append(part)
            length += len(part)
        parts.append("</body></html>")
        pages.append("".join(parts).encode())
    return pages


def load_pages(directory: Path, count: int, size: int = 30_000) -> list[bytes]:
    """Real HTML files under ``directory`` (each cut to ``size`` bytes), cycled to ``count``."""
    files = sorted(p for p in directory.rglob("*.html") if p.stat().st_size >= size)
    if not files:
        raise SystemExit(f"no .html file of at least {size} bytes under {directory}")
    bodies = [p.read_bytes()[:size] for p in files[:200]]
    return [bodies[n % len(bodies)] for n in range(count)]


def run_crawlspace(directory: Path, pages: list[bytes], level: int) -> int:
    with WarcWriter(directory, software="bench", compress_level=level) as writer:
        for n, page in enumerate(pages):
            writer.write_exchange(
                url=f"http://example.com/p/{n}",
                request_headers=REQUEST_HEADERS,
                status=200,
                reason="OK",
                response_headers=RESPONSE_HEADERS,
                payload=page,
                fetched_at=1_700_000_000.0 + n,
                ip_address="127.0.0.1",
            )
    return sum(p.stat().st_size for p in directory.glob("*.warc.gz"))


def run_stock_warcio(directory: Path, pages: list[bytes]) -> int:
    """warcio's own gzip path (one member per record, zlib level 9 hard-coded)."""
    path = directory / "stock.warc.gz"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for n, page in enumerate(pages):
            url = f"http://example.com/p/{n}"
            response = writer.create_warc_record(
                url,
                "response",
                payload=BytesIO(page),
                length=len(page),
                http_headers=StatusAndHeaders("200 OK", RESPONSE_HEADERS, protocol="HTTP/1.1"),
            )
            request = writer.create_warc_record(
                url,
                "request",
                http_headers=StatusAndHeaders(
                    "GET /p HTTP/1.1", REQUEST_HEADERS, is_http_request=True
                ),
            )
            writer.write_request_response_pair(request, response)
            out.flush()
    return path.stat().st_size


def _fastwarc_records(url: str, page: bytes) -> list[WarcRecord]:
    request = WarcRecord()
    request.init_headers(WarcRecordType.request)
    request.headers["WARC-Target-URI"] = url
    request.headers["Content-Type"] = "application/http; msgtype=request"
    request.set_bytes_content(
        b"GET /p HTTP/1.1\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in REQUEST_HEADERS)
    )
    response = WarcRecord()
    response.init_headers(WarcRecordType.response)
    response.headers["WARC-Target-URI"] = url
    response.headers["Content-Type"] = "application/http; msgtype=response"
    response.headers["WARC-Concurrent-To"] = request.record_id or ""
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in RESPONSE_HEADERS)
    response.set_bytes_content(head + b"\r\n" + page)
    return [request, response]


def run_fastwarc_members(directory: Path, pages: list[bytes], level: int) -> int:
    """FastWARC serializes (with digests); we gzip each record as its own member, like ours."""
    path = directory / "fastwarc.warc.gz"
    with path.open("wb") as out:
        for n, page in enumerate(pages):
            payload_digest = hashlib.sha1(page).digest()
            for record in _fastwarc_records(f"http://example.com/p/{n}", page):
                buf = BytesIO()
                record.write(buf, checksum_data=True, payload_digest=payload_digest)
                compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
                out.write(compressor.compress(buf.getvalue()) + compressor.flush())
            out.flush()
    return path.stat().st_size


def run_fastwarc_stream(directory: Path, pages: list[bytes], level: int) -> int:
    """FastWARC's GzipWriter: one gzip stream for the whole file (NOT seekable per record)."""
    path = directory / "fastwarc-stream.warc.gz"
    with path.open("wb") as raw:
        out = GzipWriter(raw, compression_level=level)
        for n, page in enumerate(pages):
            for record in _fastwarc_records(f"http://example.com/p/{n}", page):
                record.write(out, checksum_data=True)
        out.close()
    return path.stat().st_size


# The compressors, same interface: the stdlib's zlib, zlib-ng (the writer's), Intel ISA-L.
COMPRESSORS = {
    "zlib": zlib.compressobj,
    "zlib-ng": zlib_ng.compressobj,
    "isal": isal_zlib.compressobj,
}


def run_zlib_only(directory: Path, pages: list[bytes], level: int, library: str = "zlib") -> int:
    """The floor: compressing the payloads alone, no WARC serialization."""
    total = 0
    for page in pages:
        compressor = COMPRESSORS[library](level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        total += len(compressor.compress(page) + compressor.flush())
    return total


def measure(name: str, pages: list[bytes], run: Callable[[Path], int], repeat: int) -> str:
    """Best of ``repeat`` runs: the least disturbed by other load on the machine."""
    elapsed = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            size = run(Path(tmp))
            elapsed = min(elapsed, time.perf_counter() - start)
    raw_mb = sum(map(len, pages)) / 1e6
    return (
        f"| {name} | {len(pages) / elapsed:,.0f} | {raw_mb / elapsed:,.1f} "
        f"| {elapsed / len(pages) * 1e3:.3f} | {size / 1e6:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--html-dir", type=Path, help="use real .html files instead of synthetic")
    args = parser.parse_args()
    pages = load_pages(args.html_dir, args.pages) if args.html_dir else make_pages(args.pages)
    print(f"{len(pages)} exchanges, {sum(map(len, pages)) / len(pages) / 1e3:.1f} KB HTML each\n")
    print("| writer | exchanges/s | payload MB/s | ms/exchange | output MB |")
    print("|---|---:|---:|---:|---:|")
    cases: list[tuple[str, Callable[[Path], int]]] = [
        ("crawlspace WarcWriter (zlib-ng 6, default)", lambda d: run_crawlspace(d, pages, 6)),
        ("crawlspace WarcWriter (zlib-ng 1)", lambda d: run_crawlspace(d, pages, 1)),
        ("crawlspace WarcWriter (zlib-ng 9)", lambda d: run_crawlspace(d, pages, 9)),
        ("stock warcio WARCWriter (gzip 9 fixed)", lambda d: run_stock_warcio(d, pages)),
        ("FastWARC records + per-record gzip 6", lambda d: run_fastwarc_members(d, pages, 6)),
        (
            "FastWARC GzipWriter 6 (one stream, unseekable)",
            lambda d: run_fastwarc_stream(d, pages, 6),
        ),
        ("zlib 6 on payloads only (floor)", lambda d: run_zlib_only(d, pages, 6)),
        ("zlib 1 on payloads only", lambda d: run_zlib_only(d, pages, 1)),
        ("zlib-ng 6 on payloads only", lambda d: run_zlib_only(d, pages, 6, "zlib-ng")),
        ("zlib-ng 1 on payloads only", lambda d: run_zlib_only(d, pages, 1, "zlib-ng")),
        ("ISA-L 1 on payloads only (levels 0-3)", lambda d: run_zlib_only(d, pages, 1, "isal")),
        ("ISA-L 3 on payloads only", lambda d: run_zlib_only(d, pages, 3, "isal")),
    ]
    for name, run in cases:
        print(measure(name, pages, run, args.repeat))


if __name__ == "__main__":
    main()

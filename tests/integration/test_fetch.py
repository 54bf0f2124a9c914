"""AiohttpTransport and CachingResolver against real servers on 127.0.0.1, port 0.

The server is a few lines of asyncio streams so each test controls the bytes on the wire
(chunking, dripping, endless gzip) and can count the connections it accepted.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import brotli
import pytest

from crawlspace.address_guard import AddressGuard
from crawlspace.config import CrawlConfig
from crawlspace.crawl.setup import fetch_settings
from crawlspace.errors import BlockedAddressError, ConnectError, DnsError, FetchTimeoutError
from crawlspace.fetch.aiohttp_transport import AiohttpTransport
from crawlspace.fetch.dns import AddrInfo, CachingResolver
from crawlspace.fetch.settings import ResolveOverride
from crawlspace.fetch.transport import FetchRequest, FetchResponse

pytestmark = pytest.mark.anyio

Route = Callable[[asyncio.StreamWriter], Awaitable[None]]
PAGE = b"<html><body>" + b"crawlspace " * 3000 + b"</body></html>"
MIB = 1024 * 1024
# zlib.crc32 of 1 GiB of zeros; computing it takes ~1 s, which would stall the test server.
BOMB_CRC32 = 0x5B64C2B0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _head(status: str, headers: Sequence[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers), "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _fixed(status: str, body: bytes, headers: Sequence[tuple[str, str]] = ()) -> Route:
    async def route(w: asyncio.StreamWriter) -> None:
        w.write(_head(status, [*headers, ("Content-Length", str(len(body)))]) + body)
        await w.drain()

    return route


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _chunked_br(w: asyncio.StreamWriter) -> None:
    data = brotli.compress(PAGE)
    w.write(_head("200 OK", [("Content-Encoding", "br"), ("Transfer-Encoding", "chunked")]))
    for i in range(0, len(data), 100):
        w.write(_chunk(data[i : i + 100]))
    w.write(b"0\r\n\r\n")
    await w.drain()


def _bomb_segments() -> tuple[bytes, bytes]:
    """gzip header + first MiB of zeros, and the encoding of each further MiB.

    Z_FULL_FLUSH resets the compressor's window, so every MiB after the first compresses to
    the same ~1 KB: the 1 GiB bomb costs two compress calls instead of 13 s of CPU.
    """
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    first = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    repeat = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    return first, repeat


async def _gzip_bomb(w: asyncio.StreamWriter) -> None:
    """1 GiB of zeros as a gzip stream of ~1 MiB, streamed chunked."""
    first, repeat = _bomb_segments()
    w.write(_head("200 OK", [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]))
    w.write(_chunk(first))
    for _ in range(1023):
        w.write(_chunk(repeat))
        await w.drain()
    # An empty final fixed-Huffman block, then the gzip trailer (CRC-32, size mod 2**32).
    trailer = b"\x03\x00" + struct.pack("<II", BOMB_CRC32, (1024 * MIB) & 0xFFFFFFFF)
    w.write(_chunk(trailer) + b"0\r\n\r\n")
    await w.drain()


async def _drip(w: asyncio.StreamWriter) -> None:
    w.write(_head("200 OK", [("Content-Length", "100")]))
    for _ in range(100):
        w.write(b"x")
        await w.drain()
        await asyncio.sleep(0.1)


def _in_parts(body_parts: Sequence[bytes], headers: Sequence[tuple[str, str]]) -> Route:
    """A body written in separate pieces, a pause between, so the client reads them apart."""

    async def route(w: asyncio.StreamWriter) -> None:
        length = sum(len(part) for part in body_parts)
        w.write(_head("200 OK", [*headers, ("Content-Length", str(length))]))
        for part in body_parts:
            w.write(part)
            await w.drain()
            await asyncio.sleep(0.05)

    return route


async def _reset_before_answer(w: asyncio.StreamWriter) -> None:
    """The request read, then the connection reset (SO_LINGER 0) before a byte of answer."""
    sock = w.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    w.transport.abort()


MEMBER_A, MEMBER_B = gzip.compress(b"A" * 1000, mtime=0), gzip.compress(b"B" * 1000, mtime=0)
GZIP = [("Content-Encoding", "gzip")]
# 1,000 stacked codings: a decoder per coding used to recurse once per layer, past the stack.
STACKED = ", ".join(["gzip"] * 1000)

ROUTES: dict[str, Route] = {
    "/plain": _fixed("200 OK", b"hello", [("Content-Type", "text/plain"), ("X-B", "2")]),
    "/gzip": _fixed("200 OK", gzip.compress(PAGE, mtime=0), [("Content-Encoding", "gzip")]),
    "/deflate-raw": _fixed(
        "200 OK",
        zlib.compress(PAGE)[2:-4],  # raw deflate, as some servers send for "deflate"
        [("Content-Encoding", "deflate")],
    ),
    "/br": _chunked_br,
    "/corrupt": _fixed("200 OK", b"this is not gzip at all", [("Content-Encoding", "gzip")]),
    "/redirect": _fixed("302 Found", b"", [("Location", "/plain")]),
    "/big": _fixed("200 OK", bytes(MIB)),
    "/bomb": _gzip_bomb,
    "/drip": _drip,
    "/reset-before-answer": _reset_before_answer,
    "/members-at-chunk-end": _in_parts([MEMBER_A, MEMBER_B], GZIP),
    "/members-magic-split": _in_parts([MEMBER_A + MEMBER_B[:1], MEMBER_B[1:]], GZIP),
    "/members-too-many": _fixed("200 OK", gzip.compress(b" ", mtime=0) * 1001, GZIP),
    "/stacked": _fixed("200 OK", gzip.compress(PAGE, mtime=0), [("Content-Encoding", STACKED)]),
    "/two-codings": _fixed(
        "200 OK", brotli.compress(gzip.compress(PAGE, mtime=0)), [("Content-Encoding", "gzip, br")]
    ),
}


class RawServer:
    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[bytes] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            self.requests.append(head)
            await ROUTES[head.split(b" ")[1].decode()](writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client hung up, which several tests make it do
        finally:
            writer.close()
            self._tasks.discard(task)


@pytest.fixture
async def server() -> AsyncIterator[RawServer]:
    srv = RawServer()
    await srv.start()
    yield srv
    await srv.stop()


def _config(server: RawServer, **changes: object) -> CrawlConfig:
    base = CrawlConfig(
        allow_nets=("127.0.0.0/8",),
        resolve=(ResolveOverride("site.test", server.port, "127.0.0.1"),),
        connect_timeout=2.0,
        read_timeout=2.0,
        total_timeout=5.0,
        user_agent="TestBot/1.0",
    )
    return base.replace(**changes)


async def _fetch(config: CrawlConfig, request: FetchRequest) -> FetchResponse:
    transport = AiohttpTransport(fetch_settings(config))
    try:
        return await transport.fetch(request)
    finally:
        await transport.close()


async def test_plain_200_records_headers_in_order(server: RawServer) -> None:
    req = FetchRequest(server.url("/plain", "site.test"), headers=[("If-None-Match", '"v1"')])
    resp = await _fetch(_config(server), req)
    assert resp.status == 200
    assert resp.reason == "OK"
    assert resp.http_version == "1.1"
    assert resp.body == resp.raw_body == b"hello"
    assert [k for k, _ in resp.headers] == ["Content-Type", "X-B", "Content-Length", "Connection"]
    assert resp.header("content-type") == "text/plain"
    assert not resp.truncated
    assert resp.peer_address == "127.0.0.1"
    assert resp.started_at <= resp.ended_at
    assert resp.elapsed >= 0
    sent = dict(resp.request_headers)
    assert sent["User-Agent"] == "TestBot/1.0"
    assert sent["Accept-Encoding"] == "gzip, deflate, br"
    assert sent["If-None-Match"] == '"v1"'
    seen = server.requests[0].decode("latin-1")
    assert "User-Agent: TestBot/1.0" in seen
    assert 'If-None-Match: "v1"' in seen
    assert f"Host: site.test:{server.port}" in seen


async def test_gzip_decoded_raw_kept(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/gzip")))
    assert resp.body == PAGE
    assert resp.raw_body == gzip.compress(PAGE, mtime=0)
    assert resp.decode_error is None


async def test_raw_deflate_decoded(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/deflate-raw")))
    assert resp.body == PAGE
    assert resp.decode_error is None


async def test_chunked_brotli_decoded_and_transfer_encoding_dropped(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/br")))
    assert resp.body == PAGE
    assert resp.raw_body == brotli.compress(PAGE)
    assert resp.header("Transfer-Encoding") is None
    assert resp.header("Content-Encoding") == "br"


async def test_corrupt_gzip_returns_raw_with_decode_error(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/corrupt")))
    assert resp.status == 200
    assert resp.decode_error is not None
    assert "gzip" in resp.decode_error
    assert resp.body == resp.raw_body == b"this is not gzip at all"


@pytest.mark.parametrize("path", ["/members-at-chunk-end", "/members-magic-split"])
async def test_gzip_member_boundary_at_a_chunk_boundary_loses_nothing(
    server: RawServer, path: str
) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url(path)))
    assert resp.decode_error is None
    assert resp.body == b"A" * 1000 + b"B" * 1000


async def test_too_many_gzip_members_is_a_decode_error(server: RawServer) -> None:
    # Each member copies the bytes after it, so thousands of tiny ones cost quadratic time.
    resp = await _fetch(_config(server), FetchRequest(server.url("/members-too-many")))
    assert resp.decode_error == "more than 1000 gzip members"


async def test_stacked_codings_are_refused_and_two_are_decoded(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/stacked")))
    assert resp.decode_error == "1000 content codings stacked (at most 3)"
    assert resp.body == resp.raw_body
    resp = await _fetch(_config(server), FetchRequest(server.url("/two-codings")))
    assert resp.decode_error is None
    assert resp.body == PAGE


async def test_redirect_not_followed(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/redirect")))
    assert resp.status == 302
    assert resp.header("Location") == "/plain"
    assert server.connections == 1


async def test_body_truncated_at_max_body_bytes(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/big"), max_body_bytes=100_000))
    assert resp.truncated
    assert resp.truncated_reason == "max_body_bytes"
    assert len(resp.raw_body) == len(resp.body) == 100_000


async def test_body_exactly_at_limit_is_not_truncated(server: RawServer) -> None:
    resp = await _fetch(_config(server), FetchRequest(server.url("/big"), max_body_bytes=MIB))
    assert not resp.truncated
    assert len(resp.body) == MIB


async def test_gzip_bomb_stopped_with_bounded_memory(server: RawServer) -> None:
    cap = 8 * MIB
    tracemalloc.start()
    try:
        resp = await _fetch(
            _config(server), FetchRequest(server.url("/bomb"), max_decompressed_bytes=cap)
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert resp.truncated_reason == "max_decompressed_bytes"
    assert len(resp.body) == cap
    assert len(resp.raw_body) < MIB  # only the first few KB of the ~1 MiB bomb were read
    # Decoded cap + its copy into bytes + slack; the whole bomb would be 1 GiB.
    assert peak < 4 * cap


async def test_slow_drip_cut_at_total_timeout(server: RawServer) -> None:
    config = _config(server, total_timeout=1.0, read_timeout=5.0)
    t0 = time.monotonic()
    with pytest.raises(FetchTimeoutError) as info:
        await _fetch(config, FetchRequest(server.url("/drip")))
    assert info.value.reason == "total_timeout"
    assert 0.9 < time.monotonic() - t0 < 3.0


async def test_read_idle_timeout(server: RawServer) -> None:
    config = _config(server, total_timeout=5.0, read_timeout=0.05)
    with pytest.raises(FetchTimeoutError) as info:
        await _fetch(config, FetchRequest(server.url("/drip")))
    assert info.value.reason == "read_timeout"


async def test_connection_refused() -> None:
    # Bound but not listening: refused, and no other server can take the port meanwhile.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = CrawlConfig(allow_nets=("127.0.0.0/8",), connect_timeout=2.0, total_timeout=5.0)
        with pytest.raises(ConnectError):
            await _fetch(config, FetchRequest(f"http://127.0.0.1:{port}/"))


async def test_a_reset_before_the_answer_is_one_request_and_a_connect_error(
    server: RawServer,
) -> None:
    """One request per fetch, as the server counts them: aiohttp would send a GET again on a
    new connection after a reset (politeness counts requests, and the outage rules count this
    one as unanswered: frontier/outage.py)."""
    with pytest.raises(ConnectError) as info:
        await _fetch(_config(server), FetchRequest(server.url("/reset-before-answer")))
    assert info.value.reason == "connect_error"
    assert (server.connections, len(server.requests)) == (1, 1)


async def test_resolved_hostname_blocked_before_connecting(server: RawServer) -> None:
    config = _config(server, allow_nets=())
    with pytest.raises(BlockedAddressError) as info:
        await _fetch(config, FetchRequest(server.url("/plain", "site.test")))
    assert "site.test" in str(info.value)
    assert "127.0.0.1 (loopback)" in str(info.value)
    assert server.connections == 0


async def test_ip_literal_blocked_before_connecting(server: RawServer) -> None:
    config = _config(server, allow_nets=())
    with pytest.raises(BlockedAddressError) as info:
        await _fetch(config, FetchRequest(server.url("/plain")))
    assert "loopback" in str(info.value)
    assert server.connections == 0


async def test_ipv6_literal_blocked_before_connecting() -> None:
    config = CrawlConfig()
    with pytest.raises(BlockedAddressError):
        await _fetch(config, FetchRequest("http://[::1]:9/"))


async def test_a_cancelled_fetch_leaves_the_transport_usable(server: RawServer) -> None:
    transport = AiohttpTransport(fetch_settings(_config(server)))
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(transport.fetch(FetchRequest(server.url("/drip"))), 0.3)
        resp = await transport.fetch(FetchRequest(server.url("/plain")))
    finally:
        await transport.close()
    assert resp.status == 200
    assert resp.body == b"hello"
    assert server.connections == 2  # the cut connection was not reused


class FakeLookup:
    """Counts lookups; answers from a table, raises gaierror for unknown names."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []
        self.gate: asyncio.Event | None = None

    async def __call__(self, host: str, port: int, family: int) -> list[AddrInfo]:
        self.calls.append(host)
        if self.gate is not None:
            await self.gate.wait()
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in self.table[host]
        ]


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _resolver(lookup: FakeLookup, clock: Clock, allow: Sequence[str] = ()) -> CachingResolver:
    return CachingResolver(
        AddressGuard(allow), positive_seconds=300, negative_seconds=30, now=clock, lookup=lookup
    )


async def test_resolver_positive_cache_expires() -> None:
    lookup, clock = FakeLookup({"cached.test": ["93.184.216.34"]}), Clock()
    resolver = _resolver(lookup, clock)
    for _ in range(3):
        answers = await resolver.resolve("cached.test", 80)
        assert [a.address for a in answers] == ["93.184.216.34"]
    assert lookup.calls == ["cached.test"]
    clock.t += 299
    await resolver.resolve("CACHED.test.", 443)  # same name, any port: still cached
    assert len(lookup.calls) == 1
    clock.t += 2
    await resolver.resolve("cached.test", 80)
    assert len(lookup.calls) == 2


async def test_resolver_negative_cache() -> None:
    lookup, clock = FakeLookup({}), Clock()
    resolver = _resolver(lookup, clock)
    for _ in range(2):
        with pytest.raises(DnsError):
            await resolver.resolve("missing.test", 80)
    assert len(lookup.calls) == 1
    clock.t += 31
    lookup.table["missing.test"] = ["93.184.216.34"]
    assert (await resolver.resolve("missing.test", 80))[0].address == "93.184.216.34"
    assert len(lookup.calls) == 2


async def test_resolver_coalesces_concurrent_lookups() -> None:
    lookup, clock = FakeLookup({"busy.test": ["93.184.216.34"]}), Clock()
    lookup.gate = asyncio.Event()
    resolver = _resolver(lookup, clock)
    tasks = [asyncio.create_task(resolver.resolve("busy.test", 80)) for _ in range(10)]
    await asyncio.sleep(0)
    lookup.gate.set()
    results = await asyncio.gather(*tasks)
    assert all(r[0].address == "93.184.216.34" for r in results)
    assert lookup.calls == ["busy.test"]


async def test_resolver_filters_and_blocks_rebinding_answers() -> None:
    lookup = FakeLookup({"mixed.test": ["10.0.0.1", "93.184.216.34"], "evil.test": ["10.0.0.1"]})
    resolver = _resolver(lookup, Clock())
    assert [a.address for a in await resolver.resolve("mixed.test", 80)] == ["93.184.216.34"]
    with pytest.raises(BlockedAddressError, match=r"10\.0\.0\.1 \(private\)"):
        await resolver.resolve("evil.test", 80)


async def test_resolver_override_needs_matching_port() -> None:
    lookup = FakeLookup({"o.test": ["93.184.216.34"]})
    resolver = CachingResolver(
        AddressGuard(["127.0.0.0/8"]),
        overrides=[ResolveOverride("o.test", 8080, "127.0.0.1")],
        lookup=lookup,
    )
    assert (await resolver.resolve("o.test", 8080))[0].address == "127.0.0.1"
    assert lookup.calls == []
    assert (await resolver.resolve("o.test", 80))[0].address == "93.184.216.34"
    assert lookup.calls == ["o.test"]


async def test_resolver_system_lookup_of_localhost() -> None:
    resolver = CachingResolver(AddressGuard(["127.0.0.0/8", "::1/128"]))
    answers = await resolver.resolve("localhost", 80)
    assert answers
    assert {a.address for a in answers} <= {"127.0.0.1", "::1"}
    with pytest.raises(BlockedAddressError):
        await CachingResolver(AddressGuard(())).resolve("localhost", 80)

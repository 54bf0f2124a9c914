"""A web that misbehaves on purpose, served from its own process for the fault-injection tests.

Run as ``python -m tests.faultweb LOGFILE``: it binds one loopback port per site, prints
``{"ports": {...}}`` on stdout, appends one JSON line per request to LOGFILE (monotonic and wall
clock start/end, bytes sent) and serves until stdin closes. A separate process keeps the server's
timestamps honest while the crawler (another process) works the CPU.

The HTTP is written by hand on asyncio streams so a route controls every byte: resets mid-body,
one-byte drips, bombs streamed without ever being built in memory.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import struct
import sys
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import brotli

MIB = 1024 * 1024
SITES = ("throttle", "stuck", "unavail", "slow", "redirects", "broken", "big", "weird", "private")
# The "private" site listens on 127.0.0.2: the crawler is told that name resolves there while
# only 127.0.0.1/32 is allowed, so any connection it received would be a guard failure.
ADDRESSES = {"private": "127.0.0.2"}
RETRY_AFTER_SECONDS = 2
RETRY_AFTER_DATE_SECONDS = 2
THROTTLED_TIMES = 4
STUCK_RETRY_AFTER = 2
# robots.txt of the "redirects" site is reached through two redirects: each hop is a request.
ROBOTS_HOPS = {"/robots.txt": "/robots-hop", "/robots-hop": "/robots-final"}
SLOW_DELAY = 0.05
# The outage sites (tests/integration/test_outages.py), served with the others but not crawled
# by the fault crawls: "outage" resets every connection for OUTAGE_SECONDS once it has served
# OUTAGE_AFTER pages; "robotsdown" resets its robots.txt requests for ROBOTS_DOWN_SECONDS from
# the first; "dead" resets every connection once it has served DEAD_AFTER pages. The issue's
# scenario is 35 s and a minute: the test runs it at a tenth (FAULTWEB_OUTAGE_SCALE=1: full).
OUTAGE_SITES = ("outage", "robotsdown", "dead")
# "sitemapflood" (tests/integration/test_sitemap_budget.py): its robots.txt names SITEMAP_LINES
# sitemaps, the first an index of SITEMAP_INDEX_SIZE sitemaps, every one of them a 404.
SITEMAP_LINES = 30
SITEMAP_INDEX_SIZE = 2000
SITEMAP_PAGES = 10
OUTAGE_SCALE = float(os.environ.get("FAULTWEB_OUTAGE_SCALE", "0.1"))
OUTAGE_AFTER = 8
OUTAGE_SECONDS = 35.0 * OUTAGE_SCALE
OUTAGE_PAGES = 30
ROBOTS_DOWN_SECONDS = 60.0 * OUTAGE_SCALE
ROBOTS_DOWN_PAGES = 10
DEAD_AFTER = 3
DEAD_PAGES = 20
BOMB_CRC32 = 0x5B64C2B0  # zlib.crc32 of 1 GiB of zeros


@dataclass
class Exchange:
    site: str
    path: str
    writer: asyncio.StreamWriter
    reader: asyncio.StreamReader | None = None
    sent: int = 0
    status: int = 0
    notes: dict[str, object] = field(default_factory=dict)

    def write(self, data: bytes) -> None:
        self.writer.write(data)
        self.sent += len(data)

    def client_gone(self) -> bool:
        """The client closed or died (the kernel closes a killed process's socket at once)."""
        return self.writer.is_closing() or (self.reader is not None and self.reader.at_eof())

    async def pause(self, seconds: float) -> bool:
        """Sleep, waking often enough to see the client go; False if it went."""
        for _ in range(max(1, round(seconds / 0.02))):
            if self.client_gone():
                return False
            await asyncio.sleep(0.02)
        return not self.client_gone()

    async def head(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status = status
        lines = [f"HTTP/1.1 {status} X", *(f"{k}: {v}" for k, v in headers), "Connection: close"]
        self.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await self.writer.drain()

    async def page(
        self,
        body: bytes | str,
        status: int = 200,
        ctype: str = "text/html",
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        await self.head(
            status, [("Content-Type", ctype), ("Content-Length", str(len(data))), *(extra or [])]
        )
        self.write(data)
        await self.writer.drain()


Route = Callable[[Exchange], Awaitable[None]]
_counts: dict[tuple[str, str], int] = {}


def links(*paths: str) -> str:
    return "<html><body>" + "".join(f'<a href="{p}">{p}</a> ' for p in paths) + "</body></html>"


def nth(ex: Exchange) -> int:
    key = (ex.site, ex.path)
    _counts[key] = _counts.get(key, 0) + 1
    return _counts[key]


async def throttle(ex: Exchange) -> None:
    if ex.path == "/":
        await ex.page(links("/a", "/b", "/c", "/d"))
    elif ex.path == "/c" and nth(ex) <= THROTTLED_TIMES:
        # Asks to wait more often than max_attempts: throttling is not failing.
        ex.notes["retry_after"] = 1
        await ex.page("later", 429, "text/plain", [("Retry-After", "1")])
    elif ex.path == "/a" and nth(ex) == 1:
        ex.notes["retry_after"] = RETRY_AFTER_SECONDS
        await ex.page("slow down", 429, "text/plain", [("Retry-After", str(RETRY_AFTER_SECONDS))])
    elif ex.path == "/b" and nth(ex) == 1:
        until = int(time.time()) + RETRY_AFTER_DATE_SECONDS + 1
        ex.notes["retry_until"] = until
        date = email.utils.formatdate(until, usegmt=True)
        await ex.page("busy", 503, "text/plain", [("Retry-After", date)])
    else:
        await ex.page(links("/"))


async def stuck(ex: Exchange) -> None:
    """Asks us to wait on /forever, every time: given up on after max_throttled_seconds."""
    if ex.path == "/forever":
        ex.notes["retry_after"] = STUCK_RETRY_AFTER
        await ex.page("later", 429, "text/plain", [("Retry-After", str(STUCK_RETRY_AFTER))])
    else:
        await ex.page(links("/forever"))


async def unavail(ex: Exchange) -> None:
    if ex.path == "/":
        await ex.page(links("/x", "/y", "/ok"))
    elif ex.path == "/x":
        await ex.page("unavailable", 503, "text/plain")
    elif ex.path == "/y":
        await ex.page("broken", 500, "text/plain")
    else:
        await ex.page(links("/"))


async def slow(ex: Exchange) -> None:
    await asyncio.sleep(SLOW_DELAY)
    pages = [f"/s{i}" for i in range(6)]
    await ex.page(links(*pages))


async def redirects(ex: Exchange) -> None:
    hop = {"/loop-a": "/loop-b", "/loop-b": "/loop-a"}
    hop.update({f"/hop{i}": f"/hop{i + 1}" for i in range(10)})
    if ex.path == "/":
        await ex.page(links("/loop-a", "/hop0"))
    elif ex.path in hop:
        await ex.page("", 302, "text/plain", [("Location", hop[ex.path])])
    else:
        await ex.page(links("/"))


def reset(ex: Exchange) -> None:
    """Close the connection with a TCP RST (SO_LINGER 0), not a clean FIN."""
    transport = ex.writer.transport
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(1, 13, struct.pack("ii", 1, 0))
    transport.abort()


# When each outage site went (or goes) down and comes back, on the monotonic clock, and the
# pages each has served.
_down: dict[str, tuple[float, float]] = {}
_served: dict[str, int] = {}


def _serve_counting(ex: Exchange, after: int, seconds: float) -> None:
    """Count a page served; the site goes down for ``seconds`` after its ``after``-th."""
    _served[ex.site] = _served.get(ex.site, 0) + 1
    if _served[ex.site] == after:
        now = time.monotonic()
        _down[ex.site] = (now, now + seconds)


def _is_down(ex: Exchange) -> bool:
    window = _down.get(ex.site)
    now = time.monotonic()
    if window is not None and window[0] <= now < window[1]:
        ex.notes["reset"] = True
        ex.notes["down"] = list(window)
        reset(ex)
        return True
    return False


def _numbered_page(ex: Exchange, pages: int) -> str:
    body = links(*(f"/p{i}" for i in range(pages))) if ex.path == "/" else links("/")
    return body.replace("<body>", f"<body><p>{ex.site} page {ex.path}</p>")


async def outage(ex: Exchange) -> None:
    if _is_down(ex):
        return
    await ex.page(_numbered_page(ex, OUTAGE_PAGES))
    _serve_counting(ex, OUTAGE_AFTER, OUTAGE_SECONDS)


async def dead(ex: Exchange) -> None:
    if _is_down(ex):
        return
    await ex.page(_numbered_page(ex, DEAD_PAGES))
    _serve_counting(ex, DEAD_AFTER, float("inf"))


async def robotsdown(ex: Exchange) -> None:
    await ex.page(_numbered_page(ex, ROBOTS_DOWN_PAGES))


async def robotsdown_robots(ex: Exchange) -> None:
    if ex.site not in _down:
        now = time.monotonic()
        _down[ex.site] = (now, now + ROBOTS_DOWN_SECONDS)
    if _is_down(ex):
        return
    await ex.page("User-agent: *\nAllow: /\n", 200, "text/plain")


def _origin(ex: Exchange) -> str:
    host, port = ex.writer.get_extra_info("sockname")[:2]
    return f"http://{host}:{port}"


def sitemapflood_robots(ex: Exchange) -> str:
    origin = _origin(ex)
    lines = [f"Sitemap: {origin}/declared-{i}.xml" for i in range(1, SITEMAP_LINES)]
    head = f"User-agent: *\nAllow: /\nSitemap: {origin}/index.xml\n"
    return head + "\n".join(lines) + "\n"


async def sitemapflood(ex: Exchange) -> None:
    if ex.path == "/index.xml":
        origin = _origin(ex)
        entries = "".join(
            f"<sitemap><loc>{origin}/sm/{i}.xml</loc></sitemap>" for i in range(SITEMAP_INDEX_SIZE)
        )
        index = (
            '<?xml version="1.0"?><sitemapindex '
            'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + entries + "</sitemapindex>"
        )
        await ex.page(index, ctype="application/xml")
    elif ex.path.endswith(".xml"):
        await ex.page("gone", 404, "text/plain")
    else:
        await ex.page(_numbered_page(ex, SITEMAP_PAGES))


async def broken(ex: Exchange) -> None:
    if ex.path == "/":
        await ex.page(links("/reset", "/drip"))
    elif ex.path == "/reset":
        await ex.head(200, [("Content-Type", "text/html"), ("Content-Length", "1000")])
        ex.write(b"<html>partial")
        await ex.writer.drain()
        reset(ex)
    elif ex.path == "/drip":
        await ex.head(200, [("Content-Type", "text/html"), ("Content-Length", "100")])
        for _ in range(100):
            # The client hung up (or was killed): log the end now, as the server saw it, not
            # at the next byte's write.
            if ex.client_gone():
                break
            ex.write(b"x")
            await ex.writer.drain()
            if not await ex.pause(0.2):
                break
    else:
        await ex.page(links("/"))


def bomb_segments() -> tuple[bytes, bytes]:
    """First MiB of zeros (with the gzip header), then the encoding of each further MiB: after
    Z_FULL_FLUSH every MiB compresses identically, so 1 GiB costs two compress calls."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    return (
        comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH),
        comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH),
    )


_brotli_bomb: list[bytes] = []


def brotli_bomb() -> bytes:
    """64 MiB of zeros in a few hundred bytes of brotli, built once."""
    if not _brotli_bomb:
        _brotli_bomb.append(brotli.compress(bytes(64 * MIB), quality=1))
    return _brotli_bomb[0]


async def big(ex: Exchange) -> None:
    if ex.path == "/":
        await ex.page(links("/huge", "/gzbomb", "/brbomb"))
    elif ex.path == "/huge":
        size = 50 * MIB
        await ex.head(200, [("Content-Type", "text/html"), ("Content-Length", str(size))])
        chunk = b"<p>" + b"y" * (64 * 1024 - 3)
        for _ in range(size // len(chunk)):
            if ex.writer.is_closing():
                break
            ex.write(chunk)
            await ex.writer.drain()
    elif ex.path == "/gzbomb":
        first, repeat = bomb_segments()
        await ex.head(200, [("Content-Type", "text/html"), ("Content-Encoding", "gzip")])
        ex.write(first)
        for _ in range(1023):
            ex.write(repeat)
            await ex.writer.drain()
        ex.write(b"\x03\x00" + struct.pack("<II", BOMB_CRC32, 0))
        await ex.writer.drain()
    elif ex.path == "/brbomb":
        await ex.page(brotli_bomb(), extra=[("Content-Encoding", "br")])
    else:
        await ex.page(links("/"))


async def weird(ex: Exchange) -> None:
    if ex.path == "/":
        await ex.page(links("/malformed", "/png-html", "/pdf", "/latin1", "/sjis"))
    elif ex.path == "/malformed":
        await ex.page(
            '<html><body><div><a href="/from-malformed">x<table><tr><td><a href=/m2>'
            "<<<>>> <p <b></div></span>\x00\x01 <a href='/m3'"
        )
    elif ex.path == "/png-html":
        await ex.page(links("/never-followed"), ctype="image/png")
    elif ex.path == "/pdf":
        await ex.page(
            b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n" + bytes(range(256)) * 20
        )
    elif ex.path == "/latin1":
        await ex.page(
            "<html><body>caf\xe9 <a href='/latin1-target'>\xe9t\xe9</a></body></html>".encode(
                "cp1252"
            ),
            ctype="text/html; charset=windows-1252",
        )
    elif ex.path == "/sjis":
        body = (
            '<html><head><meta charset="shift_jis"></head><body>日本語 '
            "<a href='/sjis-target'>リンク</a></body></html>"
        ).encode("shift_jis")
        await ex.page(body, ctype="text/html")
    else:
        await ex.page("<html><body>leaf</body></html>")


async def private(ex: Exchange) -> None:
    await ex.page(links("/"))


ROUTES: dict[str, Route] = {
    "throttle": throttle,
    "stuck": stuck,
    "unavail": unavail,
    "slow": slow,
    "redirects": redirects,
    "broken": broken,
    "big": big,
    "weird": weird,
    "private": private,
    "outage": outage,
    "robotsdown": robotsdown,
    "dead": dead,
    "sitemapflood": sitemapflood,
}


async def serve(log_path: str) -> None:
    log = open(log_path, "a", buffering=1)  # noqa: SIM115, ASYNC230  (line-buffered, once)

    def log_line(line: str) -> None:
        if not log.closed:  # handlers still running at shutdown have nothing left to say
            log.write(line + "\n")

    def handler(
        site: str,
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if site == "private":
                log_line(json.dumps({"site": site, "connect": True}))
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                writer.close()
                return
            start, start_wall = time.monotonic(), time.time()
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = [*lines[0].split(" "), "", "", ""][:3]
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (line.partition(":") for line in lines[1:] if line)
            }
            ex = Exchange(site, path, writer, reader)
            try:
                if site == "redirects" and path in ROBOTS_HOPS:
                    await ex.page("", 301, "text/plain", [("Location", ROBOTS_HOPS[path])])
                elif site == "redirects" and path == "/robots-final":
                    await ex.page("User-agent: *\nAllow: /\n", 200, "text/plain")
                elif site == "sitemapflood" and path == "/robots.txt":
                    await ex.page(sitemapflood_robots(ex), 200, "text/plain")
                elif site == "robotsdown" and path == "/robots.txt":
                    await robotsdown_robots(ex)
                elif path == "/robots.txt":
                    await ex.page("", 404, "text/plain")
                else:
                    await ROUTES[site](ex)
            except (ConnectionError, OSError):
                ex.notes["client_gone"] = True
            finally:
                log_line(
                    json.dumps(
                        {
                            "site": site,
                            "method": method,
                            "path": path,
                            "headers": headers,
                            "start": start,
                            "end": time.monotonic(),
                            "start_wall": start_wall,
                            "end_wall": time.time(),
                            "status": ex.status,
                            "sent": ex.sent,
                            **ex.notes,
                        }
                    )
                )
                if not writer.is_closing():
                    writer.close()

        return handle

    servers = []
    ports = {}
    for site in (*SITES, *OUTAGE_SITES, "sitemapflood"):
        server = await asyncio.start_server(handler(site), ADDRESSES.get(site, "127.0.0.1"), 0)
        servers.append(server)
        ports[site] = server.sockets[0].getsockname()[1]
    print(json.dumps({"ports": ports}), flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # serve until the test closes our stdin
    for server in servers:
        server.close()
    log.close()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))

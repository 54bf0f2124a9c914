"""Requests/s and client CPU per request for aiohttp, httpx, impit and pycurl against a local
server (a client that is not installed is left out; impit comes with the ``bench`` extra).

The server runs in a subprocess (so its CPU is not billed to the client) on 127.0.0.1 and
answers every request on a keep-alive connection with the same ~30 KB page. Each client
makes REQUESTS requests with CONCURRENCY in flight and reads every body in full.

    /work/venv/bin/python benchmarks/http_clients_bench.py [--requests N] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from io import BytesIO

CONCURRENCY = 20
CLIENTS = ("aiohttp", "httpx", "impit", "pycurl")
PAGE = b"<html><body>" + b"<p>crawlspace benchmark page</p>\n" * 930 + b"</body></html>"


class _Server(asyncio.Protocol):
    """Minimal HTTP/1.1 keep-alive responder: one canned response per request head seen."""

    RESPONSE = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(PAGE)
    ) + PAGE

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) != -1:
            self.buffer = self.buffer[end + 4 :]
            self.transport.write(self.RESPONSE)


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Server, "127.0.0.1", 0, backlog=256)
    print(server.sockets[0].getsockname()[1], flush=True)
    # Serve until the parent closes our stdin.
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


async def _run_workers(n: int, one: Callable[[], Awaitable[int]]) -> None:
    counter = iter(range(n))

    async def worker() -> None:
        for _ in counter:
            if await one() != len(PAGE):
                raise RuntimeError("short body")

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def bench_aiohttp(url: str, n: int) -> None:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one() -> int:
            async with session.get(url) as resp:
                return len(await resp.read())

        await _run_workers(n, one)


async def bench_httpx(url: str, n: int) -> None:
    import httpx

    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(limits=limits) as client:

        async def one() -> int:
            resp = await client.get(url)
            return len(resp.content)

        await _run_workers(n, one)


async def bench_impit(url: str, n: int) -> None:
    """impit: a Rust-backed client (reqwest, on its own tokio threads; crawlee's default)."""
    import impit

    async with impit.AsyncClient() as client:

        async def one() -> int:
            resp = await client.get(url)
            return len(resp.content)

        await _run_workers(n, one)


def bench_pycurl(url: str, n: int) -> None:
    import pycurl

    multi = pycurl.CurlMulti()
    multi.setopt(pycurl.M_MAX_TOTAL_CONNECTIONS, CONCURRENCY)
    free: list[tuple[pycurl.Curl, BytesIO]] = []
    for _ in range(CONCURRENCY):
        handle = pycurl.Curl()
        handle.setopt(pycurl.URL, url)
        free.append((handle, BytesIO()))
    active: dict[pycurl.Curl, BytesIO] = {}
    started = done = 0
    while done < n:
        while free and started < n:
            handle, buf = free.pop()
            buf.seek(0)
            buf.truncate()
            handle.setopt(pycurl.WRITEDATA, buf)
            multi.add_handle(handle)
            active[handle] = buf
            started += 1
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        _, ok, failed = multi.info_read()
        if failed:
            raise RuntimeError(f"pycurl failures: {failed[:3]}")
        for handle in ok:
            multi.remove_handle(handle)
            if len(active.pop(handle).getvalue()) != len(PAGE):
                raise RuntimeError("short body")
            free.append((handle, BytesIO()))
            done += 1
        if not ok:
            multi.select(1.0)
    for handle, _ in free:
        handle.close()
    multi.close()


def measure(name: str, url: str, n: int) -> tuple[float, float]:
    """(requests per second, client CPU milliseconds per request) for one round."""
    run: Callable[[], object]
    if name == "pycurl":
        run = lambda: bench_pycurl(url, n)  # noqa: E731 - keeps the three cases uniform
    else:
        coro = {"aiohttp": bench_aiohttp, "httpx": bench_httpx, "impit": bench_impit}[name]
        run = lambda: asyncio.run(coro(url, n))  # noqa: E731
    wall0, cpu0 = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return n / wall, cpu / n * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve())
        return
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/page"
        rows = []
        for name in CLIENTS:
            if importlib.util.find_spec(name) is None:
                print(f"{name}: not importable, left out", file=sys.stderr)
                continue
            measure(name, url, 200)  # warm-up: imports, first connections
            results = [measure(name, url, args.requests) for _ in range(args.rounds)]
            rps = statistics.median(r for r, _ in results)
            cpu = statistics.median(c for _, c in results)
            rows.append((name, rps, cpu))
    finally:
        server.communicate(timeout=10)
    print(
        f"\n{args.requests} GETs of a {len(PAGE) / 1024:.1f} KiB page, {CONCURRENCY} concurrent, "
        f"127.0.0.1, median of {args.rounds} rounds; Python {sys.version.split()[0]}\n"
    )
    print("| client | requests/s | client CPU ms/request |")
    print("|---|---:|---:|")
    for name, rps, cpu in rows:
        print(f"| {name} | {rps:,.0f} | {cpu:.3f} |")


if __name__ == "__main__":
    main()

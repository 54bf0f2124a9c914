"""`crawlspace serve DIR`: the live dashboard, a small aiohttp app reading crawl.db read-only.

It binds to 127.0.0.1 by default: the page shows every URL of the crawl and is meant for the
operator's own machine (reach it remotely through an SSH tunnel rather than a public bind).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from crawlspace.dashboard.data import SharedFrontier, snapshot
from crawlspace.dashboard.page import ASSETS, asset, served_page
from crawlspace.errors import ConfigError

LOOPBACK = "127.0.0.1"
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
_CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css"}


def _hostname(host: str) -> str:
    """The name in a Host header, without its port ("[::1]:80" -> "[::1]")."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.split(":", 1)[0].lower()


def make_app(out_dir: Path | str, frontier: SharedFrontier | None = None) -> web.Application:
    """The dashboard of the crawl in ``out_dir`` (of a worker: ``frontier`` is its shared
    frontier, whose crawl-wide figures it shows)."""
    page = served_page()

    async def index(_: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    async def static(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in ASSETS:  # a fixed list: no path from the request touches the disk
            raise web.HTTPNotFound
        suffix = name[name.rfind(".") :]
        return web.Response(
            text=asset(name),
            content_type=_CONTENT_TYPES[suffix],
            headers={"Cache-Control": "max-age=3600"},
        )

    async def api_snapshot(_: web.Request) -> web.Response:
        # SQLite reads block; keep them off the event loop so slow queries do not stall it.
        data = await asyncio.to_thread(snapshot, out_dir, frontier)
        return web.json_response(data, headers={"Cache-Control": "no-store"})

    @web.middleware
    async def loopback_names_only(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        # DNS rebinding: a page the operator visits could point its own name at 127.0.0.1 and
        # read the crawl through the browser. Only loopback names reach the dashboard.
        if _hostname(request.host) not in _LOOPBACK_NAMES:
            raise web.HTTPForbidden(text="the dashboard answers only on a loopback address\n")
        response = await handler(request)
        response.headers["X-Frame-Options"] = "DENY"  # no framing by other sites either
        return response

    app = web.Application(middlewares=[loopback_names_only])
    app.add_routes(
        [
            web.get("/", index),
            web.get("/static/{name}", static),
            web.get("/api/snapshot", api_snapshot),
        ]
    )
    return app


class DashboardServer:
    """The dashboard in a background thread with its own event loop (used by `crawl --dashboard`
    and by tests); ``port=0`` picks a free port."""

    def __init__(
        self,
        out_dir: Path | str,
        port: int = 0,
        host: str = LOOPBACK,
        frontier: SharedFrontier | None = None,
    ) -> None:
        self.out_dir = out_dir
        self.frontier = frontier
        self.host = host
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    async def _start(self, sock: socket.socket) -> None:
        self._runner = web.AppRunner(make_app(self.out_dir, self.frontier), access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()

    def start(self) -> DashboardServer:
        try:
            sock = bound_socket(self.host, self.port)  # a busy port: one line, before anything
        except ConfigError:
            self._loop.close()
            raise
        self.port = int(sock.getsockname()[1])
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(sock), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            runner = self._runner
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop).result(timeout=10)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> DashboardServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def bound_socket(host: str, port: int) -> socket.socket:
    """A listening address for the dashboard, or one clear line saying why there is none."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot serve the dashboard on {host}:{port}: {exc.strerror or exc}; choose another"
            " port (0 takes any free one)"
        ) from None
    return sock


def serve_forever(out_dir: Path | str, port: int, host: str = LOOPBACK) -> None:
    """Run until interrupted (Ctrl-C)."""
    sock = bound_socket(host, port)
    port = int(sock.getsockname()[1])
    print(f"crawlspace dashboard for {out_dir} at http://{host}:{port}/ (Ctrl-C stops it)")
    web.run_app(make_app(out_dir), sock=sock, print=None, access_log=None)

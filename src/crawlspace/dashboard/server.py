"""`crawlspace serve DIR`: the live dashboard, a small aiohttp app reading crawl.db read-only.

It binds to 127.0.0.1 by default: the page shows every URL of the crawl and is meant for the
operator's own machine (reach it remotely through an SSH tunnel rather than a public bind).

It also steers the crawl (pause, resume, stop, add seeds) through the crawl's control channel
(store/control.py). A state-changing call must carry the token the served page holds
(``X-Crawlspace-Token``): another site's page in the operator's browser can send a request to
127.0.0.1 but can neither read the page for its token nor add the header without a CORS
preflight, which this server never grants.
"""

from __future__ import annotations

import asyncio
import secrets
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from crawlspace.dashboard.data import SharedFrontier, host_queue, snapshot
from crawlspace.dashboard.page import ASSETS, asset, served_page
from crawlspace.errors import ConfigError, OutputDirError
from crawlspace.store.control import CONTROL_FILE, CrawlControl, FileControl
from crawlspace.urls import normalize_with_reason

LOOPBACK = "127.0.0.1"
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
_CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css"}
TOKEN_HEADER = "X-Crawlspace-Token"


def _hostname(host: str) -> str:
    """The name in a Host header, without its port ("[::1]:80" -> "[::1]")."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.split(":", 1)[0].lower()


def make_app(
    out_dir: Path | str,
    frontier: SharedFrontier | None = None,
    control: CrawlControl | None = None,
) -> web.Application:
    """The dashboard of the crawl in ``out_dir`` (of a worker: ``frontier`` is its shared
    frontier, whose crawl-wide figures it shows); with ``control``, its steering too."""
    token = secrets.token_urlsafe(24)
    page = served_page(token if control is not None else None)

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
        if control is not None:
            state = await asyncio.to_thread(control.state)
            data["control"] = {"paused": state.paused}
        return web.json_response(data, headers={"Cache-Control": "no-store"})

    async def api_host(request: web.Request) -> web.Response:
        host_key = request.query.get("key", "")
        if not host_key:
            raise web.HTTPBadRequest(text="which host? /api/host?key=http://HOST[:PORT]\n")
        try:
            data = await asyncio.to_thread(host_queue, out_dir, host_key, frontier)
        except OutputDirError as exc:
            raise web.HTTPNotFound(text=f"{exc}\n") from None
        return web.json_response(data, headers={"Cache-Control": "no-store"})

    async def api_control(request: web.Request) -> web.Response:
        if control is None:
            raise web.HTTPNotFound(text="this dashboard does not steer a crawl\n")
        if not secrets.compare_digest(request.headers.get(TOKEN_HEADER, ""), token):
            raise web.HTTPForbidden(text="a command needs the token of the dashboard's page\n")
        try:
            command = await request.json()
            done = await asyncio.to_thread(apply_command, control, command)
        except (ValueError, TypeError, KeyError) as exc:
            raise web.HTTPBadRequest(text=f"{exc}\n") from None
        return web.json_response(done, headers={"Cache-Control": "no-store"})

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
            web.get("/api/host", api_host),
            web.post("/api/control", api_control),
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
        control: CrawlControl | None = None,
    ) -> None:
        self.out_dir = out_dir
        self.frontier = frontier
        self.control = control
        self.host = host
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    async def _start(self, sock: socket.socket) -> None:
        app = make_app(self.out_dir, self.frontier, self.control)
        self._runner = web.AppRunner(app, access_log=None)
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
    """Run until interrupted (Ctrl-C); commands go to the crawl through DIR/control.db."""
    sock = bound_socket(host, port)
    port = int(sock.getsockname()[1])
    print(f"crawlspace dashboard for {out_dir} at http://{host}:{port}/ (Ctrl-C stops it)")
    control = FileControl(Path(out_dir) / CONTROL_FILE) if Path(out_dir).is_dir() else None
    app = make_app(out_dir, control=control)
    web.run_app(app, sock=sock, print=None, access_log=None)


def apply_command(control: CrawlControl, command: dict[str, Any]) -> dict[str, Any]:
    """``{"command": "pause" | "resume" | "stop"}`` or ``{"command": "seeds", "seeds": [...]}``;
    the seeds are checked here (one line for the first that is no URL), normalized by the
    crawl when it takes them."""
    name = command["command"]
    if name == "pause":
        control.pause()
    elif name == "resume":
        control.resume()
    elif name == "stop":
        control.stop()
    elif name == "seeds":
        seeds = [str(url).strip() for url in command["seeds"] if str(url).strip()]
        for url in seeds:
            _, reason = normalize_with_reason(url)
            if reason is not None or not url.startswith(("http://", "https://")):
                raise ValueError(f"seed {url!r} is not a usable http(s) URL")
        control.add_seeds(seeds)
        return {"ok": True, "seeds": len(seeds)}
    else:
        raise ValueError(f"unknown command {name!r}: pause, resume, stop or seeds")
    return {"ok": True, "paused": control.state().paused}

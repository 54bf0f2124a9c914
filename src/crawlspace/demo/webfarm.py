"""A real multi-host web on loopback, with a server-side request log.

Every site gets its own HTTP/1.1 server on an ephemeral 127.0.0.1 port; all of them run
on one background thread with its own asyncio loop (aiohttp's low-level server, which
does keep-alive and concurrent requests). The log records when each request arrived and
when its response was fully written, so politeness can be judged from the server's side
with the pure checkers `max_concurrency` and `min_gap` (request_log.py). What the sites
answer is sites.py's; both are re-exported here.

The server ignores the Host header (it only logs it), so a crawler can address these
servers under made-up names such as ``www.demo.test`` resolved to 127.0.0.1:PORT.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Self

from aiohttp import web

from crawlspace.demo.request_log import LoggedRequest, max_concurrency, min_gap
from crawlspace.demo.sites import (
    Response,
    RouteFn,
    Site,
    html,
    html_site,
    normalize_lookup_path,
    robots_txt,
    sitemap_xml,
)

__all__ = [
    "LoggedRequest",
    "Response",
    "RouteFn",
    "Site",
    "SiteFactory",
    "WebFarm",
    "html",
    "html_site",
    "max_concurrency",
    "min_gap",
    "normalize_lookup_path",
    "robots_txt",
    "sitemap_xml",
]

# Long enough for a slow (delay) request in flight to finish, short enough that a test
# tearing the farm down never hangs on a client that keeps a socket open.
_SHUTDOWN_TIMEOUT = 1.0
_START_TIMEOUT = 10.0


SiteFactory = Callable[[Mapping[str, int]], Mapping[str, Site]]
"""Builds the sites once their ports are known (name -> port), for self-referencing links."""


class WebFarm:
    """One loopback HTTP server per site, on one background thread.

    Use as ``with WebFarm({"a": site}) as farm: farm.url("a", "/")``. When pages must
    contain their own absolute URLs, use ``WebFarm.deferred(names, factory)``: ports are
    bound first and `factory` receives them.
    """

    def __init__(self, sites: Mapping[str, Site]) -> None:
        self._sites: dict[str, Site] = dict(sites)
        self._factory: SiteFactory | None = None
        self._names: tuple[str, ...] = tuple(sites)
        self._ports: dict[str, int] = {}
        self._log: list[LoggedRequest] = []
        self._active: dict[str, int] = {}  # requests arrived but not yet logged, per site
        self._lock = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runners: list[web.ServerRunner] = []

    @classmethod
    def deferred(cls, names: Sequence[str], factory: SiteFactory) -> WebFarm:
        farm = cls({})
        farm._names = tuple(names)
        farm._factory = factory
        return farm

    # -- lifecycle ---------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("WebFarm already started")
        socks = self._bind_all()
        try:
            if self._factory is not None:
                self._sites = dict(self._factory(dict(self._ports)))
                missing = set(self._names) - set(self._sites)
                if missing:
                    raise ValueError(f"site factory did not build sites {sorted(missing)}")
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._thread = threading.Thread(
                target=loop.run_forever, name="crawlspace-webfarm", daemon=True
            )
            self._thread.start()
            started = asyncio.run_coroutine_threadsafe(self._serve(socks), loop)
            started.result(timeout=_START_TIMEOUT)
        except BaseException:
            for sock in socks.values():
                sock.close()
            self.stop()
            raise

    def _bind_all(self) -> dict[str, socket.socket]:
        socks: dict[str, socket.socket] = {}
        for name in self._names:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks[name] = sock
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            self._ports[name] = sock.getsockname()[1]
        return socks

    async def _serve(self, socks: Mapping[str, socket.socket]) -> None:
        for name, sock in socks.items():
            server = web.Server(self._handler_for(name), access_log=None)
            runner = web.ServerRunner(server, shutdown_timeout=_SHUTDOWN_TIMEOUT)
            await runner.setup()
            self._runners.append(runner)
            await web.SockSite(runner, sock).start()

    async def _shutdown(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    def stop(self) -> None:
        """Stop all servers and the thread; bounded by the shutdown timeout."""
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        if thread is not None and thread.is_alive():
            done = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            try:
                done.result(timeout=_SHUTDOWN_TIMEOUT * len(self._names) + 2.0)
            finally:
                loop.call_soon_threadsafe(loop.stop)
                thread.join(timeout=5.0)
        if thread is None or not thread.is_alive():
            loop.close()
        self._loop = None
        self._thread = None

    # -- serving -----------------------------------------------------------------

    def _handler_for(self, name: str) -> Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]:
        async def handle(request: web.BaseRequest) -> web.StreamResponse:
            started = time.monotonic()
            status = 0
            with self._lock:
                self._active[name] = self._active.get(name, 0) + 1
            try:
                answer = self._sites[name].respond(request.raw_path)
                if answer.delay > 0:
                    await asyncio.sleep(answer.delay)
                resp, body = _prepare(request, answer)
                status = resp.status
                await resp.prepare(request)
                await resp.write_eof(b"" if request.method == "HEAD" else body)
                return resp
            finally:
                self._record(name, request, started, status)

        return handle

    def _record(self, name: str, request: web.BaseRequest, started: float, status: int) -> None:
        headers: dict[str, str] = {}
        for key, value in request.headers.items():
            low = key.lower()
            headers[low] = f"{headers[low]}, {value}" if low in headers else value
        entry = LoggedRequest(
            site=name,
            method=request.method,
            path_qs=request.raw_path,
            headers=headers,
            started_at=started,
            ended_at=time.monotonic(),
            status=status,
        )
        with self._lock:
            self._log.append(entry)
            self._active[name] -= 1
            self._lock.notify_all()

    # -- addressing and the log ----------------------------------------------------

    def port(self, name: str) -> int:
        try:
            return self._ports[name]
        except KeyError:
            raise KeyError(
                f"no port for site {name!r}: known sites {list(self._names)}; is the farm started?"
            ) from None

    def host_key(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port(name)}"

    def url(self, name: str, path: str = "/") -> str:
        return self.host_key(name) + (path if path.startswith("/") else "/" + path)

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._log)

    def requests_for(self, name: str) -> list[LoggedRequest]:
        return [r for r in self.requests if r.site == name]

    def paths_for(self, name: str) -> list[str]:
        return [r.path_qs for r in self.requests_for(name)]

    def in_flight(self, name: str) -> int:
        """Requests to `name` that have arrived but are not logged yet (still responding)."""
        with self._lock:
            return self._active.get(name, 0)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Block until no request is in flight; False if `timeout` passed first.

        A client can read a whole response before the server thread logs it, so call
        this before reading the log right after your last request.
        """
        with self._lock:
            return self._lock.wait_for(lambda: not any(self._active.values()), timeout)

    def clear_log(self) -> None:
        with self._lock:
            self._log.clear()


def _accepts_gzip(request: web.BaseRequest) -> bool:
    offered = request.headers.get("Accept-Encoding", "")
    return any(part.split(";")[0].strip().lower() == "gzip" for part in offered.split(","))


def _body(request: web.BaseRequest, answer: Response) -> bytes:
    if answer.compress and _accepts_gzip(request):
        # mtime=0 keeps the bytes deterministic across runs.
        return gzip.compress(answer.body, mtime=0)
    return answer.body


def _not_modified(request: web.BaseRequest, answer: Response) -> bool:
    """RFC 9110 §13.1.2/§13.1.3, exact-match only: enough for revisit tests."""
    etag = answer.headers.get("ETag")
    if etag is not None and "If-None-Match" in request.headers:
        return etag in [t.strip() for t in request.headers["If-None-Match"].split(",")]
    modified = answer.headers.get("Last-Modified")
    return modified is not None and request.headers.get("If-Modified-Since") == modified


def _prepare(request: web.BaseRequest, answer: Response) -> tuple[web.StreamResponse, bytes]:
    ok = 200 <= answer.status < 300
    if ok and request.method in ("GET", "HEAD") and _not_modified(request, answer):
        resp = web.StreamResponse(status=304)
        for key in ("ETag", "Last-Modified", "Cache-Control"):
            if key in answer.headers:
                resp.headers[key] = answer.headers[key]
        return resp, b""
    resp = web.StreamResponse(status=answer.status)
    resp.headers.update(answer.headers)
    if answer.compress:
        resp.headers["Vary"] = "Accept-Encoding"
        if _accepts_gzip(request):
            resp.headers["Content-Encoding"] = "gzip"
    body = _body(request, answer)
    resp.content_length = len(body)
    return resp, body

"""The rendering tier's browser: headless Chromium driven by Playwright (issue #33). A thin
adapter: it decides nothing about what may be fetched.

Every request the page makes is intercepted and handed to the caller's ``fetch`` (the crawl's
own rules: robots.txt, the address guard, scope and the host's politeness token), which answers
it or refuses it; a refused request is aborted, never made. The browser itself cannot reach the
network at all: its resolver maps every name to nothing and its proxy is a closed port, so a
request that escaped the routing (a WebSocket, a prefetch) fails instead of bypassing the rules.
The page's own document is the response the crawl fetched already: not asked for again.

Budgets are enforced here, not hoped for: one page at a time, a fresh context (no cookies, no
storage) per render, a wall-time limit, a JavaScript heap limit, and a memory limit on the whole
browser (every Chromium process it started, their private memory, read from the OS every
``_MEMORY_POLL`` seconds: buffers, images and canvases live outside the JavaScript heap). A
render past its time or its memory, or whose page crashed (out of its heap), ends in
``RenderError`` and the browser is killed and started afresh for the next one: a script that
loops or allocates forever costs one budget.

Playwright is an optional dependency (``pip install 'crawlspace[render]'``), imported only when
a browser starts; the system's Chromium is used (no download at run time).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "Answer",
    "BrowserRequest",
    "RenderError",
    "RenderResult",
    "Renderer",
    "browser_memory_mb",
    "find_chromium",
]

# Not made by a page's own scripts on purpose: never worth a request (a crawler keeps no state).
_NEVER: Final = frozenset({"websocket", "eventsource", "manifest", "ping", "cspviolationreport"})
_CHROMIUM_NAMES: Final = ("chromium", "chromium-browser", "google-chrome", "chrome")
# The names the OS gives the browser's processes (the browser, its zygotes, renderers, GPU and
# utility processes all run the one executable).
_PROCESS_NAMES: Final = ("chrom", "headless_shell")
_MEMORY_POLL: Final = 0.2  # seconds between looks at the browser's memory (each ~2 ms of CPU)
_INIT_SCRIPT: Final = (
    # No channels that routing does not see: they would reach a host outside its token.
    "Object.defineProperty(window, 'WebSocket', {value: undefined});"
    "Object.defineProperty(window, 'RTCPeerConnection', {value: undefined});"
)


@dataclass(frozen=True, slots=True)
class BrowserRequest:
    """One request the page wants: its URL, method, Playwright's resource type (document,
    script, stylesheet, image, font, media, xhr, fetch, ...) and the headers it would send."""

    url: str
    method: str
    resource_type: str
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class Answer:
    """A response to give the page."""

    status: int
    headers: Sequence[tuple[str, str]]
    body: bytes


@dataclass(slots=True)
class RenderResult:
    """The page's DOM after its scripts ran, what its requests came to (URL, resource type,
    what the fetch said: "answered", or why not), the bytes answered and the browser's time."""

    url: str
    html: str
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    bytes: int = 0
    seconds: float = 0.0


class RenderError(Exception):
    """The render failed (``reason``: timeout, memory, crashed, browser); the page keeps its
    HTTP version."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


Fetch = Callable[[BrowserRequest], Awaitable[Answer | str]]


def find_chromium() -> str | None:
    """The system's Chromium, if there is one."""
    for name in _CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class Renderer:
    """Renders one page at a time in a headless Chromium that is started on first use and
    again after a render it had to kill."""

    def __init__(
        self,
        *,
        user_agent: str,
        timeout: float = 30.0,
        settle: float = 0.5,
        heap_mb: int = 512,
        memory_mb: int = 1024,
        executable: str | None = None,
    ) -> None:
        self._user_agent = user_agent
        self._timeout = timeout
        self._settle = settle  # quiet seconds (no request in flight) that end a render
        self._heap_mb = heap_mb  # one page's JavaScript heap
        self._memory_mb = memory_mb  # the whole browser's private memory
        self._executable = executable or find_chromium()
        self._playwright: Any = None
        self._browser: Any = None
        self._lock = asyncio.Lock()  # one page at a time

    async def render(
        self, url: str, document: Answer, fetch: Fetch, *, within: float | None = None
    ) -> RenderResult:
        """Render ``url`` from its already fetched ``document``, every other request through
        ``fetch`` (an ``Answer``, or a reason it was refused), within ``within`` seconds
        (None: the renderer's own limit; never more)."""
        limit = self._timeout if within is None else min(within, self._timeout)
        async with self._lock:
            context = await self._new_context()
            result = RenderResult(url, "")
            started = time.monotonic()
            try:
                async with asyncio.timeout(limit):
                    await self._within_memory(
                        self._render_in(context, url, document, fetch, result), url
                    )
            except TimeoutError:
                await self._kill()
                raise RenderError("timeout", f"{url}: not rendered within {limit:.1f} s") from None
            except RenderError:
                await self._kill()
                raise
            except Exception as exc:  # Playwright's own errors (a navigation refused, a
                # browser gone): a failed render, never a failed visit; the page keeps its fetch.
                await self._kill()
                raise RenderError("browser", f"{url}: {exc}") from exc
            finally:
                result.seconds = time.monotonic() - started
                if self._browser is not None:
                    await _quietly(context.close())
            return result

    async def _render_in(
        self, context: Any, url: str, document: Answer, fetch: Fetch, result: RenderResult
    ) -> None:
        page = await context.new_page()
        crashed = asyncio.Event()
        page.on("crash", lambda _page: crashed.set())
        await context.add_init_script(_INIT_SCRIPT)
        busy = _InFlight()
        first = [True]

        async def route(route: Any, request: Any) -> None:
            with busy:
                if first[0] and request.url == url and request.resource_type == "document":
                    first[0] = False  # the page itself: the crawl fetched it already
                    await route.fulfill(
                        status=document.status,
                        headers=_headers(document.headers),
                        body=document.body,
                    )
                    return
                answer = await _answer(request, fetch)
                result.requests.append(
                    (
                        request.url,
                        request.resource_type,
                        "answered" if isinstance(answer, Answer) else answer,
                    )
                )
                if isinstance(answer, Answer):
                    result.bytes += len(answer.body)
                    await route.fulfill(
                        status=answer.status, headers=_headers(answer.headers), body=answer.body
                    )
                else:
                    await route.abort("blockedbyclient")

        await context.route("**/*", route)
        loading = asyncio.ensure_future(page.goto(url, wait_until="load"))
        crash = asyncio.ensure_future(crashed.wait())
        done, _ = await asyncio.wait({loading, crash}, return_when=asyncio.FIRST_COMPLETED)
        if crash in done:
            loading.cancel()
            raise RenderError("crashed", f"{url}: the page crashed (out of memory?)")
        crash.cancel()
        loading.result()
        await busy.quiet(self._settle, crashed)
        if crashed.is_set():
            raise RenderError("crashed", f"{url}: the page crashed (out of memory?)")
        result.html = await page.content()

    async def _within_memory(self, rendering: Awaitable[None], url: str) -> None:
        """``rendering`` to its end, unless the browser's memory passes its limit first (a
        RenderError "memory"; the caller kills the browser)."""
        task = asyncio.ensure_future(rendering)
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=_MEMORY_POLL)
                used = 0.0 if task.done() else browser_memory_mb()
                if used > self._memory_mb:
                    raise RenderError(
                        "memory",
                        f"{url}: the browser used {used:.0f} MB (limit {self._memory_mb} MB)",
                    )
            task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})

    async def _new_context(self) -> Any:
        """A fresh context (no cookies, no storage) in the browser, started if need be; a
        browser that will not start or answer is a failed render (RenderError)."""
        try:
            browser = await self._started()
            return await browser.new_context(
                user_agent=self._user_agent, service_workers="block", accept_downloads=False
            )
        except RenderError:
            raise
        except Exception as exc:  # Playwright's own errors: the next render starts afresh
            await self._kill()
            raise RenderError("browser", f"the browser did not start: {exc}") from exc

    async def _started(self) -> Any:
        if self._browser is not None:
            return self._browser
        if self._executable is None:
            raise RenderError(
                "browser", "no Chromium found: install chromium (apt-get install chromium)"
            )
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            raise RenderError(
                "browser", "rendering needs Playwright: pip install 'crawlspace[render]'"
            ) from None
        self._playwright = await async_playwright().start()
        self._browser = await self._playwright.chromium.launch(
            executable_path=self._executable,
            headless=True,
            args=_chromium_args(self._heap_mb),
        )
        return self._browser

    async def _kill(self) -> None:
        """The browser, stopped hard (a looping or swollen page holds its renderer): the next
        render starts a fresh one. If it will not close, Playwright's driver goes with it
        (stopping the driver ends the browser process it started)."""
        browser, self._browser = self._browser, None
        if browser is None:
            return
        if not await _quietly(browser.close(), seconds=5.0) and self._playwright is not None:
            playwright, self._playwright = self._playwright, None
            await _quietly(playwright.stop())

    async def close(self) -> None:
        await self._kill()
        if self._playwright is not None:
            await _quietly(self._playwright.stop())
            self._playwright = None


def browser_memory_mb() -> float:
    """The private memory (resident, not shared) of every browser process this process
    started, in MB: what the browser costs the machine beyond the libraries it shares."""
    import psutil  # the render extra's; imported only once a browser runs

    total = 0
    for process in psutil.Process().children(recursive=True):
        try:
            if process.name().startswith(_PROCESS_NAMES):
                info = process.memory_info()
                total += max(0, info.rss - getattr(info, "shared", 0))
        except psutil.Error:  # gone between the listing and the look: it holds nothing now
            continue
    return total / 2**20


def _chromium_args(heap_mb: int) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        # The browser reaches nothing by itself: no name resolves, and the proxy is a port
        # nothing listens on (every request is answered through routing instead).
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=127.0.0.1:9",
        f"--js-flags=--max-old-space-size={heap_mb}",
    ]


async def _answer(request: Any, fetch: Fetch) -> Answer | str:
    if request.method not in ("GET", "HEAD"):
        return "method"  # a crawler reads; it never submits
    if request.resource_type in _NEVER:
        return "resource_type"
    headers = await request.all_headers()
    return await fetch(BrowserRequest(request.url, request.method, request.resource_type, headers))


def _headers(headers: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Headers for the browser: the body is given decoded, so no encoding or length of the
    wire form; repeated names joined as HTTP allows."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in ("content-encoding", "content-length", "transfer-encoding"):
            continue
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


class _InFlight:
    """Requests being answered, and when the last one ended: a render ends once none has been
    in flight for ``settle`` seconds (the page's scripts asked for all they wanted)."""

    def __init__(self) -> None:
        self.count = 0
        self.last = time.monotonic()

    def __enter__(self) -> None:
        self.count += 1

    def __exit__(self, *exc: object) -> None:
        self.count -= 1
        self.last = time.monotonic()

    async def quiet(self, settle: float, crashed: asyncio.Event) -> None:
        while not crashed.is_set():
            idle = time.monotonic() - self.last
            if self.count == 0 and idle >= settle:
                return
            await asyncio.sleep(max(0.05, settle - idle) if self.count == 0 else 0.05)


async def _quietly(closing: Awaitable[Any], seconds: float = 10.0) -> bool:
    """Close something that may already be gone (a killed browser's context): whether it
    closed in time."""
    try:
        async with asyncio.timeout(seconds):
            await closing
    except Exception:  # a dying browser raises anything; it is gone either way
        return False
    return True

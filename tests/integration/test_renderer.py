"""The rendering tier's browser (render/browser.py) in a real headless Chromium, judged by the
server's own request log: a page that builds its links in JavaScript from a JSON endpoint is
rendered with every request the page made answered through the caller's rules (the crawl's
own, in the next step; here a small stand-in with the real transport and its address guard),
nothing the rules refuse reaches the server, the page itself is not asked for again, and a
script that loops forever or allocates without end costs one render, not the renderer."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from selectolax.lexbor import LexborHTMLParser

from crawlspace.config import CrawlConfig
from crawlspace.crawl.setup import fetch_settings
from crawlspace.demo.sites import Response
from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.fetch.aiohttp_transport import AiohttpTransport
from crawlspace.fetch.transport import FetchRequest
from crawlspace.render.browser import (
    Answer,
    BrowserRequest,
    Renderer,
    RenderError,
    RenderResult,
    browser_memory_mb,
    find_chromium,
)

pytestmark = pytest.mark.slow  # a browser start and renders of seconds (README)

LINKS = ["/docs/intro.html", "/docs/guide.html", "/blog/2026/hello.html"]
APP_JS = """
fetch('/api/links.json').then(r => r.json()).then(paths => {
  const app = document.getElementById('app');
  for (const path of paths) {
    const a = document.createElement('a'); a.href = path; a.textContent = 'go ' + path;
    app.appendChild(a);
  }
  const p = document.createElement('p'); p.textContent = 'Rendered text of the app.';
  app.appendChild(p);
});
fetch('/private/secret.json').catch(() => {});
fetch('http://169.254.169.254/latest/meta-data/').catch(() => {});
fetch('/api/save', {method: 'POST', body: 'x'}).catch(() => {});
"""
PAGES = {
    "/": '<html><body><div id="app"></div><img src="/big.png"><script src="/app.js"></script>'
    "</body></html>",
    "/loop.html": "<html><body><script>while (true) {}</script></body></html>",
    "/hog.html": "<html><body><script>const a = [];"
    " while (true) { a.push(new Array(1e6).fill(7)); }</script></body></html>",
    # Buffers live outside the JavaScript heap: its limit never stops them (16 MB each, one
    # every 40 ms: the browser's limit is passed by little when it is seen, and by 3 GB at most
    # should it not be).
    "/buffers.html": "<html><body><script>const keep = []; while (true) {"
    " const b = new Uint8Array(16 << 20); b.fill(7); keep.push(b);"
    " const t = Date.now(); while (Date.now() - t < 40) {} }</script></body></html>",
}


def _site() -> WebFarm:
    extra = {
        "/app.js": Response(200, {"Content-Type": "text/javascript"}, APP_JS.encode()),
        "/api/links.json": Response(
            200, {"Content-Type": "application/json"}, json.dumps(LINKS).encode()
        ),
        "/private/secret.json": Response(200, {"Content-Type": "application/json"}, b"{}"),
        "/api/save": Response(200, {"Content-Type": "application/json"}, b"{}"),
        "/big.png": Response(200, {"Content-Type": "image/png"}, b"\x89PNG" + b"0" * 50_000),
    }
    return WebFarm({"site": html_site("site", PAGES, extra=extra)})


class Rules:
    """A stand-in for the crawl's rules: this site only, /private/ disallowed, no images;
    everything else fetched with the real transport (whose guard refuses metadata)."""

    def __init__(self, transport: AiohttpTransport, origin: str) -> None:
        self.transport = transport
        self.origin = origin

    async def __call__(self, request: BrowserRequest) -> Answer | str:
        if request.resource_type in ("image", "media", "font"):
            return "resource_type"
        if request.url.startswith(self.origin + "/private/"):
            return "robots"
        try:
            response = await self.transport.fetch(FetchRequest(request.url))
        except Exception as exc:  # (the reason is what the test reads)
            return type(exc).__name__
        return Answer(response.status, response.headers, response.body)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = find_chromium()
    if found is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run does this)")
    pytest.importorskip("playwright.async_api")
    return found


def test_a_page_is_rendered_with_every_request_through_the_rules(chromium: str) -> None:
    with _site() as farm:
        origin = farm.url("site", "/").rstrip("/")

        async def main() -> RenderResult:
            transport = AiohttpTransport(fetch_settings(CrawlConfig(allow_nets=("127.0.0.0/8",))))
            renderer = Renderer(user_agent="TestBot/1.0", timeout=20.0, executable=chromium)
            try:
                first = await transport.fetch(FetchRequest(origin + "/"))  # the HTTP tier's
                document = Answer(first.status, first.headers, first.body)
                return await renderer.render(origin + "/", document, Rules(transport, origin))
            finally:
                await renderer.close()
                await transport.close()

        result = asyncio.run(main())
        assert farm.wait_idle()
        served = [r.path_qs for r in farm.requests_for("site")]
    tree = LexborHTMLParser(result.html)
    hrefs = [a.attributes.get("href") for a in tree.css("#app a")]
    assert hrefs == LINKS
    assert "Rendered text of the app." in tree.body.text()
    # The server saw the page once (the HTTP tier's fetch) and only what the rules allowed.
    assert sorted(served) == sorted(["/", "/app.js", "/api/links.json"])
    said = {url.removeprefix(origin): why for url, _, why in result.requests}
    assert said["/app.js"] == said["/api/links.json"] == "answered"
    assert said["/private/secret.json"] == "robots"
    assert said["/big.png"] == "resource_type"
    assert said["/api/save"] == "method"  # a crawler never submits
    assert said["http://169.254.169.254/latest/meta-data/"] == "BlockedAddressError"
    assert result.bytes == len(APP_JS.encode()) + len(json.dumps(LINKS).encode())


def test_a_looping_or_swelling_script_costs_one_render(chromium: str) -> None:
    with _site() as farm:
        origin = farm.url("site", "/").rstrip("/")

        async def main() -> list[str]:
            transport = AiohttpTransport(fetch_settings(CrawlConfig(allow_nets=("127.0.0.0/8",))))
            renderer = Renderer(
                user_agent="TestBot/1.0", timeout=4.0, heap_mb=64, executable=chromium
            )
            outcomes: list[str] = []
            try:
                for path in ("/loop.html", "/hog.html", "/"):
                    got = await transport.fetch(FetchRequest(origin + path))
                    document = Answer(got.status, got.headers, got.body)
                    started = time.monotonic()
                    try:
                        result = await renderer.render(
                            origin + path, document, Rules(transport, origin)
                        )
                        outcomes.append("rendered" if "go /docs/intro.html" in result.html else "?")
                    except RenderError as exc:
                        outcomes.append(exc.reason)
                    assert time.monotonic() - started < 4.0 + 10.0  # the budget, then the kill
            finally:
                await renderer.close()
                await transport.close()
            return outcomes

        outcomes = asyncio.run(main())
    assert outcomes[0] == "timeout"
    assert outcomes[1] == "crashed"  # out of its JavaScript heap: the tab dies
    assert outcomes[2] == "rendered"  # a fresh browser after the kills


def test_a_browser_that_will_not_start_is_a_failed_render() -> None:
    """Playwright's own errors are a failed render (the page keeps its fetch), never a
    failed visit."""
    pytest.importorskip("playwright.async_api")
    renderer = Renderer(user_agent="TestBot/1.0", timeout=20.0, executable="/bin/true")

    async def refuse(request: BrowserRequest) -> Answer | str:
        return "never asked"

    async def main() -> None:
        try:
            await renderer.render("http://app.test/", Answer(200, [], b"<p>x</p>"), refuse)
        finally:
            await renderer.close()

    started = time.monotonic()
    with pytest.raises(RenderError) as failed:
        asyncio.run(main())
    assert failed.value.reason == "browser"
    assert time.monotonic() - started < 20.0


def test_a_browser_past_its_memory_limit_is_stopped(chromium: str) -> None:
    """A page whose buffers (outside the JavaScript heap) grow without end is stopped by the
    limit on the whole browser's memory, long before its time is up; the next page renders in
    a fresh browser."""
    with _site() as farm:
        origin = farm.url("site", "/").rstrip("/")

        async def main() -> list[tuple[str, float]]:
            transport = AiohttpTransport(fetch_settings(CrawlConfig(allow_nets=("127.0.0.0/8",))))
            renderer = Renderer(
                user_agent="TestBot/1.0", timeout=8.0, memory_mb=400, executable=chromium
            )
            outcomes: list[tuple[str, float]] = []
            try:
                for path in ("/buffers.html", "/"):
                    got = await transport.fetch(FetchRequest(origin + path))
                    started = time.monotonic()
                    try:
                        result = await renderer.render(
                            origin + path,
                            Answer(got.status, got.headers, got.body),
                            Rules(transport, origin),
                        )
                        outcomes.append(("rendered" if "go /docs" in result.html else "?", 0.0))
                    except RenderError as exc:
                        outcomes.append((exc.reason, time.monotonic() - started))
                    assert browser_memory_mb() < 400  # the swollen browser is gone
            finally:
                await renderer.close()
                await transport.close()
            return outcomes

        (swollen, seconds), (following, _) = asyncio.run(main())
    assert swollen == "memory"
    assert seconds < 5.0  # the memory limit, not the 8 s time limit
    assert following == "rendered"

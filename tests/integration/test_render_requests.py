"""The crawl's rules for a rendered page's requests (crawl/render_requests.py), in a real
Chromium (render/browser.py), judged by the servers' own logs: the page's host is asked one
request at a time, each after its politeness gap; another host only after its own gap, holding
its token; requests robots.txt disallows, out of scope, to a host whose robots.txt is not known,
or for images are never sent; and each request sent is archived."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.addresses import AddressGate, HostGate
from crawlspace.crawl.render_requests import RenderRequests
from crawlspace.crawl.setup import fetch_settings
from crawlspace.demo.request_log import max_concurrency, min_gap
from crawlspace.demo.sites import Response, robots_txt
from crawlspace.demo.webfarm import Site, WebFarm
from crawlspace.fetch.aiohttp_transport import AiohttpTransport
from crawlspace.fetch.transport import FetchRequest, FetchResponse
from crawlspace.frontier.politeness import PolitenessPolicy
from crawlspace.records import Lease, LeaseKind
from crawlspace.render.browser import Answer, Renderer, RenderResult, find_chromium
from crawlspace.robots import RobotsTxt
from crawlspace.store.memory import MemoryFrontier
from crawlspace.urls import host_key

pytestmark = pytest.mark.slow  # a browser start and renders of seconds (README)

GAP = 0.4  # the app host's politeness gap: every request to it waits this long after the last
CDN_BUSY = 1.5  # the CDN host was asked just before: its next request may start this much later


def _app_js(other: str) -> str:
    return f"""
fetch('/api/links.json').then(r => r.json()).then(paths => {{
  for (const path of paths) {{
    const a = document.createElement('a'); a.href = path; a.textContent = path;
    document.getElementById('app').appendChild(a);
  }}
}});
fetch('/private/x.json').catch(() => {{}});
fetch('{other}/x.json').catch(() => {{}});
fetch('http://far.invalid/x.json').catch(() => {{}});
"""


def _sites(ports: Mapping[str, int]) -> dict[str, Site]:
    cdn, other = (f"http://127.0.0.1:{ports[name]}" for name in ("cdn", "other"))
    home = (
        '<html><body><div id="app"></div><img src="/logo.png">'
        f'<script src="{cdn}/lib.js"></script><script src="/app.js"></script></body></html>'
    )
    app = {
        "/": Response(200, {"Content-Type": "text/html"}, home.encode()),
        "/app.js": Response(200, {"Content-Type": "text/javascript"}, _app_js(other).encode()),
        "/api/links.json": Response(200, {}, b'["/a.html", "/b.html"]'),
        "/private/x.json": Response(200, {}, b"{}"),
        "/logo.png": Response(200, {"Content-Type": "image/png"}, b"\x89PNG"),
        "/robots.txt": robots_txt("User-agent: *\nDisallow: /private/\n"),
    }
    lib = Response(200, {"Content-Type": "text/javascript"}, b"var lib = 1;")
    return {
        "app": Site("app", app),
        "cdn": Site("cdn", {"/lib.js": lib}),
        "other": Site("other", {"/x.json": Response(200, {}, b"{}")}),
    }


def test_a_rendered_pages_requests_keep_the_crawls_rules() -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run does this)")
    pytest.importorskip("playwright.async_api")
    with WebFarm.deferred(["app", "cdn", "other"], _sites) as farm:
        app, cdn = farm.host_key("app"), farm.host_key("cdn")
        result, requests, archived, cdn_free = asyncio.run(_render(farm, chromium))
        assert farm.wait_idle()
        app_log, cdn_log = farm.requests_for("app"), farm.requests_for("cdn")
        other_log = farm.requests_for("other")
    # Sent: the page (the HTTP tier's fetch), its script and its JSON; one at a time, each
    # after the gap. Never: the disallowed path, the image.
    assert [r.path_qs for r in app_log] == ["/", "/app.js", "/api/links.json"]
    assert max_concurrency(app_log) == 1
    assert (min_gap(app_log) or 0.0) >= GAP - 0.05
    # The other host: once, only after its own gap, with its token.
    assert [r.path_qs for r in cdn_log] == ["/lib.js"]
    assert cdn_log[0].started_at >= cdn_free - 0.05
    assert other_log == []  # its robots.txt is not known: not asked
    said = {url.removeprefix(app): why for url, _, why in result.requests}
    assert said["/private/x.json"] == "robots"
    assert said["/logo.png"] == "resource_type"
    assert said[farm.url("other", "/x.json")] == "robots_unknown"
    assert said["http://far.invalid/x.json"] == "scope"
    assert said["/app.js"] == said["/api/links.json"] == said[cdn + "/lib.js"] == "answered"
    assert sorted(archived) == sorted([app + "/app.js", app + "/api/links.json", cdn + "/lib.js"])
    assert requests.sent == 3
    assert '<a href="/a.html">' in result.html


async def _render(
    farm: WebFarm, chromium: str
) -> tuple[RenderResult, RenderRequests, list[str], float]:
    config = CrawlConfig(allow_nets=("127.0.0.0/8",))
    transport = AiohttpTransport(fetch_settings(config))
    tokens = MemoryFrontier()
    gate = AddressGate(transport.address_of, tokens, time.time)
    app, cdn = farm.host_key("app"), farm.host_key("cdn")
    lease = Lease(LeaseKind.PAGE, "L1", app, app + "/", 1, 1, 1, 0, 0, time.time() + 60.0)

    async def send(lease: Lease, request: FetchRequest) -> FetchResponse:
        async with gate.hold(lease, request.url):
            return await transport.fetch(request)

    archived: list[str] = []

    async def archive(response: FetchResponse) -> None:
        archived.append(response.url)

    # The CDN was just asked by one of its own leases: its next start is CDN_BUSY away.
    now = time.time()
    tokens.take_host(cdn, "its-lease", now, now + 60.0)
    tokens.give_host(cdn, "its-lease", now + CDN_BUSY)
    cdn_free = time.monotonic() + CDN_BUSY
    politeness = PolitenessPolicy(min_delay=GAP, delay_factor=0.0)
    renderer = Renderer(user_agent="TestBot/1.0", timeout=30.0, executable=chromium)
    try:
        page = await send(lease, FetchRequest(lease.url))  # the HTTP tier's fetch
        requests = RenderRequests(
            lease=lease,
            rules=RobotsTxt.parse(b"User-agent: *\nDisallow: /private/\n"),
            user_agent="TestBot/1.0",
            send=send,
            hosts=HostGate(tokens, time.time),
            robots_of={cdn: RobotsTxt.parse(b"")}.get,
            in_scope=lambda url: not host_key(url).endswith(".invalid"),
            gap=politeness.gap,
            now=time.time,
            archive=archive,
            free_at=time.time() + politeness.gap(page.elapsed),
            total_timeout=10.0,
        )
        document = Answer(page.status, page.headers, page.body)
        result = await renderer.render(lease.url, document, requests)
    finally:
        await renderer.close()
        await transport.close()
    return result, requests, archived, cdn_free

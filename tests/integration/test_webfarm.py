"""The loopback web farm: real servers, the request log, politeness checkers, sample web."""

from __future__ import annotations

import gzip
import http.client
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from email.message import Message

import pytest

from crawlspace.demo.sample_web import (
    FEATURES,
    HOST_TO_SITE,
    SAMPLE_HOSTS,
    SITE_NAMES,
    base_urls_for,
    build_sample_web,
    resolve_map,
    sample_farm,
    seed_urls,
)
from crawlspace.demo.webfarm import (
    LoggedRequest,
    Response,
    Site,
    WebFarm,
    max_concurrency,
    min_gap,
    normalize_lookup_path,
)

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

_HREF = re.compile(r'<a href="([^"]*)"( rel="([^"]*)")?')


@pytest.fixture(scope="module")
def farm() -> Iterator[WebFarm]:
    with sample_farm() as running:
        yield running


def _get(
    farm: WebFarm, site: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, Message, bytes]:
    request = urllib.request.Request(farm.url(site, path), headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, err.headers, err.read()


def _raw(farm: WebFarm, site: str, method: str, path: str) -> http.client.HTTPResponse:
    """http.client sends the path verbatim (urllib would not keep /About/../about as is)."""
    conn = http.client.HTTPConnection("127.0.0.1", farm.port(site), timeout=5)
    conn.request(method, path)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp


def _last(farm: WebFarm, site: str) -> LoggedRequest:
    assert farm.wait_idle()
    return farm.requests_for(site)[-1]


# -- addressing and the log ---------------------------------------------------------


def test_addresses_are_loopback_ephemeral_ports(farm: WebFarm) -> None:
    ports = {farm.port(name) for name in SITE_NAMES}
    assert len(ports) == 4
    assert farm.host_key("www") == f"http://127.0.0.1:{farm.port('www')}"
    assert farm.url("www", "/about") == farm.host_key("www") + "/about"
    assert farm.url("www", "about") == farm.host_key("www") + "/about"
    assert resolve_map(farm)["www.demo.test"] == ("127.0.0.1", farm.port("www"))
    with pytest.raises(KeyError, match="nope"):
        farm.port("nope")


def test_home_page_is_served_under_any_host_and_logged(farm: WebFarm) -> None:
    host = f"www.demo.test:{farm.port('www')}"
    before = time.monotonic()
    status, headers, body = _get(farm, "www", "/", {"Host": host, "X-Probe": "1"})
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    # Links carry the virtual host names, not 127.0.0.1.
    assert f'href="http://blog.demo.test:{farm.port("blog")}/"' in body.decode()
    entry = _last(farm, "www")
    assert (entry.method, entry.path_qs, entry.status) == ("GET", "/", 200)
    assert entry.headers["host"] == host
    assert entry.headers["x-probe"] == "1"
    assert before <= entry.started_at <= entry.ended_at <= time.monotonic()


def test_robots_variants(farm: WebFarm) -> None:
    status, _, body = _get(farm, "www", "/robots.txt")
    assert status == 200
    assert b"Disallow: /private/" in body
    assert b"Allow: /private/public-note.html" in body
    assert b"Crawl-delay: 1" in _get(farm, "blog", "/robots.txt")[2]
    assert _get(farm, "shop", "/robots.txt")[0] == 404
    docs_robots = _get(farm, "docs", "/robots.txt")[2].decode()
    assert f"Sitemap: http://docs.demo.test:{farm.port('docs')}/sitemap.xml" in docs_robots
    assert farm.wait_idle()
    assert farm.paths_for("shop")[-1] == "/robots.txt"
    assert _last(farm, "shop").status == 404


def test_sitemap_lists_an_orphan(farm: WebFarm) -> None:
    status, _, body = _get(farm, "docs", "/sitemap.xml")
    assert status == 200
    assert FEATURES["orphan"][1] in body.decode()
    assert _get(farm, "docs", FEATURES["orphan"][1])[0] == 200


def test_gzip_only_when_accepted(farm: WebFarm) -> None:
    path = FEATURES["gzip"][1]
    _, plain_headers, plain = _get(farm, "docs", path)
    assert "Content-Encoding" not in plain_headers
    status, headers, packed = _get(farm, "docs", path, {"Accept-Encoding": "br, gzip;q=0.9"})
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert headers["Vary"] == "Accept-Encoding"
    assert int(headers["Content-Length"]) == len(packed)
    assert gzip.decompress(packed) == plain


@pytest.mark.parametrize(
    "variant", ["/about?utm_source=homepage", "/About/../about", "/%61bout", "/about/"]
)
def test_url_variants_serve_the_same_page(farm: WebFarm, variant: str) -> None:
    canonical = _get(farm, "www", "/about")[2]
    conn = http.client.HTTPConnection("127.0.0.1", farm.port("www"), timeout=5)
    conn.request("GET", variant)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    if variant == "/about/":
        assert resp.status == 404  # a trailing slash is a different resource
        return
    assert (resp.status, body) == (200, canonical)
    assert _last(farm, "www").path_qs == variant  # the log keeps the raw request target


def test_redirect_broken_link_and_head(farm: WebFarm) -> None:
    moved = _raw(farm, "www", "GET", "/old-page")
    assert moved.status == 301
    assert moved.headers["Location"] == f"http://www.demo.test:{farm.port('www')}/new-page"
    assert _raw(farm, "www", "GET", "/missing-page").status == 404
    head = _raw(farm, "www", "HEAD", "/about")
    assert head.status == 200
    assert int(head.headers["Content-Length"]) > 0
    assert _last(farm, "www").method == "HEAD"


def test_keep_alive_connection_serves_several_requests(farm: WebFarm) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", farm.port("shop"), timeout=5)
    try:
        for path in ("/", "/shipping", "/category/lamps"):
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200
            assert resp.headers.get("Connection", "keep-alive").lower() != "close"
    finally:
        conn.close()
    assert farm.wait_idle()
    assert farm.paths_for("shop")[-3:] == ["/", "/shipping", "/category/lamps"]


def test_calendar_trap_links_forward_forever(farm: WebFarm) -> None:
    path, seen = FEATURES["trap"][1], set()
    conn = http.client.HTTPConnection("127.0.0.1", farm.port("www"), timeout=5)
    try:
        for _ in range(30):
            conn.request("GET", path)
            body = conn.getresponse().read().decode()
            seen.add(path)
            nexts = [h for h, _, _ in _HREF.findall(body) if h.startswith("/calendar/")]
            assert len(nexts) == 1
            path = nexts[0]
    finally:
        conn.close()
    assert len(seen) == 30
    assert path == "/calendar/2029/06"
    www = build_sample_web(base_urls_for(dict.fromkeys(SITE_NAMES, 1)))["www"]
    assert www.respond("/calendar/2026/13").status == 404
    assert b"Next month" not in www.respond("/calendar/9999/12").body


# -- conditional requests and custom sites ---------------------------------------------


def test_etag_gives_304_and_deferred_factory_sees_ports() -> None:
    seen: dict[str, int] = {}

    def factory(ports: Mapping[str, int]) -> dict[str, Site]:
        seen.update(ports)
        page = Response(200, {"ETag": '"v1"', "Content-Type": "text/plain"}, b"hello")
        return {"a": Site("a", {"/": page}), "b": Site("b")}

    with WebFarm.deferred(["a", "b"], factory) as farm:
        assert seen == {"a": farm.port("a"), "b": farm.port("b")}
        assert _get(farm, "a", "/", {"If-None-Match": '"v0", "v1"'})[0] == 304
        assert _get(farm, "a", "/", {"If-None-Match": '"v0"'})[2] == b"hello"
        assert _get(farm, "b", "/anything")[0] == 404
        assert farm.wait_idle()
        assert [r.status for r in farm.requests] == [304, 200, 404]


def test_slow_site_measures_concurrency_and_gaps() -> None:
    slow = Site("slow", {"/": Response(200, {}, b"zzz", delay=0.2)})
    with WebFarm({"slow": slow}) as farm:
        barrier = threading.Barrier(3)
        statuses: list[int] = []

        def fetch() -> None:
            barrier.wait(timeout=5)
            statuses.append(_get(farm, "slow", "/")[0])

        workers = [threading.Thread(target=fetch) for _ in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=5)
        assert statuses == [200, 200, 200]
        assert farm.wait_idle()
        log = farm.requests_for("slow")
        assert max_concurrency(log) == 3
        gap = min_gap(log)
        assert gap is not None
        assert gap < 0
        assert all(r.ended_at - r.started_at >= 0.19 for r in log)

        farm.clear_log()
        for _ in range(2):
            _get(farm, "slow", "/")
        assert farm.wait_idle()
        sequential = farm.requests_for("slow")
        assert max_concurrency(sequential) == 1
        gap = min_gap(sequential)
        assert gap is not None
        assert gap >= 0


# -- pure politeness checkers on synthetic logs ----------------------------------------


def _req(start: float, end: float, site: str = "h") -> LoggedRequest:
    return LoggedRequest(site, "GET", "/", {}, start, end, 200)


def test_checkers_on_synthetic_logs() -> None:
    assert max_concurrency([]) == 0
    assert min_gap([]) is None
    assert min_gap([_req(0, 1)]) is None
    touching = [_req(1, 2), _req(0, 1), _req(2, 3)]
    assert max_concurrency(touching) == 1
    assert min_gap(touching) == 0
    spaced = [_req(0, 1), _req(3, 4), _req(1.5, 2)]
    assert max_concurrency(spaced) == 1
    assert min_gap(spaced) == pytest.approx(0.5)
    nested = [_req(0, 10), _req(1, 2), _req(3, 4), _req(3.5, 5)]
    assert max_concurrency(nested) == 3
    assert min_gap(nested) == -9  # (1, 2) starts 9 s before (0, 10) ends
    with pytest.raises(ValueError, match="requests_for"):
        max_concurrency([_req(0, 1, "a"), _req(2, 3, "b")])
    with pytest.raises(ValueError, match="mixes"):
        min_gap([_req(0, 1, "a"), _req(2, 3, "b")])


def test_normalize_lookup_path() -> None:
    assert normalize_lookup_path("/About/../about?x=1") == "/about"
    assert normalize_lookup_path("/%61bout") == "/about"
    assert normalize_lookup_path("//a/./b/") == "/a/b/"
    assert normalize_lookup_path("") == "/"
    assert normalize_lookup_path("/../..") == "/"


# -- lifecycle ----------------------------------------------------------------------


def _farm_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "crawlspace-webfarm"]


def test_stop_is_quick_and_leaves_nothing_behind() -> None:
    baseline = len(_farm_threads())
    farm = sample_farm()
    with farm:
        port = farm.port("www")
        idle = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        idle.request("GET", "/")
        idle.getresponse().read()  # leaves an idle keep-alive connection open
        assert len(_farm_threads()) == baseline + 1
        stopping = time.monotonic()
    assert time.monotonic() - stopping < 2.0
    idle.close()
    assert len(_farm_threads()) == baseline
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection(("127.0.0.1", port), timeout=1),
    ):
        pass
    farm.stop()  # idempotent


def test_stop_with_a_slow_request_in_flight_is_bounded() -> None:
    slow = Site("slow", {"/": Response(200, {}, b"z", delay=30)})
    baseline = len(_farm_threads())
    farm = WebFarm({"slow": slow})
    farm.start()
    sock = socket.create_connection(("127.0.0.1", farm.port("slow")), timeout=5)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    deadline = time.monotonic() + 5
    while farm.in_flight("slow") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)  # polls server state; the assertion below does not depend on timing
    assert farm.in_flight("slow") == 1
    stopping = time.monotonic()
    farm.stop()
    assert time.monotonic() - stopping < 4.0
    sock.close()
    assert len(_farm_threads()) == baseline
    assert [r.status for r in farm.requests] == [0]  # cancelled, logged as "no response"


# -- the sample web as data ------------------------------------------------------------


def _sample() -> dict[str, Site]:
    return build_sample_web(
        {n: f"http://{n}.demo.test:{9000 + i}" for i, n in enumerate(SITE_NAMES)}
    )


def test_sample_web_shape_and_determinism() -> None:
    web, again = _sample(), _sample()
    assert set(web) == set(SITE_NAMES) == set(HOST_TO_SITE.values())
    assert tuple(HOST_TO_SITE) == SAMPLE_HOSTS
    pages = {
        (name, path): resp
        for name, site in web.items()
        for path, resp in site.routes.items()
        if resp.headers.get("Content-Type", "").startswith("text/html") and resp.status == 200
    }
    assert 40 <= len(pages) <= 80
    for (name, path), resp in pages.items():
        assert resp.body == again[name].routes[path].body
        words = re.sub(r"<[^>]+>", " ", resp.body.decode()).split()
        assert len(words) >= 50, (name, path)
    hrefs = [
        (name, href, rel)
        for (name, _), resp in pages.items()
        for href, _, rel in _HREF.findall(resp.body.decode())
    ]
    linked = {href for _, href, _ in hrefs}
    assert not any(FEATURES["orphan"][1] in href for href in linked)
    assert {rel for _, href, rel in hrefs if "spam" in href} == {"nofollow", "nofollow ugc"}
    assert {"mailto:hello@demo.test", "javascript:void(0)"} <= linked
    assert any(h.startswith("http://docs.demo.test:9003/") for n, h, _ in hrefs if n == "blog")
    assert b'content="noindex"' in web["shop"].routes["/internal-preview.html"].body
    assert seed_urls(base_urls_for(dict.fromkeys(SITE_NAMES, 1))) == ["http://www.demo.test:1/"]
    with pytest.raises(ValueError, match="docs"):
        build_sample_web({"www": "http://x", "blog": "http://y", "shop": "http://z"})

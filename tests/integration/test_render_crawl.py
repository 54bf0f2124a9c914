"""`--render auto` end to end (issue #33), judged by the server's own request log: a single-page
app whose links exist only after its script ran is crawled in full by `crawlspace crawl` and by
two `crawlspace worker` processes; every request to the host, the browser's included, waits the
host's gap and none overlaps another; the path robots.txt disallows is never asked for;
ordinary pages are never rendered (their scripts are never fetched); the rendered DOM is in the
WARC as a conversion record of the page's response. Without a Chromium the crawl is refused in
one line."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from crawlspace.dashboard import write_report
from crawlspace.dashboard.data import snapshot
from crawlspace.demo.request_log import LoggedRequest, max_concurrency, min_gap
from crawlspace.demo.sites import Response, robots_txt
from crawlspace.demo.webfarm import Site, WebFarm
from crawlspace.ops.export import iter_records
from crawlspace.ops.report import crawl_stats
from crawlspace.render.browser import find_chromium
from tests.integration.test_operator_views import browser
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # a browser and crawls of seconds (README)
__all__ = ["browser"]  # (the fixture, shared with the operator views' module)

GAP = 0.3
APP_JS = """
fetch('/api/links.json').then(r => r.json()).then(paths => {
  const app = document.getElementById('app');
  for (const path of paths) {
    const a = document.createElement('a'); a.href = path; a.textContent = 'Read ' + path;
    app.appendChild(a);
  }
});
fetch('/private/p.json').catch(() => {});
"""
SHELL = (
    '<html><head><title>App</title></head><body><div id="app"></div>'
    "<noscript>You need to enable JavaScript to run this app.</noscript>"
    '<script src="/app.js"></script></body></html>'
)
WORDS = " ".join(f"word{i}" for i in range(80))  # plenty of text: not a thin page


def _doc(n: int) -> str:
    return (
        f"<html><head><title>Doc {n}</title></head><body><h1>Doc {n}</h1><p>{WORDS}</p>"
        '<a href="/">home</a><script src="/plain.js"></script></body></html>'
    )


def _site() -> Site:
    def html(text: str) -> Response:
        return Response(200, {"Content-Type": "text/html"}, text.encode())

    return Site(
        "app",
        {
            "/": html(SHELL),
            "/app.js": Response(200, {"Content-Type": "text/javascript"}, APP_JS.encode()),
            "/api/links.json": Response(
                200, {"Content-Type": "application/json"}, b'["/docs/1.html", "/docs/2.html"]'
            ),
            "/private/p.json": Response(200, {"Content-Type": "application/json"}, b"{}"),
            "/plain.js": Response(200, {"Content-Type": "text/javascript"}, b"var x = 1;"),
            "/docs/1.html": html(_doc(1)),
            "/docs/2.html": html(_doc(2)),
            "/robots.txt": robots_txt("User-agent: *\nDisallow: /private/\n"),
        },
    )


def _config(path: Path) -> Path:
    path.write_text(
        f'[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = {GAP}\ndelay_factor = 0.0\n'
        'render = "auto"\n'
    )
    return path


def _needs_chromium() -> None:
    if find_chromium() is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run does this)")
    pytest.importorskip("playwright.async_api")


def _assert_crawled_politely(log: list[LoggedRequest]) -> None:
    paths = sorted(r.path_qs for r in log)
    assert paths == sorted(
        ["/robots.txt", "/", "/app.js", "/api/links.json", "/docs/1.html", "/docs/2.html"]
    )  # the app's links followed; no disallowed path; the ordinary pages' script never
    assert max_concurrency(log) == 1
    assert (min_gap(log) or 0.0) >= GAP - 0.05


def _conversions(directories: list[Path]) -> list[tuple[str, str, str]]:
    """(target URI, WARC-Refers-To, the response record it names: its target URI)."""
    ids: dict[str, str] = {}
    found: list[tuple[str, str]] = []
    for directory in directories:
        for path in sorted((directory / "warc").glob("*.warc.gz")):
            with path.open("rb") as stream:
                for record in ArchiveIterator(stream):
                    headers = record.rec_headers
                    uri = headers.get_header("WARC-Target-URI")
                    ids[headers.get_header("WARC-Record-ID")] = uri
                    if record.rec_type == "conversion":
                        body = record.content_stream().read().decode()
                        assert 'href="/docs/1.html"' in body
                        found.append((uri, headers.get_header("WARC-Refers-To")))
    return [(uri, refers, ids.get(refers, "")) for uri, refers in found]


def _counter(db_path: Path, name: str) -> int:
    with sqlite3.connect(db_path) as db:
        row = db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()
    return int(row[0]) if row else 0


def test_a_crawl_renders_the_app_and_only_the_app(tmp_path: Path) -> None:
    _needs_chromium()
    out = tmp_path / "out"
    with WebFarm({"app": _site()}) as farm:
        home = farm.url("app", "/")
        command = cli("crawl", home, "--out", str(out), "--config", str(_config(tmp_path / "c")))
        subprocess.run([*command, "-q"], check=True, timeout=180)
        assert farm.wait_idle()
        log = farm.requests_for("app")
    _assert_crawled_politely(log)
    conversions = _conversions([out])  # refers to the page's response record
    assert [(uri, named) for uri, _, named in conversions] == [(home, home)]
    assert _counter(out / "crawl.db", "render.pages") == 1
    render = crawl_stats(out)["render"]  # `crawlspace stats`
    assert (render["pages"], render["requests"], render["links"]) == (1, 2, 2)
    summary = snapshot(out)["summary"]  # the dashboard's totals
    assert summary["render"]["pages"] == 1
    fetches = {r["url"]: r for r in iter_records(out, "fetches")}  # the export
    rendered = {url: row["rendered"] for url, row in fetches.items()}
    assert rendered == {home: True, home + "docs/1.html": False, home + "docs/2.html": False}
    # The page's text is its rendered DOM's (the shell alone has none): what dedup and the
    # index feed read.
    assert fetches[home]["text_sha256"] is not None


def test_workers_render_the_app_as_politely(tmp_path: Path, cluster: RedisDeployment) -> None:
    _needs_chromium()
    outs = [tmp_path / f"w{i}" for i in range(2)]
    with WebFarm({"app": _site()}) as farm:
        home = farm.url("app", "/")
        config = _config(tmp_path / "c")
        crawl_with_workers(cluster.url, "render", 16, config, seeds=[home], outs=outs, timeout=180)
        assert farm.wait_idle()
        log = farm.requests_for("app")
    _assert_crawled_politely(log)
    conversions = _conversions(outs)
    assert [(uri, named) for uri, _, named in conversions] == [(home, home)]
    assert sum(_counter(out / "crawl.db", "render.pages") for out in outs) == 1


def test_without_chromium_a_render_is_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PATH": str(tmp_path / "empty")}  # no chromium on it
    command = cli("crawl", "http://127.0.0.1:9/", "--out", str(out), "--render", "auto")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "--render auto needs the system's Chromium" in lines[0]
    assert not (out / "crawl.db").exists()


def test_a_render_that_fails_keeps_the_page_as_fetched(tmp_path: Path) -> None:
    """A page whose script never ends costs its render budget (render_timeout), not the page:
    the fetch row keeps the plain fetch, says why the render failed, and its links are
    followed; the next page renders in a fresh browser."""
    _needs_chromium()
    loop = (
        '<html><body><p>Looping page.</p><a href="/next.html">next</a>'
        "<script>while (true) {}</script></body></html>"
    )
    site = Site(
        "app",
        {
            "/": Response(200, {"Content-Type": "text/html"}, loop.encode()),
            "/next.html": Response(200, {"Content-Type": "text/html"}, SHELL.encode()),
            "/app.js": Response(200, {"Content-Type": "text/javascript"}, APP_JS.encode()),
            "/api/links.json": Response(200, {}, b'["/docs/1.html"]'),
            "/docs/1.html": Response(200, {"Content-Type": "text/html"}, _doc(1).encode()),
        },
    )
    config = tmp_path / "c"
    config.write_text(
        '[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = 0.0\ndelay_factor = 0.0\n'
        'render = "always"\nrender_timeout = 3.0\n'
    )
    out = tmp_path / "out"
    with WebFarm({"app": site}) as farm:
        home = farm.url("app", "/")
        command = cli("crawl", home, "--out", str(out), "--config", str(config), "-q")
        subprocess.run(command, check=True, timeout=180)
        assert farm.wait_idle()
    fetches = {r["url"]: r for r in iter_records(out, "fetches")}
    assert (fetches[home]["rendered"], fetches[home]["render_error"]) == (False, "timeout")
    assert fetches[home]["text_sha256"] is not None  # the plain page, kept
    following = home + "next.html"
    assert (fetches[following]["rendered"], fetches[following]["render_error"]) == (True, None)
    assert home + "docs/1.html" in fetches  # found by rendering the next page
    assert crawl_stats(out)["render"]["failed.timeout"] == 1


def test_the_responses_x_robots_tag_holds_for_the_rendered_dom(tmp_path: Path) -> None:
    """X-Robots-Tag came with the response, not the DOM: its nofollow holds for the links only
    the rendered DOM has, and its noindex for the page."""
    _needs_chromium()
    site = _site()
    site.routes["/"] = Response(
        200, {"Content-Type": "text/html", "X-Robots-Tag": "noindex, nofollow"}, SHELL.encode()
    )
    out = tmp_path / "out"
    with WebFarm({"app": site}) as farm:
        home = farm.url("app", "/")
        command = cli("crawl", home, "--out", str(out), "--config", str(_config(tmp_path / "c")))
        subprocess.run([*command, "-q"], check=True, timeout=180)
        assert farm.wait_idle()
        paths = sorted(r.path_qs for r in farm.requests_for("app"))
    assert paths == ["/", "/api/links.json", "/app.js", "/robots.txt"]  # rendered, not followed
    (page,) = list(iter_records(out, "fetches"))
    assert (page["rendered"], page["noindex"]) == (True, True)


LINK_JS = (
    "const a = document.createElement('a'); a.href = '/docs/1.html'; a.textContent = 'Doc';"
    "document.getElementById('app').appendChild(a);"
)
SHELLS = 3  # app shells per host


def _shells_site(name: str) -> Site:
    """A host whose home page is ordinary and links to ``SHELLS`` app shells, each of which a
    script gives one link: every shell is worth rendering."""
    shell = SHELL.replace("/app.js", "/link.js")
    links = "".join(f'<a href="/s/{i}.html">shell {i}</a>' for i in range(SHELLS))
    home = _doc(0).replace("</body>", f"{links}</body>")
    routes = {
        "/": Response(200, {"Content-Type": "text/html"}, home.encode()),
        "/link.js": Response(200, {"Content-Type": "text/javascript"}, LINK_JS.encode()),
        "/docs/1.html": Response(200, {"Content-Type": "text/html"}, _doc(1).encode()),
        "/plain.js": Response(200, {"Content-Type": "text/javascript"}, b"var x = 1;"),
    }
    for i in range(SHELLS):
        routes[f"/s/{i}.html"] = Response(200, {"Content-Type": "text/html"}, shell.encode())
    return Site(name, routes)


def _budget_config(path: Path) -> Path:
    path.write_text(
        '[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = 0.05\ndelay_factor = 0.0\n'
        'render = "auto"\nrender_max_pages = 2\n'
    )
    return path


def _assert_two_renders(log: list[LoggedRequest], outs: list[Path]) -> None:
    # The server's witness: a render asks for the shell's script, a skipped shell never does.
    assert sum(r.path_qs == "/link.js" for r in log) == 2
    assert sum(r.path_qs.startswith("/s/") for r in log) == 2 * SHELLS  # every shell fetched
    assert sum(_counter(out / "crawl.db", "render.pages") for out in outs) == 2
    skipped = sum(_counter(out / "crawl.db", "render.skipped.crawl_pages") for out in outs)
    assert skipped == 2 * SHELLS - 2


def test_the_crawl_wide_render_budget_holds(tmp_path: Path, browser: Any) -> None:
    """`render_max_pages`: two renders in the whole crawl, whatever the host; the other shells
    are kept as fetched, and counted as skipped for the crawl's budget (`crawlspace stats`, and
    a card of the dashboard, read here in its offline report)."""
    _needs_chromium()
    out = tmp_path / "out"
    with WebFarm({"a": _shells_site("a"), "b": _shells_site("b")}) as farm:
        seeds = [farm.url("a", "/"), farm.url("b", "/")]
        config = _budget_config(tmp_path / "c")
        command = cli("crawl", *seeds, "--out", str(out), "--config", str(config), "-q")
        subprocess.run(command, check=True, timeout=180)
        assert farm.wait_idle()
        log = farm.requests_for("a") + farm.requests_for("b")
    _assert_two_renders(log, [out])
    assert crawl_stats(out)["render"]["skipped.crawl_pages"] == 2 * SHELLS - 2
    page = browser.new_page()
    try:
        page.goto(write_report(out, tmp_path / "report.html").as_uri())
        page.wait_for_function("Number(document.body.dataset.updates || 0) >= 1", timeout=10_000)
        card = page.locator('#totals .card[data-name="renders skipped"] b')
        assert card.inner_text() == f"crawl_pages {2 * SHELLS - 2}"
    finally:
        page.close()


def test_workers_share_the_crawl_wide_render_budget(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    """Two workers, two hosts rendering at once: one budget between them (kept in Redis)."""
    _needs_chromium()
    outs = [tmp_path / f"w{i}" for i in range(2)]
    with WebFarm({"a": _shells_site("a"), "b": _shells_site("b")}) as farm:
        seeds = [farm.url("a", "/"), farm.url("b", "/")]
        config = _budget_config(tmp_path / "c")
        crawl_with_workers(
            cluster.url, "render-budget", 16, config, seeds=seeds, outs=outs, timeout=180
        )
        assert farm.wait_idle()
        log = farm.requests_for("a") + farm.requests_for("b")
    _assert_two_renders(log, outs)

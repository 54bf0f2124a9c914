"""Page requisites (`--page-requisites`, issue #32): a page's stylesheet, script, images and the
font and image its stylesheet imports are fetched too, each once, through robots.txt and scope,
at the page's own depth, and written to the WARC, so pywb replays the page with its stylesheet
from the archive. Without the flag none of them is fetched. Judged from the server's log, on
`crawlspace crawl` and on workers of a shared frontier."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.sites import Response, html_site
from crawlspace.demo.webfarm import WebFarm
from crawlspace.ops.export import iter_records
from tests.integration.test_warc_revisits import _pywb_bin, _replay
from tests.redis_servers import RedisDeployment
from tests.workers import cli, workers_urls

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

CSS = b"""@import "/theme/print.css";
/* url(/theme/commented-out.png) is never fetched */
body { background: url('/theme/bg.png'); }
@font-face { font-family: x; src: url(/theme/font.woff2) format("woff2"); }
.private { background: url(/private/secret.png); }
"""
PAGE = """<html><head><link rel="stylesheet" href="/theme/site.css">
<link rel="canonical" href="/"><script src="/js/app.js"></script></head>
<body><img src="/img/logo.png" srcset="/img/logo-2x.png 2x">
<img src="http://elsewhere.invalid/tracker.gif"><a href="/next.html">next</a></body></html>"""
ROBOTS = "User-agent: *\nDisallow: /private/\n"
EMBEDS = [
    "/theme/site.css",
    "/theme/print.css",
    "/theme/bg.png",
    "/theme/font.woff2",
    "/js/app.js",
    "/img/logo.png",
    "/img/logo-2x.png",
]


def _file(kind: str, body: bytes = b"x" * 64) -> Response:
    return Response(200, {"Content-Type": kind}, body)


def site() -> object:
    extra = {
        "/theme/site.css": _file("text/css", CSS),
        "/theme/print.css": _file("text/css", b"p { color: black }"),
        "/theme/bg.png": _file("image/png"),
        "/theme/font.woff2": _file("font/woff2"),
        "/js/app.js": _file("text/javascript", b"console.log(1)"),
        "/img/logo.png": _file("image/png"),
        "/img/logo-2x.png": _file("image/png"),
        "/private/secret.png": _file("image/png"),
    }
    pages = {"/": PAGE, "/next.html": "<html><body>the end</body></html>"}
    return html_site("s", pages, robots=ROBOTS, extra=extra)


SETTINGS = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.0
delay_factor = 0.0
max_depth = 1
"""


def crawl(tmp_path: Path, farm: WebFarm, *flags: str) -> Path:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    out = tmp_path / "out"
    args = [*cli("crawl", farm.url("s", "/")), "--out", str(out), "--config", str(config), "-q"]
    subprocess.run([*args, *flags], check=True, timeout=120, stdout=subprocess.DEVNULL)
    return out


def test_a_page_and_what_it_embeds_are_archived_and_replay_together(tmp_path: Path) -> None:
    with WebFarm({"s": site()}) as farm:  # type: ignore[dict-item]
        out = crawl(tmp_path, farm, "--page-requisites")
        assert farm.wait_idle()
        served = farm.paths_for("s")
        base = farm.url("s", "/").removesuffix("/")
    assert sorted(served) == sorted(["/robots.txt", "/", "/next.html", *EMBEDS])  # each once
    urls = {r["url"].removeprefix(base): r for r in iter_records(out, "urls")}
    assert urls["/private/secret.png"]["reason"] == "robots"  # robots.txt holds for embeds
    assert "/theme/commented-out.png" not in urls
    for path in EMBEDS:  # at the page's own depth: max_depth 1 still reaches the CSS's font
        assert urls[path]["depth"] == 0
        assert urls[path]["state"] == "fetched"
    fetched = {r["url"].removeprefix(base) for r in iter_records(out, "fetches")}
    assert set(EMBEDS) <= fetched
    hops = {
        line.split()[3].removeprefix(base): line.split()[4]
        for line in (out / "crawl.log").read_text().splitlines()
    }
    assert {hops[path] for path in EMBEDS} == {"I"}  # crawl.log: found as a requisite
    assert hops["/next.html"] == "L"
    bin_dir = _pywb_bin()
    if bin_dir is None:
        return  # (the replay needs pywb: .ci/run installs it)
    warcs = [str(p) for p in (out / "warc").glob("*.warc.gz")]
    assert _replay(bin_dir, tmp_path / "pywb", warcs, base + "/theme/site.css") == CSS


def test_without_the_flag_nothing_a_page_embeds_is_fetched(tmp_path: Path) -> None:
    with WebFarm({"s": site()}) as farm:  # type: ignore[dict-item]
        crawl(tmp_path, farm)
        assert farm.wait_idle()
        served = farm.paths_for("s")
    assert sorted(served) == ["/", "/next.html", "/robots.txt"]


def test_a_pages_requisites_are_capped(tmp_path: Path) -> None:
    with WebFarm({"s": site()}) as farm:  # type: ignore[dict-item]
        config = tmp_path / "crawl.toml"
        config.write_text(SETTINGS + "page_requisites = true\nmax_requisites_per_page = 2\n")
        out = tmp_path / "out"
        args = [*cli("crawl", farm.url("s", "/")), "--out", str(out), "--config", str(config)]
        subprocess.run([*args, "-q"], check=True, timeout=120, stdout=subprocess.DEVNULL)
        assert farm.wait_idle()
        served = farm.paths_for("s")
    # The first two embeds in document order, and what the stylesheet imports (its own two).
    assert "/theme/site.css" in served
    assert "/js/app.js" in served
    assert "/img/logo.png" not in served
    assert {"/theme/print.css", "/theme/bg.png"} <= set(served)
    assert "/theme/font.woff2" not in served


def test_on_workers_what_a_page_embeds_is_fetched_once(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    with WebFarm({"s": site()}) as farm:  # type: ignore[dict-item]
        urls = workers_urls(
            cluster.url,
            "requisites",
            16,
            SETTINGS + "page_requisites = true\n",
            seeds=[farm.url("s", "/")],
            tmp=tmp_path,
            workers=2,
            timeout=120,
        )
        assert farm.wait_idle()
        served = farm.paths_for("s")
        base = farm.url("s", "/").removesuffix("/")
    assert sorted(served) == sorted(["/robots.txt", "/", "/next.html", *EMBEDS])
    assert urls[base + "/private/secret.png"]["reason"] == "robots"
    assert all(urls[base + path]["depth"] == 0 for path in EMBEDS)

"""Each error names the page that linked it (issue #32: "the linking page next to each error"),
judged against the site's own link graph: a 410 and a 404 linked from a page two levels down
and a page that never answers in time are listed by the dashboard's recent errors (its
JSON) and by crawl.log with the page that led to them, for `crawlspace crawl` and for two
`crawlspace worker` processes on a 3-master Redis Cluster, where the page that links an error is
often fetched by the other worker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from crawlspace.dashboard.data import SharedFrontier, snapshot
from crawlspace.demo.webfarm import Response, WebFarm, html, html_site
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)


PAGES = {
    "/": '<a href="/a.html">a</a> <a href="/b.html">b</a>',
    "/a.html": '<a href="/gone.html">gone</a> <a href="/b.html">b</a>',
    "/b.html": '<a href="/missing.html">missing</a> <a href="/slow.html">slow</a>',
}
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.0
delay_factor = 0.0
max_attempts = 1
max_outage_seconds = 0
total_timeout = 1.0
"""


def _farm() -> WebFarm:
    extra = {
        "/gone.html": Response(410, {"Content-Type": "text/html"}, b"gone"),
        "/slow.html": html("<p>too late</p>", delay=3.0),  # past the total timeout
    }
    return WebFarm({"site": html_site("site", PAGES, extra=extra)})


def _expected(farm: WebFarm) -> dict[str, str]:
    """Each error and the page that first linked it (the site's own graph)."""
    return {
        farm.url("site", "/gone.html"): farm.url("site", "/a.html"),
        farm.url("site", "/missing.html"): farm.url("site", "/b.html"),
        farm.url("site", "/slow.html"): farm.url("site", "/b.html"),
    }


def _logged_vias(out: Path) -> dict[str, str]:
    rows = [line.split(" ") for line in (out / "crawl.log").read_text().splitlines()]
    return {row[3]: row[9] for row in rows if row[9] != "-"}


def test_a_crawls_errors_name_their_linking_page(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    with _farm() as farm:
        command = cli("crawl", farm.url("site", "/"), "--out", str(out), "--config", str(config))
        subprocess.run([*command, "-q"], check=True, timeout=120)
        expected = _expected(farm)
        slow = farm.url("site", "/slow.html")
    errors = {e["url"]: e for e in snapshot(out)["errors"]}
    assert {url: e["via"] for url, e in errors.items()} == expected
    assert errors[slow]["what"] == "failed: total_timeout"
    assert _logged_vias(out) == expected


def test_workers_errors_name_their_linking_page(tmp_path: Path, cluster: RedisDeployment) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    outs = [tmp_path / f"w{i}" for i in range(2)]
    with _farm() as farm:
        seeds = [farm.url("site", "/")]
        crawl_with_workers(cluster.url, "via", 16, config, seeds=seeds, outs=outs, timeout=120)
        expected = _expected(farm)
    frontier = SharedFrontier(cluster.url, "via", 16)
    # A worker's recent errors are its own responses of 400 or more (each worker's crawl.db).
    shown = {e["url"]: e["via"] for out in outs for e in snapshot(out, frontier)["errors"]}
    http_errors = {url: via for url, via in expected.items() if not url.endswith("/slow.html")}
    assert shown == http_errors
    logged = {url: via for out in outs for url, via in _logged_vias(out).items()}
    assert logged == expected

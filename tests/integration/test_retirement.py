"""Retirement, judged by the server's log: a continuous crawl of a site whose home page stops
linking /dropped.html after a second. /dropped.html is revisited until no page has linked it for
``retire_after_passes`` passes of ``revisit_max_interval``, then retired: never requested again,
excluded with the reason ``retired``, and deleted from the index feed. /kept.html, still linked,
is revisited to the end. `crawlspace crawl`, and two `crawlspace worker` processes on a
3-master cluster."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from crawlspace.demo.request_log import LoggedRequest
from crawlspace.demo.webfarm import Response, Site, WebFarm, html
from crawlspace.ops.export import iter_records
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

LINKED_FOR = 1.0  # seconds the home page links /dropped.html after its first visit
MAX_INTERVAL = 0.5
PASSES = 2
DURATION = 6.0
CONFIG = (
    "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.01\ndelay_factor = 0.0\n"
    f"continuous = true\nduration = {DURATION}\nrevisit_min_interval = 0.2\n"
    f"revisit_max_interval = {MAX_INTERVAL}\nrevisit_initial_interval = 0.2\n"
    f"retire_after_passes = {PASSES}\n"
)


class Home:
    """ "/" links both pages until LINKED_FOR after it is first served, then /kept.html only.
    Every answer is new content, so the home page is revisited often."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.dropped_at: float | None = None
        self._served = 0
        self._lock = threading.Lock()

    def __call__(self, path_qs: str) -> Response | None:
        if path_qs != "/":
            return None
        with self._lock:
            now = time.monotonic()
            self.first = self.first or now
            self._served += 1
            linking = now - self.first < LINKED_FOR
            if not linking and self.dropped_at is None:
                self.dropped_at = now
            served = self._served
        links = '<a href="/kept.html">kept</a>'
        links += '<a href="/dropped.html">dropped</a>' if linking else ""
        body = f"<html><body><p>edition {served}</p>{links}</body></html>"
        return Response(200, {"Content-Type": "text/html"}, body.encode())


def site(home: Home) -> Site:
    routes = {"/robots.txt": html("", 404)}
    for path in ("/kept.html", "/dropped.html"):
        routes[path] = html(f"<html><body><p>the page {path}</p></body></html>")
    return Site("site", routes, home)


def assert_retired(log: list[LoggedRequest], dropped_at: float | None) -> None:
    assert dropped_at is not None
    dropped = [r.started_at for r in log if r.path_qs == "/dropped.html"]
    kept = [r.started_at for r in log if r.path_qs == "/kept.html"]
    # The last link was seen before dropped_at; retired at the first revisit a full
    # PASSES x MAX_INTERVAL later (one revisit interval, and a little, of slack).
    deadline = dropped_at + PASSES * MAX_INTERVAL + MAX_INTERVAL + 0.5
    assert len(dropped) >= 2  # fetched, and revisited while linked
    assert max(dropped) < deadline, (dropped, dropped_at)
    assert max(kept) > deadline + 1.0, (kept, deadline)  # still linked: still revisited
    assert len([t for t in kept if t > deadline]) >= 2


def test_a_url_no_page_links_any_more_is_retired(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    out = tmp_path / "out"
    home = Home()
    with WebFarm({"site": site(home)}) as farm:
        command = [*cli("crawl", farm.url("site", "/")), "--out", str(out)]
        subprocess.run([*command, "--config", str(config), "-q"], check=True, timeout=60)
        farm.wait_idle()
        assert_retired(farm.requests_for("site"), home.dropped_at)
    states = {r["url"].rpartition("/")[2]: r for r in iter_records(out, "urls")}
    assert (states["dropped.html"]["state"], states["dropped.html"]["reason"]) == (
        "excluded",
        "retired",
    )
    assert states["kept.html"]["state"] != "excluded"
    feed = subprocess.run(
        [*cli("feed", str(out))], check=True, capture_output=True, text=True, timeout=60
    )
    deletes = [json.loads(line) for line in feed.stdout.splitlines()]
    retired = [r for r in deletes if r["kind"] == "delete" and r["reason"] == "retired"]
    assert [r["url"].rpartition("/")[2] for r in retired] == ["dropped.html"]


def test_workers_retire_a_url_no_page_links_any_more(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    home = Home()
    outs = [tmp_path / "w1", tmp_path / "w2"]
    with WebFarm({"site": site(home)}) as farm:
        crawl_with_workers(
            cluster.url, "retire", 16, config, seeds=[farm.url("site", "/")], outs=outs
        )
        farm.wait_idle()
        assert_retired(farm.requests_for("site"), home.dropped_at)

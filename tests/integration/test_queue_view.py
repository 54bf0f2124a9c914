"""The dashboard's per-host queue view, judged by what the crawl does next: after a crawl that
stopped at its page budget, the view of its host lists every URL left queued, and the first it
lists is the one the next run fetches (the server's log says which). The same for `crawlspace
crawl` (crawl.db) and for a worker of a shared frontier (its queues in a 3-master Redis
Cluster), and in chromium: a click on a host in the hosts table opens its queue."""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crawlspace.dashboard.data import SharedFrontier
from crawlspace.dashboard.server import DashboardServer
from crawlspace.demo.webfarm import Site, WebFarm, html
from tests.integration.test_operator_views import browser
from tests.redis_servers import RedisDeployment
from tests.workers import cli

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)
__all__ = ["browser"]  # (the fixture, shared with the operator views' module)

# The home page links pages the crawl's priority patterns put earlier or later.
LINKED = [
    "/about.html",
    "/docs/guide.html",
    "/docs/a/b/c/deep.html",
    "/list?page=2",
    "/list?page=3&sort=asc",
    "/news/2026/12/07/item.html",
    "/tag/x.html",
    "/contact.html",
]
CONFIG = (
    "[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.0\ndelay_factor = 0.0\n"
    "priority_patterns = ['30 /docs/*', '-20 /list*', '10 /contact.html']\n"
)


def site() -> Site:
    anchors = " ".join(f'<a href="{path}">{path}</a>' for path in LINKED)
    routes = {"/": html(f"<h1>home</h1>{anchors}")}
    routes.update({path.split("?")[0]: html(f"<p>{path}</p>") for path in LINKED})
    return Site("site", routes)


def queue_of(dashboard: DashboardServer, host_key: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"key": host_key})
    with urllib.request.urlopen(f"{dashboard.url}api/host?{query}", timeout=10) as response:
        data = json.load(response)
    assert data["host"] == host_key
    return list(data["urls"])


def assert_lists_the_queue(urls: list[dict[str, Any]], origin: str) -> None:
    assert sorted(u["url"] for u in urls) == sorted(origin + path for path in LINKED)
    assert all(u["depth"] == 1 and u["source"] == "link" and u["attempts"] == 0 for u in urls)
    priorities = [u["priority"] for u in urls]
    assert priorities == sorted(priorities)  # lease order: priority first
    assert len(set(priorities)) == 4  # the patterns made a difference
    assert urls[0]["url"].startswith(origin + "/docs/")


def fetched_after(farm: WebFarm, before: int) -> list[str]:
    assert farm.wait_idle()
    return [r.path_qs for r in farm.requests_for("site")[before:]]


@pytest.fixture(scope="module")
def farm() -> Iterator[WebFarm]:
    with WebFarm({"site": site()}) as web:
        yield web


def test_the_queue_view_shows_what_a_crawl_fetches_next(
    tmp_path: Path, farm: WebFarm, browser: Any
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    out, origin = tmp_path / "out", farm.url("site", "/").rstrip("/")
    crawl = [*cli("crawl", "--out", str(out), "--config", str(config), "-q")]
    subprocess.run([*crawl, "--max-pages", "1", origin + "/"], check=True, timeout=60)
    before = len(farm.requests_for("site"))
    with DashboardServer(out) as dashboard:
        urls = queue_of(dashboard, origin)
        page = browser.new_page()
        page.goto(dashboard.url)
        page.wait_for_function("Number(document.body.dataset.updates || 0) >= 1")
        page.get_by_role("link", name=origin, exact=True).click()
        page.wait_for_function(f"document.body.dataset.queueHost === {json.dumps(origin)}")
        shown = page.locator("#queue tbody tr td:nth-child(2)").all_inner_texts()
        page.close()
    assert_lists_the_queue(urls, origin)
    assert shown == [u["url"] for u in urls]
    subprocess.run([*crawl, "--max-pages", "2", origin + "/"], check=True, timeout=60)
    assert fetched_after(farm, before) == [urls[0]["url"].removeprefix(origin)]


def test_a_workers_queue_view_reads_the_shared_frontier(
    tmp_path: Path, farm: WebFarm, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    origin = farm.url("site", "/").rstrip("/")
    shared = ["--frontier", cluster.url, "--namespace", "queue", "--buckets", "16"]
    subprocess.run(
        [*cli("seed", *shared), "--config", str(config), "-q", origin + "/"],
        check=True,
        timeout=60,
    )
    worker = [*cli("worker", *shared), "--config", str(config), "--out", str(tmp_path / "w")]
    subprocess.run([*worker, "-q", "--max-pages", "1"], check=True, timeout=60)
    before = len(farm.requests_for("site"))
    frontier = SharedFrontier(cluster.url, "queue", 16)
    with DashboardServer(tmp_path / "w", frontier=frontier) as dashboard:
        urls = queue_of(dashboard, origin)
    assert_lists_the_queue(urls, origin)
    subprocess.run([*worker, "-q", "--max-pages", "2"], check=True, timeout=60)
    assert fetched_after(farm, before) == [urls[0]["url"].removeprefix(origin)]

"""A robots.txt that changes is applied to what the old one excluded, judged from the server's log:
a site first disallows /private/ (for one second, Cache-Control: max-age=1), then allows it. The
/private/ pages its early pages linked were excluded for the reason "robots"; once robots.txt is
fetched again they are queued as new visits and fetched, and no /private/ page is requested before
that. The same on `crawlspace crawl` and on four `crawlspace worker` processes on a cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import LoggedRequest, Response, Site, WebFarm, html
from crawlspace.ops.export import iter_records
from tests.integration.test_robots_lifetime import changing
from tests.redis_servers import RedisDeployment
from tests.workers import cli, crawl_with_workers

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

CHAIN = 8  # deepest link at depth 8, under max_depth
GAP = 0.15  # min_delay: the chain lasts well past the first robots.txt's one-second life


def robots(text: str) -> Response:
    headers = {"Content-Type": "text/plain", "Cache-Control": "max-age=1"}
    return Response(200, headers, text.encode())


def site() -> Site:
    routes = {}
    for i in range(CHAIN):
        links = f'<a href="/private/{i}.html">private</a>'
        if i + 1 < CHAIN:
            links += f'<a href="/p{i + 1}">next</a>'
        routes[f"/p{i}"] = html(f"<html><body><h1>page {i}</h1>{links}</body></html>")
        routes[f"/private/{i}.html"] = html(f"<html><body>private {i}</body></html>")
    first = robots("User-agent: *\nDisallow: /private/\n")
    return Site("changing", routes, changing(first, robots("")))


def write_config(path: Path) -> Path:
    path.write_text(
        f"[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = {GAP}\ndelay_factor = 0.0\n"
        "robots_min_cache_seconds = 0.5\n"
    )
    return path


def assert_reevaluated(requests: list[LoggedRequest], urls: dict[str, dict[str, object]]) -> None:
    robots_at = sorted(r.started_at for r in requests if r.path_qs == "/robots.txt")
    assert len(robots_at) >= 2
    private = [r for r in requests if r.path_qs.startswith("/private/")]
    assert sorted(r.path_qs for r in private) == sorted(f"/private/{i}.html" for i in range(CHAIN))
    assert all(r.started_at > robots_at[1] for r in private)  # none under the first file
    # Some were excluded by the first file and queued again as a second visit.
    revisited = [u for u in urls if "/private/" in u and urls[u]["version"] == 2]
    assert revisited
    assert all(urls[u]["state"] == "fetched" for u in urls if "/private/" in u)


def test_a_single_crawl_fetches_what_the_new_robots_txt_allows(tmp_path: Path) -> None:
    config = write_config(tmp_path / "crawl.toml")
    with WebFarm({"changing": site()}) as farm:
        command = cli("crawl", "--out", str(tmp_path / "out"), "--config", str(config), "-q")
        seed = farm.url("changing", "/p0")
        subprocess.run([*command, seed], check=True, timeout=120, stdout=subprocess.DEVNULL)
        assert farm.wait_idle()
        requests = farm.requests_for("changing")
    urls = {str(r["url"]): r for r in iter_records(tmp_path / "out", "urls")}
    assert_reevaluated(requests, urls)


def test_workers_fetch_what_the_new_robots_txt_allows(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = write_config(tmp_path / "crawl.toml")
    with WebFarm({"changing": site()}) as farm:
        outs = [tmp_path / f"w{i}" for i in range(4)]
        seeds = [farm.url("changing", "/p0")]
        crawl_with_workers(cluster.url, "reeval", 16, config, seeds=seeds, outs=outs, timeout=120)
        assert farm.wait_idle()
        requests = farm.requests_for("changing")
    export = subprocess.run(
        [*cli("export", "--frontier", cluster.url, "--namespace", "reeval", "--what", "urls")],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    urls = {rec["url"]: rec for rec in map(json.loads, export.stdout.splitlines())}
    assert_reevaluated(requests, urls)

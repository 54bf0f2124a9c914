"""Seeds added while workers run widen every worker's scope, judged by the server: two
`crawlspace worker` processes crawl site A; meanwhile `crawlspace seed` adds site B (another
port of 127.0.0.1, so out of scope until seeded). Every page B links to is fetched, whichever
worker fetches B's home page: no worker keeps the scope it started with."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from tests.redis_servers import RedisDeployment
from tests.workers import cli

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

A_PAGES = {"/": " ".join(f'<a href="/a{i}.html">a{i}</a>' for i in range(16))}
A_PAGES.update({f"/a{i}.html": f"<p>a{i}</p>" for i in range(16)})
B_PAGES = {"/": '<a href="/b1.html">1</a> <a href="/b2.html">2</a>'}
B_PAGES.update({"/b1.html": '<a href="/b3.html">3</a>', "/b2.html": "<p>2</p>", "/b3.html": "3"})
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.25
delay_factor = 0.0
"""


def test_a_seed_added_during_the_crawl_widens_every_workers_scope(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    shared = ["--frontier", cluster.url, "--namespace", "scope", "--buckets", "16"]
    sites = {"a": html_site("a", A_PAGES), "b": html_site("b", B_PAGES)}
    with WebFarm(sites) as farm:
        seed = [*cli("seed", *shared), "--config", str(config), "-q"]
        subprocess.run([*seed, farm.url("a", "/")], check=True, timeout=60)
        worker = [*cli("worker", *shared), "--config", str(config), "-q"]
        workers = [subprocess.Popen([*worker, "--out", str(tmp_path / f"w{i}")]) for i in range(2)]
        try:
            deadline = time.monotonic() + 30
            while len(farm.requests_for("a")) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)  # the workers are crawling A (and built their scopes)
            subprocess.run([*seed, farm.url("b", "/")], check=True, timeout=60)
            for process in workers:
                assert process.wait(timeout=120) == 0
        finally:
            for process in workers:
                if process.poll() is None:
                    process.kill()
        assert farm.wait_idle()
        a_paths = {r.path_qs for r in farm.requests_for("a")}
        b_paths = {r.path_qs for r in farm.requests_for("b")}
    assert a_paths == {"/robots.txt", *A_PAGES}
    assert b_paths == {"/robots.txt", *B_PAGES}  # B's links were in scope on either worker

"""A worker ends only when the crawl is done: more workers than hosts, on a site whose pages are
found one at a time (a chain: most of the time nothing is queued and one worker holds the only
lease). Judged from the server's log: every page is fetched, and no worker exits before the last
request of the crawl has been answered."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from tests.redis_servers import start_single
from tests.workers import cli

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PAGES = 30
WORKERS = 4


def chain(count: int) -> dict[str, str]:
    """Page i links to page i + 1 only."""
    pages = {
        f"/p{i}.html": f'<html><body><p>page {i}</p><a href="/p{i + 1}.html">next</a></body></html>'
        for i in range(count - 1)
    }
    pages[f"/p{count - 1}.html"] = "<html><body><p>the end</p></body></html>"
    return pages


def wait_each(procs: list[subprocess.Popen[bytes]], timeout: float) -> list[float]:
    """When each process exited by itself (bounded: the rest are killed, and that fails)."""
    ended: list[float] = []
    deadline = time.monotonic() + timeout
    pending = list(procs)
    while pending and time.monotonic() < deadline:
        for proc in list(pending):
            if proc.poll() is not None:
                ended.append(time.monotonic())
                pending.remove(proc)
        time.sleep(0.01)
    for proc in pending:
        proc.kill()
        proc.wait(timeout=10)
    assert not pending, "workers still running"
    return ended


def test_no_worker_stops_while_another_still_finds_work(tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text("[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.05\nmax_depth = 100\n")
    redis = start_single(tmp_path / "redis")
    try:
        shared = ["--frontier", redis.url, "--namespace", "end", "--buckets", "8", "-q"]
        with WebFarm({"site": html_site("site", chain(PAGES))}) as farm:
            seed = cli("seed", *shared, "--config", str(config), farm.url("site", "/p0.html"))
            subprocess.run(seed, check=True, timeout=60, capture_output=True)
            logs = [tmp_path / f"w{i}.stderr" for i in range(WORKERS)]
            workers = []
            for i, log in enumerate(logs):
                args = [*shared, "--config", str(config), "--out", str(tmp_path / f"w{i}")]
                with log.open("wb") as sink:
                    workers.append(
                        subprocess.Popen(
                            cli("worker", *args), stdout=subprocess.DEVNULL, stderr=sink
                        )
                    )
            ended = wait_each(workers, timeout=90)
            for proc, log in zip(workers, logs, strict=True):
                assert proc.returncode == 0, log.read_text()
            farm.wait_idle()
            pages = [r for r in farm.requests_for("site") if r.path_qs != "/robots.txt"]
    finally:
        redis.stop()
    assert sorted(r.path_qs for r in pages) == sorted(chain(PAGES))
    last = max(r.ended_at for r in pages)
    early = [round(last - at, 2) for at in ended if at < last]
    assert not early, f"workers exited {early} s before the crawl's last page was answered"

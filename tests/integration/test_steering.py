"""Steering a running crawl from its dashboard (issue #32): pause, resume, stop and more seeds,
clicked in a headless chromium on `crawl --dashboard`, judged from the sites' request logs; a
command without the page's token is refused; on a shared frontier every worker obeys the same
commands (store/control.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.store.control import RedisControl
from crawlspace.store.redis.frontier import connect
from tests.integration.test_operator_views import _free_port, _open, _wait_http, browser
from tests.redis_servers import RedisDeployment
from tests.webs import slow_site
from tests.workers import cli, wait_all

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)
__all__ = ["browser"]  # (the fixture, shared with the operator views' module)

SETTINGS = '[crawl]\nallow_nets = ["127.0.0.0/8"]\nmin_delay = 0.0\ndelay_factor = 0.0\n'
DELAY = 0.15  # each slow page's response time: 40 pages take ~6 s


def _until(what: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _post(url: str, body: dict[str, Any], token: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["X-Crawlspace-Token"] = token
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_pause_resume_seeds_and_stop_from_the_dashboard(tmp_path: Path, browser: Any) -> None:
    sites = {"slow": slow_site("slow", 40, DELAY), "extra": html_site("extra", {"/": "more"})}
    with WebFarm(sites) as farm:
        config = tmp_path / "crawl.toml"
        config.write_text(SETTINGS)
        port = _free_port()
        command = [
            *cli("crawl", farm.url("slow", "/p0.html")),
            *("--out", str(tmp_path / "out"), "--config", str(config), "-q"),
            *("--dashboard", "--dashboard-port", str(port)),
        ]
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            url = f"http://127.0.0.1:{port}/"
            _wait_http(url, proc)
            page, problems = _open(browser, url)
            page.wait_for_selector("#steer:not([hidden])", timeout=15_000)
            _until(lambda: len(farm.paths_for("slow")) >= 3)
            # No command without the page's token, nor with another.
            for token in (None, "not-the-token"):
                assert _post(url + "api/control", {"command": "stop"}, token) == 403
            page.click("#pause")
            page.wait_for_selector('body[data-paused="true"]', timeout=10_000)
            # The crawl reads its commands every 0.5 s, between two turns of its dispatcher (at
            # most 0.5 s apart); then what was in flight ends.
            time.sleep(2.0)
            paused_at = len(farm.requests)
            time.sleep(1.5)
            assert len(farm.requests) == paused_at  # nothing sent while paused
            page.fill("#seeds", farm.url("extra", "/") + "\nnot a url")
            page.click("#add-seeds")
            # (each command first says it is sending: the answer replaces that)
            page.wait_for_function(
                "document.getElementById('steer-said').textContent.includes('not a usable')"
            )
            assert "not a usable http(s) URL" in page.inner_text("#steer-said")
            page.fill("#seeds", farm.url("extra", "/"))
            page.click("#add-seeds")
            page.wait_for_function(
                "document.getElementById('steer-said').textContent === 'sent: seeds'"
            )
            time.sleep(1.0)
            assert farm.paths_for("extra") == []  # taken while paused, not fetched
            page.click("#resume")
            page.wait_for_selector('body[data-paused="false"]', timeout=10_000)
            _until(lambda: "/" in farm.paths_for("extra"))
            page.click("#stop")
            assert proc.wait(timeout=30) == 0
            stderr = proc.stderr.read().decode() if proc.stderr else ""
            fetched = [p for p in farm.paths_for("slow") if p != "/robots.txt"]
            assert len(fetched) < 40  # stopped before the site was done
            assert "stopping, as asked from the dashboard" in stderr
            # (the browser reports the refused seed's 400 itself; nothing else went wrong)
            assert [p for p in problems if "400 (Bad Request)" not in p] == []
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            if proc.stderr:
                proc.stderr.close()


def test_every_worker_obeys_the_shared_crawls_commands(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text(SETTINGS)
    shared = ["--frontier", cluster.url, "--namespace", "steer", "--buckets", "16"]
    client = connect(cluster.url)
    control = RedisControl(client, "steer")
    with WebFarm({"a": slow_site("a", 40, DELAY), "b": slow_site("b", 40, DELAY)}) as farm:
        seeds = [farm.url("a", "/p0.html"), farm.url("b", "/p0.html")]
        subprocess.run(
            [*cli("seed", *shared), "--config", str(config), "-q", *seeds],
            check=True,
            timeout=60,
            stdout=subprocess.DEVNULL,
        )
        workers = [
            subprocess.Popen(
                [
                    *cli("worker", *shared),
                    "--config",
                    str(config),
                    "--out",
                    str(tmp_path / f"w{i}"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i in range(2)
        ]
        try:
            _until(lambda: len(farm.requests) >= 6)
            control.pause()
            time.sleep(2.5)  # each worker reads it within ~1 s; what was in flight ends
            paused_at = len(farm.requests)
            time.sleep(1.5)
            assert len(farm.requests) == paused_at
            control.resume()
            _until(lambda: len(farm.requests) > paused_at + 2)
            control.stop()
            wait_all(workers, 30)
            assert [w.returncode for w in workers] == [0, 0]
            assert len(farm.requests) < 2 * 41  # both sites were left unfinished
        finally:
            client.close()
            for worker in workers:
                if worker.poll() is None:
                    worker.kill()
                    worker.wait(timeout=30)
    assert sys.executable  # (the workers ran with this interpreter: tests.workers.cli)

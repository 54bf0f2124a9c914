"""No dead directory (issue #32): a first crawl of a loopback site without ``--allow-net`` fetches
nothing (the address guard refuses it and its robots.txt), and the same crawl rerun with
``--allow-net 127.0.0.0/8 --reconfigure`` crawls the site. Judged from the site's own request log,
in one crawl process and with a worker on one Redis."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.ops.export import iter_records
from tests.redis_servers import RedisDeployment, start_single
from tests.workers import cli

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

PAGES = {
    "/": '<html><body><a href="/a.html">a</a> <a href="/b.html">b</a></body></html>',
    "/a.html": '<html><body><a href="/">home</a></body></html>',
    "/b.html": "<html><body>b</body></html>",
}
CONFIG = """
[crawl]
min_delay = 0.0
delay_factor = 0.0
concurrency = 2
total_timeout = 5.0
"""
OPEN = ["--allow-net", "127.0.0.0/8", "--reconfigure"]


@pytest.fixture
def farm() -> Iterator[WebFarm]:
    with WebFarm({"site": html_site("site", PAGES)}) as web:
        yield web


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    deployment = start_single(tmp_path_factory.mktemp("redis"))
    yield deployment
    deployment.stop()


def _run(command: list[str]) -> str:
    done = subprocess.run(command, check=True, timeout=120, capture_output=True, text=True)
    return done.stdout + done.stderr


def _states(out: Path) -> dict[str, tuple[str, str | None]]:
    return {r["url"]: (r["state"], r["reason"]) for r in iter_records(out, "urls")}


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    return config


def test_a_crawl_rerun_with_allow_net_crawls_what_the_guard_refused(
    farm: WebFarm, tmp_path: Path
) -> None:
    out, home = tmp_path / "crawl", farm.url("site", "/")
    crawl = cli("crawl", "--out", str(out), "--config", str(_config(tmp_path)))
    _run([*crawl, home])
    assert farm.wait_idle()
    assert farm.requests_for("site") == []  # refused at connect: nothing sent
    assert _states(out) == {home: ("excluded", "blocked_address")}

    said = _run([*crawl, *OPEN])
    assert farm.wait_idle()
    assert "1 URLs excluded as blocked_address queued again" in said
    served = farm.paths_for("site")
    assert served[0] == "/robots.txt"  # asked again before any page
    assert sorted(served) == ["/", "/a.html", "/b.html", "/robots.txt"]
    states = _states(out)
    assert {url: state for url, (state, _) in states.items()} == {
        farm.url("site", path): "fetched" for path in PAGES
    }


def test_a_worker_reconfigured_with_allow_net_crawls_what_the_guard_refused(
    farm: WebFarm, redis: RedisDeployment, tmp_path: Path
) -> None:
    config, home = _config(tmp_path), farm.url("site", "/")
    shared = ["--frontier", redis.url, "--namespace", "guarded", "--config", str(config)]
    _run([*cli("seed", *shared), home])
    _run(cli("worker", *shared, "--out", str(tmp_path / "w1")))
    assert farm.wait_idle()
    assert farm.requests_for("site") == []

    said = _run([*cli("worker", *shared, "--out", str(tmp_path / "w2")), *OPEN])
    assert farm.wait_idle()
    assert "1 URLs excluded as blocked_address queued again" in said
    stored = _run(cli("config", "--frontier", redis.url, "--namespace", "guarded"))
    assert 'allow_nets  (--allow-net CIDR)  this crawl: ["127.0.0.0/8"] (default: none)' in stored
    served = farm.paths_for("site")
    assert served[0] == "/robots.txt"
    assert sorted(served) == ["/", "/a.html", "/b.html", "/robots.txt"]

"""`crawlspace seed` and `worker` honour what they are given or refuse it in one line: seeds from
--seeds FILE, sitemaps from --sitemap (crawled by a worker, judged from the server's log); flags
of a crawl's run (which each worker reads from its own command line) refused on seed, and the
single-process Bloom filter's settings on both, before anything is added."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from crawlspace.demo.sites import Site, html, sitemap_xml
from crawlspace.demo.webfarm import WebFarm
from crawlspace.store.redis.frontier import RedisFrontier, connect
from tests.redis_servers import RedisDeployment, start_single
from tests.workers import cli

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

LISTED = [f"/listed/{i}.html" for i in range(4)]  # linked from nowhere: only the sitemap has them


def build(ports: Mapping[str, int]) -> dict[str, Site]:
    base = f"http://127.0.0.1:{ports['site']}"
    routes = {"/": html("<html><body><p>home, linking nowhere</p></body></html>")}
    routes.update({p: html(f"<html><body><p>listed {p}</p></body></html>") for p in LISTED})
    routes["/sitemap.xml"] = sitemap_xml(base, LISTED)
    routes["/other.html"] = html("<html><body><p>another seed</p></body></html>")
    return {"site": Site("site", routes)}


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[RedisDeployment]:
    deployment = start_single(tmp_path / "redis")
    yield deployment
    deployment.stop()


def shared(redis: RedisDeployment, namespace: str) -> list[str]:
    return ["--frontier", redis.url, "--namespace", namespace, "--buckets", "8", "-q"]


def queued(redis: RedisDeployment, namespace: str) -> int:
    frontier = RedisFrontier(connect(redis.url), namespace=namespace, buckets=8, epoch=0)
    try:
        return frontier.queued()
    finally:
        frontier.close()


@pytest.mark.parametrize(
    "flag",
    [
        ["--max-pages", "5"],
        ["--duration", "10"],
        ["--concurrency", "4"],
        ["--continuous"],
        ["--max-bytes", "100"],
        ["--metrics-port", "9"],
        ["--dashboard"],
        ["--dashboard-port", "9999"],
        ["--index"],
    ],
)
def test_flags_of_a_run_are_refused_on_seed(redis: RedisDeployment, flag: list[str]) -> None:
    command = cli("seed", *shared(redis, "refused"), *flag, "http://127.0.0.1:9/")
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{flag[0]} go with each worker, not with seed" in lines[0]
    assert queued(redis, "refused") == 0


def test_seed_with_nothing_to_add_is_refused(redis: RedisDeployment) -> None:
    done = subprocess.run(
        cli("seed", *shared(redis, "empty")), check=False, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "nothing to add" in done.stderr


def test_seeds_file_and_sitemap_reach_the_workers(redis: RedisDeployment, tmp_path: Path) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text("[crawl]\nallow_nets = ['127.0.0.0/8']\nmin_delay = 0.02\n")
    with WebFarm.deferred(["site"], build) as farm:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"# one seed a line\n{farm.url('site', '/')}\n\n")
        command = cli(
            "seed",
            *shared(redis, "given"),
            "--config",
            str(config),
            "--seeds",
            str(seeds),
            "--sitemap",
            farm.url("site", "/sitemap.xml"),
            farm.url("site", "/other.html"),
        )
        subprocess.run(command, check=True, timeout=60, capture_output=True)
        worker = cli("worker", *shared(redis, "given"), "--out", str(tmp_path / "w0"))
        done = subprocess.run(worker, check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        farm.wait_idle()
        paths = {r.path_qs for r in farm.requests_for("site") if r.status == 200}
    assert paths == {"/", "/other.html", "/sitemap.xml", *LISTED}


@pytest.mark.parametrize("command", ["seed", "worker"])
def test_the_bloom_filter_settings_are_refused_on_a_shared_frontier(
    redis: RedisDeployment, tmp_path: Path, command: str
) -> None:
    config = tmp_path / "crawl.toml"
    config.write_text("[crawl]\nbloom_expected_urls = 5000000\n")
    where = ["--out", str(tmp_path / "w")] if command == "worker" else ["http://127.0.0.1:9/"]
    args = cli(command, *shared(redis, "bloom"), "--config", str(config), *where)
    done = subprocess.run(args, check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "bloom_expected_urls: the Bloom filter of a single-process crawl" in lines[0]
    assert queued(redis, "bloom") == 0

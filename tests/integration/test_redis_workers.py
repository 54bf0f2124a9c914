"""Four worker processes crawl one loopback web through a real 3-master Redis Cluster.

Judged from the web server's request log (politeness across all workers together) and from the
shared frontier itself (every URL terminal, one completion event per (url, version)): once with
one worker killed by SIGKILL mid-crawl, once with a Redis master killed mid-crawl.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from crawlspace.demo.webfarm import WebFarm, html_site
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import completion_events, url_records
from tests.integration.test_crawl_politeness import assert_polite
from tests.redis_servers import RedisDeployment, start_cluster, wait_cluster_ok
from tests.webs import linked_pages, slow_site
from tests.workers import cli

MIN_DELAY = 0.05
# Long enough that a SIGKILL sent right after a lease is seen lands inside that fetch.
SLOW_FETCH = 0.3
BUCKETS = 64
SITES = 6
PAGES = 12
WORKERS = 4
CONFIG = f"""
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = {MIN_DELAY}
delay_factor = 2.0
concurrency = 4
scope = "any"
total_timeout = 1.5
lease_grace = 0.5
"""


def build_farm() -> WebFarm:
    sites = {f"s{i}": html_site(f"s{i}", linked_pages(PAGES)) for i in range(SITES)}
    # Slow answers keep leases open for a while, so a kill lands on held leases.
    sites["slow"] = slow_site("slow", PAGES, SLOW_FETCH)
    return WebFarm(sites)


def seed(frontier_url: str, namespace: str, config: Path, farm: WebFarm) -> None:
    seeds = [farm.url(name, "/") for name in farm.names]
    subprocess.run(
        [
            *cli("seed", "--frontier", frontier_url, "--namespace", namespace),
            "--buckets",
            str(BUCKETS),
            "--config",
            str(config),
            "-q",
            *seeds,
        ],
        check=True,
        timeout=60,
    )


def start_worker(
    frontier_url: str, namespace: str, config: Path, out: Path
) -> subprocess.Popen[bytes]:
    args = cli("worker", "--frontier", frontier_url, "--namespace", namespace, "--out", str(out))
    args += ["--buckets", str(BUCKETS), "--config", str(config), "-q"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def live_leases(client: Any, namespace: str) -> list[str]:
    members: list[str] = []
    for bucket in range(BUCKETS):
        members += client.zrange(f"{{{namespace}:b{bucket}}}:leases", 0, -1)
    return members


def slow_page_lease(
    frontier: RedisFrontier, namespace: str, epoch_prefix: str, slow_host: str
) -> str | None:
    """A page lease of the given worker on the slow site, whose fetch takes SLOW_FETCH seconds."""
    for member in live_leases(frontier.client, namespace):
        kind, url_id, lease_id = member.split("|")
        if kind == "P" and lease_id.startswith(epoch_prefix):
            (record,) = url_records(frontier, [int(url_id)])
            if record is not None and record["host"] == slow_host:
                return member
    return None


def check_crawl(farm: WebFarm, frontier: RedisFrontier) -> None:
    for name in farm.names:
        assert_polite(farm.requests_for(name), MIN_DELAY)
        fetched = {r.path_qs for r in farm.requests_for(name) if r.status == 200}
        assert fetched >= set(linked_pages(PAGES)), name
    assert frontier.in_flight() == 0
    assert frontier.queued() == 0
    events = completion_events(frontier)
    per_visit = Counter((e["id"], e["version"]) for e in events)
    assert per_visit
    assert max(per_visit.values()) == 1
    # Every admitted URL (pages + "/" per site) ended in exactly one terminal event.
    assert len(per_visit) == len(farm.names) * (PAGES + 1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisDeployment]:
    deployment = start_cluster(tmp_path_factory.mktemp("cluster"), masters=3, replicas=1)
    yield deployment
    deployment.stop()


def run_crawl(
    tmp_path: Path, cluster: RedisDeployment, namespace: str, chaos: str
) -> tuple[WebFarm, RedisFrontier, str]:
    config = tmp_path / "crawl.toml"
    config.write_text(CONFIG)
    client = connect(cluster.url)
    frontier = RedisFrontier(client, namespace=namespace, buckets=BUCKETS, epoch=0)
    with build_farm() as farm:
        seed(cluster.url, namespace, config, farm)
        first_epoch = int(client.get(f"{namespace}:epoch")) + 1
        workers = [start_worker(cluster.url, namespace, config, tmp_path / "w0")]
        # Worker 0 alone first, so its epoch (the prefix of its lease ids) is known.
        mine = f"e{first_epoch}."
        wait_for(lambda: any(mine in m for m in live_leases(client, namespace)), 30, "a lease")
        for i in range(1, WORKERS):
            workers.append(start_worker(cluster.url, namespace, config, tmp_path / f"w{i}"))
        victim = ""
        try:
            wait_for(lambda: len(farm.requests) >= 25, 30, "25 requests")
            if chaos == "worker":
                victim = ""

                def found() -> bool:
                    nonlocal victim
                    victim = slow_page_lease(frontier, namespace, mine, farm.host_key("slow")) or ""
                    return bool(victim)

                wait_for(found, 20, "a slow page lease of worker 0")
                os.kill(workers[0].pid, signal.SIGKILL)
            else:
                master = next(n for n in cluster.nodes if "role:master" in _info(n.port))
                master.kill()
            for proc in workers[1:] if chaos == "worker" else workers:
                assert proc.wait(timeout=90) == 0
        finally:
            for proc in workers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=10)
        assert farm.wait_idle()
    return farm, frontier, victim


def _info(port: int) -> str:
    return subprocess.run(
        ["redis-cli", "-p", str(port), "INFO", "replication"],
        capture_output=True,
        text=True,
        timeout=5,
        check=True,
    ).stdout


@pytest.mark.slow
def test_four_workers_stay_polite_and_survive_a_kill_9(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    farm, frontier, victim = run_crawl(tmp_path, cluster, "kill9", chaos="worker")
    check_crawl(farm, frontier)
    # The killed worker's page lease expired and another worker completed that URL.
    _, url_id, _ = victim.split("|")
    (event,) = [e for e in completion_events(frontier) if e["id"] == url_id]
    assert not event["lease"].startswith(victim.split("|")[2].split(".")[0] + ".")
    frontier.close()


@pytest.mark.slow
def test_crawl_continues_through_a_master_failover(
    tmp_path: Path, cluster: RedisDeployment
) -> None:
    farm, frontier, _ = run_crawl(tmp_path, cluster, "failover", chaos="master")
    wait_cluster_ok(cluster)
    check_crawl(farm, frontier)
    frontier.close()

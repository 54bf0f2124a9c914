"""`stats --frontier` and `export --frontier` against the truth of a real crawl; the WAIT barrier.

Two `crawlspace worker` processes crawl a small loopback web through a single Redis and through
a 3-master Redis Cluster with one replica per master (a scan that read replicas as well as
masters would count every key twice; one that read a single master would miss two thirds).
The views must agree with the web server's request log: the same URLs, one fetch each, one
completion event per (url, version), the same hosts.

The barrier test completes pages by hand on the cluster and reads each master's own command
statistics: `WAIT` goes to the shards that took the links, never to the parent's own shard,
and a replica stopped with SIGSTOP makes the completion wait out its timeout and be counted.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from crawlspace.cli import main
from crawlspace.config import CrawlConfig
from crawlspace.crawl.setup import crawl_scope
from crawlspace.dashboard.data import SharedFrontier
from crawlspace.dashboard.server import DashboardServer
from crawlspace.demo.webfarm import Site, WebFarm, html_site
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.redis.frontier import RedisFrontier, connect
from crawlspace.store.redis.views import (
    completion_events,
    count_urls,
    frontier_stats,
    iter_frontier_records,
    url_record,
    url_state,
)
from crawlspace.urls import host_key as host_key_of
from tests.redis_servers import RedisDeployment, start_cluster, start_single, wait_cluster_ok
from tests.webs import linked_pages

pytestmark = pytest.mark.slow  # crawls of seconds: not in the quick subset (README)

BUCKETS = 64
PAGES = 8
SITES = ("a", "b", "c", "r")
ROBOTS = "User-agent: *\nDisallow: /p3.html\n"
CONFIG = """
[crawl]
allow_nets = ["127.0.0.0/8"]
min_delay = 0.05
delay_factor = 2.0
concurrency = 4
scope = "any"
total_timeout = 5.0
lease_grace = 2.0
sample_seconds = 0.05
"""


def build_sites(ports: Mapping[str, int]) -> dict[str, Site]:
    """Each site links to the next one's page 2, so a page's links span hosts (and shards)."""
    sites: dict[str, Site] = {}
    for i, name in enumerate(SITES):
        nxt = SITES[(i + 1) % len(SITES)]
        pages = linked_pages(PAGES)
        pages["/p1.html"] += f'<a href="http://127.0.0.1:{ports[nxt]}/p2.html">next site</a>'
        if name == "r":
            pages["/p1.html"] += '<a href="/missing.html">gone</a>'
        sites[name] = html_site(name, pages, robots=ROBOTS if name == "r" else None)
    return sites


@dataclass
class Crawled:
    """A finished shared crawl and the truth from the server's log."""

    deployment: RedisDeployment
    namespace: str
    fetched: Counter[str]  # page URL -> requests (robots.txt left out)
    hosts: dict[str, str]  # site name -> host key
    disallowed: str
    wait_calls: dict[int, int]  # master port -> WAIT commands it ran during the crawl
    outs: list[Path]  # the workers' own directories

    @property
    def frontier(self) -> list[str]:
        return ["--frontier", self.deployment.url, "--namespace", self.namespace]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "crawlspace.cli", *args]


def masters(deployment: RedisDeployment) -> list[int]:
    ports = []
    for node in deployment.nodes:
        with redis.Redis(port=node.port, decode_responses=True) as r:
            if r.info("replication")["role"] == "master":
                ports.append(node.port)
    return ports


def wait_calls(deployment: RedisDeployment) -> dict[int, int]:
    calls = {}
    for port in masters(deployment):
        with redis.Redis(port=port, decode_responses=True) as r:
            calls[port] = int(r.info("commandstats").get("cmdstat_wait", {}).get("calls", 0))
    return calls


@pytest.fixture(scope="module")
def deployments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RedisDeployment]]:
    single = start_single(tmp_path_factory.mktemp("redis"))
    try:
        cluster = start_cluster(tmp_path_factory.mktemp("cluster"), masters=3, replicas=1)
    except BaseException:
        single.stop()
        raise
    yield {"single": single, "cluster": cluster}
    cluster.stop()
    single.stop()


@pytest.fixture(scope="module", params=["single", "cluster"])
def crawled(
    request: pytest.FixtureRequest,
    deployments: dict[str, RedisDeployment],
    tmp_path_factory: pytest.TempPathFactory,
) -> Crawled:
    deployment = deployments[request.param]
    namespace = f"views-{request.param}"
    tmp = tmp_path_factory.mktemp(f"views-{request.param}")
    config = tmp / "crawl.toml"
    config.write_text(CONFIG)
    common = ["--frontier", deployment.url, "--namespace", namespace, "--buckets", str(BUCKETS)]
    common += ["--config", str(config), "-q"]
    durability = ["--wait-replicas", "1", "--wait-timeout", "2"]
    before = wait_calls(deployment)
    with WebFarm.deferred(SITES, build_sites) as farm:
        seeds = [farm.url(name, "/") for name in SITES]
        subprocess.run(cli("seed", *common, *seeds), check=True, timeout=60)
        workers = [
            subprocess.Popen(
                cli("worker", *common, "--out", str(tmp / f"w{i}"), *durability),
                stdout=subprocess.DEVNULL,
            )
            for i in range(2)
        ]
        try:
            for proc in workers:
                assert proc.wait(timeout=120) == 0
        finally:
            for proc in workers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=10)
        assert farm.wait_idle()
        fetched = Counter(
            farm.url(r.site, r.path_qs) for r in farm.requests if r.path_qs != "/robots.txt"
        )
        hosts = {name: farm.host_key(name) for name in SITES}
        disallowed = farm.url("r", "/p3.html")
    after = wait_calls(deployment)
    calls = {port: after[port] - before.get(port, 0) for port in after}
    outs = [tmp / f"w{i}" for i in range(2)]
    return Crawled(deployment, namespace, fetched, hosts, disallowed, calls, outs)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def export(capsys: pytest.CaptureFixture[str], crawled: Crawled, what: str) -> list[dict[str, Any]]:
    out = run_cli(capsys, "export", *crawled.frontier, "--what", what)
    return [json.loads(line) for line in out.splitlines()]


def test_stats_match_the_server_log(crawled: Crawled, capsys: pytest.CaptureFixture[str]) -> None:
    assert crawled.fetched, "the crawl fetched nothing"
    assert max(crawled.fetched.values()) == 1, "a page was fetched twice in a clean crawl"
    assert crawled.disallowed not in crawled.fetched
    stats = json.loads(run_cli(capsys, "stats", *crawled.frontier, "--json"))
    pages = len(crawled.fetched)
    assert stats["fetched"] == pages
    assert stats["urls"] == pages + 1  # + the URL robots.txt disallows
    assert stats["states"] == {"excluded": 1, "fetched": pages}
    assert stats["reasons"] == {"excluded:robots": 1}
    assert stats["events"] == stats["urls"]
    assert (stats["queued"], stats["in_flight"], stats["hosts_ready"]) == (0, 0, 0)
    assert stats["hosts"] == stats["hosts_crawled"] == len(SITES)
    assert stats["robots"] == {"allow_all": len(SITES) - 1, "rules": 1}
    assert stats["seed_hosts"] == len(SITES)
    assert stats["epochs"] == 3  # the seed command and two workers
    assert (stats["buckets"], stats["wait_short"], stats["wait_lease_short"]) == (BUCKETS, 0, 0)
    table = run_cli(capsys, "stats", *crawled.frontier)
    assert "shared frontier" in table
    assert f"{stats['urls']} (0 queued)" in table


def test_link_counters_are_crawl_wide(crawled: Crawled, capsys: pytest.CaptureFixture[str]) -> None:
    """Each page's link dedup counters reach the shared frontier (and its worker's own
    directory): the crawl-wide figures are the workers' sums."""
    stats = json.loads(run_cli(capsys, "stats", *crawled.frontier, "--json"))
    workers = [json.loads(run_cli(capsys, "stats", str(out), "--json")) for out in crawled.outs]
    for name in ("links_total", "links_distinct_raw", "links_distinct_policy"):
        assert stats["dedup"][name] == sum(w["dedup"].get(name, 0) for w in workers) > 0, name
    assert 0.0 <= stats["dedup"]["link_duplicate_rate_raw"] < 1.0


def test_a_workers_samples_show_the_crawl_wide_discovery(crawled: Crawled) -> None:
    """A worker's own directory counts none of the URLs the frontier admits: its samples take
    the crawl's pages and URLs known, so the discovery ratio is the crawl's, not 0."""
    for out in crawled.outs:
        with sqlite3.connect(out / "crawl.db") as db:
            rows = db.execute("SELECT discovered, discovery_ratio FROM samples").fetchall()
        assert rows, out
        assert max(discovered for discovered, _ in rows) >= len(crawled.fetched)
        assert any(ratio is not None and ratio > 0 for _, ratio in rows), rows


def test_export_urls_events_and_hosts(
    crawled: Crawled, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    urls = export(capsys, crawled, "urls")
    by_url = {u["url"]: u for u in urls}
    assert len(by_url) == len(urls), "a URL was exported twice"
    assert {u for u, rec in by_url.items() if rec["state"] == "fetched"} == set(crawled.fetched)
    assert by_url[crawled.disallowed]["state"] == "excluded"
    assert by_url[crawled.disallowed]["reason"] == "robots"
    assert by_url[crawled.fetched.most_common(1)[0][0]]["version"] == 1
    assert all(u["lease"] is None and u["attempts"] <= 1 for u in urls)

    events = export(capsys, crawled, "events")
    assert Counter((e["url"], e["version"]) for e in events).most_common(1)[0][1] == 1
    assert {e["url"] for e in events} == set(by_url)
    assert all(e["url_id"] == by_url[e["url"]]["url_id"] for e in events)
    assert all(e["state"] == by_url[e["url"]]["state"] for e in events)

    host_list = export(capsys, crawled, "hosts")
    hosts = {h["host_key"]: h for h in host_list}
    assert len(hosts) == len(host_list), "a host was exported twice"
    assert set(hosts) == set(crawled.hosts.values())
    per_host = Counter(url.split("/", 3)[2] for url in crawled.fetched)
    for host_key, host in hosts.items():
        assert host["fetched"] == per_host[host_key.split("/", 3)[2]], host_key
        assert (host["queued"], host["in_flight"]) == (0, 0)
    robots = hosts[crawled.hosts["r"]]
    assert (robots["robots_status"], robots["robots_outcome"]) == (200, "rules")
    assert robots["robots_sha256"] == hashlib.sha256(ROBOTS.encode()).hexdigest()
    assert hosts[crawled.hosts["a"]]["robots_status"] == 404

    out = tmp_path / "urls.csv"
    command = ["export", *crawled.frontier, "--what", "urls", "--format", "csv", "--output"]
    assert main([*command, str(out)]) == 0
    with out.open(newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == len(urls)
    assert list(rows[0]) == list(urls[0])
    assert {r["url"] for r in rows} == set(by_url)


def test_workers_wait_for_replicas_only_across_cluster_shards(crawled: Crawled) -> None:
    """The workers (run with --wait-replicas 1) sent WAIT to exactly the masters that hold a
    site: each lease grant is confirmed on its own shard, and page 1 of each site links to the
    next site, whose master is then one of those too. Never to a single Redis (one shard, no
    replicas). The per-shard choice for links is checked by hand below."""
    expected: set[int] = set()
    if crawled.deployment.cluster:
        frontier = RedisFrontier(
            connect(crawled.deployment.url), namespace=crawled.namespace, buckets=BUCKETS, epoch=0
        )
        try:
            expected = {master_of(frontier, host) for host in crawled.hosts.values()}
        finally:
            frontier.close()
    assert {port for port, n in crawled.wait_calls.items() if n} == expected


def master_of(frontier: RedisFrontier, host_key: str) -> int:
    """The port of the master that holds ``host_key``'s bucket."""
    key = frontier.key_prefix(frontier.bucket(host_key)) + "st"
    return int(frontier.client.get_node_from_key(key).port)


@pytest.mark.parametrize("kind", ["single", "cluster"])
def test_large_buckets_are_read_page_by_page(
    kind: str, deployments: dict[str, RedisDeployment]
) -> None:
    """3,000 URLs in 2 buckets: each bucket's records span many lists, which the read scripts
    return a few at a time, so the views must follow every cursor to its end and count each URL
    once."""
    url = deployments[kind].url
    namespace, total = f"paged-{kind}", 3000
    frontier = RedisFrontier(connect(url), namespace=namespace, buckets=2, epoch=0)
    try:
        hosts = [f"http://h{i}.test" for i in range(30)]
        found = [UrlCandidate(f"{hosts[i % 30]}/{i}", hosts[i % 30], 0) for i in range(total)]
        assert frontier.add(found, 1.0).added == total
        lease = frontier.lease(1.0, 1, 60.0)[0]  # a robots.txt lease: no URL changes state
        assert lease.kind is LeaseKind.ROBOTS
        assert count_urls(frontier) == {"queued": total}
        urls = [u["url"] for u in iter_frontier_records(frontier, "urls")]
        assert sorted(urls) == sorted(c.url for c in found)
        assert {h["host_key"] for h in iter_frontier_records(frontier, "hosts")} == set(hosts)
    finally:
        frontier.close()


# -- errors: each names what was wrong ----------------------------------------------------------


@contextmanager
def socket_bound() -> Iterator[int]:
    """A loopback port that refuses connections: bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stats"], "give either a crawl directory or --frontier URL"),
        (["stats", "somedir", "--frontier", "{url}"], "give either a crawl directory"),
        (["stats", "--frontier", "{url}", "--namespace", "nosuch"], "holds no crawl in namespace"),
        (
            ["stats", "--frontier", "{url}", "--namespace", "errors", "--buckets", "7"],
            "uses 64",
        ),
        (
            ["export", "--frontier", "{url}", "--namespace", "errors", "--what", "fetches"],
            "each worker's own DIR/crawl.db",
        ),
        (
            ["export", "--frontier", "{url}", "--what", "urls", "--format", "parquet"],
            "use jsonl or csv",
        ),
        (["stats", "--frontier", "http://127.0.0.1:1/"], "starts with redis://"),
        (["stats", "--frontier", "redis://127.0.0.1:{dead}/0"], "cannot read the frontier at"),
    ],
)
def test_view_errors_are_clear(
    args: list[str],
    message: str,
    deployments: dict[str, RedisDeployment],
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = deployments["single"].url
    RedisFrontier(connect(url), namespace="errors", buckets=BUCKETS, epoch=0).close()
    with socket_bound() as dead:
        argv = [a.format(url=url, dead=dead) for a in args]
        capsys.readouterr()
        assert main(argv) == 2
    assert message in capsys.readouterr().err


# -- the replication barrier, driven by hand on the cluster -------------------------------------


def host_on(frontier: RedisFrontier, port: int, tag: str) -> str:
    """A host key whose bucket lives on the master at ``port``."""
    for i in range(1000):
        host = f"http://{tag}{i}.test"
        if master_of(frontier, host) == port:
            return host
    raise AssertionError(f"no host of {BUCKETS} buckets maps to the master on port {port}")


def page_lease(frontier: RedisFrontier, url: str, host: str, now: float) -> Any:
    """Admit ``url`` and lease it: the host's robots.txt lease is answered first if it comes,
    other hosts' leases (earlier links, also queued) are given back."""
    frontier.add([UrlCandidate(url, host, 0, source="seed")], now)
    for _ in range(3):
        page = None
        for lease in frontier.lease(now, 100, 60.0):
            if lease.host_key != host:
                assert frontier.release(lease, now)
            elif lease.kind is LeaseKind.PAGE:
                page = lease
            else:
                record = RobotsRecord(host, 404, "allow_all", b"", now, now + 3600.0)
                assert frontier.complete_robots(lease, record, now)
        if page is not None:
            assert page.url == url
            return page
    raise AssertionError(f"no page lease for {url}")


def barrier_frontier(cluster: RedisDeployment, namespace: str) -> RedisFrontier:
    """A frontier whose writes wait for one replica (0.5 s at most), as workers do by default."""
    client = connect(cluster.url)
    return RedisFrontier(
        client, namespace=namespace, buckets=BUCKETS, wait_replicas=1, wait_timeout=0.5
    )


def test_completion_waits_for_replicas_of_the_link_shards(
    deployments: dict[str, RedisDeployment],
) -> None:
    cluster = deployments["cluster"]
    frontier = barrier_frontier(cluster, "barrier")
    try:
        home, *others = masters(cluster)
        parent = host_on(frontier, home, "parent")
        links = [host_on(frontier, port, f"link{port}-") for port in (home, *others)]
        now = time.time()

        def complete(lease: Lease, link_tag: str, barrier: RedisFrontier) -> None:
            found = [UrlCandidate(f"{h}/{link_tag}", h, 1) for h in links]
            assert barrier.complete(lease, Completion(state="fetched", discovered=found), now)

        # (Leasing WAITs on the lease's own shard: see the next test.)
        lease = page_lease(frontier, f"{parent}/one", parent, now)
        before = wait_calls(cluster)
        complete(lease, "one", frontier)
        after = wait_calls(cluster)
        # One WAIT on each other master, none on the page's own master.
        assert {p: after[p] - before[p] for p in after} == {home: 0, **dict.fromkeys(others, 1)}
        # So the replicas of those shards hold the links once the completion returns.
        for host in links[1:]:
            assert replica_has(frontier, host, f"{host}/one")

        # Barrier off: no WAIT at all.
        off = RedisFrontier(frontier.client, namespace="barrier", buckets=BUCKETS, epoch=0)
        complete(page_lease(off, f"{parent}/two", parent, now), "two", off)
        assert wait_calls(cluster) == after

        # A replica that does not answer: the completion waits out the timeout, then proceeds
        # and is counted.
        stopped = replica_node(cluster, frontier, links[1])
        lease = page_lease(frontier, f"{parent}/three", parent, now)
        os.kill(stopped.proc.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            complete(lease, "three", frontier)
            waited = time.monotonic() - started
        finally:
            os.kill(stopped.proc.pid, signal.SIGCONT)
        assert waited >= 0.45
        assert frontier.client.hget("barrier:counters", "wait.short") == "1"
    finally:
        frontier.close()
        wait_cluster_ok(cluster)


def test_a_lease_is_handed_out_only_once_its_grant_is_on_a_replica(
    deployments: dict[str, RedisDeployment],
) -> None:
    """A failover must not lose a grant whose fetch is under way: the promoted replica would
    give the host to a second worker while the first one's request runs."""
    cluster = deployments["cluster"]
    frontier = barrier_frontier(cluster, "leasebar")
    try:
        home = masters(cluster)[0]
        host = host_on(frontier, home, "granted")
        now = time.time()
        before = wait_calls(cluster)
        first = page_lease(frontier, f"{host}/a", host, now)
        assert wait_calls(cluster)[home] > before[home]
        # The replica holds the grant by the time the lease is handed out.
        with redis.Redis(
            port=replica_port(home), decode_responses=True, single_connection_client=True
        ) as replica:
            replica.execute_command("READONLY")
            held = replica.zrange(frontier.key_prefix(frontier.bucket(host)) + "leases", 0, -1)
        assert any(member.endswith(first.lease_id) for member in held)
        assert frontier.complete(first, Completion(state="fetched"), now)
        frontier.add([UrlCandidate(f"{host}/b", host, 0, source="seed")], now)

        # A replica that does not answer: the grant is given back instead of handed out.
        stopped = replica_node(cluster, frontier, host)
        os.kill(stopped.proc.pid, signal.SIGSTOP)
        try:
            unconfirmed = frontier.lease(now + 100, 100, 60.0)
        finally:
            os.kill(stopped.proc.pid, signal.SIGCONT)
        assert [lease.url for lease in unconfirmed] == []
        assert frontier.client.hget("leasebar:counters", "wait.lease_short") == "1"
        assert frontier_stats(frontier)["wait_lease_short"] == 1
        # The URL stayed queued: with the replica back, the next lease hands it out.
        wait_cluster_ok(cluster)
        again = frontier.lease(now + 200, 100, 60.0)
        assert [lease.url for lease in again] == [f"{host}/b"]
    finally:
        frontier.close()
        wait_cluster_ok(cluster)


class _LosingPipeline:
    """A pipeline whose first execute that runs script ``sha`` runs and then loses its replies."""

    def __init__(self, pipe: Any, sha: str, lost: list[Any]) -> None:
        self._pipe, self._sha, self._lost = pipe, sha, lost
        self._runs = False

    def execute_command(self, *args: Any) -> Any:
        self._runs |= args[:2] == ("EVALSHA", self._sha)
        return self._pipe.execute_command(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        replies = self._pipe.execute(*args, **kwargs)
        if self._runs and not self._lost:
            self._lost.append(replies)
            raise redis.exceptions.ConnectionError("replies lost after the scripts ran")
        return replies


@pytest.mark.parametrize("riding", [False, True], ids=["alone", "with-waiting-writes"])
def test_a_completion_whose_reply_was_lost_still_counts(
    deployments: dict[str, RedisDeployment], riding: bool
) -> None:
    """The script ran, its reply was lost, the call was retried: the retry must not call the
    completion stale (a worker would roll back the local rows of a page the frontier has).
    Alone the completion is one EVALSHA; with writes waiting to ride along (index marks, a
    given address token: scripts.py Rider) it is a pipeline."""
    namespace = f"lost-{int(riding)}"
    frontier = RedisFrontier(connect(deployments["single"].url), namespace=namespace, buckets=4)
    try:
        host, now = "http://lost.test", time.time()
        page = page_lease(frontier, f"{host}/1", host, now)
        lost: list[Any] = []
        if riding:
            frontier.give_address("127.0.0.9", "some-lease", now)
            assert frontier.index.waiting()
            assert frontier.tokens.waiting()
            pipeline = frontier.client.pipeline
            frontier.client.pipeline = lambda **kw: _LosingPipeline(  # type: ignore[method-assign]
                pipeline(**kw), frontier._sha["complete"], lost
            )
        else:
            frontier.flush_riders()
            real = frontier.client.evalsha

            def reply_lost(*args: Any) -> Any:
                reply = real(*args)
                if args[0] == frontier._sha["complete"] and not lost:
                    lost.append(reply)
                    raise redis.exceptions.ConnectionError("reply lost after the script ran")
                return reply

            frontier.client.evalsha = reply_lost  # type: ignore[method-assign]
        assert frontier.complete(page, Completion(state="fetched"), now)
        assert not frontier.tokens.waiting()  # the given token went with the completion
        assert lost, "the fault was injected"
        # A second call with the same lease is a duplicate: refused, as by every store.
        assert not frontier.complete(page, Completion(state="fetched"), now)
        assert len(completion_events(frontier)) == 1
        assert url_state(frontier, f"{host}/1", host) == ("fetched", None)
    finally:
        frontier.close()


@pytest.mark.slow
def test_a_grant_whose_master_dies_during_wait_stays_unconfirmed(tmp_path: Path) -> None:
    """The barrier asks each master on a connection of its own. Through the cluster client's
    pipeline, a WAIT whose connection broke was retried alone on a fresh connection to another
    node, which had written nothing and confirmed at once: a grant the failover then lost was
    handed out, and a second worker got the same host."""
    cluster = start_cluster(tmp_path / "cluster", masters=3, replicas=1)
    stopped: list[int] = []
    try:
        frontier = RedisFrontier(
            connect(cluster.url),
            namespace="diewait",
            buckets=BUCKETS,
            wait_replicas=1,
            wait_timeout=1.0,
        )
        key = frontier.key_prefix(0) + "st"
        master_port = frontier.client.get_node_from_key(key).port
        master = next(n for n in cluster.nodes if n.port == master_port)
        replica = next(n for n in cluster.nodes if n.port == replica_port(master_port))
        barrier = frontier.barrier
        assert barrier.unconfirmed({key}) == set()  # a healthy shard confirms
        os.kill(replica.proc.pid, signal.SIGSTOP)  # the grant can no longer reach a replica
        stopped.append(replica.proc.pid)
        killer = threading.Timer(0.3, lambda: os.kill(master.proc.pid, signal.SIGKILL))
        killer.start()  # the master dies 0.3 s into the 1 s WAIT
        try:
            assert barrier.unconfirmed({key}) == {key}
        finally:
            killer.join()
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        cluster.stop()


def replica_port(master_port: int) -> int:
    """The port of the master's (one) connected replica, from ROLE: the master's own word. A
    cluster just started may not have linked its replica yet: asked again for up to 10 s."""
    deadline = time.monotonic() + 10.0
    with redis.Redis(port=master_port, decode_responses=True) as r:
        while not (replicas := r.execute_command("ROLE")[2]):
            assert time.monotonic() < deadline, f"no replica linked to {master_port}"
            time.sleep(0.05)
    (_, port, _), *_ = replicas
    return int(port)


def replica_node(cluster: RedisDeployment, frontier: RedisFrontier, host: str) -> Any:
    port = replica_port(master_of(frontier, host))
    return next(n for n in cluster.nodes if n.port == port)


def replica_has(frontier: RedisFrontier, host: str, url: str) -> bool:
    """Read ``url``'s record from the replica itself (READONLY: serve our slots' reads)."""
    port = replica_port(master_of(frontier, host))
    with redis.Redis(port=port, decode_responses=True, single_connection_client=True) as r:
        r.execute_command("READONLY")
        return url_record(frontier, url, host, client=r) is not None


def test_the_seeds_set_keeps_one_entry_per_seed_host_and_the_same_scope(
    deployments: dict[str, RedisDeployment],
) -> None:
    # 200,000 seeds cost ~75 bytes each in this set when it kept their URLs: it keeps their
    # host keys now, which carry all the scope needs (host and effective port).
    frontier = RedisFrontier(connect(deployments["single"].url), namespace="seedhosts", buckets=8)
    seeds = [
        *(f"http://a.test:8080/p{i}" for i in range(5)),
        "http://b.test/",
        "http://b.test/x?y=1",
        "https://c.test/deep/page",
    ]
    frontier.add([UrlCandidate(url, host_key_of(url), 0, source="seed") for url in seeds], 0.0)
    assert set(frontier.scope_seeds()) == {"http://a.test:8080", "http://b.test", "https://c.test"}
    assert frontier_stats(frontier)["seed_hosts"] == 3
    config = CrawlConfig(scope="host", allow_nets=("127.0.0.0/8",))
    from_hosts = crawl_scope(config, frontier.scope_seeds())
    from_urls = crawl_scope(config, seeds)
    probes = [
        "http://a.test:8080/other",
        "http://a.test:9090/other",
        "http://b.test:80/z",
        "http://www.b.test/",
        "https://c.test/",
        "http://d.test/",
    ]
    assert [from_hosts.reason(u) for u in probes] == [from_urls.reason(u) for u in probes]
    assert from_hosts.reason("http://d.test/") is not None  # the probes do tell scopes apart


def test_a_workers_dashboard_shows_the_crawl(
    crawled: Crawled, capsys: pytest.CaptureFixture[str]
) -> None:
    """`worker --dashboard`: the totals and the host table are the shared crawl's (what `stats
    --frontier` says and the server served), not the one worker's directory."""
    stats = json.loads(run_cli(capsys, "stats", *crawled.frontier, "--json"))
    own = {
        out: json.loads(run_cli(capsys, "stats", str(out), "--json"))["pages"]
        for out in crawled.outs
    }
    out = min(own, key=lambda o: own[o])  # the worker with the fewest pages of its own
    shared = SharedFrontier(crawled.deployment.url, crawled.namespace)
    with (
        DashboardServer(out, frontier=shared) as server,
        urllib.request.urlopen(server.url + "api/snapshot", timeout=30) as answer,
    ):
        snap = json.loads(answer.read())
    assert snap["frontier"]["namespace"] == crawled.namespace
    summary = snap["summary"]
    assert summary["pages"] == stats["fetched"] == len(crawled.fetched)
    assert (summary["urls"], summary["hosts"]) == (stats["urls"], len(SITES))
    hosts = {h["host_key"]: h for h in snap["hosts"]}
    assert set(hosts) == set(crawled.hosts.values())
    assert sum(h["fetched"] for h in hosts.values()) == len(crawled.fetched)
    assert sum(own.values()) == summary["pages"] > own[out], "the crawl's pages, not its own"

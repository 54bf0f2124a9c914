"""Lease grants/s, enqueue-if-new/s and memory per URL of the Redis frontier.

    python benchmarks/redis_frontier_bench.py [--hosts 100000] [--urls 1000000] [--buckets 1024]
        [--cycles 20000] [--batch 256] [--target single,cluster,replicas] [--source seed]
        [--shape short|web]

Starts its own redis-server processes on loopback (one server; a 3-master cluster; ``replicas``:
a 3-master cluster with a replica each, the workers' default ``--wait-replicas 1`` on, so every
lease batch waits for its grants to reach a replica), persistence off, fills each with ``--urls``
URLs over ``--hosts`` hosts, fetches every host's robots.txt so page leases flow, then runs lease
-> complete cycles with zero politeness delay on a virtual clock, ``--batch`` leases per lease()
call as the crawler does. Prints a Markdown table.
Memory per URL is ``used_memory`` after the fill minus before, summed over masters, per URL.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.redis_servers

from tests.redis_servers import RedisDeployment, start_cluster, start_single

from crawlspace.records import Completion, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.redis.frontier import RedisFrontier, connect

CHUNK = 10_000


def candidates(
    hosts: int, urls: int, source: str = "link", shape: str = "short"
) -> list[UrlCandidate]:
    """``shape`` short: http://h7.example/p12 (~25 bytes); web: ~60-byte URLs, about the web's
    typical length, e.g. https://docs.h7.example.org/en/latest/section-12/page-12.html."""
    out = []
    for i in range(urls):
        if shape == "short":
            host = f"http://h{i % hosts}.example"
            url = f"{host}/p{i}"
        else:
            host = f"https://docs.h{i % hosts}.example.org"
            url = f"{host}/en/latest/section-{i % 37}/page-{i}.html"
        out.append(UrlCandidate(url, host, 1, 1, source=source))
    return out


def _mean_length(args: argparse.Namespace) -> float:
    sample = candidates(args.hosts, min(args.urls, 10_000), args.source, args.shape)
    return sum(len(c.url) for c in sample) / len(sample)


def used_memory(deployment: RedisDeployment) -> int:
    total = 0
    for node in deployment.nodes:
        client = connect(f"redis://127.0.0.1:{node.port}/0")
        info = client.info("memory")
        if deployment.cluster and client.info("replication")["role"] != "master":
            continue
        total += int(info["used_memory"])
        client.close()
    return total


def _masters(deployment: RedisDeployment) -> list[Any]:
    clients = [connect(f"redis://127.0.0.1:{n.port}/0") for n in deployment.nodes]
    return [c for c in clients if c.info("replication")["role"] == "master"]


def reset_stats(deployment: RedisDeployment) -> None:
    for client in _masters(deployment):
        client.config_resetstat()
        client.close()


def script_usec(deployment: RedisDeployment) -> float:
    """Server CPU spent in scripts since the reset, summed over masters: what bounds a shard."""
    total = 0.0
    for client in _masters(deployment):
        stats = client.info("commandstats")
        total += float(stats.get("cmdstat_evalsha", {}).get("usec", 0))
        client.close()
    return total


def run(deployment: RedisDeployment, args: argparse.Namespace) -> dict[str, Any]:
    client = connect(deployment.url)
    frontier = RedisFrontier(
        client, namespace="bench", buckets=args.buckets, wait_replicas=int(args.wait_replicas)
    )
    cands = candidates(args.hosts, args.urls, args.source, args.shape)
    before = used_memory(deployment)
    t0 = time.perf_counter()
    for i in range(0, len(cands), CHUNK):
        frontier.add(cands[i : i + CHUNK], 0.0)
    enqueue_s = time.perf_counter() - t0
    per_url = (used_memory(deployment) - before) / len(cands)
    sample = cands[: min(len(cands), 100_000)]
    t0 = time.perf_counter()
    for i in range(0, len(sample), CHUNK):
        frontier.add(sample[i : i + CHUNK], 0.0)
    seen_s = time.perf_counter() - t0

    # robots.txt first for every host, as the crawl does; not timed.
    now = 0.0
    while True:
        leases = frontier.lease(now, 4096, 1e9)
        if not leases or leases[0].kind is not LeaseKind.ROBOTS:
            for lease in leases:
                frontier.release(lease, now)
            break
        for lease in leases:
            record = RobotsRecord(lease.host_key, 404, "allow_all", b"", now, 1e12)
            frontier.complete_robots(lease, record, now)

    reset_stats(deployment)
    done = 0
    lease_s = complete_s = 0.0
    while done < args.cycles:
        t0 = time.perf_counter()
        leases = frontier.lease(now, args.batch, 1e9)
        t1 = time.perf_counter()
        if not leases:
            break
        for lease in leases:
            frontier.complete(lease, Completion(state="fetched", next_allowed_at=now), now)
        complete_s += time.perf_counter() - t1
        lease_s += t1 - t0
        done += len(leases)
    frontier.close()
    server_us = script_usec(deployment)
    return {
        "server_us": server_us / max(done, 1),
        "enqueue": len(cands) / enqueue_s,
        "seen": len(sample) / seen_s,
        "lease": done / lease_s,
        "complete": done / complete_s,
        "per_url": per_url,
        "cycles": done,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--buckets", type=int, default=1024)
    parser.add_argument(
        "--shape", choices=("short", "web"), default="short", help="URL shape (candidates())"
    )
    parser.add_argument("--cycles", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument(
        "--source",
        default="link",
        choices=("link", "seed"),
        help="the URLs enter as links, or as seeds (what `crawlspace seed` adds)",
    )
    parser.add_argument("--target", default="single,cluster")
    args = parser.parse_args()

    rows = []
    for target in args.target.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            args.wait_replicas = int(target == "replicas")
            if target == "single":
                deployment = start_single(Path(tmp))
            else:
                deployment = start_cluster(Path(tmp), masters=3, replicas=args.wait_replicas)
            try:
                rows.append((target, run(deployment, args)))
            finally:
                deployment.stop()

    print(
        f"\n{args.urls:,} URLs ({args.shape}, {_mean_length(args):.0f} bytes on average) over"
        f" {args.hosts:,} hosts, {args.buckets} buckets, lease batch"
        f" {args.batch}; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs,"
        f" Python {platform.python_version()}\n"
    )
    print(
        "| target | enqueue-if-new URLs/s | seen re-add URLs/s | lease grants/s | completions/s"
        " | cycles | server µs per lease+complete | memory per URL |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for target, r in rows:
        name = {
            "single": "single Redis",
            "cluster": "3-master cluster",
            "replicas": "3 masters + 3 replicas, lease grants confirmed (WAIT)",
        }[target]
        print(
            f"| {name} | {r['enqueue']:,.0f} | {r['seen']:,.0f} | {r['lease']:,.0f}"
            f" | {r['complete']:,.0f} | {r['cycles']:,} | {r['server_us']:.0f}"
            f" | {r['per_url']:.0f} B |"
        )


if __name__ == "__main__":
    main()

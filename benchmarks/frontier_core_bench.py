"""Throughput of the pure frontier core: lease+complete grants per second on a virtual clock.

Zero politeness delay, so the figure is the scheduler's own cost (heaps, dicts, lease records),
the ceiling above which the frontier can never be a crawl's bottleneck.

    python benchmarks/frontier_core_bench.py [--hosts 100000 --urls 1000000 --hot 100000]
"""

from __future__ import annotations

import argparse
import gc
import resource
import time

from crawlspace.clock import VirtualClock
from crawlspace.records import Completion, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.memory import MemoryFrontier

LEASE_S = 300.0


def build_candidates(hosts: int, urls: int, hot: int) -> list[UrlCandidate]:
    """One hot host with ``hot`` URLs; the rest spread round-robin over the other hosts."""
    out = [
        UrlCandidate(url=f"http://hot.example/p{i}", host_key="http://hot.example", depth=1)
        for i in range(hot)
    ]
    for i in range(urls - hot):
        key = f"http://h{i % (hosts - 1)}.example"
        out.append(UrlCandidate(url=f"{key}/p{i}", host_key=key, depth=1, priority=i % 3))
    return out


def run_phase(
    sched: MemoryFrontier, clock: VirtualClock, batch: int, min_grants: int
) -> tuple[int, int, float, float]:
    """Lease ``batch`` at a time and complete each at once, until a lease() call grants fewer
    than ``min_grants``; return (pages, robots, wall seconds, CPU seconds)."""
    pages = robots = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    while True:
        now = clock.now()
        leases = sched.lease(now, batch, LEASE_S)
        if len(leases) < min_grants:
            for lease in leases:
                sched.release(lease, now)
            break
        for lease in leases:
            if lease.kind is LeaseKind.ROBOTS:
                record = RobotsRecord(lease.host_key, 200, "allow_all", b"", now, now + 1e9)
                sched.complete_robots(lease, record, now)
                robots += 1
            else:
                sched.complete(lease, Completion(state="fetched", next_allowed_at=now), now)
                pages += 1
        clock.advance(1e-6)
    return pages, robots, time.perf_counter() - started, time.process_time() - cpu_started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hot", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    args = parser.parse_args()

    candidates = build_candidates(args.hosts, args.urls, args.hot)
    clock = VirtualClock()
    sched = MemoryFrontier()
    gc.collect()
    gc.freeze()  # the candidates are long-lived; keep the cyclic GC from rescanning them
    started, cpu_started = time.perf_counter(), time.process_time()
    added = sched.add(candidates, clock.now()).added
    add_s, add_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    del candidates

    rows: list[tuple[str, int, float, float]] = [("add (enqueue)", added, add_s, add_cpu)]
    # Phase 1: every host's robots.txt first (one grant per host), then pages while many hosts
    # are ready; phase 2: the hot host's tail, one grant per lease() call (one token per host).
    pages, robots, secs, cpu = run_phase(sched, clock, args.batch, min_grants=2)
    rows.append((f"lease+complete, {args.hosts:,} hosts (robots+pages)", pages + robots, secs, cpu))
    tail_pages, _, tail_s, tail_cpu = run_phase(sched, clock, args.batch, min_grants=1)
    rows.append(("lease+complete, hot-host tail (1 per call)", tail_pages, tail_s, tail_cpu))
    total = pages + robots + tail_pages
    rows.append(("lease+complete, whole crawl", total, secs + tail_s, cpu + tail_cpu))
    assert sched.queued_count() == 0
    assert sched.in_flight() == 0
    assert sched.next_ready_at() is None

    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"frontier core: {args.hosts:,} hosts, {added:,} URLs (hot host {args.hot:,}), "
        f"lease batch {args.batch:,}, peak RSS {rss_mb:,.0f} MB\n"
    )
    # CPU time too: on a shared machine the wall-clock rate also measures the neighbours.
    print("| phase | operations | wall s | ops/s (wall) | CPU s | ops/s (CPU) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, ops, wall, cpu_s in rows:
        wall_rate, cpu_rate = ops / wall, ops / cpu_s
        print(
            f"| {name} | {ops:,} | {wall:.2f} | {wall_rate:,.0f} | {cpu_s:.2f} | {cpu_rate:,.0f} |"
        )


if __name__ == "__main__":
    main()

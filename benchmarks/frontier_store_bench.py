"""Lease grants per second on the SQLite store (and enqueue-if-new per second).

    python benchmarks/frontier_store_bench.py [--hosts 10000] [--urls 200000] [--hot 20000]

Fills a fresh crawl.db with URLs spread over ``--hosts`` hosts plus one hot host, fetches every
host's robots.txt (so page leases flow), then runs lease -> complete cycles with zero politeness
delay on a virtual clock, in batches as the crawler does. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import tempfile
import time
from pathlib import Path

from crawlspace.records import Completion, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite import SqliteStore


def candidates(hosts: int, urls: int, hot: int) -> list[UrlCandidate]:
    out = [UrlCandidate(f"http://hot.example/p{i}", "http://hot.example", 1, 1) for i in range(hot)]
    for i in range(urls - hot):
        host = f"http://h{i % hosts}.example"
        out.append(UrlCandidate(f"{host}/p{i}", host, 1, 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--hot", type=int, default=20_000)
    parser.add_argument("--cycles", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--no-group-commit", dest="group_commit", action="store_false")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "crawl.db", FrontierLimits())
        cands = candidates(args.hosts, args.urls, args.hot)
        t0 = time.perf_counter()
        for i in range(0, len(cands), 10_000):
            store.add(cands[i : i + 10_000], 0.0)
        enqueue_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = store.add(cands[:50_000], 0.0)
        seen_s = time.perf_counter() - t0
        assert again.added == 0

        now = 1.0
        robots = 0
        while robots < args.hosts + 1:
            for lease in store.lease(now, 1000, 100.0):
                if lease.kind is LeaseKind.ROBOTS:
                    record = RobotsRecord(lease.host_key, 404, "allow_all", b"", now, now + 1e9)
                    store.complete_robots(lease, record, now)
                    robots += 1
                else:
                    store.release(lease, now)

        grants = 0
        t0 = time.perf_counter()
        while grants < args.cycles:
            leases = store.lease(now, args.batch, 100.0)
            if not leases:
                break
            done = Completion(state="fetched", next_allowed_at=now)
            if args.group_commit:  # as the crawl does: completions of one loop turn together
                store.complete_many([(lease, done) for lease in leases], now)
            else:
                for lease in leases:
                    store.complete(lease, done, now)
            grants += len(leases)
            now += 1e-6
        lease_s = time.perf_counter() - t0
        store.close()
        db_bytes = sum(p.stat().st_size for p in Path(tmp).iterdir())

    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"# SQLite frontier store ({time.strftime('%Y-%m-%d')},"
        f" {platform.processor() or platform.machine()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()})\n"
    )
    print(
        f"{args.hosts:,} hosts + 1 hot host with {args.hot:,} URLs; {args.urls:,} URLs in all;"
        f" batch {args.batch}, group commit {'on' if args.group_commit else 'off'}\n"
    )
    print("| operation | count | seconds | per second |")
    print("|---|---:|---:|---:|")
    print(
        f"| enqueue-if-new (new URLs) | {len(cands):,} | {enqueue_s:.2f}"
        f" | {len(cands) / enqueue_s:,.0f} |"
    )
    print(f"| enqueue-if-new (all seen) | 50,000 | {seen_s:.2f} | {50_000 / seen_s:,.0f} |")
    print(f"| lease + complete cycles | {grants:,} | {lease_s:.2f} | {grants / lease_s:,.0f} |")
    print(
        f"\nrobots leases completed first: {robots:,}; db size {db_bytes / 1e6:.1f} MB;"
        f" peak RSS {rss_mb:.0f} MB"
    )


if __name__ == "__main__":
    main()

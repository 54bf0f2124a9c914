"""Lease grants per second on the SQLite store (and enqueue-if-new per second).

    python benchmarks/frontier_store_bench.py [--hosts 10000] [--urls 200000] [--hot 20000]
        [--discover 0] [--resume]

Fills a fresh crawl.db with URLs spread over ``--hosts`` hosts plus one hot host, fetches every
host's robots.txt (so page leases flow), then runs lease -> complete cycles with zero politeness
delay on a virtual clock, in batches as the crawler does; with ``--discover K`` every completion
also enqueues K new URLs (enqueues running with the leases and completions). ``--resume`` then
reopens the file in a fresh process the way a resumed crawl does (Bloom filter rebuilt from the
file, leases recovered) and reports the time to the first lease and that process's peak RSS
over 10,000 more cycles. Prints a Markdown table.

The issue's scale: ``--hosts 100000 --urls 10000000 --hot 1000000 --discover 2 --resume``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.seen import dedup_seen_filter
from crawlspace.records import Completion, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.store import SqliteStore


def candidates(hosts: int, urls: int, hot: int) -> Iterator[UrlCandidate]:
    for i in range(hot):
        yield UrlCandidate(f"http://hot.example/p{i}", "http://hot.example", 1, 1)
    for i in range(urls - hot):
        host = f"http://h{i % hosts}.example"
        yield UrlCandidate(f"{host}/p{i}", host, 1, 1)


def batches(items: Iterator[UrlCandidate], size: int) -> Iterator[list[UrlCandidate]]:
    while chunk := list(itertools.islice(items, size)):
        yield chunk


# A crawl enqueues the links of the pages a group commit completes: most of a page's links point
# into its own site, some to other sites. 64 pages of 50 links, 40 internal and 10 external.
PAGES_PER_COMMIT, INTERNAL, EXTERNAL = 64, 40, 10


def link_batches(
    hosts: int, count: int, rng: random.Random, *, known: float = 0.0, stored_per_host: int = 0
) -> Iterator[list[UrlCandidate]]:
    """URLs as a crawl discovers them, one list per group commit: each page's internal links
    are paths of its own host, its external links paths of other hosts. A ``known`` share of
    them are URLs ``candidates()`` stored (``stored_per_host`` per host), the rest new."""
    made = 0
    while made < count:
        batch = []
        for _ in range(PAGES_PER_COMMIT):
            page_host = rng.randrange(hosts)
            for n in range(INTERNAL + EXTERNAL):
                h = page_host if n < INTERNAL else rng.randrange(hosts)
                host = f"http://h{h}.example"
                if rng.random() < known:
                    path = f"/p{h + hosts * rng.randrange(stored_per_host)}"
                else:
                    path = f"/q{rng.getrandbits(40)}"
                batch.append(UrlCandidate(host + path, host, 2, 20))
        made += len(batch)
        yield batch


def discovered(lease_url: str, k: int) -> list[UrlCandidate]:
    """K new URLs on the leased URL's host (deeper paths: always new)."""
    host = lease_url.split("/p", 1)[0]
    return [UrlCandidate(f"{lease_url}/n{j}", host, 2, 20) for j in range(k)]


class Split:
    """Seconds spent inside ``lease`` and inside ``complete_many`` during the cycles, and the
    virtual time they reached (hosts completed last are next allowed then)."""

    def __init__(self) -> None:
        self.lease_s = 0.0
        self.complete_s = 0.0
        self.now = 0.0


def cycles(
    store: SqliteStore, count: int, batch: int, discover: int, now: float, *, split: Split
) -> int:
    grants = 0
    while grants < count:
        t0 = time.perf_counter()
        leases = store.lease(now, batch, 100.0)
        t1 = time.perf_counter()
        split.lease_s += t1 - t0
        if not leases:
            break
        items = [
            (
                lease,
                Completion(
                    "fetched", next_allowed_at=now, discovered=discovered(lease.url, discover)
                ),
            )
            for lease in leases
        ]
        t2 = time.perf_counter()
        store.complete_many(items, now)
        split.complete_s += time.perf_counter() - t2
        grants += len(leases)
        now += 1e-6
    split.now = now
    return grants


def resume(
    db_path: Path, batch: int, discover: int, bloom_urls: int, background_checkpoints: bool
) -> None:
    """Run in a child process: reopen as a resumed crawl does, then lease."""
    t0 = time.perf_counter()
    store = SqliteStore(
        db_path,
        FrontierLimits(),
        seen_filter=dedup_seen_filter(bloom_urls, 0.01),
        near_index=NearDuplicateIndex(3),
        background_checkpoints=background_checkpoints,
    )
    store.recover(2.0)
    first = store.lease(2.0, batch, 100.0)
    to_first = time.perf_counter() - t0
    for lease in first:
        store.release(lease, 2.0)
    t0 = time.perf_counter()
    grants = cycles(store, 10_000, batch, discover, 2.0, split=Split())
    rate = grants / (time.perf_counter() - t0)
    store.close()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{to_first:.2f} {rate:.0f} {rss_mb:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--hot", type=int, default=20_000)
    parser.add_argument("--cycles", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument(
        "--link-urls", type=int, default=200_000, help="new URLs enqueued as a crawl's links"
    )
    parser.add_argument(
        "--extra-batch", type=int, default=0, help="repeat the cycles with this lease batch"
    )
    parser.add_argument("--no-group-commit", dest="group_commit", action="store_false")
    parser.add_argument("--discover", type=int, default=0, help="new URLs per completion")
    parser.add_argument("--resume", action="store_true", help="time a resume in a new process")
    parser.add_argument(
        "--no-bloom", dest="bloom", action="store_false", help="the exact seen set alone"
    )
    parser.add_argument(
        "--inline-checkpoints",
        dest="background_checkpoints",
        action="store_false",
        help="checkpoint the WAL in the writer's commits, not from a thread (as before)",
    )
    parser.add_argument("--resume-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.resume_child:
        resume(
            Path(args.resume_child),
            args.batch,
            args.discover,
            args.urls * 2,
            args.background_checkpoints,
        )
        return

    with tempfile.TemporaryDirectory() as tmp:
        # The crawl's seen set: the exact UNIQUE index with a Bloom filter in front, sized as
        # an operator expecting this many URLs would set bloom_expected_urls.
        seen = dedup_seen_filter(args.urls * 2, 0.01) if args.bloom else None
        store = SqliteStore(
            Path(tmp) / "crawl.db",
            FrontierLimits(),
            seen_filter=seen,
            background_checkpoints=args.background_checkpoints,
        )
        t0 = time.perf_counter()
        for chunk in batches(candidates(args.hosts, args.urls, args.hot), 10_000):
            store.add(chunk, 0.0)
        enqueue_s = time.perf_counter() - t0
        shaped = 0
        t0 = time.perf_counter()
        for batch in link_batches(args.hosts, args.link_urls, random.Random(5)):
            shaped += store.add(batch, 0.0).added
        shaped_s = time.perf_counter() - t0
        # The same shape with the duplicate share of a real crawl's links (python3.11-doc:
        # 85% of normalized links were already known).
        mixed = mixed_added = 0
        t0 = time.perf_counter()
        per_host = (args.urls - args.hot) // args.hosts
        for batch in link_batches(
            args.hosts,
            args.link_urls,
            random.Random(6),
            known=0.85,
            stored_per_host=per_host,
        ):
            mixed += len(batch)
            mixed_added += store.add(batch, 0.0).added
        mixed_s = time.perf_counter() - t0
        again_batch = list(itertools.islice(candidates(args.hosts, args.urls, args.hot), 50_000))
        t0 = time.perf_counter()
        again = store.add(again_batch, 0.0)
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

        split = Split()
        t0 = time.perf_counter()
        if args.group_commit or args.discover:
            grants = cycles(store, args.cycles, args.batch, args.discover, now, split=split)
        else:  # one transaction per completion, for comparison
            grants = 0
            while grants < args.cycles:
                leases = store.lease(now, args.batch, 100.0)
                if not leases:
                    break
                for lease in leases:
                    store.complete(lease, Completion(state="fetched", next_allowed_at=now), now)
                grants += len(leases)
                now += 1e-6
            split.now = now
        lease_s = time.perf_counter() - t0
        extra: tuple[int, float, Split] | None = None
        if args.extra_batch:  # the same cycles with bigger lease batches (more concurrency)
            extra_split = Split()
            t0 = time.perf_counter()
            extra_grants = cycles(
                store, args.cycles, args.extra_batch, args.discover, split.now, split=extra_split
            )
            extra = (extra_grants, time.perf_counter() - t0, extra_split)
        store.close()
        db_bytes = sum(p.stat().st_size for p in Path(tmp).iterdir())
        resumed = None
        if args.resume:
            child = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--resume-child",
                    str(Path(tmp) / "crawl.db"),
                    "--batch",
                    str(args.batch),
                    "--discover",
                    str(args.discover),
                    "--urls",
                    str(args.urls),
                    *([] if args.background_checkpoints else ["--inline-checkpoints"]),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            resumed = child.stdout.split()

    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"# SQLite frontier store ({time.strftime('%Y-%m-%d')},"
        f" {platform.processor() or platform.machine()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()})\n"
    )
    print(
        f"{args.hosts:,} hosts + 1 hot host with {args.hot:,} URLs; {args.urls:,} URLs in all;"
        f" batch {args.batch}, group commit {'on' if args.group_commit else 'off'},"
        f" Bloom filter {'on' if args.bloom else 'off'}, WAL checkpoints"
        f" {'in a thread' if args.background_checkpoints else 'inline'}\n"
    )
    print("| operation | count | seconds | per second |")
    print("|---|---:|---:|---:|")
    print(
        f"| enqueue-if-new (new URLs, batches of 10,000 over {min(args.hosts, 10_000):,}"
        f" hosts) | {args.urls:,}"
        f" | {enqueue_s:.2f} | {args.urls / enqueue_s:,.0f} |"
    )
    per_commit = PAGES_PER_COMMIT * (INTERNAL + EXTERNAL)
    print(
        f"| enqueue-if-new, crawl-shaped ({per_commit:,} links of {PAGES_PER_COMMIT} pages per"
        f" batch) | {shaped:,} | {shaped_s:.2f} | {shaped / shaped_s:,.0f} |"
    )
    print(
        f"| enqueue-if-new, crawl-shaped, 85% known ({mixed_added:,} of them new) | {mixed:,}"
        f" | {mixed_s:.2f} | {mixed / mixed_s:,.0f} |"
    )
    known = len(again_batch)
    print(f"| enqueue-if-new (all seen) | {known:,} | {seen_s:.2f} | {known / seen_s:,.0f} |")
    print(f"| lease + complete cycles | {grants:,} | {lease_s:.2f} | {grants / lease_s:,.0f} |")
    if split.lease_s:
        # The two halves of those cycles, timed apart (leases and completions interleave).
        print(
            f"| ... lease grants (time in lease) | {grants:,} | {split.lease_s:.2f}"
            f" | {grants / split.lease_s:,.0f} |"
        )
        print(
            f"| ... completions (time in complete_many) | {grants:,} | {split.complete_s:.2f}"
            f" | {grants / split.complete_s:,.0f} |"
        )
    if extra is not None:
        n, seconds, part = extra
        print(
            f"| lease + complete cycles, batch {args.extra_batch} | {n:,} | {seconds:.2f}"
            f" | {n / seconds:,.0f} |"
        )
        print(
            f"| ... lease grants, batch {args.extra_batch} | {n:,} | {part.lease_s:.2f}"
            f" | {n / part.lease_s:,.0f} |"
        )
        print(
            f"| ... completions, batch {args.extra_batch} | {n:,} | {part.complete_s:.2f}"
            f" | {n / part.complete_s:,.0f} |"
        )
    if args.discover:
        new = grants * args.discover
        print(f"| ... new URLs enqueued by them | {new:,} | {lease_s:.2f} | {new / lease_s:,.0f} |")
    print(
        f"\nrobots leases completed first: {robots:,}; db size {db_bytes / 1e6:.1f} MB;"
        f" peak RSS {rss_mb:.0f} MB"
    )
    if resumed:
        to_first, rate, child_rss = resumed
        print(
            f"resume in a new process: first lease after {float(to_first):.1f} s,"
            f" then {float(rate):,.0f} cycles/s; that process's peak RSS {child_rss} MB"
        )


if __name__ == "__main__":
    main()

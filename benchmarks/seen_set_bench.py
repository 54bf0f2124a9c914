"""The exact seen set on the SQLite store, with and without the Bloom accelerator.

Run: python benchmarks/seen_set_bench.py [--urls 200000] [--batch 100]
     python benchmarks/seen_set_bench.py --urls 10000000      # the 10-million run

N discovered URLs arrive in page-sized batches (``--batch`` links per page, like
``SqliteStore.complete`` adds them), half of them new and half repeats of earlier ones, over 1,000
hosts. Each configuration runs in its own subprocess so that peak RSS (``ru_maxrss``) is its own.
Also compares the Bloom implementations: rbloom (Rust) against a pure-Python filter over a
``bytearray`` with double hashing (Kirsch & Mitzenmacher 2006).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from crawlspace.dedup.seen import SeenFilter
from crawlspace.records import UrlCandidate
from crawlspace.store.sqlite.store import SqliteStore

HOSTS = 1000


class ByteArrayBloom:
    """The pure-Python contender: m bits in a bytearray, k probes from one BLAKE2b digest."""

    def __init__(self, n: int, p: float) -> None:
        self.m = max(8, int(-n * math.log(p) / math.log(2) ** 2))
        self.k = max(1, round(self.m / n * math.log(2)))
        self.bits = bytearray((self.m + 7) // 8)

    def _probes(self, item: str) -> list[int]:
        d = hashlib.blake2b(item.encode(), digest_size=16).digest()
        h1, h2 = int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little") | 1
        return [(h1 + i * h2) % self.m for i in range(self.k)]

    def check_and_add(self, item: str) -> bool:
        new = False
        bits = self.bits
        for pos in self._probes(item):
            byte, mask = pos >> 3, 1 << (pos & 7)
            if not bits[byte] & mask:
                new = True
                bits[byte] |= mask
        return new


def batches(n: int, batch: int, seed: int = 5) -> Iterator[list[UrlCandidate]]:
    """n URLs, each one new or (with probability 1/2) a repeat of an earlier one."""
    rng = random.Random(seed)
    made = 0
    for start in range(0, n, batch):
        out = []
        for _ in range(min(batch, n - start)):
            if made and rng.random() < 0.5:
                i = rng.randrange(made)  # a repeat of an earlier URL
            else:
                i = made
                made += 1
            host = f"http://h{i % HOSTS}.example"
            out.append(UrlCandidate(f"{host}/section/{i // HOSTS}/page-{i}.html", host, 1))
        yield out


def run_store(n: int, batch: int, bloom: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "crawl.db"
        seen = SeenFilter(n, 0.01) if bloom else None
        store = SqliteStore(path, seen_filter=seen)
        added = seen_urls = 0
        start = time.perf_counter()
        for i, cands in enumerate(batches(n, batch)):
            result = store.add(cands, float(i))
            added += result.added
            seen_urls += result.already_seen
        elapsed = time.perf_counter() - start
        counters = dict(store._db.execute("SELECT name, value FROM counters").fetchall())
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        disk = sum(f.stat().st_size for f in Path(tmp).iterdir())
    return {
        "urls_per_s": n / elapsed,
        "seconds": elapsed,
        "added": added,
        "seen": seen_urls,
        "disk_per_url": disk / max(added, 1),
        "bloom_bytes_per_url": (seen.size_bytes / max(added, 1)) if seen else 0.0,
        "false_positives": counters.get("seen.bloom_false_positives", 0),
        "maybe_seen": counters.get("seen.bloom_maybe_seen", 0),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def filter_speed(n: int) -> list[tuple[str, float]]:
    urls = [f"http://h{i % HOSTS}.example/p/{i}" for i in range(n)]
    out = []
    rb = SeenFilter(n, 0.01)
    start = time.perf_counter()
    for u in urls:
        rb.check_and_add(u)
    out.append(("rbloom (SeenFilter.check_and_add)", n / (time.perf_counter() - start)))
    own = ByteArrayBloom(n, 0.01)
    start = time.perf_counter()
    for u in urls:
        own.check_and_add(u)
    out.append(("bytearray + BLAKE2b double hashing", n / (time.perf_counter() - start)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--child", choices=["bloom", "plain"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_store(args.urls, args.batch, args.child == "bloom")))
        return
    print(f"{args.urls:,} URLs (half new, half repeats) in batches of {args.batch}, one core\n")
    print("| Bloom implementation | checks/s |")
    print("|---|---:|")
    for name, rate in filter_speed(min(args.urls, 500_000)):
        print(f"| {name} | {rate:,.0f} |")
    print()
    print(
        "| seen set | URLs/s | s | added | false positives | disk B/URL | Bloom B/URL |"
        " peak RSS MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in ("plain", "bloom"):
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--urls",
                str(args.urls),
                "--batch",
                str(args.batch),
                "--child",
                mode,
            ],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ),
        )
        r = json.loads(done.stdout)
        name = "SQLite UNIQUE only" if mode == "plain" else "SQLite + rbloom (1% fp)"
        print(
            f"| {name} | {r['urls_per_s']:,.0f} | {r['seconds']:.1f} | {r['added']:,} |"
            f" {r['false_positives']:,} | {r['disk_per_url']:.0f} |"
            f" {r['bloom_bytes_per_url']:.2f} | {r['peak_rss_mib']:.0f} |"
        )


if __name__ == "__main__":
    main()

"""What operator telemetry costs: the per-commit hook, one sample, one dashboard snapshot.

    python benchmarks/telemetry_bench.py [--urls 100000] [--hosts 1000]

Builds a crawl.db with that many URLs (half of them fetched) spread over the hosts, then times
the hooks the dispatcher calls. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from crawlspace.config import CrawlConfig
from crawlspace.dashboard.data import snapshot
from crawlspace.dashboard.page import report_page
from crawlspace.records import Completion, FetchRecord, UrlCandidate
from crawlspace.store.sqlite.store import SqliteStore
from crawlspace.telemetry import Telemetry
from crawlspace.telemetry.metrics import CrawlMetrics


def build(path: Path, urls: int, hosts: int) -> SqliteStore:
    store = SqliteStore(path)
    candidates = [
        UrlCandidate(f"http://h{i % hosts}.test/p{i}", f"http://h{i % hosts}.test", 1)
        for i in range(urls)
    ]
    store.add(candidates, 0.0)
    db = sqlite3.connect(path)
    db.executemany(
        "INSERT INTO fetches (url_id, version, url, final_url, status, fetched_at, duration_ms,"
        " bytes, truncated, text_sha256, noindex) VALUES (?, 1, ?, ?, ?, ?, 20, 5000, 0, ?, 0)",
        [
            (
                i + 1,
                c.url,
                c.url,
                404 if i % 50 == 0 else 200,
                float(i),
                hashlib.sha256(str(i % 9000).encode()).hexdigest(),
            )
            for i, c in enumerate(candidates[: urls // 2])
        ],
    )
    db.commit()
    db.close()
    return store


def completion(i: int) -> Completion:
    fetch = FetchRecord(
        f"http://h.test/{i}", f"http://h.test/{i}", 200, 0.0, 20.0, "text/html", 5000, False,
        None, None, None, None, hashlib.sha256(str(i).encode()).hexdigest(),
    )  # fmt: skip
    return Completion("fetched", fetch=fetch, rejections={"scope": 3})


def per_call(fn: Callable[[], object], repeat: int) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = build(Path(tmp) / "crawl.db", args.urls, args.hosts)
        telemetry = Telemetry(CrawlConfig(sample_seconds=5.0), store)
        started = time.perf_counter()
        telemetry.tick(0.0, 0)
        first = time.perf_counter() - started
        done = [completion(i) for i in range(20_000)]
        it = iter(done)
        plain = per_call(lambda: telemetry.on_commit("http://h.test", next(it), True), 10_000)
        telemetry.metrics = CrawlMetrics()
        with_metrics = per_call(
            lambda: telemetry.on_commit("http://h.test", next(it), True), 10_000
        )
        clock = iter(range(10, 10_000_000, 10))
        sample = per_call(lambda: telemetry.sample(float(next(clock)), 8), 50)
        snap = per_call(lambda: snapshot(tmp), 5)
        data = snapshot(tmp)
        render = per_call(lambda: report_page(data), 5)
        store.close()
    print(f"crawl.db: {args.urls:,} URLs, {args.urls // 2:,} fetches, {args.hosts:,} hosts\n")
    print("| operation | time |")
    print("|---|---|")
    print(f"| first tick (load totals from crawl.db) | {first * 1e3:.1f} ms |")
    print(f"| on_commit, no metrics endpoint | {plain * 1e6:.1f} µs |")
    print(f"| on_commit, with Prometheus metrics | {with_metrics * 1e6:.1f} µs |")
    print(f"| one sample (every sample_seconds) | {sample * 1e3:.2f} ms |")
    print(f"| dashboard snapshot (api/snapshot) | {snap * 1e3:.0f} ms |")
    print(f"| report page render | {render * 1e3:.0f} ms |")


if __name__ == "__main__":
    main()

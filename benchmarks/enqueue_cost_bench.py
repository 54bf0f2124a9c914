"""Where the time of an all-new URL goes on a big SQLite frontier, and what other layouts cost.

    python benchmarks/enqueue_cost_bench.py [--hosts 100000] [--urls 10000000] [--hot 1000000]
        [--stream 500000] [--merge-every 500000] [--workdir DIR]

Builds a crawl.db with ``--urls`` queued URLs over ``--hosts`` hosts plus one hot host (the
store's own schema, rows bulk-loaded; kept in ``--workdir`` and reused by later runs with the same
sizes), then replays ``--stream`` new URLs shaped as a crawl discovers them (each group commit is
64 pages of 40 internal and 10 external links, as in frontier_store_bench.py) against a fresh
copy of it, once per variant:

- the store as it is (``SqliteStore.add`` with its Bloom filter and checkpoint thread);
- the store's SQL by hand (to check that the variants below replay the same work), then without
  the host counter UPDATE, without the per-host queue index, without both, and with no index at
  all on a plain table (the floor: Python, the row append and the WAL);
- three layouts that defer the random writes to a periodic merge in sorted order, every
  ``--merge-every`` URLs (the merge is timed with the stream): the queue index fed by a state
  change; a separate queue table fed by one sorted INSERT; and an append-only log of new URLs
  (deduplicated against an in-memory set) merged into ``urls`` and the queue table, the
  log-structured layout.

Every variant writes through a WAL with ``synchronous=NORMAL`` and a checkpoint thread, as the
crawl does. Prints a Markdown table: URLs/s, microseconds per URL, the share of the time spent in
merges, and the WAL's size at the end.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from crawlspace.dedup.seen import dedup_seen_filter
from crawlspace.records import UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.checkpoint import WalCheckpointer
from crawlspace.store.sqlite.schema import SCHEMA
from crawlspace.store.sqlite.store import SqliteStore
from frontier_store_bench import link_batches

# The secondary indexes the bulk load builds after the rows (as SCHEMA defines them).
_INDEXES = ("urls_queue", "urls_leased", "urls_depth_excluded", "hosts_busy")
_INSERT = (
    "INSERT INTO {table} (url, host_id, depth, priority, state, redirect_hops, source,"
    " discovered_at, updated_at, inlinks) VALUES (?, ?, ?, ?, '{state}', ?, ?, ?, ?, ?)"
    " ON CONFLICT DO NOTHING"
)
_COUNT_HOSTS = "UPDATE hosts SET queued = queued + ?, admitted = admitted + ? WHERE id = ?"
_QUEUE_TABLE = (
    "CREATE TABLE queue (host_id INTEGER NOT NULL, priority INTEGER NOT NULL,"
    " url_id INTEGER NOT NULL, PRIMARY KEY (host_id, priority, url_id)) WITHOUT ROWID"
)

Row = tuple[str, int, int, int, int, str, float, float, int]


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA cache_size=-65536")
    db.execute("PRAGMA wal_autocheckpoint=20000")
    return db


def build(path: Path, hosts: int, urls: int, hot: int) -> None:
    """The store's schema (opened once by SqliteStore, so every migration ran), bulk-loaded."""
    SqliteStore(path).close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")  # a throwaway build; the runs below use NORMAL
    for index in _INDEXES:
        db.execute(f"DROP INDEX {index}")
    per_host = (urls - hot) // hosts
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO hosts (id, host_key, queued, admitted, robots_expires_at)"
        " VALUES (?, ?, ?, ?, 1e12)",
        [(i + 1, f"http://h{i}.example", per_host, per_host) for i in range(hosts)]
        + [(hosts + 1, "http://hot.example", hot, hot)],
    )

    def rows() -> Iterator[tuple[str, int]]:
        for i in range(hot):
            yield (f"http://hot.example/p{i}", hosts + 1)
        for i in range(urls - hot):
            yield (f"http://h{i % hosts}.example/p{i}", i % hosts + 1)

    db.executemany(
        "INSERT INTO urls (url, host_id, depth, priority, state, source, discovered_at,"
        " updated_at) VALUES (?, ?, 1, 1, 'queued', 'seed', 0, 0)",
        rows(),
    )
    db.execute("COMMIT")
    db.executescript(SCHEMA)  # the dropped indexes, built once over the loaded rows
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def with_queue_table(source: Path, path: Path) -> None:
    """A copy whose queue is a WITHOUT ROWID table instead of the partial index on ``urls``."""
    copy(source, path)
    db = connect(path)
    db.execute("BEGIN")
    db.execute(_QUEUE_TABLE)
    db.execute(
        "INSERT INTO queue SELECT host_id, priority, id FROM urls WHERE state = 'queued'"
        " ORDER BY 1, 2, 3"
    )
    db.execute("DROP INDEX urls_queue")
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def copy(source: Path, path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, path)
    # On disk before the clock starts: the kernel writing the copy back during a replay would
    # compete with that replay's own WAL writes and checkpoint syncs.
    with open(path, "rb+") as copied:
        os.fsync(copied.fileno())


class Replay:
    """One variant's pass over the stream: ``write`` per group commit, ``merge`` when due."""

    def __init__(self, db: sqlite3.Connection, host_ids: dict[str, int], merge_every: int):
        self.db = db
        self.host_ids = host_ids
        self.merge_every = merge_every
        self.pending = 0
        self.merge_seconds = 0.0
        self.counts_hosts = True
        self.first_id = int(db.execute("SELECT MAX(id) + 1 FROM urls").fetchone()[0])
        self.hosts_queued = self._hosts_queued()

    def _hosts_queued(self) -> int:
        return int(self.db.execute("SELECT SUM(queued) FROM hosts").fetchone()[0])

    def leasable(self) -> int:
        """How many of the replayed URLs a lease could now find."""
        return int(
            self.db.execute(
                "SELECT COUNT(*) FROM urls WHERE id >= ? AND state = 'queued'", (self.first_id,)
            ).fetchone()[0]
        )

    def check(self, written: int) -> None:
        """Every variant must have done the whole job, or its figure means nothing."""
        leasable = self.leasable()
        if leasable != written:
            raise AssertionError(f"{type(self).__name__}: {leasable} leasable of {written}")
        counted = self._hosts_queued() - self.hosts_queued
        if self.counts_hosts and counted != written:
            raise AssertionError(f"{type(self).__name__}: {counted} counted of {written}")

    def rows(self, batch: list[UrlCandidate]) -> list[Row]:
        return [
            (c.url, self.host_ids[c.host_key], c.depth, c.priority, 0, "link", 1.0, 1.0, 1)
            for c in batch
        ]

    def write(self, batch: list[UrlCandidate]) -> None:
        raise NotImplementedError

    def merge(self) -> None:
        """Make the pending URLs leasable (layouts that defer it)."""

    def after_write(self, n: int) -> None:
        self.pending += n
        if self.merge_every and self.pending >= self.merge_every:
            self.finish()

    def finish(self) -> None:
        if not self.pending:
            return
        t0 = time.perf_counter()
        self.db.execute("BEGIN IMMEDIATE")
        self.merge()
        self.db.execute("COMMIT")
        self.merge_seconds += time.perf_counter() - t0
        self.pending = 0


class StoreSql(Replay):
    """The store's fast path (sqlite_dedup.add_fresh), optionally without some structures."""

    def __init__(
        self,
        db: sqlite3.Connection,
        host_ids: dict[str, int],
        *,
        count_hosts: bool = True,
        table: str = "urls",
    ) -> None:
        super().__init__(db, host_ids, 0)
        self.counts_hosts = count_hosts
        self.table = table

    def leasable(self) -> int:
        if self.table == "urls":
            return super().leasable()
        return int(self.db.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])

    def write(self, batch: list[UrlCandidate]) -> None:
        rows = self.rows(batch)
        self.db.execute("BEGIN IMMEDIATE")
        if self.table == "urls":  # the plain table has no rowid alias to read it from
            self.db.execute("SELECT COALESCE(MAX(id), 0) FROM urls").fetchone()
        self.db.executemany(_INSERT.format(table=self.table, state="queued"), rows)
        if self.counts_hosts:
            per_host = Counter(row[1] for row in rows)
            self.db.executemany(_COUNT_HOSTS, [(n, n, h) for h, n in per_host.items()])
        self.db.execute("COMMIT")


class DeferredState(Replay):
    """New rows enter as 'pending' (outside the partial queue index); a merge flips them to
    'queued' in (host, priority, id) order and counts them on their hosts."""

    def __init__(self, db: sqlite3.Connection, host_ids: dict[str, int], merge_every: int):
        super().__init__(db, host_ids, merge_every)
        self.low = int(self.db.execute("SELECT MAX(id) + 1 FROM urls").fetchone()[0])

    def write(self, batch: list[UrlCandidate]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(_INSERT.format(table="urls", state="pending"), self.rows(batch))
        self.db.execute("COMMIT")
        self.after_write(len(batch))

    def merge(self) -> None:
        rows = self.db.execute(
            "SELECT host_id, priority, id FROM urls WHERE id >= ? AND state = 'pending'",
            (self.low,),
        ).fetchall()
        rows.sort()
        self.db.executemany(
            "UPDATE urls SET state = 'queued' WHERE id = ?", [(r[2],) for r in rows]
        )
        per_host = Counter(r[0] for r in rows)
        self.db.executemany(_COUNT_HOSTS, [(n, n, h) for h, n in per_host.items()])
        self.low = int(self.db.execute("SELECT MAX(id) + 1 FROM urls").fetchone()[0])


class QueueTable(DeferredState):
    """Rows go in as 'queued'; the queue is a separate table fed by one sorted INSERT."""

    def leasable(self) -> int:
        return int(
            self.db.execute(
                "SELECT COUNT(*) FROM urls u WHERE u.id >= ? AND EXISTS (SELECT 1 FROM queue q"
                " WHERE q.host_id = u.host_id AND q.priority = u.priority AND q.url_id = u.id)",
                (self.first_id,),
            ).fetchone()[0]
        )

    def write(self, batch: list[UrlCandidate]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany(_INSERT.format(table="urls", state="queued"), self.rows(batch))
        self.db.execute("COMMIT")
        self.after_write(len(batch))

    def merge(self) -> None:
        per_host = self.db.execute(
            "SELECT host_id, count(*) FROM urls WHERE id >= ? GROUP BY host_id", (self.low,)
        ).fetchall()
        self.db.execute(
            "INSERT OR IGNORE INTO queue SELECT host_id, priority, id FROM urls WHERE id >= ?"
            " ORDER BY 1, 2, 3",
            (self.low,),
        )
        self.db.executemany(_COUNT_HOSTS, [(n, n, h) for h, n in per_host])
        self.low = int(self.db.execute("SELECT MAX(id) + 1 FROM urls").fetchone()[0])


class AppendLog(QueueTable):
    """New URLs are appended to an unindexed log (the seen test for them is an in-memory set of
    the log); a merge inserts the log into ``urls`` in url order, then into the queue table."""

    def __init__(self, db: sqlite3.Connection, host_ids: dict[str, int], merge_every: int):
        super().__init__(db, host_ids, merge_every)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS url_log (url TEXT NOT NULL, host_id INTEGER NOT NULL,"
            " depth INTEGER NOT NULL, priority INTEGER NOT NULL, source TEXT NOT NULL,"
            " discovered_at REAL NOT NULL, inlinks INTEGER NOT NULL)"
        )
        self.logged: set[str] = set()

    def write(self, batch: list[UrlCandidate]) -> None:
        rows = []
        for row in self.rows(batch):
            if row[0] not in self.logged:
                self.logged.add(row[0])
                rows.append((row[0], row[1], row[2], row[3], row[5], row[6], row[8]))
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany("INSERT INTO url_log VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        self.db.execute("COMMIT")
        self.after_write(len(rows))

    def merge(self) -> None:
        self.db.execute(
            "INSERT INTO urls (url, host_id, depth, priority, state, source, discovered_at,"
            " updated_at, inlinks) SELECT url, host_id, depth, priority, 'queued', source,"
            " discovered_at, discovered_at, inlinks FROM url_log ORDER BY url"
            " ON CONFLICT DO NOTHING"
        )
        super().merge()
        self.db.execute("DELETE FROM url_log")
        self.logged.clear()


def replay(
    base: Path, work: Path, make: Callable[[sqlite3.Connection], Replay], stream: int, seed: int
) -> tuple[float, float, int]:
    """(URLs per second, merge share, WAL bytes at the end) of one variant over the stream."""
    copy(base, work)
    db = connect(work)
    variant = make(db)
    checkpointer = WalCheckpointer(str(work))
    checkpointer.start()
    batches = link_batches(len(variant.host_ids) - 1, stream, random.Random(seed))
    warm = next(batches)  # the first pages of every index into the cache, untimed
    variant.write(warm)
    variant.finish()
    variant.merge_seconds = 0.0
    t0 = time.perf_counter()
    done = 0
    for batch in batches:
        variant.write(batch)
        done += len(batch)
    variant.finish()
    elapsed = time.perf_counter() - t0
    checkpointer.stop()
    wal = os.path.getsize(f"{work}-wal")
    variant.check(len(warm) + done)
    db.close()
    return done / elapsed, variant.merge_seconds / elapsed, wal


def replay_store(
    base: Path, work: Path, *, stream: int, seed: int, hosts: int, stored: int
) -> tuple[float, int]:
    """The product path: SqliteStore.add with its Bloom filter (rebuilt before timing)."""
    copy(base, work)
    seen = dedup_seen_filter(stored + 2 * stream, 0.01)
    assert seen is not None
    store = SqliteStore(work, FrontierLimits(), seen_filter=seen, background_checkpoints=True)
    while not seen.complete:  # a big file is read into the filter by a thread
        time.sleep(0.1)
    batches = link_batches(hosts, stream, random.Random(seed))
    store.add(next(batches), 1.0)
    t0 = time.perf_counter()
    done = 0
    for batch in batches:
        result = store.add(batch, 1.0)
        assert result.added == len(batch), result
        done += len(batch)
    elapsed = time.perf_counter() - t0
    wal = os.path.getsize(f"{work}-wal")
    store.close()
    return done / elapsed, wal


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--urls", type=int, default=10_000_000)
    parser.add_argument("--hot", type=int, default=1_000_000)
    parser.add_argument("--stream", type=int, default=500_000, help="new URLs replayed")
    parser.add_argument("--merge-every", type=int, default=500_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/crawlspace-enqueue-cost"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1, help="runs per layout (median shown)")
    args = parser.parse_args()
    if args.hot >= args.urls or args.urls - args.hot < args.hosts:
        parser.error("need --urls > --hot and at least one URL per host besides the hot one")

    args.workdir.mkdir(parents=True, exist_ok=True)
    base = args.workdir / f"base-{args.hosts}-{args.urls}-{args.hot}.db"
    queue_base = base.with_suffix(".queue-table.db")
    work = args.workdir / "run.db"
    t0 = time.perf_counter()
    if not base.exists():
        building = base.with_suffix(".building")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{building}{suffix}").unlink(missing_ok=True)
        build(building, args.hosts, args.urls, args.hot)
        building.rename(base)
    if not queue_base.exists():
        with_queue_table(base, work)
        work.rename(queue_base)
    print(f"base files ready in {time.perf_counter() - t0:.0f} s ({base})", file=sys.stderr)
    ro = sqlite3.connect(f"file:{base}?mode=ro&immutable=1", uri=True)  # no -wal/-shm
    host_ids = dict(ro.execute("SELECT host_key, id FROM hosts").fetchall())
    ro.close()

    m = args.merge_every
    variants: list[tuple[str, Path, Callable[[sqlite3.Connection], Replay]]] = [
        ("the store's SQL by hand", base, lambda db: StoreSql(db, host_ids)),
        (
            "without the host counter UPDATE",
            base,
            lambda db: StoreSql(db, host_ids, count_hosts=False),
        ),
        (
            "without the per-host queue index",
            base,
            lambda db: _dropped(StoreSql(db, host_ids), "urls_queue"),
        ),
        (
            "without both",
            base,
            lambda db: _dropped(StoreSql(db, host_ids, count_hosts=False), "urls_queue"),
        ),
        (
            "floor: plain table, no index at all",
            base,
            lambda db: _plain(StoreSql(db, host_ids, count_hosts=False, table="plain")),
        ),
        (
            f"deferred: state flip, sorted merge every {m:,}",
            base,
            lambda db: DeferredState(db, host_ids, m),
        ),
        (
            f"queue table, sorted merge every {m:,}",
            queue_base,
            lambda db: QueueTable(db, host_ids, m),
        ),
        (
            f"append log, sorted merge every {m:,}",
            queue_base,
            lambda db: AppendLog(db, host_ids, m),
        ),
    ]
    runs: dict[str, list[tuple[float, float, int]]] = {}
    store_name = "SqliteStore.add (Bloom, checkpoint thread)"
    for run in range(1, args.repeat + 1):  # alternating, so a slow spell hits every layout
        rate, wal = replay_store(
            base, work, stream=args.stream, seed=args.seed, hosts=args.hosts, stored=args.urls
        )
        runs.setdefault(store_name, []).append((rate, 0.0, wal))
        print(f"run {run}: {store_name}: {rate:,.0f}/s", file=sys.stderr)
        for name, source, make in variants:
            rate, merge_share, wal = replay(source, work, make, args.stream, args.seed)
            runs.setdefault(name, []).append((rate, merge_share, wal))
            print(f"run {run}: {name}: {rate:,.0f}/s", file=sys.stderr)
    results = [(name, *statistics.median_low(rows)) for name, rows in runs.items()]
    for suffix in ("", "-wal", "-shm"):
        Path(f"{work}{suffix}").unlink(missing_ok=True)

    print(
        f"\n{args.urls:,} queued URLs over {args.hosts:,} hosts (hot host {args.hot:,});"
        f" {args.stream:,} new URLs replayed, median of {args.repeat} run(s);"
        f" {platform.processor() or platform.machine()},"
        f" {os.cpu_count()} cores, Python {platform.python_version()},"
        f" SQLite {sqlite3.sqlite_version}\n"
    )
    print("| layout | new URLs/s | µs per URL | in merges | WAL at end |")
    print("|---|---:|---:|---:|---:|")
    for name, rate, merge_share, wal in results:
        wal_cell = f"{wal / 2**20:,.0f} MiB"
        print(
            f"| {name} | {rate:,.0f} | {1e6 / rate:.1f} | {100 * merge_share:.0f}% | {wal_cell} |"
        )


def _dropped(variant: StoreSql, index: str) -> StoreSql:
    variant.db.execute(f"DROP INDEX {index}")
    return variant


def _plain(variant: StoreSql) -> StoreSql:
    variant.db.execute("CREATE TABLE plain AS SELECT * FROM urls WHERE 0")
    return variant


if __name__ == "__main__":
    main()

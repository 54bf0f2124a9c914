"""The embedded store: one SQLite file (WAL) holding the frontier and the crawl's metadata.

Every public method is one transaction, so a crash (even kill -9) leaves either the state before
or the state after the operation. WAL with synchronous=NORMAL survives the death of the process;
only a power loss can roll back the last transactions (then at-least-once fetching repeats them).
"""

from __future__ import annotations

import dataclasses
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.seen import SeenFilter
from crawlspace.errors import StoreError
from crawlspace.frontier.states import check_transition
from crawlspace.records import (
    Completion,
    FetchRecord,
    Lease,
    LeaseKind,
    RobotsRecord,
    UrlCandidate,
)
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite import enqueue as sqlite_enqueue
from crawlspace.store.sqlite import front as sqlite_front
from crawlspace.store.sqlite import lease as sqlite_lease
from crawlspace.store.sqlite import priority as sqlite_priority
from crawlspace.store.sqlite import revisit as sqlite_revisit
from crawlspace.store.sqlite import rows as sqlite_rows
from crawlspace.store.sqlite import traps as sqlite_traps
from crawlspace.store.sqlite.checkpoint import WalCheckpointer
from crawlspace.store.sqlite.schema import SCHEMA, SCHEMA_VERSION

# The columns every ending of a page lease sets (the completion's UPDATE adds the revisit ones).
_FINISH_URL = (
    "UPDATE urls SET state = ?, reason = ?, lease_id = NULL, lease_expires_at = NULL,"
    " updated_at = ?, etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified)"
)


# Host ids kept in memory (an id is one indexed read away when it is not).
HOST_ID_CACHE = 200_000


def _own_copy(completion: Completion) -> Completion:
    """A completion whose fields the store may change in place or replace."""
    return dataclasses.replace(completion, rejections=dict(completion.rejections))


class SqliteStore:
    """Implements ``crawlspace.store.base.Store`` on a local SQLite file."""

    def __init__(
        self,
        path: Path | str,
        limits: FrontierLimits | None = None,
        *,
        seen_filter: SeenFilter | None = None,
        near_index: NearDuplicateIndex | None = None,
        background_checkpoints: bool = False,
    ) -> None:
        self.path = str(path)
        self.limits = limits or FrontierLimits()
        # Dedup accelerators (store/sqlite/dedup.py): in memory, rebuilt from the file below.
        self.seen_filter = seen_filter
        self.near_index = near_index
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.execute("PRAGMA cache_size=-65536")
            self._db.execute("PRAGMA wal_autocheckpoint=20000")
            # One transaction: the schema appears whole or not at all, in a few WAL frames.
            self._db.executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}\nCOMMIT;")
            self._check_schema_version()
            self._add_missing_columns()
            # A host's allowance is set when its row is made; a resume with another
            # max_in_flight_per_host applies it to every host already known, too.
            self._db.execute(
                "UPDATE hosts SET max_in_flight = ? WHERE max_in_flight <> ?",
                (self.limits.max_in_flight_per_host,) * 2,
            )
            sqlite_dedup.migrate(self._db)
            sqlite_revisit.migrate(self._db)
            sqlite_priority.migrate(self._db)
            sqlite_front.migrate(self._db, self.limits.front)
            if seen_filter is not None:
                sqlite_dedup.rebuild_seen(self._db, seen_filter, self.path)
            if near_index is not None:
                sqlite_dedup.rebuild_near_index(self._db, near_index)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot open the crawl database ({exc})") from exc
        self._host_ids: dict[str, int] = {}
        self._hosts_cached_in_transaction: list[str] = []
        # Trap budgets and recrawl policy (store/sqlite/traps.py, sqlite/revisit.py); the crawl
        # sets them from its config. Contested revisit/new leases per host, for revisit_share.
        self.budgets = sqlite_traps.StoreBudgets(
            self.limits.discovery_window,
            self.limits.discovery_trap_ratio,
            self.limits.trap_priority_penalty,
        )
        self.ranking = sqlite_priority.Ranking(self.limits.priority_rules())
        self._band_tally: dict[int, list[int]] = {}
        # Crawl-wide budgets: pages and bytes counted from the file on first use, then here.
        self._pages_done: int | None = None
        self._bytes_done: int | None = None
        self._pages_held = 0
        self._lease_prefix = secrets.token_hex(6) + "-"
        self._lease_serial = 0
        # Until a revisit is queued, a host's next URL is simply the head of its queue.
        self._revisits_possible = sqlite_revisit.any_queued_revisit(self._db)
        # The crawl's store copies its WAL into the file from a thread (store/sqlite/checkpoint.py).
        self._checkpointer: WalCheckpointer | None = None
        if background_checkpoints:
            self._checkpointer = WalCheckpointer(self.path)
            self._checkpointer.start()

    def _check_schema_version(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif int(row[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {row[0]}, this crawlspace reads {SCHEMA_VERSION}"
            )

    def _add_missing_columns(self) -> None:
        """Add columns newer than the crawl.db (CREATE TABLE IF NOT EXISTS keeps old tables)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(urls)")}
        added = (("lastmod", "TEXT"), ("changefreq", "TEXT"), ("sitemap_priority", "REAL"))
        for column, kind in added:
            if column not in have:
                self._db.execute(f"ALTER TABLE urls ADD COLUMN {column} {kind}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so two processes sharing the file can never
        # both read a host as free and both take its token.
        self._db.execute("BEGIN IMMEDIATE")
        self._hosts_cached_in_transaction.clear()
        near_entries = len(self.near_index) if self.near_index is not None else 0
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            # What memory learned inside the transaction goes with it: a cached id of a host
            # row that no longer exists would file URLs under a host id the next new host
            # gets, and a fingerprint of a fetch row that was never kept would be matched.
            for host_key in self._hosts_cached_in_transaction:
                self._host_ids.pop(host_key, None)
            if self.near_index is not None:
                self.near_index.truncate(near_entries)
            raise
        else:
            self._db.execute("COMMIT")

    # -- frontier -------------------------------------------------------------------------

    def _host_id(self, db: sqlite3.Connection, host_key: str) -> int:
        host_id = self._host_ids.get(host_key)
        if host_id is None:
            db.execute(
                "INSERT OR IGNORE INTO hosts (host_key, max_in_flight) VALUES (?, ?)",
                (host_key, self.limits.max_in_flight_per_host),
            )
            host_id = int(
                db.execute("SELECT id FROM hosts WHERE host_key = ?", (host_key,)).fetchone()[0]
            )
            if len(self._host_ids) >= HOST_ID_CACHE:
                self._host_ids.clear()  # memory must not grow with the number of hosts
            self._host_ids[host_key] = host_id
            self._hosts_cached_in_transaction.append(host_key)
        return host_id

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        with self._transaction() as db:
            result = self._add(db, candidates, now)
            self.ranking.endow(db, [c.url for c in candidates])
            return result

    def _add(
        self,
        db: sqlite3.Connection,
        candidates: Sequence[UrlCandidate],
        now: float,
        admitted_urls: list[str] | None = None,
        inlinks: int = 0,
    ) -> AddResult:
        return sqlite_enqueue.add_candidates(
            db,
            candidates,
            now,
            host_ids=self._host_id,
            per_host_limit=self.limits.max_pages_per_host,
            seen_filter=self.seen_filter,
            admitted_urls=admitted_urls,
            inlinks=inlinks,
        )

    def _record_excluded(
        self, db: sqlite3.Connection, excluded: Sequence[tuple[str, str]], depth: int, now: float
    ) -> None:
        db.executemany(
            "INSERT OR IGNORE INTO urls (url, depth, priority, state, reason, source,"
            " discovered_at, updated_at) VALUES (?, ?, 0, 'excluded', ?, 'link', ?, ?)",
            [(url, depth, reason, now, now) for url, reason in excluded],
        )
        if self.seen_filter is not None:
            for url, _ in excluded:
                self.seen_filter.add(url)

    def _new_lease_id(self) -> str:
        # Unique without a uuid4 per lease (a tenth of a lease's cost): a random per-store
        # prefix, then a counter.
        self._lease_serial += 1
        return f"{self._lease_prefix}{self._lease_serial:x}"

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        if limit <= 0:
            return []
        with self._transaction() as db:
            return sqlite_lease.lease_ready(
                db,
                now,
                limit,
                now + lease_seconds,
                new_id=self._new_lease_id,
                revisits=(self.limits.revisit_share, self._band_tally)
                if self._revisits_possible
                else None,
                front=self.limits.front,
            )

    def _current_page_lease(self, db: sqlite3.Connection, lease: Lease) -> int | None:
        """The URL's host id while ``lease`` is its current lease, else None."""
        row = db.execute(
            "SELECT host_id, state, lease_id, version FROM urls WHERE id = ?", (lease.url_id,)
        ).fetchone()
        if row is None or row[1] != "leased" or row[2] != lease.lease_id or row[3] != lease.version:
            return None
        return int(row[0])

    def complete(self, lease: Lease, completion: Completion, now: float) -> bool:
        return self.complete_many([(lease, completion)], now)[0]

    def complete_many(self, items: Sequence[tuple[Lease, Completion]], now: float) -> list[bool]:
        """Group commit: several completions in one transaction, so one WAL commit (the cost
        that dominates a completion) is shared. All or nothing, like a single completion.

        The store adds to a completion what it decided (rejections by budget, links demoted
        for duplicate content), for the caller's metrics. It works on copies and hands its
        additions back only after COMMIT, so a batch that rolls back and is retried one by one
        (crawl/commit.py) does not count them twice."""
        work = [(lease, _own_copy(completion)) for lease, completion in items]
        with self._transaction() as db:
            results = [self._complete(db, lease, completion, now) for lease, completion in work]
        for (_, given), (_, done) in zip(items, work, strict=True):
            given.rejections, given.discovered = done.rejections, done.discovered
        return results

    def _complete(
        self, db: sqlite3.Connection, lease: Lease, completion: Completion, now: float
    ) -> bool:
        host_id = self._current_page_lease(db, lease)
        if host_id is None:
            return False
        check_transition("leased", completion.state)
        requeue = completion.state == "queued"
        # A retried attempt leaves its response in the WARC only: the fetch row, the links
        # and the event belong to the visit's one terminal completion.
        fetch = None if requeue else completion.fetch
        if fetch is not None:
            self._insert_fetch(db, lease, fetch, completion)
        if not requeue:
            self._emit_event(db, lease, completion, now)
        url_row = (
            completion.state,
            completion.reason,
            now,
            completion.etag,
            completion.last_modified,
        )
        revisit = None if requeue else completion.revisit  # decided by frontier/revisit.py
        if revisit is None:
            db.execute(_FINISH_URL + " WHERE id = ?", (*url_row, lease.url_id))
        else:
            next_interval, next_fetch_at, changed, new_hash = (
                revisit.interval,
                revisit.next_fetch_at,
                revisit.changed,
                revisit.content_hash,
            )
            db.execute(
                _FINISH_URL + ", revisit_interval = ?, next_fetch_at = ?, due_at = NULL,"
                " last_changed_at = CASE WHEN ? THEN ? ELSE last_changed_at END,"
                " content_hash = COALESCE(?, content_hash) WHERE id = ?",
                (*url_row, next_interval, next_fetch_at, changed, now, new_hash, lease.url_id),
            )
        db.execute(
            "UPDATE hosts SET in_flight = in_flight - 1, queued = queued + ?,"
            " fetched = fetched + ?, next_allowed_at = MAX(next_allowed_at, ?),"
            " backoff_level = COALESCE(?, backoff_level), failures = COALESCE(?, failures)"
            " WHERE id = ?",
            (
                int(requeue),
                int(fetch is not None),
                completion.next_allowed_at or 0.0,
                completion.host_backoff,
                completion.host_failures,
                host_id,
            ),
        )
        if fetch is not None and completion.state != "not_modified":
            # Exact/near duplicate; may lower the host's link priorities. A 304 validated
            # content already classified.
            sqlite_dedup.record_content(
                db, lease, host_id, fetch, completion, index=self.near_index
            )
        if completion.counters:
            sqlite_dedup.bump_counters(db, completion.counters)
        if not requeue:  # per-day and template budgets
            sqlite_traps.apply_budgets(
                db,
                host_id,
                completion,
                now,
                limits=self.limits,
                host_ids=self._host_id,
            )
        cash = 0.0 if requeue else self.ranking.take_cash(db, lease.url_id)
        admitted: list[str] = []
        over_host_budget = 0
        # A followed link is an in-link of its target (store/sqlite/priority.py): a row it
        # creates starts with the count, so only known targets are updated below.
        counted_at_insert = not requeue and not self.ranking.aopic
        if completion.discovered:
            result = self._add(
                db, completion.discovered, now, admitted, inlinks=int(counted_at_insert)
            )
            over_host_budget = result.rejected.get("budget_host", 0)
            for reason, n in result.rejected.items():
                completion.rejections[reason] = completion.rejections.get(reason, 0) + n
        if not requeue:  # the discovery window counts what the links admitted
            sqlite_traps.account_discovery(
                db,
                lease,
                host_id,
                completion,
                admitted=admitted,
                over_host_budget=over_host_budget,
                budgets=self.budgets,
            )
        if not requeue:  # in-link counts, and AOPIC's cash (store/sqlite/priority.py)
            created = set(admitted) if counted_at_insert else set()
            self.ranking.pass_on(
                db, cash, [c.url for c in completion.discovered if c.url not in created]
            )
        if completion.excluded:
            self._record_excluded(db, completion.excluded, lease.depth + 1, now)
        if completion.rejections:
            self._count(db, completion.rejections)
        return True

    def _insert_fetch(
        self, db: sqlite3.Connection, lease: Lease, fetch: FetchRecord, completion: Completion
    ) -> None:
        sqlite_rows.insert_fetch(db, lease, fetch, completion)

    def _emit_event(
        self, db: sqlite3.Connection, lease: Lease, completion: Completion, now: float
    ) -> None:
        sqlite_rows.emit_event(db, lease, completion, now)

    def release(self, lease: Lease, now: float) -> bool:
        return self._give_back(lease, now, tried=False)

    def _give_back(self, lease: Lease, now: float, *, tried: bool) -> bool:
        with self._transaction() as db:
            if lease.kind is LeaseKind.ROBOTS:
                cur = db.execute(
                    "UPDATE hosts SET in_flight = in_flight - 1, robots_lease_id = NULL,"
                    " robots_lease_expires_at = NULL WHERE host_key = ? AND robots_lease_id = ?",
                    (lease.host_key, lease.lease_id),
                )
                return cur.rowcount == 1
            host_id = self._current_page_lease(db, lease)
            if host_id is None:
                return False
            db.execute(
                "UPDATE urls SET state = 'queued', lease_id = NULL, lease_expires_at = NULL,"
                " attempts = attempts - ?, updated_at = ? WHERE id = ?",
                (0 if tried else 1, now, lease.url_id),
            )
            db.execute(
                "UPDATE hosts SET in_flight = in_flight - 1, queued = queued + 1 WHERE id = ?",
                (host_id,),
            )
        return True

    def expire_leases(self, now: float) -> int:
        return self._return_leases(now, now)

    def recover(self, now: float) -> int:
        """Only the single owner of the directory may call this (the crawl holds a lock file)."""
        return self._return_leases(None, now)

    def _return_leases(self, before: float | None, now: float) -> int:
        cutoff = float("inf") if before is None else before
        hold = now + self.limits.lost_lease_gap
        with self._transaction() as db:
            expired = db.execute(
                "SELECT host_id, COUNT(*) FROM urls WHERE state = 'leased'"
                " AND lease_expires_at <= ? GROUP BY host_id",
                (cutoff,),
            ).fetchall()
            db.execute(
                "UPDATE urls SET state = 'queued', lease_id = NULL, lease_expires_at = NULL"
                " WHERE state = 'leased' AND lease_expires_at <= ?",
                (cutoff,),
            )
            db.executemany(
                "UPDATE hosts SET in_flight = in_flight - ?, queued = queued + ?,"
                " next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
                [(n, n, hold, host_id) for host_id, n in expired],
            )
            robots = db.execute(
                "UPDATE hosts SET in_flight = in_flight - 1, robots_lease_id = NULL,"
                " robots_lease_expires_at = NULL, next_allowed_at = MAX(next_allowed_at, ?)"
                " WHERE robots_lease_id IS NOT NULL AND robots_lease_expires_at <= ?",
                (hold, cutoff),
            ).rowcount
        return int(sum(n for _, n in expired) + robots)

    def next_ready_at(self) -> float | None:
        row = self._db.execute(sqlite_front.next_ready_sql(self.limits.front)).fetchone()
        return None if row[0] is None else float(row[0])

    def in_flight(self) -> int:
        row = self._db.execute("SELECT SUM(in_flight) FROM hosts WHERE in_flight > 0").fetchone()
        return int(row[0] or 0)

    # -- robots ---------------------------------------------------------------------------

    def complete_robots(self, lease: Lease, record: RobotsRecord, next_allowed_at: float) -> bool:
        with self._transaction() as db:
            row = db.execute(
                "SELECT id FROM hosts WHERE host_key = ? AND robots_lease_id = ?",
                (lease.host_key, lease.lease_id),
            ).fetchone()
            if row is None:
                return False
            host_id = int(row[0])
            self._store_robots(db, host_id, record)
            db.execute(
                "UPDATE hosts SET in_flight = in_flight - 1, robots_lease_id = NULL,"
                " robots_lease_expires_at = NULL, robots_expires_at = ?,"
                " next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
                (record.expires_at, next_allowed_at, host_id),
            )
        return True

    def _store_robots(self, db: sqlite3.Connection, host_id: int, record: RobotsRecord) -> None:
        sqlite_rows.store_robots(db, host_id, record)

    def robots(self, host_key: str) -> RobotsRecord | None:
        row = self._db.execute(
            "SELECT r.status, r.outcome, r.body, r.fetched_at, r.expires_at, r.attempts, r.error"
            " FROM robots r JOIN hosts h ON h.id = r.host_id WHERE h.host_key = ?",
            (host_key,),
        ).fetchone()
        if row is None:
            return None
        status, outcome, body, fetched_at, expires_at, attempts, error = row
        return RobotsRecord(
            host_key, status, outcome, bytes(body), fetched_at, expires_at, attempts, error
        )

    # -- counters and bookkeeping ---------------------------------------------------------

    def _count(self, db: sqlite3.Connection, counts: dict[str, int]) -> None:
        sqlite_dedup.bump_counters(db, {f"rejected.{name}": n for name, n in counts.items()})

    def count_rejections(self, rejections: dict[str, int]) -> None:
        with self._transaction() as db:
            self._count(db, rejections)

    def bump_counters(self, counts: dict[str, int]) -> None:
        """Add to named counters, e.g. ``warc.unreferenced_records``."""
        with self._transaction() as db:
            sqlite_dedup.bump_counters(db, counts)

    def warc_offsets(self, warc_file: str) -> set[int]:
        """Offsets of the WARC records that fetch rows of ``warc_file`` point at."""
        rows = self._db.execute("SELECT warc_offset FROM fetches WHERE warc_file = ?", (warc_file,))
        return {int(offset) for (offset,) in rows if offset is not None}

    def promote_due(self, now: float, limit: int = 1000) -> int:
        """Recrawl: queue up to ``limit`` URLs whose revisit is due (store/sqlite/revisit.py)."""
        with self._transaction() as db:
            promoted = sqlite_revisit.promote_due(db, now, limit)
        if promoted:
            self._revisits_possible = True
        return promoted

    def next_due_at(self) -> float | None:
        return sqlite_revisit.next_due_at(self._db)

    # -- crawl-wide budgets (crawl/budget.py): this store has one owner, so in memory --

    def reserve_pages(self, n: int, cap: int) -> tuple[int, int]:
        if self._pages_done is None:
            self._pages_done = self.fetched_pages()
        granted = max(0, min(n, cap - self._pages_done - self._pages_held))
        self._pages_held += granted
        return granted, self._pages_done

    def settle_pages(self, released: int, done: int, nbytes: int) -> tuple[int, int]:
        if self._pages_done is None:
            self._pages_done = self.fetched_pages()
        if self._bytes_done is None:
            self._bytes_done = self.fetched_bytes()
        self._pages_held = max(0, self._pages_held - released)
        self._pages_done += done
        self._bytes_done += nbytes
        return self._pages_done, self._bytes_done

    def fetched_bytes(self) -> int:
        row = self._db.execute("SELECT COALESCE(SUM(bytes), 0) FROM fetches").fetchone()
        return int(row[0])

    def fetched_pages(self) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM fetches").fetchone()
        return int(row[0])

    def queued(self) -> int:
        row = self._db.execute("SELECT SUM(queued) FROM hosts").fetchone()
        return int(row[0] or 0)

    def ready_hosts(self, now: float) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM hosts WHERE ready_at <= ?", (now,)).fetchone()
        return int(row[0])

    def seed_urls(self) -> list[str]:
        return [
            str(row[0]) for row in self._db.execute("SELECT url FROM urls WHERE source = 'seed'")
        ]

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def record_sample(self, sample: dict[str, float | None]) -> None:
        """One row of the ``samples`` time series (keys are its column names)."""
        columns = ", ".join(sample)
        marks = ", ".join("?" * len(sample))
        self._db.execute(
            f"INSERT OR REPLACE INTO samples ({columns}) VALUES ({marks})", tuple(sample.values())
        )

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
        self._db.close()

"""The crawl's records in one SQLite file: what was fetched, when, and what the crawl counted.

``CrawlRecords`` owns the connection, the schema and the transactions of ``crawl.db``, and writes
the metadata every crawl keeps locally: fetch rows and index events (``rows.py``), robots.txt
copies, named counters, meta values and telemetry samples. It decides nothing about the frontier.
Two stores compose it: ``SqliteStore`` (whose frontier shares the file and the transactions) and
``SharedStore`` (a worker's local records beside the shared Redis frontier).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from crawlspace.errors import StoreError, StoreIOError
from crawlspace.plans import FeedEntry
from crawlspace.records import Completion, FetchRecord, Lease, RobotsRecord, StoredCapture
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite import priority as sqlite_priority
from crawlspace.store.sqlite import revisit as sqlite_revisit
from crawlspace.store.sqlite import rows as sqlite_rows
from crawlspace.store.sqlite.checkpoint import WalCheckpointer
from crawlspace.store.sqlite.schema import SCHEMA, SCHEMA_VERSION

HOST_ID_CACHE = 200_000  # host ids kept in memory (one indexed read away when they are not)
PENDING_NOTES = 1_000  # host notes waiting for a transaction before one is made for them
# SQLite's own page cache for the crawl's connection, in KiB. The OS keeps the file's pages
# cached anyway, so a page SQLite dropped is one pread away, not a disk read. At 64 MiB the
# crawl process grew with its database (+11 MB at a 13 MB crawl.db; 149 MB against 75 at 1M
# URLs in the frontier bench); at 4 MiB the store's transactions cost the loop ~0.03-0.04 ms a
# page more (store_cost.py, both corpora; ~5%, 8 MiB half that) and bulk loads of 1M new URLs
# ~20% more time (benchmarks/README.md, "Thirteenth session").
PAGE_CACHE_KIB = 4096


class CrawlRecords:
    def __init__(
        self,
        path: Path | str,
        *,
        max_in_flight_per_host: int = 1,
        background_checkpoints: bool = False,
    ) -> None:
        self.path = str(path)
        self._max_in_flight = max_in_flight_per_host
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._open()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot open the crawl database ({exc})") from exc
        self._host_ids: dict[str, int] = {}
        # Host notes put outside a transaction wait for the next one (or close): a note per
        # fetched page would otherwise be a WAL commit per page. A crash loses the last few,
        # which only delays what the crawl learns from them (crawl/host_rules.py).
        self._pending_notes: dict[tuple[str, str], str] = {}
        self._hosts_cached_in_transaction: list[str] = []
        # The crawl copies its WAL into the file from a thread (store/sqlite/checkpoint.py).
        self._checkpointer: WalCheckpointer | None = None
        if background_checkpoints:
            self._checkpointer = WalCheckpointer(self.path)
            self._checkpointer.start()

    def _open(self) -> None:
        db = self.db
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=10000")
        db.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
        db.execute("PRAGMA wal_autocheckpoint=20000")
        # One transaction: the schema appears whole or not at all, in a few WAL frames.
        db.executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}\nCOMMIT;")
        self._check_schema_version()
        self._add_missing_columns()
        # A host's allowance is set when its row is made; a resume with another
        # max_in_flight_per_host applies it to every host already known, too.
        db.execute(
            "UPDATE hosts SET max_in_flight = ? WHERE max_in_flight <> ?",
            (self._max_in_flight,) * 2,
        )
        sqlite_dedup.migrate(db)
        sqlite_revisit.migrate(db)
        sqlite_priority.migrate(db)
        self._migrate_discovery_windows()

    def _migrate_discovery_windows(self) -> None:
        """A crawl.db from before the discovery window became a host note keeps its windows
        (and flags) in ``host_discovery``: they become the hosts' ``discovery`` notes, in the
        form frontier/budgets.py encode_window writes ("PAGES NEW_URLS LAST_RATIO FLAGGED"),
        and the table goes. Once per file; a note already written wins."""
        db = self.db
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'host_discovery'").fetchone():
            return
        db.executescript(
            "BEGIN IMMEDIATE;"
            " INSERT OR IGNORE INTO host_notes (host_id, name, text)"
            " SELECT host_id, 'discovery', pages || ' ' || new_urls || ' '"
            " || COALESCE(CAST(last_ratio AS TEXT), '-') || ' ' || flagged FROM host_discovery;"
            " DROP TABLE host_discovery; COMMIT;"
        )

    def _check_schema_version(self) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            self.db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif int(row[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {row[0]}, this crawlspace reads {SCHEMA_VERSION}"
            )

    def _add_missing_columns(self) -> None:
        """Add columns newer than the crawl.db (CREATE TABLE IF NOT EXISTS keeps old tables)."""
        have = {row[1] for row in self.db.execute("PRAGMA table_info(urls)")}
        added = (
            ("lastmod", "TEXT"),
            ("changefreq", "TEXT"),
            ("sitemap_priority", "REAL"),
            ("seen_key", "TEXT"),
            ("linked_at", "REAL"),
            ("via_id", "INTEGER"),
        )
        for column, kind in added:
            if column not in have:
                self.db.execute(f"ALTER TABLE urls ADD COLUMN {column} {kind}")
        sampled = {row[1] for row in self.db.execute("PRAGMA table_info(samples)")}
        for column, kind in SAMPLE_COLUMNS_ADDED:
            if column not in sampled:
                self.db.execute(f"ALTER TABLE samples ADD COLUMN {column} {kind}")
        # Only rows whose URL is not its own seen key are in it: a few, and the seen test
        # looks keys up here (store/sqlite/enqueue.py resolve_query_orders).
        self.db.execute(
            "CREATE UNIQUE INDEX IF NOT EXISTS urls_seen_key ON urls (seen_key)"
            " WHERE seen_key IS NOT NULL"
        )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; SQLite's errors (a full disk, say) leave as StoreIOError."""
        with io_errors(self.path), self._transaction() as db:
            yield db

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so two processes sharing the file can never
        # both read a host as free and both take its token.
        self.db.execute("BEGIN IMMEDIATE")
        self._hosts_cached_in_transaction.clear()
        pending = self._pending_notes
        try:
            for (host_key, name), text in pending.items():
                self.write_notes(self.db, self.host_id(self.db, host_key), {name: text})
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            # What memory learned inside the transaction goes with it: a cached id of a host
            # row that no longer exists would file URLs under a host id the next new host gets.
            for host_key in self._hosts_cached_in_transaction:
                self._host_ids.pop(host_key, None)
            raise
        else:
            self.db.execute("COMMIT")
            if pending:
                self._pending_notes = {}

    def host_id(self, db: sqlite3.Connection, host_key: str) -> int:
        """The host's row id, the row made if it is new (inside the caller's transaction)."""
        host_id = self._host_ids.get(host_key)
        if host_id is None:
            db.execute(
                "INSERT OR IGNORE INTO hosts (host_key, max_in_flight) VALUES (?, ?)",
                (host_key, self._max_in_flight),
            )
            host_id = int(
                db.execute("SELECT id FROM hosts WHERE host_key = ?", (host_key,)).fetchone()[0]
            )
            if len(self._host_ids) >= HOST_ID_CACHE:
                self._host_ids.clear()  # memory must not grow with the number of hosts
            self._host_ids[host_key] = host_id
            self._hosts_cached_in_transaction.append(host_key)
        return host_id

    # -- a visit's rows (inside the caller's transaction) --------------------------------------

    def insert_fetch(
        self, db: sqlite3.Connection, lease: Lease, fetch: FetchRecord, completion: Completion
    ) -> int:
        """The fetch's rows; returns its id."""
        return sqlite_rows.insert_fetch(db, lease, fetch, completion)

    def emit_event(
        self, db: sqlite3.Connection, lease: Lease, completion: Completion, now: float
    ) -> None:
        sqlite_rows.emit_event(db, lease, completion, now)

    def write_feed(self, db: sqlite3.Connection, lease: Lease, entry: FeedEntry | None) -> None:
        if entry is not None:
            sqlite_rows.insert_feed(db, lease, entry)

    def store_robots(self, db: sqlite3.Connection, host_id: int, record: RobotsRecord) -> None:
        sqlite_rows.store_robots(db, host_id, record)

    def count(self, db: sqlite3.Connection, rejections: Mapping[str, int]) -> None:
        sqlite_dedup.bump_counters(db, {f"rejected.{name}": n for name, n in rejections.items()})

    # -- on their own ------------------------------------------------------------------------

    def robots(self, host_key: str) -> RobotsRecord | None:
        with io_errors(self.path):
            row = self.db.execute(
                "SELECT r.status, r.outcome, r.body, r.fetched_at, r.expires_at, r.attempts,"
                " r.error FROM robots r JOIN hosts h ON h.id = r.host_id WHERE h.host_key = ?",
                (host_key,),
            ).fetchone()
        if row is None:
            return None
        status, outcome, body, fetched_at, expires_at, attempts, error = row
        return RobotsRecord(
            host_key, status, outcome, bytes(body), fetched_at, expires_at, attempts, error
        )

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        if not names:
            return {}
        marks = ",".join("?" * len(names))
        host_id = self._host_ids.get(host_key)
        with io_errors(self.path):
            if host_id is not None:  # the primary key's own order: no join
                rows = self.db.execute(
                    f"SELECT name, text FROM host_notes WHERE host_id = ? AND name IN ({marks})",
                    (host_id, *names),
                ).fetchall()
            else:
                rows = self.db.execute(
                    "SELECT n.name, n.text FROM host_notes n JOIN hosts h ON h.id = n.host_id"
                    f" WHERE h.host_key = ? AND n.name IN ({marks})",
                    (host_key, *names),
                ).fetchall()
        notes = {str(name): str(text) for name, text in rows}
        if self._pending_notes:
            for name in names:
                text = self._pending_notes.get((host_key, name))
                if text is not None:
                    notes[name] = text
        return notes

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        """Kept with the next transaction (see ``_pending_notes``)."""
        self._pending_notes[(host_key, name)] = text
        if len(self._pending_notes) >= PENDING_NOTES:
            with self.transaction():
                pass

    def write_notes(self, db: sqlite3.Connection, host_id: int, notes: Mapping[str, str]) -> None:
        """Keep ``notes`` for the host (inside the caller's transaction)."""
        db.executemany(
            "INSERT OR REPLACE INTO host_notes (host_id, name, text) VALUES (?, ?, ?)",
            [(host_id, name, text) for name, text in notes.items()],
        )

    def count_rejections(self, rejections: dict[str, int]) -> None:
        with self.transaction() as db:
            self.count(db, rejections)

    def bump_counters(self, counts: dict[str, int]) -> None:
        """Add to named counters, e.g. ``warc.unreferenced_records``."""
        with self.transaction() as db:
            sqlite_dedup.bump_counters(db, counts)

    def warc_offsets(self, warc_file: str) -> set[int]:
        """Offsets of the WARC records that fetch rows of ``warc_file`` point at."""
        rows = self.db.execute("SELECT warc_offset FROM fetches WHERE warc_file = ?", (warc_file,))
        return {int(offset) for (offset,) in rows if offset is not None}

    def recent_captures(self, limit: int) -> list[StoredCapture]:
        """The ``limit`` payloads archived in full last, oldest first."""
        rows = self.db.execute(
            "SELECT payload_key, final_url, fetched_at, warc_file, warc_offset, warc_length,"
            " payload_digest FROM fetches WHERE payload_key IS NOT NULL AND warc_file IS NOT NULL"
            " ORDER BY id DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [StoredCapture(*row) for row in reversed(rows)]

    def fetched_bytes(self) -> int:
        row = self.db.execute("SELECT COALESCE(SUM(bytes), 0) FROM fetches").fetchone()
        return int(row[0])

    def fetched_pages(self) -> int:
        row = self.db.execute("SELECT COUNT(*) FROM fetches").fetchone()
        return int(row[0])

    def render_totals(self) -> tuple[int, float]:
        """Renders tried so far and their browser seconds, from the crawl's counters."""
        counts = dict(
            self.db.execute(
                "SELECT name, value FROM counters"
                " WHERE name IN ('render.pages', 'render.failed', 'render.ms')"
            ).fetchall()
        )
        pages = int(counts.get("render.pages", 0)) + int(counts.get("render.failed", 0))
        return pages, int(counts.get("render.ms", 0)) / 1000.0

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def record_sample(self, sample: dict[str, float | None]) -> None:
        """One row of the ``samples`` time series (keys are its column names)."""
        columns = ", ".join(sample)
        marks = ", ".join("?" * len(sample))
        self.db.execute(
            f"INSERT OR REPLACE INTO samples ({columns}) VALUES ({marks})", tuple(sample.values())
        )

    def close(self) -> None:
        if self._pending_notes:
            with self.transaction():
                pass
        if self._checkpointer is not None:
            self._checkpointer.stop()
        self.db.close()


@contextmanager
def io_errors(path: str) -> Iterator[None]:
    """SQLite's errors leave as the project's StoreIOError: the crawl handles every engine's
    alike (committed state is intact; the same command resumes once the cause is fixed)."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise StoreIOError(f"{path}: {exc}") from exc


# Columns of the samples table newer than some crawl.db files.
SAMPLE_COLUMNS_ADDED = (
    ("latency_p50_ms", "REAL"),
    ("latency_p95_ms", "REAL"),
    ("status_2xx", "INTEGER NOT NULL DEFAULT 0"),
    ("status_3xx", "INTEGER NOT NULL DEFAULT 0"),
    ("status_4xx", "INTEGER NOT NULL DEFAULT 0"),
    ("status_5xx", "INTEGER NOT NULL DEFAULT 0"),
)


class RecordsDelegate:
    """The Store methods that only read or write the crawl's local records, for the stores that
    compose a ``CrawlRecords`` as ``self.records`` (the frontier methods each store writes)."""

    records: CrawlRecords

    @property
    def path(self) -> str:
        return self.records.path

    def bump_counters(self, counts: dict[str, int]) -> None:
        self.records.bump_counters(counts)

    def warc_offsets(self, warc_file: str) -> set[int]:
        return self.records.warc_offsets(warc_file)

    def recent_captures(self, limit: int) -> list[StoredCapture]:
        return self.records.recent_captures(limit)

    def fetched_bytes(self) -> int:
        return self.records.fetched_bytes()

    def fetched_pages(self) -> int:
        return self.records.fetched_pages()

    def set_meta(self, key: str, value: str) -> None:
        self.records.set_meta(key, value)

    def record_sample(self, sample: dict[str, float | None]) -> None:
        self.records.record_sample(sample)

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        return self.records.host_notes(host_key, names)

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        self.records.put_host_note(host_key, name, text)

"""The embedded store: one SQLite file (WAL) holding the frontier and the crawl's metadata.

Every public method is one transaction, so a crash (even kill -9) leaves either the state before
or the state after the operation. WAL with synchronous=NORMAL survives the death of the process;
only a power loss can roll back the last transactions (then at-least-once fetching repeats them).
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.seen import SeenFilter
from crawlspace.errors import StoreError
from crawlspace.plans import Outcome
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.control import CONTROL_FILE, FileControl
from crawlspace.store.memory.addresses import AddressTokens, RequestStarts
from crawlspace.store.memory.renders import RenderTotals
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite import enqueue as sqlite_enqueue
from crawlspace.store.sqlite import exclusions as sqlite_exclusions
from crawlspace.store.sqlite import front as sqlite_front
from crawlspace.store.sqlite import holds
from crawlspace.store.sqlite import lease as sqlite_lease
from crawlspace.store.sqlite import priority as sqlite_priority
from crawlspace.store.sqlite import revisit as sqlite_revisit
from crawlspace.store.sqlite.completion import complete_page
from crawlspace.store.sqlite.known import RecentUrls
from crawlspace.store.sqlite.records import CrawlRecords, RecordsDelegate, io_errors


class SqliteStore(RecordsDelegate):
    """Implements ``crawlspace.store.base.Store`` on a local SQLite file: the frontier's rows
    beside the crawl's records (``records.py``), in the same file and the same transactions."""

    def __init__(
        self,
        path: Path | str,
        limits: FrontierLimits | None = None,
        *,
        seen_filter: SeenFilter | None = None,
        near_index: NearDuplicateIndex | None = None,
        background_checkpoints: bool = False,
    ) -> None:
        self.limits = limits or FrontierLimits()
        # Dedup accelerators (store/sqlite/dedup.py): in memory, rebuilt from the file below.
        self.seen_filter = seen_filter
        self.near_index = near_index
        self.records = CrawlRecords(
            path,
            max_in_flight_per_host=self.limits.max_in_flight_per_host,
            background_checkpoints=background_checkpoints,
        )
        self._db = self.records.db
        try:
            sqlite_front.migrate(self._db, self.limits.front)
            if seen_filter is not None:
                sqlite_dedup.rebuild_seen(self._db, seen_filter, self.path)
            if near_index is not None:
                sqlite_dedup.rebuild_near_index(self._db, near_index)
        except sqlite3.DatabaseError as exc:
            self.records.close()
            raise StoreError(f"{self.path}: cannot open the crawl database ({exc})") from exc
        # Trap budgets and recrawl policy (store/sqlite/traps.py, sqlite/revisit.py); the crawl
        # sets them from its config. Contested revisit/new leases per host, for revisit_share.
        self.ranking = sqlite_priority.Ranking(self._db, self.limits.cash)
        # URLs whose seen test is settled, remembered so a repeated link is not looked up again.
        self.settled = RecentUrls()
        self._band_tally: dict[int, list[int]] = {}
        # Per server address: one owner, so in memory (limits.py).
        self.address_tokens = AddressTokens(self.limits.address)
        self.request_starts = RequestStarts(self.limits.rate)  # the crawl's rate cap
        # Crawl-wide budgets: pages and bytes counted from the file on first use, then here.
        self._pages_done: int | None = None
        self._bytes_done: int | None = None
        self._pages_held = 0
        self._renders: RenderTotals | None = None  # the crawl-wide render budget's totals
        self._lease_prefix = secrets.token_hex(6) + "-"
        self._lease_serial = 0
        # Until a revisit is queued, a host's next URL is simply the head of its queue.
        self._revisits_possible = sqlite_revisit.any_queued_revisit(self._db)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        near_entries = len(self.near_index) if self.near_index is not None else 0
        try:
            with self.records.transaction() as db:
                yield db
        except BaseException:
            # A fingerprint of a fetch row that was never kept must not be matched, nor a URL
            # row that was never kept be taken as known.
            if self.near_index is not None:
                self.near_index.truncate(near_entries)
            self.settled.rollback()
            self.ranking.saturated.rollback()
            raise
        self.settled.commit()
        self.ranking.saturated.commit()

    # -- frontier -------------------------------------------------------------------------

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        with self._transaction() as db:
            result = self.add_in(db, candidates, now)
            self.ranking.endow(db, [c.url for c in candidates])
            return result

    def add_in(
        self,
        db: sqlite3.Connection,
        candidates: Sequence[UrlCandidate],
        now: float,
        admitted_urls: list[str] | None = None,
        inlinks: int = 0,
        *,
        orders_resolved: bool = False,
        via: int | None = None,
    ) -> AddResult:
        """``orders_resolved``: the caller resolved the candidates' query orders already
        (sqlite/enqueue.py resolve_query_orders), to pass in-links on to the stored URLs.
        ``via``: the URL id of the page whose completion admits them."""
        return sqlite_enqueue.add_candidates(
            db,
            candidates,
            now,
            host_ids=self.records.host_id,
            per_host_limit=self.limits.max_pages_per_host,
            seen_filter=self.seen_filter,
            settled=self.settled,
            admitted_urls=admitted_urls,
            inlinks=inlinks,
            ignore_query_order=self.limits.ignore_query_order,
            orders_resolved=orders_resolved,
            linked_at=now if self.limits.link_times else None,
            via=via,
        )

    def record_excluded(
        self, db: sqlite3.Connection, excluded: Sequence[tuple[str, str]], depth: int, now: float
    ) -> None:
        sqlite_enqueue.add_excluded(
            db,
            excluded,
            depth,
            now,
            seen_filter=self.seen_filter,
            settled=self.settled,
            ignore_query_order=self.limits.ignore_query_order,
        )

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

    def current_page_lease(self, db: sqlite3.Connection, lease: Lease) -> int | None:
        """The URL's host id while ``lease`` is its current lease, else None."""
        row = db.execute(
            "SELECT host_id, state, lease_id, version FROM urls WHERE id = ?", (lease.url_id,)
        ).fetchone()
        if row is None or row[1] != "leased" or row[2] != lease.lease_id or row[3] != lease.version:
            return None
        return int(row[0])

    def complete(self, lease: Lease, completion: Completion, now: float) -> Outcome | None:
        return self.complete_many([(lease, completion)], now)[0]

    def complete_many(
        self, items: Sequence[tuple[Lease, Completion]], now: float
    ) -> list[Outcome | None]:
        """Group commit: several completions in one transaction, so one WAL commit (the cost
        that dominates a completion) is shared. All or nothing, like a single completion."""
        with self._transaction() as db:
            return [complete_page(self, db, lease, completion, now) for lease, completion in items]

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool:
        """The lease back unused; its host's clock moves to ``not_before`` when later."""
        hold = -1.0 if not_before is None else not_before
        with self._transaction() as db:
            if lease.kind is LeaseKind.ROBOTS:
                cur = db.execute(
                    "UPDATE hosts SET in_flight = in_flight - 1, robots_lease_id = NULL,"
                    " robots_lease_expires_at = NULL, next_allowed_at = MAX(next_allowed_at, ?)"
                    " WHERE host_key = ? AND robots_lease_id = ?",
                    (hold, lease.host_key, lease.lease_id),
                )
                return cur.rowcount == 1
            host_id = self.current_page_lease(db, lease)
            if host_id is None:
                return False
            db.execute(
                "UPDATE urls SET state = 'queued', lease_id = NULL, lease_expires_at = NULL,"
                " attempts = attempts - 1, updated_at = ? WHERE id = ?",
                (now, lease.url_id),
            )
            db.execute(
                "UPDATE hosts SET in_flight = in_flight - 1, queued = queued + 1,"
                " next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
                (hold, host_id),
            )
        return True

    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None:
        return self.address_tokens.take(address, holder, now, expires_at)

    def give_address(self, address: str, holder: str, ended: float) -> None:
        self.address_tokens.give(address, holder, ended)

    def take_start(self, now: float, latest_start: float) -> float:
        return self.request_starts.take(now, latest_start)

    def take_host(self, host_key: str, holder: str, now: float, expires_at: float) -> float | None:
        with self._transaction() as db:
            return holds.take(db, self.records.host_id(db, host_key), holder, now, expires_at)

    def give_host(self, host_key: str, holder: str, next_allowed_at: float) -> None:
        with self._transaction() as db:
            holds.give(db, host_key, holder, next_allowed_at)

    # -- robots re-evaluation (crawl/leases.py): the partial index urls_robots_reevaluated -----

    def url_of(self, url_id: int) -> str | None:
        with io_errors(self.path):
            row = self._db.execute("SELECT url FROM urls WHERE id = ?", (url_id,)).fetchone()
        return None if row is None else str(row[0])

    def robots_excluded(self, host_key: str, limit: int) -> list[tuple[int, str]]:
        with io_errors(self.path):
            return sqlite_exclusions.robots_excluded(self._db, host_key, limit)

    def requeue_excluded(self, host_key: str, url_ids: Sequence[int], now: float) -> int:
        with self._transaction() as db:
            return sqlite_exclusions.requeue_excluded(db, host_key, url_ids, now)

    def lift_exclusion(self, reason: str, now: float) -> int:
        with self._transaction() as db:
            return sqlite_exclusions.lift_exclusion(db, reason, now)

    def expire_leases(self, now: float) -> int:
        return self._return_leases(now, now)

    def recover(self, now: float) -> int:
        """Only the single owner of the directory may call this (the crawl holds a lock file)."""
        return self._return_leases(None, now)

    def _return_leases(self, before: float | None, now: float) -> int:
        cutoff = float("inf") if before is None else before
        with self._transaction() as db:
            return sqlite_lease.return_leases(db, cutoff, now + self.limits.lost_lease_gap)

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
            self.records.store_robots(db, host_id, record)
            db.execute(
                "UPDATE hosts SET in_flight = in_flight - 1, robots_lease_id = NULL,"
                " robots_lease_expires_at = NULL, robots_expires_at = ?,"
                " next_allowed_at = MAX(next_allowed_at, ?) WHERE id = ?",
                (record.expires_at, next_allowed_at, host_id),
            )
        return True

    def robots(self, host_key: str) -> RobotsRecord | None:
        return self.records.robots(host_key)

    # -- counters and bookkeeping ---------------------------------------------------------

    def count_rejections(self, rejections: dict[str, int]) -> None:
        self.records.count_rejections(rejections)

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

    def reserve_render(self) -> tuple[str | None, int, float]:
        return self._render_totals().reserve()

    def spend_render(self, seconds: float) -> None:
        self._render_totals().spend(seconds)

    def _render_totals(self) -> RenderTotals:
        if self._renders is None:
            self._renders = RenderTotals(self.limits.render, *self.records.render_totals())
        return self._renders

    def queued(self) -> int:
        row = self._db.execute("SELECT SUM(queued) FROM hosts").fetchone()
        return int(row[0] or 0)

    def ready_hosts(self, now: float) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM hosts WHERE ready_at <= ?", (now,)).fetchone()
        return int(row[0])

    def control(self) -> FileControl:
        return FileControl(Path(self.path).parent / CONTROL_FILE)

    def capture_log(self) -> None:
        return None  # one process: its captures are all in its own memory

    def crawl_progress(self) -> tuple[int, int] | None:
        return None  # one process: telemetry counts its own

    def scope_revision(self) -> int:
        return 0  # one process: every seed came through it

    def scope_seeds(self) -> list[str]:
        return [
            str(row[0]) for row in self._db.execute("SELECT url FROM urls WHERE source = 'seed'")
        ]

    def close(self) -> None:
        self.records.close()

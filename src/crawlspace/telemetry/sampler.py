"""The crawl's telemetry: running totals fed by each commit, sampled into ``crawl.db`` on a timer.

The dispatcher calls :meth:`Telemetry.tick` once per loop iteration and :meth:`on_commit` after
each completion; both are cheap unless a sample is due. Totals start from what ``crawl.db``
already holds, so the time series of a resumed crawl continues where the last run stopped.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from typing import TYPE_CHECKING, Protocol

from rbloom import Bloom

from crawlspace.errors import ConfigError
from crawlspace.plans import Outcome
from crawlspace.records import Completion
from crawlspace.store.sqlite.readonly import read_only_uri

if TYPE_CHECKING:
    from crawlspace.config import CrawlConfig
    from crawlspace.telemetry.metrics import CrawlMetrics

log = logging.getLogger("crawlspace.telemetry")


# Distinct page texts the duplicate count is exact for (at 0.1% false positives).
TEXTS_EXPECTED = 4_000_000
# Fetch times kept for one sample's latency percentiles, at most.
MAX_DURATIONS = 20_000


def _is_error(completion: Completion) -> bool:
    """The crawler's definition (crawl/crawler.py): an HTTP error status, or a visit given up on."""
    if completion.fetch is not None:
        return completion.fetch.status >= 400
    return completion.state == "failed"


class SampledStore(Protocol):
    """What telemetry reads and writes of the store."""

    @property
    def path(self) -> str: ...

    def queued(self) -> int: ...

    def ready_hosts(self, now: float) -> int: ...

    def crawl_progress(self) -> tuple[int, int] | None: ...

    def record_sample(self, sample: dict[str, float | None]) -> None: ...

    def set_meta(self, key: str, value: str) -> None: ...


class Telemetry:
    def __init__(self, config: CrawlConfig, store: SampledStore) -> None:
        self.interval = max(config.sample_seconds, 0.01)
        self.metrics_port = config.metrics_port
        self.store = store
        self.metrics: CrawlMetrics | None = None
        self.metrics_url: str | None = None
        self._started = False
        self._next_at = 0.0
        # (ts, pages, discovered: the crawl's; pages: this process's)
        self._last: tuple[float, int, int, int] | None = None
        self.pages = self.bytes = self.errors = self.html_pages = 0
        # Texts seen, to count duplicate pages without re-reading the fetches table (a COUNT
        # DISTINCT is O(pages) per sample). A Bloom filter, not a set of hashes: its memory is
        # fixed (~7 MB) where a set grew by ~70 bytes a page; past TEXTS_EXPECTED distinct texts
        # its false positives make the count of this gauge drift up by a few percent.
        self._texts = Bloom(TEXTS_EXPECTED, 0.001)
        self.duplicates = 0
        # Fetch times (ms) since the last sample, for its latency percentiles (at most
        # MAX_DURATIONS a sample: the first ones stand for the rest), and responses by status
        # class (2xx .. 5xx) so far.
        self._durations: list[float] = []
        self.statuses = [0, 0, 0, 0]

    # -- hooks -----------------------------------------------------------------------------

    def on_commit(self, host_key: str, completion: Completion, outcome: Outcome | None) -> None:
        """``outcome``: what the store did with the completion (None: refused as stale)."""
        if outcome is None:
            return  # a stale lease: the store refused it, nothing changed
        self._start()
        fetch = completion.fetch
        if fetch is not None:
            self.pages += 1
            self.bytes += fetch.bytes
            if len(self._durations) < MAX_DURATIONS:
                self._durations.append(fetch.duration_ms)
            if 2 <= fetch.status // 100 <= 5:
                self.statuses[fetch.status // 100 - 2] += 1
            if fetch.text_sha256 is not None:
                self._count_text(fetch.text_sha256)
        if _is_error(completion):
            self.errors += 1
        if self.metrics is not None:
            self.metrics.observe_completion(host_key, completion, outcome)

    def on_expired(self, count: int) -> int:
        if count and self.metrics is not None:
            self.metrics.expired.inc(count)
        return count

    def tick(self, now: float, in_flight: int) -> None:
        self._start()
        if now >= self._next_at:
            try:
                self.sample(now, in_flight)
            except sqlite3.Error as exc:
                # Telemetry must never stop a crawl: a full disk is reported by the store's
                # own next write; here the sample is skipped until the next interval.
                self._next_at = now + self.interval
                log.warning("telemetry sample skipped: %s", exc)

    def close(self, now: float) -> None:
        """Take a last sample (a finished crawl's series ends at its final totals)."""
        if self._started:
            with contextlib.suppress(sqlite3.Error):
                self.sample(now, 0)
        if self.metrics is not None:
            self.metrics.stop()

    def _count_text(self, text_sha256: str) -> None:
        self.html_pages += 1
        text = int(text_sha256[:16], 16)
        if text in self._texts:
            self.duplicates += 1
        else:
            self._texts.add(text)

    # -- sampling --------------------------------------------------------------------------

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        self._load_totals()
        if self.metrics_port is not None:
            from crawlspace.telemetry.metrics import CrawlMetrics

            self.metrics = CrawlMetrics()
            try:
                port = self.metrics.serve(self.metrics_port)
            except OSError as exc:
                raise ConfigError(
                    f"--metrics-port {self.metrics_port}: cannot listen on 127.0.0.1 ({exc})"
                ) from None
            self.metrics_url = f"http://127.0.0.1:{port}/metrics"
            self.store.set_meta("metrics_url", self.metrics_url)
            log.info("Prometheus metrics at %s", self.metrics_url)

    def _read(self) -> sqlite3.Connection:
        return sqlite3.connect(read_only_uri(self.store.path), uri=True)

    def _load_totals(self) -> None:
        db = self._read()
        try:
            pages, size, errors = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0), COALESCE(SUM(status >= 400), 0)"
                " FROM fetches"
            ).fetchone()
            failed = db.execute(
                "SELECT COUNT(*) FROM urls u WHERE state = 'failed'"
                " AND NOT EXISTS (SELECT 1 FROM fetches f WHERE f.url_id = u.id)"
            ).fetchone()[0]
            for (text,) in db.execute(
                "SELECT text_sha256 FROM fetches WHERE text_sha256 IS NOT NULL"
            ):
                self._count_text(text)
            for status_class, count in db.execute(
                "SELECT status / 100, COUNT(*) FROM fetches WHERE status BETWEEN 200 AND 599"
                " GROUP BY 1"
            ):
                self.statuses[int(status_class) - 2] += int(count)
        finally:
            db.close()
        self.pages += int(pages)
        self.bytes += int(size)
        self.errors += int(errors) + int(failed)

    def sample(self, now: float, in_flight: int) -> dict[str, float | None]:
        db = self._read()
        try:
            discovered = int(
                db.execute("SELECT COALESCE(SUM(admitted), 0) FROM hosts").fetchone()[0]
            )
            robots = dict(db.execute("SELECT outcome, COUNT(*) FROM robots GROUP BY outcome"))
        finally:
            db.close()
        # Workers of a shared frontier: the discovery ratio is the crawl's, not one worker's
        # pages against URLs its own directory never counts.
        shared = self.store.crawl_progress()
        pages, discovered = (self.pages, discovered) if shared is None else shared
        rate, ratio = 0.0, None
        if self._last is not None:
            last_ts, last_pages, last_discovered, last_own = self._last
            # The last sample of a run can come moments after the one before it: dividing by
            # at least one interval keeps that short tail from showing as a spike.
            rate = (self.pages - last_own) / max(now - last_ts, self.interval)
            if pages > last_pages:
                # A finite site's ratio falls toward zero; a crawler trap keeps it flat.
                ratio = (discovered - last_discovered) / (pages - last_pages)
        self._last = (now, pages, discovered, self.pages)
        self._next_at = now + self.interval
        row: dict[str, float | None] = {
            "ts": now,
            "pages": self.pages,
            "pages_per_s": rate,
            "queued": self.store.queued(),
            "ready_hosts": self.store.ready_hosts(now),
            "in_flight": in_flight,
            "discovered": discovered,
            "discovery_ratio": ratio,
            "errors": self.errors,
            "bytes": self.bytes,
            "duplicates": self.duplicates,
            **_latencies(self._durations),
            **{f"status_{n}xx": count for n, count in zip(range(2, 6), self.statuses, strict=True)},
        }
        self._durations = []
        self.store.record_sample(row)
        if self.metrics is not None:
            self._update_gauges(row, robots)
        return row

    def _update_gauges(self, row: dict[str, float | None], robots: dict[str, int]) -> None:
        m = self.metrics
        assert m is not None
        m.queued.set(row["queued"] or 0)
        m.ready_hosts.set(row["ready_hosts"] or 0)
        m.in_flight.set(row["in_flight"] or 0)
        m.admitted.set(row["discovered"] or 0)
        m.pages_per_second.set(row["pages_per_s"] or 0)
        if row["discovery_ratio"] is not None:
            m.discovery_ratio.set(row["discovery_ratio"])
        m.duplicates.set(self.duplicates)
        m.duplicate_ratio.set(self.duplicates / self.html_pages if self.html_pages else 0.0)
        for outcome in ("rules", "allow_all", "disallow_all", *robots):
            m.robots.labels(outcome).set(robots.get(outcome, 0))


def _latencies(durations: list[float]) -> dict[str, float | None]:
    """The median and 95th percentile of ``durations`` (nearest rank); None without any."""
    if not durations:
        return {"latency_p50_ms": None, "latency_p95_ms": None}
    ordered = sorted(durations)
    last = len(ordered) - 1
    return {
        "latency_p50_ms": ordered[round(0.50 * last)],
        "latency_p95_ms": ordered[round(0.95 * last)],
    }

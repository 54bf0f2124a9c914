"""The wiring: frontier -> robots -> fetch -> store -> parse -> discovery -> frontier.

A single dispatcher leases from the store whenever a fetch slot is free, runs each lease as a task
(``crawl/visit.py``), and commits each outcome in one store transaction after its WARC record is
flushed. State lives in the store, so a killed crawl resumes from ``crawl.db`` alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import signal
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawlspace import __version__
from crawlspace.archive.warc import (
    RecoveredFile,
    WarcWriter,
    recover_open_files,
    response_offsets,
)
from crawlspace.clock import Clock, SystemClock
from crawlspace.config import CrawlConfig
from crawlspace.crawl.budget import CrawlBudget
from crawlspace.crawl.commit import GroupCommitter
from crawlspace.crawl.settings import given_by_default, settle, stored_form
from crawlspace.crawl.stages import StagePools
from crawlspace.crawl.visit import LeaseTooShortError, Visitor, robots_retrying
from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.dedup.seen import dedup_seen_filter
from crawlspace.discovery.links import Discovery, EntryRules, UrlFilter
from crawlspace.discovery.policy_normalize import UrlPolicy
from crawlspace.discovery.scope import Scope
from crawlspace.discovery.sitemaps import admit_declared_sitemaps
from crawlspace.errors import ConfigError, OutputDirError
from crawlspace.faults import crash_point, drop_ack
from crawlspace.fetch.transport import Transport
from crawlspace.frontier.budgets import TrapRules, compile_excludes, keyed_budgets
from crawlspace.frontier.revisit import plan_revisit
from crawlspace.parse.processors import ContentProcessor, ProcessorRegistry
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord
from crawlspace.robots import RobotsTxt
from crawlspace.robots.policy import RULES, rules_for
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.readonly import read_meta
from crawlspace.store.sqlite.store import SqliteStore
from crawlspace.telemetry import Telemetry

log = logging.getLogger("crawlspace.crawl.crawler")
# crawl.db meta: the settings the crawl started with (crawl/settings.py).
SETTINGS_KEY = "crawl_settings"

# How long the dispatcher sleeps at most when nothing is ready: bounds the reaction time to
# expiring leases and stop requests without busy-waiting.
MAX_IDLE_WAIT = 0.5
ROBOTS_CACHE_HOSTS = 10_000  # parsed robots.txt kept in memory (LRU); the store has them all
EXPIRE_EVERY = 5.0
# How often --continuous moves due revisits into the queues (one indexed query when none is due).
PROMOTE_EVERY = 0.2


@dataclass
class CrawlSummary:
    stop_reason: str
    pages: int = 0
    robots_fetches: int = 0
    errors: int = 0
    elapsed: float = 0.0
    out_dir: str = ""
    error: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


def frontier_limits(config: CrawlConfig) -> FrontierLimits:
    """What every frontier enforces with its atomic operations, the same on every engine."""
    return FrontierLimits(
        config.max_in_flight_per_host,
        config.max_pages_per_host,
        # An expired lease may hide a request that just ended: its host keeps the minimum gap.
        lost_lease_gap=config.min_delay,
        budgets=keyed_budgets(config.max_urls_per_template),
        max_pages_per_host_per_day=config.max_pages_per_host_per_day,
        revisit_share=config.revisit_share,
        inlink_weight=config.inlink_weight if config.priority_policy == "score" else 0,
        inlink_cap=config.inlink_cap,
        discovery_window=config.discovery_window,
        discovery_trap_ratio=config.discovery_trap_ratio,
        trap_priority_penalty=config.trap_priority_penalty,
        front=config.front_queues(),
        aopic_tax=config.aopic_tax if config.priority_policy == "aopic" else None,
    )


class Crawler:
    """Run a crawl from Python::

    crawler = Crawler(CrawlConfig(max_pages=100), "out")
    crawler.add_seeds(["https://example.com/"])
    summary = crawler.run()
    """

    def __init__(
        self,
        config: CrawlConfig,
        out_dir: str | Path,
        *,
        clock: Clock | None = None,
        transport: Transport | None = None,
        filters: Sequence[UrlFilter] = (),
        store_factory: Callable[[Path], SqliteStore] | None = None,
        given: frozenset[str] | None = None,
        reconfigure: bool = False,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.clock = clock or SystemClock()
        self._transport = transport
        self.processors = ProcessorRegistry()
        self._lock_fd = self._lock_out_dir()
        settings: str | None = None  # to store: new, or changed with reconfigure
        if store_factory is None:
            # A resume runs with the settings the crawl started with (crawl/settings.py).
            config, settings = self._settle_settings(config, given, reconfigure)
        self.config = config
        if store_factory is not None:  # a worker of a shared frontier (store/shared.py)
            self.store = store_factory(self.out_dir / "crawl.db")
        else:
            self.store = SqliteStore(
                self.out_dir / "crawl.db",
                frontier_limits(config),
                seen_filter=dedup_seen_filter(config.bloom_expected_urls, config.bloom_fp_rate),
                near_index=NearDuplicateIndex(
                    config.near_duplicate_bits, config.near_duplicate_max_pages
                ),
                background_checkpoints=True,
            )
        if settings is not None:
            self.store.set_meta(SETTINGS_KEY, settings)
        self._committer = GroupCommitter(self.store, self.clock.now)
        self.scope = Scope(config.scope, self.store.seed_urls(), config.allow_hosts)
        self.discovery = Discovery(
            EntryRules(
                config.max_depth,
                config.max_url_length,
                config.follow_nofollow,
                UrlPolicy(
                    config.strip_params,
                    config.sort_query_hosts,
                    config.fold_index_html,
                    config.fold_trailing_slash,
                ),
                TrapRules(
                    config.max_path_repeats,
                    config.max_query_params,
                    compile_excludes(config.exclude),
                ),
                config.priority_rules(),
            ),
            self.scope,
            filters,
        )
        # Parsed robots.txt of the hosts leased lately. Bounded: a record may hold 512 KiB, and
        # memory must not grow with the number of hosts (the store keeps every record).
        self._robots_cache: OrderedDict[str, tuple[RobotsRecord, RobotsTxt]] = OrderedDict()
        self._stop_reason: str | None = None
        self._wake = asyncio.Event()
        self.pages_done = 0
        self.errors = 0
        self.leases_too_late = 0  # visits whose lease would have expired mid-fetch (not sent)
        self.fatal_error: str | None = None
        self.telemetry = Telemetry(config, self.store)
        self._revisit = config.revisit_policy()
        self.bytes_done = 0
        self._budget = CrawlBudget(self.store, config.max_pages, config.max_bytes)

    # -- setup ---------------------------------------------------------------------------------

    def _settle_settings(
        self, config: CrawlConfig, given: frozenset[str] | None, reconfigure: bool
    ) -> tuple[CrawlConfig, str | None]:
        """The stored settings of a resumed crawl, changed only with ``reconfigure`` (each
        change logged); a new crawl's settings are stored once its crawl.db exists."""
        path = self.out_dir / "crawl.db"
        stored = read_meta(path, SETTINGS_KEY) if path.exists() else None
        try:
            settled, changes = settle(
                config,
                stored,
                given_by_default(config) if given is None else given,
                reconfigure=reconfigure,
            )
        except ConfigError:
            self._unlock()
            raise
        for change in changes:
            log.warning("--reconfigure: %s", change.describe())
        return settled, stored_form(settled) if changes or stored is None else None

    def _lock_out_dir(self) -> int:
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.out_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputDirError(f"cannot use output directory {self.out_dir}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputDirError(
                f"{self.out_dir} is in use by another crawl (lock file {self.out_dir / '.lock'})"
            ) from None
        return fd

    def add_seeds(self, urls: Iterable[str]) -> int:
        """Normalize and enqueue seeds; each seed's host (or domain) joins the scope."""
        candidates = []
        for raw in urls:
            candidate, reason = self.discovery.admit_one(raw.strip(), depth=0, source="seed")
            if candidate is None:
                raise ConfigError(f"seed {raw!r} is not a usable http(s) URL ({reason})")
            self.scope.add_seed(candidate.url)
            candidate, _ = self.discovery.admit_one(candidate.url, depth=0, source="seed")
            assert candidate is not None
            candidates.append(candidate)
        return self.store.add(candidates, self.clock.now()).added

    def add_sitemaps(self, urls: Iterable[str], *, widen_scope: bool = True) -> int:
        """Enqueue sitemap URLs (discovery/sitemaps.py); like seeds, ``--sitemap`` hosts join
        the scope. robots.txt Sitemap lines pass ``widen_scope=False``: they must be in scope."""
        urls = [url.strip() for url in urls]
        if widen_scope:
            for url in urls:
                candidate, _ = self.discovery.admit_one(url, depth=0, source="sitemap")
                if candidate is None:
                    raise ConfigError(f"sitemap {url!r} is not a usable http(s) URL")
                self.scope.add_seed(candidate.url)
        admission = admit_declared_sitemaps(self.discovery, urls)
        if admission.rejections:
            self.store.count_rejections(dict(admission.rejections))
        return self.store.add(admission.candidates, self.clock.now()).added

    def register_processor(self, mime_type: str, processor: ContentProcessor) -> None:
        self.processors.register(mime_type, processor)

    # -- running -------------------------------------------------------------------------------

    def run(self) -> CrawlSummary:
        return self._run_loop(self.run_async())

    def run_with_progress(self, progress: object) -> CrawlSummary:
        return self._run_loop(self.run_async(progress))

    def _run_loop(self, crawl: Coroutine[Any, Any, CrawlSummary]) -> CrawlSummary:
        loop_factory = None
        if self.config.event_loop == "uvloop":
            try:
                import uvloop  # optional: imported only when chosen
            except ImportError:
                crawl.close()
                raise ConfigError(
                    "event_loop = uvloop needs the uvloop package: pip install 'crawlspace[uvloop]'"
                ) from None
            loop_factory = uvloop.new_event_loop
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(crawl)

    def request_stop(self, reason: str = "signal") -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
        self._wake.set()

    async def run_async(self, progress: object | None = None) -> CrawlSummary:
        self._wake = asyncio.Event()
        started = time.monotonic()
        recovered = self.store.recover(self.clock.now())
        self.add_sitemaps(self.config.sitemaps)
        if recovered:
            log.info("returned %d leases of an earlier run to their queues", recovered)
        warc_dir = self.out_dir / "warc"
        for fixed in recover_open_files(warc_dir):
            log.info("recovered WARC file %s", fixed)
            self._count_unreferenced(fixed)
        warc = WarcWriter(
            warc_dir,
            max_bytes=self.config.warc_max_bytes,
            software=f"crawlspace/{__version__}",
            compress_level=self.config.warc_gzip_level,
        )
        transport = self._transport or self._default_transport()
        pools = StagePools(self.config.parse_workers, discovery=self.discovery)
        visitor = Visitor(
            self.config,
            transport,
            warc,
            self.discovery,
            processors=self.processors,
            pools=pools,
            now=self.clock.now,
        )
        loop = asyncio.get_running_loop()
        installed = self._install_signal_handlers(loop)
        try:
            await self._dispatch(visitor, started, progress)
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            if self._transport is None:
                await transport.close()
            pools.close()
            warc.close()
            self.telemetry.close(self.clock.now())
            self.store.set_meta("last_run_ended_at", str(self.clock.now()))
        return CrawlSummary(
            stop_reason=self._stop_reason or "done",
            error=self.fatal_error,
            pages=self.pages_done,
            errors=self.errors,
            elapsed=time.monotonic() - started,
            out_dir=str(self.out_dir),
        )

    def _count_unreferenced(self, fixed: RecoveredFile) -> None:
        """Responses archived by a run that died before committing them stay in the WARC (they
        are complete records, harmless to readers); count them so an operator can see them.
        Retried attempts and robots.txt fetches are also archived without a fetch row."""
        if fixed.deleted or fixed.error is not None:
            return
        referenced = self.store.warc_offsets(fixed.path.name)
        unreferenced = sum(1 for o in response_offsets(fixed.path) if o not in referenced)
        self.store.bump_counters(
            {"warc.recovered_files": 1, "warc.unreferenced_records": unreferenced}
        )
        if unreferenced:
            log.info("%s: %d response records without a fetch row", fixed.path.name, unreferenced)

    def _default_transport(self) -> Transport:
        from crawlspace.fetch.aiohttp_transport import AiohttpTransport

        return AiohttpTransport(self.config)

    def _install_signal_handlers(self, loop: asyncio.AbstractEventLoop) -> list[int]:
        installed: list[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._on_signal, sig)
                installed.append(sig)
        return installed

    def _on_signal(self, sig: int) -> None:
        if self._stop_reason is not None:
            log.warning("second signal: abandoning in-flight fetches (their leases are released)")
            self._abandon = True
        self.request_stop(signal.Signals(sig).name.lower())

    async def _dispatch(self, visitor: Visitor, started: float, progress: object | None) -> None:
        config = self.config
        tasks: dict[asyncio.Task[None], Lease] = {}
        self._abandon = False
        last_expire = last_promote = 0.0
        while True:
            now = self.clock.now()
            if config.duration is not None and time.monotonic() - started >= config.duration:
                self.request_stop("duration")
            if self._budget.reached is not None:
                self.request_stop(self._budget.reached)
            if self._stop_reason is not None:
                break
            if now - last_expire >= min(EXPIRE_EVERY, config.lease_seconds / 4):
                self.telemetry.on_expired(self.store.expire_leases(now))
                last_expire = now
            if config.continuous and now - last_promote >= PROMOTE_EVERY:
                self.store.promote_due(now)  # due revisits join their host queues
                last_promote = now
            free = self._budget.reserve(config.concurrency - len(tasks))
            leases = self.store.lease(now, free, config.lease_seconds) if free > 0 else []
            self._budget.granted(leases, free)
            for lease in leases:
                task = asyncio.create_task(self._run_lease(visitor, lease))
                tasks[task] = lease
                task.add_done_callback(functools.partial(self._on_task_done, tasks))
            if progress is not None:
                progress.update(self, len(tasks))  # type: ignore[attr-defined]
            self.telemetry.tick(now, len(tasks))
            if leases:
                await asyncio.sleep(0)
                continue
            next_ready = self.store.next_ready_at()
            # Leases we hold no task for (an ack lost, another worker's) still own URLs: wait
            # for them to complete or expire before calling the crawl done.
            idle = next_ready is None and not tasks and self.store.in_flight() == 0
            if idle and not config.continuous:  # --continuous waits for the next due revisit
                self.request_stop("done")
                break
            if next_ready is None or free <= 0:
                # Every fetch slot taken: a ready host cannot be served before a task ends, and
                # a task's end sets _wake (waiting for next_ready would poll every millisecond).
                wait = MAX_IDLE_WAIT
            else:
                wait = min(MAX_IDLE_WAIT, next_ready - now)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(wait, 0.001))
        await self._drain(tasks)

    def _on_task_done(
        self, tasks: dict[asyncio.Task[None], Lease], task: asyncio.Task[None]
    ) -> None:
        lease = tasks.pop(task, None)
        if lease is not None:
            self._budget.ended(lease)
        self._wake.set()

    async def _drain(self, tasks: dict[asyncio.Task[None], Lease]) -> None:
        """Let in-flight fetches finish (bounded by the total timeout), then release the rest."""
        deadline = time.monotonic() + self.config.total_timeout + 5.0
        # A second SIGINT/SIGTERM (self._abandon) cuts the wait short.
        while tasks and not self._abandon and time.monotonic() < deadline:
            await asyncio.wait(set(tasks), timeout=0.2)
        pending = [task for task in tasks if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        now = self.clock.now()
        for lease in list(tasks.values()):
            self.store.release(lease, now)

    async def _run_lease(self, visitor: Visitor, lease: Lease) -> None:
        try:
            if lease.kind is LeaseKind.ROBOTS:
                previous = self.store.robots(lease.host_key)
                visit = await visitor.visit_robots(lease, previous)
                rules = rules_for(visit.record)
                if visit.record.outcome == RULES and visit.record.attempts == 0 and rules.sitemaps:
                    # A fresh robots.txt: its sitemaps are seeds. Added before the robots commit,
                    # so a crash in between refetches robots.txt and adds them again (deduped).
                    self.add_sitemaps(rules.sitemaps, widen_scope=False)
                if self.store.complete_robots(lease, visit.record, visit.next_allowed_at):
                    self._cache_robots(lease.host_key, (visit.record, rules))
                return
            record, rules = self._robots_for(lease.host_key)
            if robots_retrying(record):
                # robots.txt is only temporarily unreachable: wait for its retry, exclude nothing.
                self.store.release(lease, self.clock.now())
                return
            completion = await visitor.visit_page(lease, record, rules)
            await self._commit(lease, completion)
        except LeaseTooShortError:
            # Nothing was sent. If the lease has expired and the host is another's now, the
            # store refuses this release as stale; otherwise the URL goes back to its queue.
            self.leases_too_late += 1
            log.warning("lease of %s too close to its expiry to fetch; given back", lease.url)
            self.store.release(lease, self.clock.now())
            self.store.bump_counters({"lease.too_late": 1})  # `crawlspace stats`: recovery
        except asyncio.CancelledError:
            # Given back so a resume need not wait for it to expire. On an unwritable disk the
            # lease stays in the file instead, and recover() returns it on the next start.
            with contextlib.suppress(OSError, sqlite3.DatabaseError):
                self.store.release(lease, self.clock.now())
            raise
        except (OSError, sqlite3.DatabaseError) as exc:
            # The output is unwritable (disk full, quota, read-only): every further visit would
            # fail the same way, so stop cleanly; committed state is intact and resumes later.
            self.fatal_error = f"cannot write the crawl output in {self.out_dir}: {exc}"
            log.error("%s; stopping", self.fatal_error)
            self.request_stop("storage_error")
            with contextlib.suppress(OSError, sqlite3.DatabaseError):
                self.store.release(lease, self.clock.now())
        except Exception:
            self.errors += 1
            if lease.kind is LeaseKind.ROBOTS:
                log.exception("robots.txt visit of %s failed; counted as unreachable", lease.url)
                self._fail_robots(visitor, lease)
                return
            log.exception("visit of %s failed; counted as a failed attempt", lease.url)
            await self._fail_attempt(lease)

    def _fail_robots(self, visitor: Visitor, lease: Lease) -> None:
        """A robots.txt visit raised. Released, its host would be ready at once and the same
        fault would refetch robots.txt back to back; recorded as unreachable instead, it is
        retried after robots_retry_delay and, after robots_max_attempts, disallows the host
        until the record expires (RFC 9309 §2.3.1.4), the same as a server that never answers."""
        now = self.clock.now()
        try:
            visit = visitor.robots_outcome(
                lease,
                None,
                b"",
                previous=self.store.robots(lease.host_key),
                error="internal_error",
                started=now,
                ended=now,
            )
            if self.store.complete_robots(lease, visit.record, visit.next_allowed_at):
                self._cache_robots(lease.host_key, (visit.record, rules_for(visit.record)))
        except Exception:  # the store itself failed: the lease expires and is returned
            log.exception("could not record the failed robots.txt visit of %s", lease.url)

    async def _fail_attempt(self, lease: Lease) -> None:
        """A page visit raised (a processor's bug, a broken worker pool) after its request may
        have gone out. A plain release would give the attempt back and leave the host ready at
        once, so a fault that repeats would refetch the page back to back, forever. Instead the
        attempt counts (``max_attempts`` ends it as failed) and the host waits as after a lost
        lease."""
        now = self.clock.now()
        state = "queued" if lease.attempt < self.config.max_attempts else "failed"
        completion = Completion(
            state=state, reason="internal_error", next_allowed_at=now + self.config.min_delay
        )
        try:
            await self._commit(lease, completion)
        except Exception:  # the store itself failed: the lease expires and is returned
            log.exception("could not record the failed visit of %s", lease.url)

    async def _commit(self, lease: Lease, completion: Completion) -> None:
        crash_point("before_commit")
        if drop_ack():
            return
        if completion.state != "queued":  # a visit's end: when is the URL visited next
            completion.revisit = plan_revisit(lease, completion, self.clock.now(), self._revisit)
        committed = await self._committer.submit(lease, completion)
        crash_point("after_commit")
        self.telemetry.on_commit(lease.host_key, completion, committed)
        if committed and completion.fetch:
            # A retried attempt used bandwidth, but the store keeps no fetch row for it (its
            # response is in the WARC only): not a page done, as max_pages counts fetch rows.
            self.bytes_done += completion.fetch.bytes
            self.pages_done += completion.state != "queued"
            self._budget.spent(lease, completion.state != "queued", completion.fetch.bytes)
            if completion.fetch.status >= 400:
                self.errors += 1
        elif completion.state == "failed":
            self.errors += 1

    def _robots_for(self, host_key: str) -> tuple[RobotsRecord, RobotsTxt]:
        cached = self._robots_cache.get(host_key)
        if cached is not None:
            self._robots_cache.move_to_end(host_key)
            return cached
        record = self.store.robots(host_key)
        if record is None:
            # The frontier grants page leases only after robots.txt completed for the host.
            raise RuntimeError(f"page lease for {host_key} before its robots.txt was fetched")
        cached = (record, rules_for(record))
        self._cache_robots(host_key, cached)
        return cached

    def _cache_robots(self, host_key: str, entry: tuple[RobotsRecord, RobotsTxt]) -> None:
        self._robots_cache[host_key] = entry
        self._robots_cache.move_to_end(host_key)
        while len(self._robots_cache) > ROBOTS_CACHE_HOSTS:
            self._robots_cache.popitem(last=False)

    def close(self) -> None:
        self.store.close()
        self._unlock()

    def _unlock(self) -> None:
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)

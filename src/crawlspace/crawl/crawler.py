"""The wiring: frontier -> robots -> fetch -> store -> parse -> discovery -> frontier.

A single dispatcher leases from the store whenever a fetch slot is free, runs each lease as a task
(``crawl/visit.py``), and commits each outcome in one store transaction after its WARC record is
flushed. State lives in the store, so a killed crawl resumes from ``crawl.db`` alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from pathlib import Path
from typing import Any

from crawlspace.clock import Clock, SystemClock
from crawlspace.config import CrawlConfig
from crawlspace.crawl.budget import CrawlBudget
from crawlspace.crawl.capture_sharing import share_captures
from crawlspace.crawl.idle import IdleCheck
from crawlspace.crawl.leases import CrawlParts, LeaseRunner
from crawlspace.crawl.parse_jobs import ParseLimits
from crawlspace.crawl.scope_sharing import SharedScope
from crawlspace.crawl.settings import SettingChange
from crawlspace.crawl.setup import (
    SETTINGS_KEY,
    OutDirLock,
    check_render,
    crawl_scope,
    fetch_settings,
    frontier_limits,
    lift_exclusions,
    link_discovery,
    open_sqlite_store,
    open_warc,
    run_on_loop,
    settle_settings,
)
from crawlspace.crawl.stages import StagePools
from crawlspace.crawl.steering import Steering
from crawlspace.crawl.summary import CrawlSummary
from crawlspace.crawl.visit import Visitor
from crawlspace.crawl.visit_parts import VisitParts
from crawlspace.discovery.links import UrlFilter
from crawlspace.discovery.sitemaps import admit_declared_sitemaps
from crawlspace.errors import ConfigError
from crawlspace.fetch.transport import Transport
from crawlspace.parse.extract import Extractor, load_extractor
from crawlspace.parse.processors import ContentProcessor, ProcessorRegistry
from crawlspace.records import Lease
from crawlspace.store.base import Store
from crawlspace.telemetry import Telemetry
from crawlspace.telemetry.crawl_log import CrawlLog, echoes

__all__ = ["CrawlSummary", "Crawler", "frontier_limits"]

log = logging.getLogger("crawlspace.crawl.crawler")

# How long the dispatcher sleeps at most when nothing is ready: bounds the reaction time to
# expiring leases and stop requests without busy-waiting.
MAX_IDLE_WAIT = 0.5
EXPIRE_EVERY = 5.0
# How often --continuous moves due revisits into the queues (one indexed query when none is due).
PROMOTE_EVERY = 0.2


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
        store_factory: Callable[[Path], Store] | None = None,
        given: frozenset[str] | None = None,
        reconfigure: bool = False,
        extractor: Extractor | None = None,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.clock = clock or SystemClock()
        self._transport = transport
        self.processors = ProcessorRegistry()
        hooked = extractor is not None  # passed in: it stands, whatever the settings say
        loaded = None if hooked else config.extract
        if loaded is not None:  # a hook that cannot be found is refused before any write
            extractor = load_extractor(loaded)
        self._lock = OutDirLock(self.out_dir)
        settings: str | None = None  # to store: new, or changed with reconfigure
        changes: list[SettingChange] = []
        if store_factory is None:
            # A resume runs with the settings the crawl started with (crawl/settings.py).
            try:
                config, settings, changes = settle_settings(
                    config, self.out_dir / "crawl.db", given, reconfigure
                )
            except ConfigError:
                self._lock.release()
                raise
        self.config = config
        try:
            self.extractor = self._settled_parts(extractor, loaded)
        except ConfigError:
            self._lock.release()
            raise
        self._store_factory = store_factory
        if store_factory is not None:  # a worker of a shared frontier (store/shared.py)
            self.store = store_factory(self.out_dir / "crawl.db")
        else:
            self.store = open_sqlite_store(config, self.out_dir / "crawl.db")
        if settings is not None:
            self.store.set_meta(SETTINGS_KEY, settings)
        lift_exclusions(self.store, changes, self.clock.now())
        revision, seeds = self.store.scope_revision(), self.store.scope_seeds()
        self.scope = crawl_scope(config, seeds)
        shared = store_factory is not None  # other workers may add seeds
        self._shared_scope = SharedScope(self.scope, self.store, seeds, revision, shared=shared)
        self.discovery = link_discovery(config, self.scope, filters)
        self._stop_reason: str | None = None
        self._wake = asyncio.Event()
        self.telemetry = Telemetry(config, self.store)
        self._budget = CrawlBudget(self.store, config.max_pages, config.max_bytes)
        self.leases = LeaseRunner(
            CrawlParts(config, self.clock, self.store, self.telemetry, self._budget, self.out_dir),
            add_sitemaps=lambda urls: self.add_sitemaps(urls, widen_scope=False),
            request_stop=self.request_stop,
        )

    # What this run's leases came to (the progress line reads them).
    def _settled_parts(self, extractor: Extractor | None, loaded: str | None) -> Extractor | None:
        """What the settled settings add (a resumed crawl keeps what it started with): page
        requisites, the rendering tier (Playwright and Chromium, or one line before any
        write), and the crawl's own extraction hook unless one was passed in (``loaded``: the
        one loaded for the given settings)."""
        config = self.config
        if config.render != "never":
            check_render(config)
            self.processors.render_signals()
        if config.page_requisites:
            self.processors.fetch_requisites()
        passed_in = extractor is not None and loaded is None
        if not passed_in and config.extract != loaded:
            return load_extractor(config.extract) if config.extract else None
        return extractor

    @property
    def pages_done(self) -> int:
        return self.leases.tally.pages_done

    @property
    def bytes_done(self) -> int:
        return self.leases.tally.bytes_done

    @property
    def errors(self) -> int:
        return self.leases.tally.errors

    @property
    def leases_too_late(self) -> int:
        return self.leases.tally.leases_too_late

    @property
    def fatal_error(self) -> str | None:
        return self.leases.tally.fatal_error

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
        return run_on_loop(crawl, self.config.event_loop)

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
        warc = open_warc(self.config, self.out_dir, self.store)  # an earlier run's repaired
        transport = self._transport or self._default_transport()
        pools = StagePools(
            self.config.parse_workers,
            discovery=self.discovery,
            limits=ParseLimits(self.config.parse_cpu_seconds, self.config.parse_memory_mb),
        )
        parts = VisitParts.for_crawl(
            self.config,
            transport,
            warc,
            self.discovery,
            processors=self.processors,
            pools=pools,
            extractor=self.extractor,
            tokens=self.store,
            render_counts=self.store,
            now=self.clock.now,
        )
        parts.captures.reload(self.store.recent_captures(parts.captures.size))
        capture_log = self.store.capture_log()  # workers: the others' captures too
        sharing = None
        if capture_log is not None and parts.captures.size:
            sharing = asyncio.create_task(share_captures(parts.captures, capture_log))
            await asyncio.sleep(0)  # its first reading (the others' captures) before any fetch
        visitor = Visitor(parts)
        self.leases.crawl_log = CrawlLog(self.out_dir / "crawl.log", echo=echoes(progress))
        loop = asyncio.get_running_loop()
        installed = self._install_signal_handlers(loop)
        # The dashboard's commands (crawl/steering.py); a worker joining stays paused.
        steering = Steering(self.store.control(), clear_pause=self._store_factory is None)
        try:
            await self._dispatch(visitor, started, progress, steering)
            if progress is not None:
                progress.update(self, 0, final=True)  # type: ignore[attr-defined]
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)
            if sharing is not None:
                sharing.cancel()
                await asyncio.gather(sharing, return_exceptions=True)
            if self._transport is None:
                await transport.close()
            if parts.renderer is not None:
                await parts.renderer.close()
            pools.close()
            steering.close()
            warc.close()
            self.leases.crawl_log.close()
            self.leases.crawl_log = None
            self.leases.flush_counts()
            self.telemetry.close(self.clock.now())
            self.store.set_meta("last_run_ended_at", str(self.clock.now()))
        stop = self._stop_reason or "done"
        elapsed = time.monotonic() - started
        return CrawlSummary.of_run(stop, self.leases.tally, elapsed, str(self.out_dir))

    def _default_transport(self) -> Transport:
        from crawlspace.fetch.aiohttp_transport import AiohttpTransport

        return AiohttpTransport(fetch_settings(self.config))

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

    def _look_around(self, started: float, steering: Steering) -> None:
        """Between two rounds of leases: the run's limits, the operator's commands and the
        seeds other workers added."""
        if self.config.duration is not None and time.monotonic() - started >= self.config.duration:
            self.request_stop("duration")
        if self._budget.reached is not None:
            self.request_stop(self._budget.reached)
        steering.poll(time.monotonic(), add_seeds=self.add_seeds, request_stop=self.request_stop)
        self._shared_scope.refresh(time.monotonic())

    async def _dispatch(
        self, visitor: Visitor, started: float, progress: object | None, steering: Steering
    ) -> None:
        config = self.config
        tasks: dict[asyncio.Task[None], Lease] = {}
        self._abandon = False
        idle_check = IdleCheck(self.store.crawl_progress)
        last_expire = last_promote = 0.0
        while True:
            now = self.clock.now()
            self._look_around(started, steering)
            if self._stop_reason is not None:
                break
            if now - last_expire >= min(EXPIRE_EVERY, config.lease_seconds / 4):
                self.telemetry.on_expired(self.store.expire_leases(now))
                self.leases.flush_counts()
                last_expire = now
            if config.continuous and now - last_promote >= PROMOTE_EVERY:
                self.store.promote_due(now)  # due revisits join their host queues
                last_promote = now
            free = 0 if steering.paused else self._budget.reserve(config.concurrency - len(tasks))
            leases = self.store.lease(now, free, config.lease_seconds) if free > 0 else []
            self._budget.granted(leases, free)
            for lease in leases:
                self._shared_scope.leased(lease.url, time.monotonic())
                task = asyncio.create_task(self.leases.run(visitor, lease))
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
                if idle_check.confirmed():
                    self.request_stop("done")
                    break
            else:
                idle_check.busy()
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

    def close(self) -> None:
        self.store.close()
        self._lock.release()

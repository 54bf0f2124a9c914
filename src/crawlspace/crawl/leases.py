"""One lease run to its end: visit (robots.txt or page), plan the revisit, commit, count.

The dispatcher (``crawl/crawler.py``) starts one task per lease; each runs ``LeaseRunner.run``.
Whatever happens, the lease ends in exactly one of: a committed completion, a release (given
back unfetched), or, when the store itself fails, an expiry the next start recovers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from crawlspace.clock import Clock
from crawlspace.config import CrawlConfig
from crawlspace.crawl.addresses import AddressBusyError
from crawlspace.crawl.budget import CrawlBudget
from crawlspace.crawl.commit import GroupCommitter
from crawlspace.crawl.host_rules import HostRules
from crawlspace.crawl.robots_visit import robots_retrying, robots_waits
from crawlspace.crawl.setup import (
    allowance_policy,
    completion_policy,
    outage_policy,
    retirement_policy,
    revisit_policy,
    yield_rules,
)
from crawlspace.crawl.visit import Visitor
from crawlspace.crawl.visit_parts import LeaseTooShortError
from crawlspace.errors import StoreIOError
from crawlspace.faults import crash_point, drop_ack
from crawlspace.frontier.plans import plan_completion
from crawlspace.frontier.revisit import plan_revisit
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord
from crawlspace.robots import RobotsTxt
from crawlspace.robots.policy import RULES, rules_for
from crawlspace.store.base import Store
from crawlspace.telemetry import Telemetry
from crawlspace.telemetry.crawl_log import CrawlLog

log = logging.getLogger("crawlspace.crawl")

# Excluded URLs a refetched robots.txt re-evaluates per host (the rest wait for the next one).
REEVALUATE_LIMIT = 10_000
ROBOTS_CACHE_HOSTS = 10_000  # parsed robots.txt kept in memory (LRU); the store has them all


class StoredRobots(Protocol):
    """The stored robots.txt of a host (what the robots cache reads)."""

    def robots(self, host_key: str) -> RobotsRecord | None: ...


class LeaseEnds(StoredRobots, Protocol):
    """What a lease's run uses of the store besides its commit (crawl/commit.py) and the
    crawl's budget (crawl/budget.py): giving a lease back, a robots.txt's end and its
    re-evaluation, and counters."""

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool: ...

    def complete_robots(
        self, lease: Lease, record: RobotsRecord, next_allowed_at: float
    ) -> bool: ...

    def robots_excluded(self, host_key: str, limit: int) -> list[tuple[int, str]]: ...

    def requeue_excluded(self, host_key: str, url_ids: Sequence[int], now: float) -> int: ...

    def bump_counters(self, counts: dict[str, int]) -> None: ...

    def url_of(self, url_id: int) -> str | None: ...


class RobotsCache:
    """Parsed robots.txt of the hosts leased lately. Bounded: a record may hold 512 KiB, and
    memory must not grow with the number of hosts (the store keeps every record). A record past
    its expiry is read again: on a shared frontier another worker may have fetched a newer one
    (a page lease after expiry means it has), and rules read from the old one would exclude
    URLs the new one allows, after its re-evaluation ran."""

    def __init__(self, store: StoredRobots, now: Callable[[], float]) -> None:
        self._store = store
        self._now = now
        self._entries: OrderedDict[str, tuple[RobotsRecord, RobotsTxt]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, host_key: str) -> tuple[RobotsRecord, RobotsTxt]:
        cached = self._entries.get(host_key)
        if cached is not None and cached[0].expires_at <= self._now():
            stored = self._store.robots(host_key)
            if stored is not None and stored != cached[0]:
                cached = None
        if cached is not None:
            self._entries.move_to_end(host_key)
            return cached
        record = self._store.robots(host_key)
        if record is None:
            # The frontier grants page leases only after robots.txt completed for the host.
            raise RuntimeError(f"page lease for {host_key} before its robots.txt was fetched")
        cached = (record, rules_for(record))
        self.put(host_key, cached)
        return cached

    def put(self, host_key: str, entry: tuple[RobotsRecord, RobotsTxt]) -> None:
        self._entries[host_key] = entry
        self._entries.move_to_end(host_key)
        while len(self._entries) > ROBOTS_CACHE_HOSTS:
            self._entries.popitem(last=False)


@dataclass
class LeaseTally:
    """What the crawl's leases came to in this run (the progress line and the summary)."""

    pages_done: int = 0
    bytes_done: int = 0
    robots_done: int = 0  # robots.txt visits committed
    errors: int = 0
    leases_too_late: int = 0  # visits whose lease would have expired mid-fetch (not sent)
    address_waits: int = 0  # leases given back because their server's address was busy
    fatal_error: str | None = None


@dataclass
class CrawlParts:
    """The parts of a crawl a lease's run uses (built once by the Crawler)."""

    config: CrawlConfig
    clock: Clock
    store: Store
    telemetry: Telemetry
    budget: CrawlBudget
    out_dir: Path


class LeaseRunner:
    def __init__(
        self,
        parts: CrawlParts,
        *,
        add_sitemaps: Callable[[Sequence[str]], object],
        request_stop: Callable[[str], None],
    ) -> None:
        self._parts = parts
        self._store: LeaseEnds = parts.store
        self._committer = GroupCommitter(parts.store, parts.clock.now)
        self._revisit = revisit_policy(parts.config)
        self._policy = completion_policy(parts.config)
        self._add_sitemaps = add_sitemaps
        self._request_stop = request_stop
        self.robots = RobotsCache(parts.store, parts.clock.now)
        self.host_rules = HostRules(
            parts.store,
            yield_rules(parts.config),
            parts.clock.now,
            learn_equivalence=parts.config.learn_url_equivalence,
            learn_order=parts.config.query_order == "learned",
            outages=outage_policy(parts.config),
            retirement=retirement_policy(parts.config),
            allowance=allowance_policy(parts.config),
            max_sitemaps=parts.config.max_sitemaps_per_host,
            render=parts.config.render != "never",
        )
        self.tally = LeaseTally()
        self._flushed_waits = 0
        self.crawl_log: CrawlLog | None = None  # the run's DIR/crawl.log (Crawler.run_async)

    def _now(self) -> float:
        return self._parts.clock.now()

    def flush_counts(self) -> None:
        """Add what was counted in memory since the last flush to the store's counters (in
        batches: a deferral per lease would be a transaction per lease)."""
        deferred = self.tally.address_waits - self._flushed_waits
        if deferred:
            self._store.bump_counters({"address.deferred": deferred})
            self._flushed_waits = self.tally.address_waits

    async def run(self, visitor: Visitor, lease: Lease) -> None:
        try:
            await self._run(visitor, lease)
        finally:
            self.host_rules.forget(lease)

    async def _run(self, visitor: Visitor, lease: Lease) -> None:
        try:
            if lease.kind is LeaseKind.ROBOTS:
                await self._run_robots(visitor, lease)
                return
            record, rules = self.robots.get(lease.host_key)
            if robots_waits(record, self._parts.config.continuous):
                # robots.txt is unreachable and will be asked again: wait for it, exclude nothing.
                self._store.release(lease, self._now(), not_before=record.expires_at)
                return
            learned = self.host_rules.before_fetch(lease)
            if learned is not None:  # a trap's member or a canonical's variant: not fetched
                await self.commit(lease, learned)
                return
            host = self.host_rules
            completion = await visitor.visit_page(
                lease,
                record,
                rules,
                throttled_since=host.throttled_since(lease),
                outage=host.outage(lease),
                slowdown=host.slowdown(lease),
                renders=host.renders(lease),
            )
            await self.commit(lease, completion)
        except AddressBusyError as busy:
            # Nothing was sent: the lease goes back and its host waits for the address (another
            # host's token is only ever waited for after a first hop: crawl/robots_visit.py).
            self.tally.address_waits += 1
            self._store.release(lease, self._now(), not_before=busy.retry_at)
        except LeaseTooShortError:
            # Nothing was sent (a robots.txt chain that runs short after its first hop ends
            # as unreachable instead: crawl/robots_visit.py). If the lease has expired and the
            # host is another's now, the store refuses this release as stale; otherwise the
            # URL goes back to its queue.
            self.tally.leases_too_late += 1
            log.warning("lease of %s too close to its expiry to fetch; given back", lease.url)
            self._store.release(lease, self._now())
            self._store.bump_counters({"lease.too_late": 1})  # `crawlspace stats`: recovery
        except asyncio.CancelledError:
            # Given back so a resume need not wait for it to expire. On an unwritable disk the
            # lease stays in the file instead, and recover() returns it on the next start.
            with contextlib.suppress(OSError, StoreIOError):
                self._store.release(lease, self._now())
            raise
        except (OSError, StoreIOError) as exc:
            # The output is unwritable (disk full, quota, read-only): every further visit would
            # fail the same way, so stop cleanly; committed state is intact and resumes later.
            self.tally.fatal_error = (
                f"cannot write the crawl output in {self._parts.out_dir}: {exc}"
            )
            log.error("%s; stopping", self.tally.fatal_error)
            self._request_stop("storage_error")
            with contextlib.suppress(OSError, StoreIOError):
                self._store.release(lease, self._now())
        except Exception:
            self.tally.errors += 1
            if lease.kind is LeaseKind.ROBOTS:
                log.exception("robots.txt visit of %s failed; counted as unreachable", lease.url)
                self._fail_robots(visitor, lease)
                return
            log.exception("visit of %s failed; counted as a failed attempt", lease.url)
            await self._fail_attempt(lease)

    async def _run_robots(self, visitor: Visitor, lease: Lease) -> None:
        previous = self._store.robots(lease.host_key)
        visit = await visitor.robots.visit_robots(lease, previous)
        rules = rules_for(visit.record)
        if visit.record.outcome == RULES and visit.record.attempts == 0 and rules.sitemaps:
            # A fresh robots.txt: its sitemaps are seeds, as many as its host's sitemap budget
            # allows. Added before the robots commit, so a crash in between refetches
            # robots.txt and adds them again (deduped, and not counted twice).
            self._add_sitemaps(self.host_rules.declared_sitemaps(lease.host_key, rules.sitemaps))
        if self._store.complete_robots(lease, visit.record, visit.next_allowed_at):
            self.tally.robots_done += 1
            if self.crawl_log is not None:
                self.crawl_log.robots(lease, visit.record)
            self.robots.put(lease.host_key, (visit.record, rules))
            if previous is not None and not robots_retrying(visit.record):
                self._reevaluate(lease.host_key, rules)

    def _reevaluate(self, host_key: str, rules: RobotsTxt) -> None:
        """A refetched robots.txt may allow what the last one excluded (or an unreachable one
        recovered): those URLs are queued again as new visits. Queued URLs the new rules
        forbid need nothing here: each page lease checks the current rules before fetching."""
        agent = self._parts.config.user_agent
        excluded = self._store.robots_excluded(host_key, REEVALUATE_LIMIT)
        allowed = [url_id for url_id, url in excluded if rules.is_allowed(agent, url)]
        if allowed:
            requeued = self._store.requeue_excluded(host_key, allowed, self._now())
            log.info("%s: its new robots.txt allows %d excluded URLs again", host_key, requeued)

    def _fail_robots(self, visitor: Visitor, lease: Lease) -> None:
        """A robots.txt visit raised. Released, its host would be ready at once and the same
        fault would refetch robots.txt back to back; recorded as unreachable instead, it is
        retried after robots_retry_delay and, after robots_max_attempts, disallows the host
        until the record expires (RFC 9309 §2.3.1.4), the same as a server that never answers."""
        now = self._now()
        try:
            visit = visitor.robots.robots_outcome(
                lease,
                None,
                b"",
                previous=self._store.robots(lease.host_key),
                error="internal_error",
                started=now,
                ended=now,
            )
            if self._store.complete_robots(lease, visit.record, visit.next_allowed_at):
                self.robots.put(lease.host_key, (visit.record, rules_for(visit.record)))
        except Exception:  # the store itself failed: the lease expires and is returned
            log.exception("could not record the failed robots.txt visit of %s", lease.url)

    async def _fail_attempt(self, lease: Lease) -> None:
        """A page visit raised (a processor's bug, a broken worker pool) after its request may
        have gone out. A plain release would give the attempt back and leave the host ready at
        once, so a fault that repeats would refetch the page back to back, forever. Instead the
        attempt counts (``max_attempts`` ends it as failed) and the host waits as after a lost
        lease."""
        now = self._now()
        config = self._parts.config
        state = "queued" if lease.attempt < config.max_attempts else "failed"
        completion = Completion(
            state=state, reason="internal_error", next_allowed_at=now + config.min_delay
        )
        try:
            await self.commit(lease, completion)
        except Exception:  # the store itself failed: the lease expires and is returned
            log.exception("could not record the failed visit of %s", lease.url)

    def _linking_page(self, lease: Lease, completion: Completion) -> str | None:
        """An error's linking page (status 400 or more, or no answer in the end): the URL of
        the page that led to it, read from the store only then (on a shared frontier a round
        trip, which an ordinary page never pays)."""
        if lease.via_id is None:
            return None
        fetch = completion.fetch
        if completion.state != "failed" and (fetch is None or fetch.status < 400):
            return None
        return self._store.url_of(lease.via_id)

    async def commit(self, lease: Lease, completion: Completion) -> None:
        crash_point("before_commit")
        if drop_ack():
            return
        now = self._now()
        if completion.state != "queued":  # a visit's end: when is the URL visited next
            revisit = plan_revisit(lease, completion, now, self._revisit)
            completion = dataclasses.replace(completion, revisit=revisit)
        completion = self.host_rules.before_commit(lease, completion)  # its links screened
        via = self._linking_page(lease, completion)
        if via is not None and completion.fetch is not None:  # kept with its fetch row
            completion = dataclasses.replace(
                completion, fetch=dataclasses.replace(completion.fetch, via=via)
            )
        # Every other decision the store applies with it (frontier/plans.py).
        notes = self.host_rules.read_for(lease)
        plan = plan_completion(lease, completion, notes, self._policy, now)
        completion = dataclasses.replace(completion, plan=plan)
        outcome = await self._committer.submit(lease, completion)
        crash_point("after_commit")
        self._parts.telemetry.on_commit(lease.host_key, completion, outcome)
        if self.crawl_log is not None:
            self.crawl_log.visit(lease, completion, outcome, now, via=via)
        tally = self.tally
        committed = outcome is not None
        if outcome is not None:  # its URL family's window
            self.host_rules.after_commit(lease, completion, outcome.admitted)
        if committed and completion.fetch:
            # A retried attempt used bandwidth, but the store keeps no fetch row for it (its
            # response is in the WARC only): not a page done, as max_pages counts fetch rows.
            tally.bytes_done += completion.fetch.bytes
            tally.pages_done += completion.state != "queued"
            self._parts.budget.spent(lease, completion.state != "queued", completion.fetch.bytes)
            if completion.fetch.status >= 400:
                tally.errors += 1
        elif completion.state == "failed":
            tally.errors += 1

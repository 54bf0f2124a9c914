"""A worker's store: the frontier is shared (Redis), the crawl's metadata stays local (SQLite).

``crawlspace worker`` runs the ordinary Crawler on this store. Every frontier operation (add,
lease, complete, release, expire, robots state) goes to the shared ``RedisFrontier``, so politeness
holds across all workers; what the worker fetched (fetch rows, links, events, telemetry samples,
robots bodies) goes to its own ``DIR/crawl.db`` next to its own WARC files, so workers never
contend on one SQLite file and each directory remains a readable crawl of its own.

A page completion is committed in both places in a fixed order: the local rows are written in
a SQLite transaction that stays open while the shared conditional write runs, then committed only
if that write succeeded. A stale lease (the frontier refuses it) therefore leaves no local rows;
a crash between the shared write and the local commit loses the local rows of that one page
(its WARC record is on disk), never a frontier state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from crawlspace.plans import NO_PLAN, ContentVerdict, Judgement, Outcome
from crawlspace.records import Completion, Lease, RobotsRecord, UrlCandidate
from crawlspace.store.base import AddResult
from crawlspace.store.control import RedisControl
from crawlspace.store.redis.captures import RedisCaptureLog
from crawlspace.store.redis.content import RedisContentIndex
from crawlspace.store.redis.frontier import RedisFrontier
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite.dedup import sink_links
from crawlspace.store.sqlite.records import CrawlRecords, RecordsDelegate

_NOT_JUDGED = ContentVerdict()

# How long an idle worker waits at least before polling again while other workers hold leases.
_POLL = 0.1


class _Stale(Exception):
    """The shared frontier refused the completion: roll the local rows back."""


def _merged(given: Mapping[str, int], more: Mapping[str, int]) -> dict[str, int]:
    """Refusal counts of the crawl (``given``) and of the engine (``more``) together."""
    out = dict(given)
    for name, n in more.items():
        out[name] = out.get(name, 0) + n
    return out


def _shared_counts(
    rejections: Mapping[str, int], verdict: ContentVerdict | None, counters: Mapping[str, int]
) -> dict[str, int]:
    """What a committed completion adds to the crawl-wide counters (``stats --frontier``)."""
    counts = {f"rejected.{name}": n for name, n in rejections.items()}
    counts.update(counters)
    if verdict is not None and verdict.exact_of is not None:
        counts["dedup.exact_duplicates"] = 1
    elif verdict is not None and verdict.near_of is not None:
        counts["dedup.near_duplicates"] = 1
    return counts


class SharedStore(RecordsDelegate):
    """Implements ``crawlspace.store.base.Store`` for one of many workers on a shared frontier.

    Composed, not inherited: every frontier method below goes to the shared ``RedisFrontier``,
    and the worker's own records (``CrawlRecords``: fetch rows, events, counters, a copy of
    each robots.txt) stay in its local crawl.db. A Store method neither part has is a type
    error (mypy checks this class against the protocol), never a silent local fallback."""

    def __init__(
        self,
        path: Path | str,
        frontier: RedisFrontier,
        content: RedisContentIndex | None = None,
        captures: RedisCaptureLog | None = None,
    ) -> None:
        self.records = CrawlRecords(path, background_checkpoints=True)
        self.limits = frontier.limits
        self.frontier = frontier
        self.content = content
        self.captures = captures
        self._last_now = 0.0

    # -- the shared frontier ------------------------------------------------------------------

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        return self.frontier.add(candidates, now)

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        self._last_now = now
        return self.frontier.lease(now, limit, lease_seconds)

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool:
        return self.frontier.release(lease, now, not_before)

    def url_of(self, url_id: int) -> str | None:
        return self.frontier.url_of(url_id)

    def robots_excluded(self, host_key: str, limit: int) -> list[tuple[int, str]]:
        return self.frontier.robots_excluded(host_key, limit)

    def requeue_excluded(self, host_key: str, url_ids: Sequence[int], now: float) -> int:
        return self.frontier.requeue_excluded(host_key, url_ids, now)

    def lift_exclusion(self, reason: str, now: float) -> int:
        return self.frontier.lift_exclusion(reason, now)

    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None:
        return self.frontier.take_address(address, holder, now, expires_at)

    def give_address(self, address: str, holder: str, ended: float) -> None:
        self.frontier.give_address(address, holder, ended)

    def take_start(self, now: float, latest_start: float) -> float:
        return self.frontier.take_start(now, latest_start)

    def reserve_render(self) -> tuple[str | None, int, float]:
        return self.frontier.reserve_render()

    def spend_render(self, seconds: float) -> None:
        self.frontier.spend_render(seconds)

    def take_host(self, host_key: str, holder: str, now: float, expires_at: float) -> float | None:
        return self.frontier.take_host(host_key, holder, now, expires_at)

    def give_host(self, host_key: str, holder: str, next_allowed_at: float) -> None:
        self.frontier.give_host(host_key, holder, next_allowed_at)

    def expire_leases(self, now: float) -> int:
        self._last_now = now
        return self.frontier.expire_leases(now)

    def recover(self, now: float) -> int:
        """Nothing to do: other workers may be alive, so a dead worker's leases simply expire."""
        return 0

    def next_ready_at(self) -> float | None:
        """As the frontier's, but while any worker holds a lease the crawl is not over: its
        completion may discover URLs, or its expiry may requeue one. Poll until then."""
        ready = self.frontier.next_ready_at()
        if ready is not None:
            return ready
        expiry = self.frontier.earliest_lease_expiry()
        if expiry is None:
            return None
        if expiry <= self._last_now:
            # A dead worker's lease, overdue: an idle worker takes it back at once rather than
            # at the crawl loop's next periodic expiry pass.
            self.frontier.expire_leases(self._last_now)
            return self._last_now
        return max(expiry, self._last_now + _POLL)

    def in_flight(self) -> int:
        return self.frontier.in_flight()

    def promote_due(self, now: float, limit: int = 1000) -> int:
        return self.frontier.promote_due(now, limit)

    def next_due_at(self) -> float | None:
        return self.frontier.next_due_at()

    def reserve_pages(self, n: int, cap: int) -> tuple[int, int]:
        return self.frontier.reserve_pages(n, cap)

    def settle_pages(self, released: int, done: int, nbytes: int) -> tuple[int, int]:
        return self.frontier.settle_pages(released, done, nbytes)

    def robots(self, host_key: str) -> RobotsRecord | None:
        return self.frontier.robots(host_key)

    def scope_seeds(self) -> list[str]:
        return self.frontier.scope_seeds()

    def scope_revision(self) -> int:
        return self.frontier.scope_revision()

    def queued(self) -> int:
        return self.frontier.queued()

    def ready_hosts(self, now: float) -> int:
        return self.frontier.ready_hosts(now)

    def control(self) -> RedisControl:
        return RedisControl(self.frontier.client, self.frontier.namespace)

    def capture_log(self) -> RedisCaptureLog | None:
        return self.captures

    def crawl_progress(self) -> tuple[int, int] | None:
        return self.frontier.fetched_pages(), self.frontier.seen_urls()

    # -- completions: shared write first, local rows committed only if it succeeded -------------

    def complete(self, lease: Lease, completion: Completion, now: float) -> Outcome | None:
        requeue = completion.state == "queued"
        fetch = None if requeue else completion.fetch
        judgement = None
        if fetch is not None and completion.state != "not_modified" and self.content is not None:
            judgement = self._judge(lease, completion)
            if judgement.sink:
                links = sink_links(completion.discovered, lease.host_key, judgement.sink)
                completion = dataclasses.replace(completion, discovered=list(links))
        verdict = None if judgement is None else judgement.verdict
        try:
            with self.records.transaction() as db:
                if fetch is not None:
                    fetch_id = self.records.insert_fetch(db, lease, fetch, completion)
                    if verdict is not None:
                        sqlite_dedup.store_verdict(db, fetch_id, fetch, verdict)
                feed = None
                if not requeue:
                    self.records.emit_event(db, lease, completion, now)
                    plan = completion.plan or NO_PLAN
                    feed = plan.feed_entry(verdict or _NOT_JUDGED)
                    self.records.write_feed(db, lease, feed)
                duplicate = verdict is not None and verdict.duplicate
                outcome = self.frontier.complete(
                    lease, completion, now, duplicate=duplicate, feed=feed
                )
                if outcome is None:
                    raise _Stale
                if completion.notes:  # a local copy, for stats and export of this worker
                    host_id = self.records.host_id(db, lease.host_key)
                    self.records.write_notes(db, host_id, completion.notes)
                rejections = _merged(completion.rejections, outcome.rejections)
                self.records.count(db, rejections)
                if completion.counters:  # the page's link duplicates (dedup.links_*)
                    sqlite_dedup.bump_counters(db, completion.counters)
                self.frontier.count(_shared_counts(rejections, verdict, completion.counters))
        except _Stale:
            return None
        return outcome

    def _judge(self, lease: Lease, completion: Completion) -> Judgement:
        """Exact and near duplicates across every worker, by the completion's plan over
        store/redis/content.py (owners are URL ids), and how far the page's own-host links
        sink before they are added."""
        assert self.content is not None
        plan = completion.plan or NO_PLAN
        # The host's counts only matter to the links' sink: no round trip without links.
        dups, fetched = (
            self.frontier.host_counts(lease.host_key) if completion.discovered else (0, 0)
        )
        return plan.judge(self.content, lease.url_id, dups, fetched)

    def count_rejections(self, rejections: dict[str, int]) -> None:
        self.records.count_rejections(rejections)  # this worker's own stats
        self.frontier.count_rejections(rejections)  # and the crawl's

    def complete_many(
        self, items: Sequence[tuple[Lease, Completion]], now: float
    ) -> list[Outcome | None]:
        # Each completion is its own conditional write on the shared frontier.
        return [self.complete(lease, completion, now) for lease, completion in items]

    def complete_robots(self, lease: Lease, record: RobotsRecord, next_allowed_at: float) -> bool:
        if not self.frontier.complete_robots(lease, record, next_allowed_at):
            return False
        with self.records.transaction() as db:  # a local copy, for stats and export of this worker
            self.records.store_robots(db, self.records.host_id(db, lease.host_key), record)
        return True

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        return self.frontier.host_notes(host_key, names)

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        self.frontier.put_host_note(host_key, name, text)
        self.records.put_host_note(host_key, name, text)  # a local copy, for stats and export

    def close(self) -> None:
        self.records.close()
        self.frontier.close()

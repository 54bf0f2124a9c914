"""A page lease's completion on the embedded store, in the caller's transaction.

What to write was decided above the store (the completion carries the URL's end state, its
revisit plan, the host's next start, the links, and its plan: plans.py); this module applies it
to the rows in one fixed order: the URL and its host, the content's claims and verdict, the
per-day and keyed budgets, the links (admitted under the per-host budget, then what the plan
says they lead to), the in-link and AOPIC points, the excluded links and the counters.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from crawlspace.dedup.near_index import NearDuplicateIndex
from crawlspace.lifecycle import check_transition
from crawlspace.plans import NO_PLAN, CompletionPlan, ContentVerdict, Outcome
from crawlspace.records import Completion, Lease, UrlCandidate
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite import enqueue as sqlite_enqueue
from crawlspace.store.sqlite import traps as sqlite_traps
from crawlspace.store.sqlite.dedup import sink_links
from crawlspace.store.sqlite.known import RecentUrls
from crawlspace.store.sqlite.priority import Ranking
from crawlspace.store.sqlite.records import CrawlRecords


class CompletingRows(Protocol):
    """What a completion uses of its store (store.py): the crawl's records, the content and
    priority helpers, admission, and the lease check."""

    records: CrawlRecords
    near_index: NearDuplicateIndex | None
    ranking: Ranking
    limits: FrontierLimits
    settled: RecentUrls

    def current_page_lease(self, db: sqlite3.Connection, lease: Lease) -> int | None: ...

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
    ) -> AddResult: ...

    def record_excluded(
        self, db: sqlite3.Connection, excluded: Sequence[tuple[str, str]], depth: int, now: float
    ) -> None: ...


_NOT_JUDGED = ContentVerdict()

# The columns every ending of a page lease sets (the completion's UPDATE adds the revisit ones).
_FINISH_URL = (
    "UPDATE urls SET state = ?, reason = ?, lease_id = NULL, lease_expires_at = NULL,"
    " updated_at = ?, etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified)"
)


def complete_page(
    store: CompletingRows, db: sqlite3.Connection, lease: Lease, completion: Completion, now: float
) -> Outcome | None:
    """Apply ``completion`` and its plan if ``lease`` is still the URL's current lease; None if
    stale."""
    host_id = store.current_page_lease(db, lease)
    if host_id is None:
        return None
    check_transition("leased", completion.state)
    requeue = completion.state == "queued"
    plan = completion.plan or NO_PLAN
    # A retried attempt leaves its response in the WARC only: the fetch row, the links
    # and the event belong to the visit's one terminal completion.
    fetch = None if requeue else completion.fetch
    fetch_id = 0
    if fetch is not None:
        fetch_id = store.records.insert_fetch(db, lease, fetch, completion)
    if not requeue:
        store.records.emit_event(db, lease, completion, now)
    finish_url(db, lease, completion, now)
    finish_host(db, host_id, completion, fetched=fetch is not None)
    if completion.notes:
        store.records.write_notes(db, host_id, completion.notes)
    links: Sequence[UrlCandidate] = completion.discovered
    verdict = _NOT_JUDGED
    if fetch is not None and completion.state != "not_modified":
        # The content's claims and verdict (a 304 validated content already judged); a
        # duplicate's links on its host sink as far as the plan says.
        judgement = sqlite_dedup.record_content(
            db, lease, host_id, fetch, plan, fetch_id=fetch_id, index=store.near_index
        )
        links = sink_links(links, lease.host_key, judgement.sink)
        verdict = judgement.verdict
    duplicate = verdict.duplicate
    if not requeue:
        store.records.write_feed(db, lease, plan.feed_entry(verdict))
    if completion.counters:
        sqlite_dedup.bump_counters(db, completion.counters)
    rejections: Counter[str] = Counter()
    if plan.day is not None and not requeue:
        sqlite_traps.count_day(db, host_id, plan.day, rejections)
    excluded = completion.excluded
    if links and plan.caps:
        links, over = sqlite_traps.cap_keyed(db, links, plan, store.records.host_id, store.settled)
        excluded = [*excluded, *over]
        rejections.update(reason for _, reason in over)
    admitted: list[str] = []
    if links or not requeue:
        admitted = _take_links(
            store,
            db,
            lease,
            links,
            plan=plan,
            rejections=rejections,
            host_id=host_id,
            now=now,
            requeue=requeue,
            duplicate=duplicate,
        )
    if excluded:
        store.record_excluded(db, excluded, lease.depth + 1, now)
    store.records.count(db, completion.rejections)
    store.records.count(db, rejections)
    return Outcome(dict(rejections), admitted, duplicate)


def finish_url(db: sqlite3.Connection, lease: Lease, completion: Completion, now: float) -> None:
    """The URL's end state, validators and (for a visit's end) its revisit plan."""
    url_row = (completion.state, completion.reason, now, completion.etag, completion.last_modified)
    revisit = completion.revisit if completion.state != "queued" else None
    if revisit is None:  # a retry, or a URL never revisited
        # Not charged: its host's failure, not its own; the attempt goes back (frontier/outage.py).
        given_back = "" if completion.charged else ", attempts = attempts - 1"
        db.execute(_FINISH_URL + given_back + " WHERE id = ?", (*url_row, lease.url_id))
        return
    db.execute(
        _FINISH_URL + ", revisit_interval = ?, next_fetch_at = ?, due_at = NULL,"
        " last_changed_at = CASE WHEN ? THEN ? ELSE last_changed_at END,"
        " content_hash = COALESCE(?, content_hash) WHERE id = ?",
        (
            *url_row,
            revisit.interval,
            revisit.next_fetch_at,
            revisit.changed,
            now,
            revisit.content_hash,
            lease.url_id,
        ),
    )


def finish_host(
    db: sqlite3.Connection, host_id: int, completion: Completion, *, fetched: bool
) -> None:
    """The host's token back, its next start (never earlier than it was) and its backoff."""
    db.execute(
        "UPDATE hosts SET in_flight = in_flight - 1, queued = queued + ?,"
        " fetched = fetched + ?, next_allowed_at = MAX(next_allowed_at, ?),"
        " backoff_level = COALESCE(?, backoff_level), failures = COALESCE(?, failures)"
        " WHERE id = ?",
        (
            int(completion.state == "queued"),
            int(fetched),
            completion.next_allowed_at or 0.0,
            completion.host_backoff,
            completion.host_failures,
            host_id,
        ),
    )


def _take_links(
    store: CompletingRows,
    db: sqlite3.Connection,
    lease: Lease,
    links: Sequence[UrlCandidate],
    *,
    plan: CompletionPlan,
    rejections: Counter[str],
    host_id: int,
    now: float,
    requeue: bool,
    duplicate: bool = False,
) -> list[str]:
    """Admit the links, apply what they led to (the plan's notes and sink), and pass the page's
    in-link points or AOPIC cash on to them (store/sqlite/priority.py). Returns the URLs of the
    page's own host they queued."""
    ranking = store.ranking
    cash = 0.0 if requeue else ranking.take_cash(db, lease.url_id)
    admitted: list[str] = []
    over_host_budget = 0
    # A followed link is an in-link of its target: a row it creates starts with the count, so
    # only known targets are updated below.
    counted_at_insert = not requeue and not ranking.aopic
    ignore_order = store.limits.ignore_query_order
    if links and ignore_order:  # another order of a known URL is an in-link of that URL
        links = sqlite_enqueue.resolve_query_orders(db, links)
    if links:
        result = store.add_in(
            db,
            links,
            now,
            admitted,
            inlinks=int(counted_at_insert),
            orders_resolved=ignore_order,
            via=lease.url_id,
        )
        over_host_budget = result.rejected.get("budget_host", 0)
        rejections.update(result.rejected)
    own = {c.url for c in links if c.host_key == lease.host_key}
    same_host = [url for url in admitted if url in own]
    effects = plan.after_links(len(admitted) + over_host_budget, duplicate=duplicate)
    if effects.notes:
        store.records.write_notes(db, host_id, dict(effects.notes))
    if effects.sink and same_host:
        db.executemany(
            "UPDATE urls SET priority = priority + ? WHERE url = ? AND state = 'queued'",
            [(effects.sink, url) for url in same_host],
        )
    if not requeue:
        created = set(admitted) if counted_at_insert else set()
        targets = [c.url for c in links if c.url not in created]
        # (the link time only while retirement needs it: frontier/retirement.py)
        linked_at = now if store.limits.link_times else None
        ranking.pass_on(db, cash, targets, plan.inlinks, linked_at)
    return same_host

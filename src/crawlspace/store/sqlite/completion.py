"""A page lease's completion on the embedded store, in the caller's transaction.

What to write was decided above the store (the completion carries the URL's end state, its
revisit plan, the host's next start, the admitted links); this module applies it to the rows in
one fixed order: the URL and its host, the content's duplicate verdict, the per-day and template
budgets, the links (admitted under the host budgets, counted in the discovery window), the
in-link and AOPIC points, the excluded links and the counters.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from crawlspace.lifecycle import check_transition
from crawlspace.records import Completion, Lease
from crawlspace.store.sqlite import dedup as sqlite_dedup
from crawlspace.store.sqlite import traps as sqlite_traps

if TYPE_CHECKING:
    from crawlspace.store.sqlite.store import SqliteStore

# The columns every ending of a page lease sets (the completion's UPDATE adds the revisit ones).
_FINISH_URL = (
    "UPDATE urls SET state = ?, reason = ?, lease_id = NULL, lease_expires_at = NULL,"
    " updated_at = ?, etag = COALESCE(?, etag), last_modified = COALESCE(?, last_modified)"
)


def complete_page(
    store: SqliteStore, db: sqlite3.Connection, lease: Lease, completion: Completion, now: float
) -> bool:
    """Apply ``completion`` if ``lease`` is still the URL's current lease; False if stale."""
    host_id = store.current_page_lease(db, lease)
    if host_id is None:
        return False
    check_transition("leased", completion.state)
    requeue = completion.state == "queued"
    # A retried attempt leaves its response in the WARC only: the fetch row, the links
    # and the event belong to the visit's one terminal completion.
    fetch = None if requeue else completion.fetch
    if fetch is not None:
        store.records.insert_fetch(db, lease, fetch, completion)
    if not requeue:
        store.records.emit_event(db, lease, completion, now)
    finish_url(db, lease, completion, now)
    finish_host(db, host_id, completion, fetched=fetch is not None)
    if completion.notes:
        store.records.write_notes(db, host_id, completion.notes)
    if fetch is not None and completion.state != "not_modified":
        # Exact/near duplicate; may lower the host's link priorities. A 304 validated
        # content already classified.
        sqlite_dedup.record_content(db, lease, host_id, fetch, completion, index=store.near_index)
    if completion.counters:
        sqlite_dedup.bump_counters(db, completion.counters)
    if not requeue:  # per-day and template budgets
        sqlite_traps.apply_budgets(
            db, host_id, completion, now, limits=store.limits, host_ids=store.records.host_id
        )
    if completion.discovered or not requeue:
        _take_links(store, db, lease, completion, host_id=host_id, now=now)
    if completion.excluded:
        store.record_excluded(db, completion.excluded, lease.depth + 1, now)
    if completion.rejections:
        store.records.count(db, completion.rejections)
    return True


def finish_url(db: sqlite3.Connection, lease: Lease, completion: Completion, now: float) -> None:
    """The URL's end state, validators and (for a visit's end) its revisit plan."""
    url_row = (completion.state, completion.reason, now, completion.etag, completion.last_modified)
    revisit = completion.revisit if completion.state != "queued" else None
    if revisit is None:  # a retry, or a URL never revisited
        db.execute(_FINISH_URL + " WHERE id = ?", (*url_row, lease.url_id))
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
    store: SqliteStore,
    db: sqlite3.Connection,
    lease: Lease,
    completion: Completion,
    *,
    host_id: int,
    now: float,
) -> None:
    """Admit the discovered links, count them in the host's discovery window, and pass the
    page's in-link points or AOPIC cash on to them (store/sqlite/priority.py)."""
    requeue = completion.state == "queued"
    ranking = store.ranking
    cash = 0.0 if requeue else ranking.take_cash(db, lease.url_id)
    admitted: list[str] = []
    over_host_budget = 0
    # A followed link is an in-link of its target: a row it creates starts with the count, so
    # only known targets are updated below.
    counted_at_insert = not requeue and not ranking.aopic
    if completion.discovered:
        result = store.add_in(
            db, completion.discovered, now, admitted, inlinks=int(counted_at_insert)
        )
        over_host_budget = result.rejected.get("budget_host", 0)
        for reason, n in result.rejected.items():
            completion.rejections[reason] = completion.rejections.get(reason, 0) + n
    if admitted:
        own = {c.url for c in completion.discovered if c.host_key == lease.host_key}
        completion.admitted = [url for url in admitted if url in own]
    if requeue:
        return
    sqlite_traps.account_discovery(
        db,
        lease,
        host_id,
        completion,
        admitted=admitted,
        over_host_budget=over_host_budget,
        limits=store.limits,
    )
    created = set(admitted) if counted_at_insert else set()
    ranking.pass_on(db, cash, [c.url for c in completion.discovered if c.url not in created])

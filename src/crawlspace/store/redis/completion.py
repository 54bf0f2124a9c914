"""A completion's plan as lua/complete.lua takes it: the per-day count (plans.py DayCount), the
revisit plan (frontier/revisit.py), the duplicate verdict, the index feed record, the host notes
and the sink of the page's new URLs on its host (the plan's LinkEffects). Decided above; written
by the script."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence

from crawlspace.plans import DayCount, FeedEntry, LinkEffects
from crawlspace.records import Completion, Lease
from crawlspace.store.redis.cash import PageCash
from crawlspace.store.redis.codec import num, packable, url_key

__all__ = ["complete_args"]


def complete_args(
    lease: Lease,
    completion: Completion,
    now: float,
    *,
    max_in_flight: int,
    events_maxlen: int,
    duplicate: bool,
    cash: PageCash | None,
    notes: Mapping[str, str],
    effects: LinkEffects,
    same_host: Sequence[str],
    feed: FeedEntry | None = None,
    feed_maxlen: int = 0,
) -> list[object]:
    """ARGV 2 onward of lua/complete.lua: ``cash`` the page's AOPIC split, ``notes`` the host
    notes to write with it, ``effects`` what its admitted links led to, ``same_host`` the
    ids of the new URLs they queued on its host, ``feed`` its index feed record and
    ``feed_maxlen`` the cap of its bucket's feed stream."""
    nxt = completion.next_allowed_at
    terminal = completion.state != "queued"
    day = (completion.plan.day if completion.plan is not None else None) if terminal else None
    return [
        url_key(lease.url_id),
        lease.lease_id,
        lease.version,
        lease.epoch,
        completion.state,
        packable(completion.reason),
        "" if nxt is None else num(nxt),
        packable(completion.etag),
        packable(completion.last_modified),
        max_in_flight,
        int(completion.fetch is not None),  # counted for terminal completions only
        events_maxlen,
        num(now),
        "" if completion.host_backoff is None else completion.host_backoff,
        "" if completion.host_failures is None else completion.host_failures,
        *_plan_args(
            completion,
            day,
            duplicate=duplicate,
            cash=cash,
            notes=notes,
            effects=effects,
            same_host=same_host,
            feed=feed,
            feed_maxlen=feed_maxlen,
        ),
    ]


def _plan_args(
    completion: Completion,
    day: DayCount | None,
    *,
    duplicate: bool,
    cash: PageCash | None,
    notes: Mapping[str, str],
    effects: LinkEffects,
    same_host: Sequence[str],
    feed: FeedEntry | None,
    feed_maxlen: int,
) -> list[object]:
    """ARGV 17 onward: what the completion's plan says (plans.py)."""
    return [
        "" if day is None else day.day,
        "" if day is None else day.cap,
        "" if day is None else num(day.until),
        *_revisit_args(completion),
        int(duplicate),
        *_cash_args(cash),
        *_feed_args(feed, feed_maxlen),
        int(completion.charged),
        len(notes),
        *(field for pair in notes.items() for field in pair),
        effects.sink,
        *(same_host if effects.sink else ()),
    ]


def _feed_args(feed: FeedEntry | None, maxlen: int) -> tuple[object, ...]:
    """The feed record for the bucket's feed stream ('' for none), and the stream's cap. The
    packed page part goes as base64: every reader of the frontier decodes replies as text."""
    if feed is None or maxlen <= 0:
        return "", "", "", "", ""
    document = base64.b64encode(feed.document).decode("ascii") if feed.document else ""
    return maxlen, feed.doc_id, feed.kind, feed.meta, document


def _cash_args(cash: PageCash | None) -> tuple[object, object, object]:
    """AOPIC's part: the cash the page hands on, the Lambda total it was paid at, and the
    priority of no cash (store/redis/cash.py)."""
    if cash is None:
        return "", "", ""
    return repr(cash.taken), repr(cash.lambda_total), cash.broke


def _revisit_args(completion: Completion) -> tuple[str, str, int, str]:
    """The completion's revisit plan (frontier/revisit.py) as complete.lua reads it."""
    plan = completion.revisit
    if plan is None or completion.state == "queued":
        return "", "", 0, ""
    return num(plan.interval), num(plan.next_fetch_at), int(plan.changed), plan.content_hash or ""

"""A completion's plan as lua/complete.lua takes it: the per-day count (plans.py DayCount), the
revisit plan (frontier/revisit.py), the duplicate verdict, the host notes and the sink of the
page's new URLs on its host (the plan's LinkEffects). Decided above; written by the script."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crawlspace.plans import DayCount, LinkEffects
from crawlspace.records import Completion
from crawlspace.store.redis.cash import PageCash
from crawlspace.store.redis.codec import num

__all__ = ["plan_args"]


def plan_args(
    completion: Completion,
    day: DayCount | None,
    *,
    duplicate: bool,
    cash: PageCash | None,
    notes: Mapping[str, str],
    effects: LinkEffects,
    same_host: Sequence[str],
) -> list[object]:
    """ARGV 17 onward of lua/complete.lua: ``cash`` the page's AOPIC split, ``notes`` the host
    notes to write with it, ``effects`` what its admitted links led to and ``same_host`` the
    ids of the new URLs they queued on its host."""
    return [
        "" if day is None else day.day,
        "" if day is None else day.cap,
        "" if day is None else num(day.until),
        *_revisit_args(completion),
        int(duplicate),
        *(
            ("", "", "")
            if cash is None
            else (repr(cash.taken), repr(cash.lambda_total), cash.broke)
        ),
        len(notes),
        *(field for pair in notes.items() for field in pair),
        effects.sink,
        *(same_host if effects.sink else ()),
    ]


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

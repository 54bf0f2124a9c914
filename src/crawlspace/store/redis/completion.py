"""The completion's plans as lua/complete.lua takes them: the per-day budget, the revisit plan
(frontier/revisit.py), the duplicate verdict and the host's discovery window
(frontier/budgets.py advance_window). Decided above; written by the script."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from crawlspace.frontier.budgets import DiscoveryWindow, advance_window, day_budget
from crawlspace.records import Completion, Lease
from crawlspace.store.redis.cash import PageCash
from crawlspace.store.redis.codec import num

if TYPE_CHECKING:
    from crawlspace.store.redis.frontier import RedisFrontier

__all__ = ["plan_args"]


def plan_args(
    frontier: RedisFrontier,
    lease: Lease,
    completion: Completion,
    now: float,
    *,
    found: int,
    same_host: Sequence[str],
    cash: PageCash | None = None,
    notes: Mapping[str, str] | None = None,
) -> list[object]:
    """ARGV 17 onward of lua/complete.lua: ``found`` new URLs the page's links admitted,
    ``same_host`` the ids of those on its host, ``cash`` the page's AOPIC split, ``notes`` the
    host notes to write with it."""
    day_cap = frontier.limits.max_pages_per_host_per_day
    day, next_day = day_budget(now)
    return [
        day if day_cap else "",
        day_cap or "",
        num(next_day),
        *_revisit_args(completion),
        int(completion.duplicate),
        *(("", "") if cash is None else (repr(cash.taken), repr(cash.lambda_total))),
        len(notes or ()),
        *(field for pair in (notes or {}).items() for field in pair),
        *window_args(frontier, lease, completion, found, same_host),
    ]


def _window_args(state: DiscoveryWindow, penalty: int, ids: Sequence[str]) -> list[object]:
    ratio = "" if state.last_ratio is None else repr(state.last_ratio)
    return [state.pages, state.new_urls, ratio, int(state.flagged), penalty, *ids]


def _revisit_args(completion: Completion) -> tuple[str, str, int, str]:
    """The completion's revisit plan (frontier/revisit.py) as complete.lua reads it."""
    plan = completion.revisit
    if plan is None or completion.state == "queued":
        return "", "", 0, ""
    return num(plan.interval), num(plan.next_fetch_at), int(plan.changed), plan.content_hash or ""


def window_args(
    frontier: RedisFrontier,
    lease: Lease,
    completion: Completion,
    found: int,
    same_host: Sequence[str],
) -> list[object]:
    """A fetched page advances its host's discovery window (frontier/budgets.py); a host
    flagged as a likely trap sinks this page's new links on it. Empty: nothing changes."""
    limits = frontier.limits
    if completion.fetch is None or completion.state != "fetched" or not limits.discovery_window:
        return ["", "", "", "", 0]
    key = f"{frontier.key_prefix(frontier.bucket(lease.host_key))}h:{lease.host_key}"
    pages, new, ratio, flagged = frontier.retrying(
        lambda: frontier.client.hmget(key, "wp", "wn", "wr", "wf")
    )
    state = DiscoveryWindow(
        int(pages or 0), int(new or 0), float(ratio) if ratio else None, flagged == "1"
    )
    state = advance_window(
        state, found, window=limits.discovery_window, min_ratio=limits.discovery_trap_ratio
    )
    penalty = limits.trap_priority_penalty if state.flagged else 0
    return _window_args(state, penalty, same_host if penalty else ())

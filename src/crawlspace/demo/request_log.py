"""A web farm's request log, and the pure checkers that judge politeness from it, one site
at a time: ``max_concurrency`` and ``min_gap``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["LoggedRequest", "max_concurrency", "min_gap"]


@dataclass(frozen=True)
class LoggedRequest:
    site: str
    method: str
    path_qs: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    started_at: float  # time.monotonic() when the request arrived
    ended_at: float  # time.monotonic() when the response was fully written
    status: int  # 0 when no response went out (cancelled at shutdown, client gone)


def _one_site(requests: Sequence[LoggedRequest]) -> None:
    sites = {r.site for r in requests}
    if len(sites) > 1:
        raise ValueError(
            f"politeness is judged per site but the log mixes {sorted(sites)}; "
            "filter it first, e.g. farm.requests_for(name)"
        )


def max_concurrency(requests: Sequence[LoggedRequest]) -> int:
    """Most requests of one site in flight at once (overlapping [started_at, ended_at])."""
    _one_site(requests)
    # An end at the same instant as a start is not an overlap: ends sort first (-1 < +1).
    events = sorted([(r.started_at, 1) for r in requests] + [(r.ended_at, -1) for r in requests])
    best = current = 0
    for _, step in events:
        current += step
        best = max(best, current)
    return best


def min_gap(requests: Sequence[LoggedRequest]) -> float | None:
    """Smallest idle time between consecutive requests of one site, sorted by start.

    Negative when requests overlapped; None with fewer than two requests.
    """
    _one_site(requests)
    ordered = sorted(requests, key=lambda r: (r.started_at, r.ended_at))
    gaps = [nxt.started_at - prev.ended_at for prev, nxt in pairwise(ordered)]
    return min(gaps) if gaps else None

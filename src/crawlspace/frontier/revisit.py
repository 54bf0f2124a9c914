"""Adaptive revisit intervals, one per URL. Pure: every function takes the values it needs.

The rule is the multiplicative one of Cho & Garcia-Molina ("Effective page refresh policies for
web crawlers", TODS 2003) in its simplest form: after a visit that found the page changed, the
next visit comes twice as soon; after one that found it unchanged (same extracted-text hash, or a
304), half as soon. For a page that changes every T seconds the interval settles in [T/4, T]
(tests/unit/test_revisit.py): an interval >= T always sees a change and halves, and a change
seen in a window of T/2 may be seen again in the next, while T/4 windows mostly miss and double.
So it tracks T within a small factor, biased toward freshness (typically about T/2). Intervals are
clamped to [min_interval, max_interval]; the first one comes from the sitemap's ``changefreq``
(sitemaps.org, a hint) or the default.

Refresh also follows value: the wait until the next visit is the learned interval scaled by the
URL's value, read from its queue priority when leased (frontier/priority.py: depth, sitemap
priority, patterns and in-links, or AOPIC's cash), doubled for every ``value_points`` it sits
behind a depth-1 page with the default sitemap priority and halved for every ``value_points``
ahead, within a factor of ``VALUE_SPAN`` either way, then clamped to [min, max]: with the
defaults a seed comes back about twice as often as its change rate says, a page three links deep
four times less often. The learned interval itself stays the change rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from crawlspace.bands import REVISIT_BAND
from crawlspace.lifecycle import REVISITABLE
from crawlspace.records import Completion, Lease, RevisitPlan

__all__ = [
    "CHANGEFREQ_SECONDS",
    "GONE_HASH",
    "RevisitPolicy",
    "absence_of",
    "plan_revisit",
    "stale_before",
]

HOUR = 3600.0
DAY = 24 * HOUR

# sitemaps.org <changefreq> as seconds. "always" and "never" map to the clamp bounds.
CHANGEFREQ_SECONDS: dict[str, float] = {
    "always": 0.0,
    "hourly": HOUR,
    "daily": DAY,
    "weekly": 7 * DAY,
    "monthly": 30 * DAY,
    "yearly": 365 * DAY,
    "never": float("inf"),
}


# The content hash stored for a URL that answered "gone" (404/410) or failed: its next gone
# answer is then no change, and a 200 after it is one.
GONE_HASH: Final = "gone"
# Value (the docstring): the priority a depth-1 page with the default sitemap priority gets
# (frontier/priority.py url_priority(1)), whose revisits wait their change interval as it is,
# and how far value moves a wait either way.
VALUE_REFERENCE: Final = 15
VALUE_SPAN: Final = 4.0


@dataclass(frozen=True, slots=True)
class RevisitPolicy:
    min_interval: float = DAY
    max_interval: float = 30 * DAY
    initial_interval: float = 7 * DAY
    # A URL whose visit found no page is asked again after a wait that depends on why (one
    # interval for all of them lost pages to a minute's outage for a month, issue #31): 410
    # says the page is gone for good; a 404 is often a mistake fixed within days; a server
    # error (5xx, or throttling past its limits) or no answer at all (connection, DNS,
    # timeout) is a server's trouble, mostly over within hours.
    gone_interval: float = 30 * DAY
    missing_interval: float = 7 * DAY
    error_interval: float = DAY
    failed_interval: float = DAY
    # Priority points that double (or halve) a URL's wait: its value (0: value is ignored).
    value_points: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.min_interval <= self.max_interval:
            raise ValueError(
                f"revisit intervals need 0 < min <= max (got {self.min_interval}, "
                f"{self.max_interval})"
            )

    def clamp(self, seconds: float) -> float:
        return min(max(seconds, self.min_interval), self.max_interval)

    def value_factor(self, priority: int | None) -> float:
        """How much longer (> 1) or sooner (< 1) than its change interval a URL of queue
        ``priority`` is visited again (None: as its change interval says)."""
        if priority is None or self.value_points <= 0:
            return 1.0
        base = priority + REVISIT_BAND if priority < 0 else priority  # out of the revisit band
        doublings = (base - VALUE_REFERENCE) / self.value_points
        span = math.log2(VALUE_SPAN)
        return float(2.0 ** min(max(doublings, -span), span))

    def absent_interval(self, absence: str) -> float:
        """The wait after a visit that found no page, by ``absence`` (``absence_of``)."""
        waits = {
            "gone": self.gone_interval,
            "missing": self.missing_interval,
            "error": self.error_interval,
            "failed": self.failed_interval,
        }
        return max(waits[absence], self.min_interval)

    def first(self, changefreq: str | None = None) -> float:
        """The interval after a URL's first fetch."""
        hinted = CHANGEFREQ_SECONDS.get((changefreq or "").strip().lower())
        return self.clamp(self.initial_interval if hinted is None else hinted)

    def next(
        self, interval: float | None, *, changed: bool, changefreq: str | None = None
    ) -> float:
        """The interval after a revisit that found the page ``changed`` (or not)."""
        if interval is None:
            return self.first(changefreq)
        return self.clamp(interval / 2.0 if changed else interval * 2.0)

    def after_visit(
        self,
        interval: float | None,
        *,
        old_hash: str | None,
        new_hash: str | None,
        not_modified: bool = False,
        absence: str | None = None,
        changefreq: str | None = None,
    ) -> tuple[float, bool]:
        """(next interval, whether the content changed) after one completed visit.

        A first visit (``interval`` None) counts as a change. A 304 is unchanged by definition;
        otherwise the page changed when its content hash differs from the stored one. An answer
        without content (``new_hash`` None: a 403, say) is no change: counted as one, a page that
        turned forbidden would be revisited ever more often. A visit that found no page
        (``absence``) waits its kind's interval; it changed only when the page went (``old_hash``
        is ``GONE_HASH`` once it has).
        """
        if absence is not None:
            return self.absent_interval(absence), old_hash not in (None, GONE_HASH)
        if interval is None:
            return self.first(changefreq), True
        changed = not not_modified and new_hash is not None and new_hash != old_hash
        return self.next(interval, changed=changed), changed


def plan_revisit(
    lease: Lease, completion: Completion, now: float, policy: RevisitPolicy
) -> RevisitPlan | None:
    """The next visit of a URL after a terminal visit, or None for a URL never revisited.

    Fetched (tombstones included), not_modified and failed URLs are revisited; a 200's change is
    judged on its text hash against the one the lease read (``lease.content_hash``). A visit
    that found no page waits by why (``absence_of``). The lease is the URL's one writer until it
    ends, so the recrawl state it carries is the state the store holds: every engine applies the
    returned plan as it is, with the completion's own write."""
    if completion.state not in REVISITABLE:
        return None
    fetch = completion.fetch
    absence = absence_of(completion)
    new_hash = None
    if fetch is not None and 200 <= fetch.status < 300:
        new_hash = fetch.text_sha256 or fetch.content_sha256
    interval = lease.revisit_interval
    wait, changed = policy.after_visit(
        interval,
        old_hash=lease.content_hash,
        new_hash=new_hash,
        not_modified=completion.state == "not_modified",
        absence=absence,
        changefreq=lease.changefreq,
    )
    if absence is not None:
        # Come back after the absence's wait, but keep the interval learned so far: a page that
        # failed once and then answers again resumes its own pace.
        kept = interval if interval is not None else wait
        return RevisitPlan(kept, now + wait, changed, GONE_HASH)
    # The learned interval is the change rate; the wait is that scaled by the URL's value.
    valued = policy.clamp(wait * policy.value_factor(lease.priority))
    return RevisitPlan(wait, now + valued, changed, new_hash)


def absence_of(completion: Completion) -> str | None:
    """Why a terminal visit found no page (None: it found one): "gone" (410), "missing" (404),
    "error" (retries ended on server errors or throttling) or "failed" (no answer)."""
    if completion.state == "failed":
        reason = completion.reason or ""
        return "error" if reason.startswith("http_") or reason == "throttled" else "failed"
    if completion.reason == "gone":
        fetch = completion.fetch
        return "missing" if fetch is not None and fetch.status == 404 else "gone"
    return None


def stale_before(lastmod_age_days: float | None, now: float) -> float | None:
    """When a sitemap entry says its URL last changed (its ``<lastmod>``, as an age in days
    at ``now``; None: none or unreadable): a known URL whose last visit ended before then is
    due again now, whatever its interval (the engines apply it when the entry is admitted).
    A lastmod in the future counts as now."""
    if lastmod_age_days is None:
        return None
    return now - max(lastmod_age_days, 0.0) * DAY

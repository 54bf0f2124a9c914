"""The adaptive revisit interval on a virtual clock: a month of a site whose pages change on
known schedules (hourly, daily, never), visited with conditional requests."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pytest

from crawlspace.bands import REVISIT_BAND
from crawlspace.frontier.revisit import (
    DAY,
    GONE_HASH,
    HOUR,
    RevisitPolicy,
    absence_of,
    plan_revisit,
)
from crawlspace.records import Completion, FetchRecord, Lease, LeaseKind, RevisitPlan


@dataclass
class FakePage:
    """Changes every ``period`` seconds (None: never), phase-shifted; answers like a server with
    ETag support: 304 when the validator matches the current version."""

    period: float | None
    phase: float = 0.0

    def version(self, now: float) -> int:
        return 0 if self.period is None else math.floor((now + self.phase) / self.period)

    def get(self, now: float, if_none_match: str | None) -> tuple[int, str]:
        etag = f'"v{self.version(now)}"'
        return (304, etag) if if_none_match == etag else (200, etag)


@dataclass
class Visits:
    intervals: list[tuple[float, float]] = field(default_factory=list)  # (time, interval)
    bodies: int = 0
    not_modified: int = 0


def simulate(page: FakePage, policy: RevisitPolicy, days: float = 30.0) -> Visits:
    """Visit ``page`` whenever it is due for ``days`` of virtual time."""
    now, interval, etag, text_hash = 0.0, None, None, None
    out = Visits()
    for _ in range(100_000):  # bounded: the minimum interval caps the number of visits
        if now > days * DAY:
            break
        status, new_etag = page.get(now, etag)
        if status == 304:
            out.not_modified += 1
            interval, _ = policy.after_visit(
                interval, old_hash=text_hash, new_hash=None, not_modified=True
            )
        else:
            out.bodies += 1
            new_hash = f"text-{page.version(now)}"
            interval, _ = policy.after_visit(interval, old_hash=text_hash, new_hash=new_hash)
            text_hash, etag = new_hash, new_etag
        out.intervals.append((now, interval))
        now += interval
    return out


POLICY = RevisitPolicy(min_interval=60.0, max_interval=30 * DAY, initial_interval=DAY)


def settled(visits: Visits, since: float) -> float:
    """Geometric mean of the intervals chosen after ``since`` (the converged regime)."""
    tail = [iv for t, iv in visits.intervals if t >= since]
    assert tail
    return math.exp(sum(math.log(iv) for iv in tail) / len(tail))


@pytest.mark.parametrize("period", [HOUR, DAY])
def test_interval_converges_near_the_true_change_period(period: float) -> None:
    visits = simulate(FakePage(period, phase=period / 3), POLICY)
    # Halve/double oscillates in [T/4, T] once settled (a change seen in a window of T/2 may
    # recur in the next half window), so the typical interval sits about T/2: near T, biased
    # toward freshness.
    assert period / 3 <= settled(visits, since=20 * DAY) <= period
    tail = [iv for t, iv in visits.intervals if t >= 20 * DAY]
    # The intervals live on the grid initial / 2**k, one more factor of 2 either side.
    assert all(period / 8 <= iv <= 2 * period for iv in tail)


def test_a_page_that_never_changes_reaches_the_maximum_and_costs_304s_only() -> None:
    visits = simulate(FakePage(None), POLICY, days=90)
    assert visits.bodies == 1  # the first visit; every revisit was a 304
    assert visits.not_modified >= 5
    assert visits.intervals[-1][1] == POLICY.max_interval


def test_unchanged_revisits_are_304s_not_bodies() -> None:
    visits = simulate(FakePage(DAY, phase=1000.0), POLICY)
    # A body is downloaded at most once per change of the page (30 changes in a month).
    assert visits.bodies <= 31
    assert visits.not_modified > 0
    assert visits.bodies + visits.not_modified == len(visits.intervals)


def test_halve_on_change_double_when_unchanged_clamped() -> None:
    p = RevisitPolicy(min_interval=10.0, max_interval=100.0, initial_interval=40.0)
    assert p.next(None, changed=True) == 40.0
    assert p.next(40.0, changed=True) == 20.0
    assert p.next(40.0, changed=False) == 80.0
    assert p.next(80.0, changed=False) == 100.0
    assert p.next(15.0, changed=True) == 10.0
    assert p.after_visit(40.0, old_hash="a", new_hash="a") == (80.0, False)
    assert p.after_visit(40.0, old_hash="a", new_hash="b") == (20.0, True)
    assert p.after_visit(40.0, old_hash="a", new_hash=None, not_modified=True) == (80.0, False)


def test_sitemap_changefreq_sets_the_first_interval() -> None:
    assert POLICY.first("hourly") == HOUR
    assert POLICY.first("Daily") == DAY
    assert POLICY.first("never") == POLICY.max_interval
    assert POLICY.first("always") == POLICY.min_interval
    assert POLICY.first("sometimes") == POLICY.initial_interval
    assert POLICY.first(None) == POLICY.initial_interval


def test_tombstones_get_the_long_interval() -> None:
    p = RevisitPolicy(min_interval=1.0, max_interval=100.0, gone_interval=1000.0)
    assert p.after_visit(5.0, old_hash="x", new_hash=None, absence="gone")[0] == 1000.0


def test_an_answer_without_content_is_no_change() -> None:
    # A page that turned 403 keeps its old hash: counted as a change, it would be revisited
    # ever more often; as no change, it backs off.
    p = RevisitPolicy(min_interval=10.0, max_interval=100.0)
    assert p.after_visit(40.0, old_hash="a", new_hash=None) == (80.0, False)


def test_a_tombstone_changed_once_and_keeps_its_learned_interval() -> None:
    p = RevisitPolicy(min_interval=1.0, max_interval=100.0, failed_interval=1000.0)
    gone = Completion("failed", reason="timeout")

    def leased(content_hash: str) -> Lease:
        return Lease(
            LeaseKind.PAGE, "l", "http://a", "http://a/", 1, 1, 1, 0, 0, 99.0,
            revisit_interval=5.0, content_hash=content_hash,
        )  # fmt: skip

    first = plan_revisit(leased("x"), gone, 0.0, p)
    assert first == RevisitPlan(5.0, 1000.0, True, GONE_HASH)  # became gone: back in 1000 s
    again = plan_revisit(leased(GONE_HASH), gone, 1000.0, p)
    assert again == RevisitPlan(5.0, 2000.0, False, GONE_HASH)  # still gone: no change
    # Back with content: a change, at the pace learned before it failed.
    assert p.after_visit(5.0, old_hash=GONE_HASH, new_hash="y") == (2.5, True)


def test_each_kind_of_absence_waits_its_own_interval() -> None:
    p = RevisitPolicy(
        min_interval=1.0,
        max_interval=100.0,
        gone_interval=4000.0,
        missing_interval=3000.0,
        error_interval=2000.0,
        failed_interval=1000.0,
    )

    def answered(status: int) -> FetchRecord:
        url = "http://a/"
        return FetchRecord(url, url, status, 0.0, 1.0, None, 0, False, None, None, None, None)

    lease = Lease(LeaseKind.PAGE, "l", "http://a", "http://a/", 1, 1, 3, 0, 0, 99.0)
    cases = [
        (Completion("fetched", reason="gone", fetch=answered(410)), "gone", 4000.0),
        (Completion("fetched", reason="gone", fetch=answered(404)), "missing", 3000.0),
        (Completion("failed", reason="http_503", fetch=answered(503)), "error", 2000.0),
        (Completion("failed", reason="throttled", fetch=answered(429)), "error", 2000.0),
        (Completion("failed", reason="connect_error"), "failed", 1000.0),
        (Completion("failed", reason="timeout"), "failed", 1000.0),
        (Completion("fetched", fetch=answered(200)), None, None),
    ]
    for completion, absence, wait in cases:
        assert absence_of(completion) == absence
        plan = plan_revisit(lease, completion, 10.0, p)
        assert plan is not None
        if wait is not None:
            assert plan.next_fetch_at == 10.0 + wait
            assert plan.content_hash == GONE_HASH
    # Never sooner than the shortest interval.
    assert RevisitPolicy(min_interval=50.0, failed_interval=1.0).absent_interval("failed") == 50.0


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="min <= max"):
        RevisitPolicy(min_interval=10.0, max_interval=1.0)


def test_important_pages_come_back_sooner_unimportant_ones_later() -> None:
    """Value (frontier/revisit.py): the wait is the change interval scaled by the URL's
    priority when leased, doubling per ``value_points`` behind a depth-1 page, within 4x either
    way and within [min, max]; the learned interval stays the change rate."""
    p = RevisitPolicy(min_interval=1.0, max_interval=10_000.0, initial_interval=100.0)
    page = FetchRecord(
        "http://a/", "http://a/", 200, 0.0, 1.0, None, 0, False, None, None, None, None,
        text_sha256="t",
    )  # fmt: skip

    def wait(priority: int | None) -> tuple[float, float]:
        lease = Lease(
            LeaseKind.PAGE, "l", "http://a", "http://a/", 1, 1, 1, 0, 0, 99.0, priority=priority
        )
        plan = plan_revisit(lease, Completion("fetched", fetch=page), 0.0, p)
        assert plan is not None
        return plan.interval, plan.next_fetch_at

    assert wait(None) == (100.0, 100.0)  # priority unknown: the change interval itself
    assert wait(15) == (100.0, 100.0)  # a depth-1 page with the default sitemap priority
    assert wait(5) == (100.0, 50.0)  # a seed: twice as often
    assert wait(35) == (100.0, 400.0)  # three links deep: four times less often
    assert wait(95) == (100.0, 400.0)  # never more than 4x
    assert wait(0) == (100.0, 100.0 * 2**-1.5)  # ahead of a seed: sooner still
    assert RevisitPolicy(value_points=5.0).value_factor(0) == 0.25, "nor less than a quarter"
    assert wait(5 - REVISIT_BAND) == wait(5), "a revisit's priority is read out of its band"
    assert RevisitPolicy(value_points=0).value_factor(95) == 1.0
    tight = RevisitPolicy(min_interval=80.0, max_interval=10_000.0, initial_interval=100.0)
    lease = Lease(LeaseKind.PAGE, "l", "http://a", "http://a/", 1, 1, 1, 0, 0, 99.0, priority=5)
    plan = plan_revisit(lease, Completion("fetched", fetch=page), 0.0, tight)
    assert plan is not None
    assert plan.next_fetch_at == 80.0, "never sooner than the shortest interval"

"""The same plans, applied by every engine, leave the same state (plans.py, frontier/plans.py).

One scenario of planned completions (keyed budgets, the per-day count, the discovery window and
its sink, a retry and a stale completion) runs on each engine and, beside it, on a fresh memory
frontier, the reference. Each step's plan is made from the host notes the engine returns, as the
crawl makes it; the plans must come out equal, and so must everything read back: each outcome,
the host's window note, when the host may start again, and the order in which what is left is
leased.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from crawlspace.frontier.budgets import DAY, WINDOW_NOTE, keyed_budgets
from crawlspace.frontier.plans import CompletionPolicy, plan_completion
from crawlspace.records import Completion, FetchRecord, Lease, LeaseKind
from crawlspace.store.base import Frontier, FrontierLimits
from crawlspace.store.memory import MemoryFrontier
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, robots_ok

HOST = "http://a"  # one host: the order across hosts is test_front_queues.py's subject
POLICY = CompletionPolicy(
    budgets=keyed_budgets(3),
    max_pages_per_host_per_day=4,
    discovery_window=2,
    discovery_trap_ratio=1.0,
    trap_priority_penalty=100,
)
START = 20_000 * DAY


@dataclass
class Trace:
    """What one engine showed while the scenario ran."""

    plans: list[Any] = field(default_factory=list)
    seen: list[Any] = field(default_factory=list)


def page(lease: Lease, now: float, links: list[Any], state: str = "fetched") -> Completion:
    fetch = FetchRecord(
        lease.url, lease.url, 200, now, 5.0, "text/html", 100, False, None, None, None, None
    )
    return Completion(state=state, fetch=fetch, next_allowed_at=now + 1.0, discovered=links)


def finish(
    frontier: Frontier, trace: Trace, lease: Lease, completion: Completion, now: float
) -> None:
    notes = frontier.host_notes(lease.host_key, [WINDOW_NOTE])
    plan = plan_completion(lease, completion, notes, POLICY, now)
    trace.plans.append(plan)
    outcome = frontier.complete(lease, dataclasses.replace(completion, plan=plan), now)
    seen = None if outcome is None else (dict(outcome.rejections), sorted(outcome.admitted))
    trace.seen.append(("outcome", lease.url, seen))
    trace.seen.append(("notes", frontier.host_notes(lease.host_key, [WINDOW_NOTE])))


def next_page(frontier: Frontier, now: float) -> Lease:
    """The next page lease from ``now`` on (robots.txt leases answered: allow all)."""
    for _ in range(10):
        for lease in frontier.lease(now, 1, LEASE_SECONDS):
            if lease.kind is LeaseKind.PAGE:
                return lease
            assert frontier.complete_robots(lease, robots_ok(lease, now), now)
        ready = frontier.next_ready_at()
        assert ready is not None
        now = max(now, ready)
    raise AssertionError("no page lease")


def scenario(frontier: Frontier) -> Trace:
    trace = Trace()
    now = START
    frontier.add([cand(HOST, "/")], now)
    # Distinct priorities (ties are not this suite's subject), each page's links before the
    # last page's: unless they sink, as the flagged host's last ones do.
    rank = iter(range(500, 0, -1))
    for n in range(4):  # pages that mint more and more URLs: the window flags the host
        lease = next_page(frontier, now)
        # Each /gen- path is a URL template of its own; the /cal/ ones share one (cap 3).
        links = [
            cand(HOST, f"/gen-{chr(97 + n)}{chr(97 + i)}", 1, next(rank)) for i in range(3 + n)
        ]
        links += [cand(HOST, f"/cal/2031/0{n}/0{i}", 1, next(rank)) for i in range(2)]
        finish(frontier, trace, lease, page(lease, now, links), now)
        if n == 1:  # the same completion again: stale, nothing changes
            finish(frontier, trace, lease, page(lease, now, links), now)
        now += 2.0
    lease = next_page(frontier, now)
    finish(frontier, trace, lease, Completion(state="queued", next_allowed_at=now + 1.0), now)
    trace.seen.append(("next", frontier.next_ready_at()))
    order = []
    for _ in range(40):  # what is left, in lease order (across the day budget's wait)
        ready = frontier.next_ready_at()
        if ready is None:
            break
        now = max(now + 1.0, ready)
        lease = next_page(frontier, now)
        order.append(lease.url)
        finish(frontier, trace, lease, page(lease, now, []), now)
    trace.seen.append(("order", order))
    return trace


def test_the_same_plans_leave_the_same_state(make_frontier: FrontierFactory) -> None:
    engine = scenario(make_frontier(FrontierLimits()))
    reference = scenario(MemoryFrontier(FrontierLimits()))
    assert engine.plans == reference.plans
    assert engine.seen == reference.seen
    # The scenario exercised what it is about (so equal traces are not equal by emptiness).
    rejections = [s[2][0] for s in reference.seen if s[0] == "outcome" and s[2] is not None]
    assert any("budget_template" in r for r in rejections)
    assert any("budget_host_day" in r for r in rejections)
    assert any(p.after_links(3).sink for p in reference.plans)
    (order,) = [s[1] for s in reference.seen if s[0] == "order"]
    assert set(order[-6:]) == {f"{HOST}/gen-d{c}" for c in "abcdef"}  # sunk: last, not first
    assert sum(1 for s in reference.seen if s[0] == "outcome" and s[2] is None) == 1

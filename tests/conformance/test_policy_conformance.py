"""One policy-semantics suite, every engine: the crawl's policies mean the same on the memory
MemoryFrontier, SQLite, one Redis and a 3-master Redis Cluster.

The policy (which budget a URL falls under, what day it is) is pure code in ``frontier/``, which
plans each completion (frontier/plans.py) as the crawl does; each engine only applies the plan,
counting and comparing. These scenarios drive each engine on a virtual clock through its public
operations and read the outcome back the same way: what gets leased, and what each completion's
outcome says it refused.
"""

from __future__ import annotations

import dataclasses

import pytest

from crawlspace.frontier.aopic import Aopic
from crawlspace.frontier.budgets import DAY, WINDOW_NOTE, keyed_budgets
from crawlspace.frontier.plans import CompletionPolicy, plan_completion
from crawlspace.frontier.revisit import RevisitPolicy, plan_revisit
from crawlspace.plans import Outcome
from crawlspace.records import Completion, FetchRecord, Lease, LeaseKind, UrlCandidate
from crawlspace.store.base import Frontier, FrontierLimits
from tests.conformance.conftest import LEASE_SECONDS, FrontierFactory, cand, robots_ok

HOST = "http://a"


def page_done(lease: Lease, now: float, links: list[UrlCandidate] | None = None) -> Completion:
    """A fetched page (with its fetch record, as the crawl completes one) and its links."""
    fetch = FetchRecord(
        lease.url, lease.url, 200, now, 5.0, "text/html", 100, False, None, None, None, None
    )
    return Completion(
        state="fetched", fetch=fetch, next_allowed_at=now + 1.0, discovered=links or []
    )


def finish(
    frontier: Frontier,
    lease: Lease,
    completion: Completion,
    now: float,
    policy: CompletionPolicy = CompletionPolicy(),  # noqa: B008 - frozen, so sharing is safe
) -> Outcome | None:
    """Complete ``lease`` as the crawl does: planned by ``policy`` from the host's notes."""
    notes = frontier.host_notes(lease.host_key, [WINDOW_NOTE])
    plan = plan_completion(lease, completion, notes, policy, now)
    return frontier.complete(lease, dataclasses.replace(completion, plan=plan), now)


def open_host(frontier: Frontier, now: float) -> None:
    """Answer the host's robots.txt lease (allow all)."""
    (robots,) = frontier.lease(now, 1, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS
    assert frontier.complete_robots(robots, robots_ok(robots, now), now)


def drain(
    frontier: Frontier,
    now: float,
    limit: int = 100,
    policy: CompletionPolicy = CompletionPolicy(),  # noqa: B008 - frozen, so sharing is safe
) -> tuple[list[str], float]:
    """Lease and complete every page that becomes ready (robots.txt refetches allow all);
    (the pages' URLs in lease order, the clock)."""
    leased: list[str] = []
    for _ in range(limit):
        ready = frontier.next_ready_at()
        if ready is None:
            break
        now = max(now, ready)
        for lease in frontier.lease(now, 10, LEASE_SECONDS):
            if lease.kind is LeaseKind.ROBOTS:
                assert frontier.complete_robots(lease, robots_ok(lease, now), now)
                continue
            leased.append(lease.url)
            assert finish(frontier, lease, page_done(lease, now), now, policy)
    return leased, now


def test_the_template_budget_excludes_what_a_page_discovers_past_its_cap(
    make_frontier: FrontierFactory,
) -> None:
    frontier = make_frontier(FrontierLimits())
    policy = CompletionPolicy(budgets=keyed_budgets(3))
    frontier.add([cand(HOST, "/")], 0.0)
    open_host(frontier, 0.0)
    (home,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    days = [cand(HOST, f"/cal/2031/{d:02d}", depth=1) for d in range(1, 6)]
    about = cand(HOST, "/about", depth=1)
    outcome = finish(frontier, home, page_done(home, 0.0, [*days, about]), 0.0, policy)
    assert outcome is not None
    assert outcome.rejections == {"budget_template": 2}
    leased, now = drain(frontier, 1.0, policy=policy)
    assert sorted(leased) == sorted([about.url, *(c.url for c in days[:3])])
    # The refused ones are remembered: met again they are seen, not refused again; and the
    # template's counter stays full for new members.
    frontier.add([cand(HOST, "/again")], now)
    (page,) = frontier.lease(now + 5.0, 1, LEASE_SECONDS)
    later = page_done(page, now + 5.0, [days[4], cand(HOST, "/cal/2031/99", depth=2)])
    outcome = finish(frontier, page, later, now + 5.0, policy)
    assert outcome is not None
    assert outcome.rejections == {"budget_template": 1}
    assert drain(frontier, now + 10.0, policy=policy)[0] == []


def test_the_template_budget_counts_per_host(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    policy = CompletionPolicy(budgets=keyed_budgets(1))
    frontier.add([cand(HOST, "/")], 0.0)
    open_host(frontier, 0.0)
    (home,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    links = [cand(HOST, "/p/1", 1), cand(HOST, "/p/2", 1), cand("http://b", "/p/1", 1)]
    outcome = finish(frontier, home, page_done(home, 0.0, links), 0.0, policy)
    assert outcome is not None
    assert outcome.rejections == {"budget_template": 1}


def test_seeds_and_sitemaps_are_not_held_to_the_template_budget(
    make_frontier: FrontierFactory,
) -> None:
    frontier = make_frontier(FrontierLimits())  # (add() is given no plan: nothing counted)
    result = frontier.add([cand(HOST, f"/p/{i}") for i in range(3)], 0.0)
    assert (result.added, result.rejected) == (3, {})


def test_the_day_budget_holds_a_host_until_the_next_utc_day(
    make_frontier: FrontierFactory,
) -> None:
    start = 20_000 * DAY + 3600.0  # 01:00 UTC
    frontier = make_frontier(FrontierLimits())
    policy = CompletionPolicy(max_pages_per_host_per_day=2)
    frontier.add([cand(HOST, f"/{i}") for i in range(5)], start)
    open_host(frontier, start)
    spent: dict[str, int] = {}
    now = start
    for _ in range(2):
        (lease,) = frontier.lease(now, 1, LEASE_SECONDS)
        outcome = finish(frontier, lease, page_done(lease, now), now, policy)
        assert outcome is not None
        for reason, n in outcome.rejections.items():
            spent[reason] = spent.get(reason, 0) + n
        now += 1.0
    assert spent == {"budget_host_day": 1}  # counted once, when the budget is spent
    assert frontier.next_ready_at() == 20_001 * DAY
    assert frontier.lease(20_001 * DAY - 1.0, 1, LEASE_SECONDS) == []
    # A new day, a new budget: two more pages, then the host waits again.
    leased, _ = drain(frontier, 20_001 * DAY, limit=3, policy=policy)
    assert len(leased) == 2
    assert frontier.next_ready_at() == 20_002 * DAY


def test_a_retry_does_not_spend_the_day_budget(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    policy = CompletionPolicy(max_pages_per_host_per_day=1)
    frontier.add([cand(HOST, "/1"), cand(HOST, "/2")], 0.0)
    open_host(frontier, 0.0)
    (lease,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    retry = Completion(state="queued", next_allowed_at=1.0)
    assert finish(frontier, lease, retry, 0.0, policy)
    assert frontier.next_ready_at() == 1.0


def revisited(lease: Lease, now: float, text: str, etag: str | None = None) -> Completion:
    """A 200 whose text hashes to ``text``, planned by the crawl's revisit policy."""
    fetch = FetchRecord(
        lease.url, lease.url, 200, now, 5.0, "text/html", 100, False, None, None, None, None,
        text_sha256=text,
    )  # fmt: skip
    completion = Completion(state="fetched", fetch=fetch, next_allowed_at=now + 1.0, etag=etag)
    return dataclasses.replace(completion, revisit=plan_revisit(lease, completion, now, REVISITS))


def not_modified(lease: Lease, now: float) -> Completion:
    fetch = FetchRecord(
        lease.url, lease.url, 304, now, 5.0, None, 0, False, None, None, None, None
    )  # fmt: skip
    completion = Completion(state="not_modified", fetch=fetch, next_allowed_at=now + 1.0)
    return dataclasses.replace(completion, revisit=plan_revisit(lease, completion, now, REVISITS))


# Value left out (value_points 0): these check how engines apply a plan, not the value rule
# (tests/unit/test_revisit.py).
REVISITS = RevisitPolicy(
    min_interval=10.0, max_interval=1000.0, initial_interval=100.0, value_points=0.0
)


def test_a_fetched_url_is_visited_again_when_its_plan_says(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand(HOST, "/news")], 0.0)
    open_host(frontier, 0.0)
    (first,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert (first.version, first.revisit_interval, first.content_hash) == (1, None, None)
    assert finish(frontier, first, revisited(first, 0.0, "v1", etag='"e1"'), 0.0)
    assert frontier.next_due_at() == 100.0
    assert frontier.promote_due(99.0) == 0
    assert frontier.lease(99.0, 1, LEASE_SECONDS) == []
    assert frontier.promote_due(100.0) == 1
    assert frontier.promote_due(100.0) == 0  # once
    assert frontier.next_due_at() is None
    (second,) = frontier.lease(100.0, 1, LEASE_SECONDS)
    # A new visit of the same URL, carrying what the conditional GET and the plan need.
    assert (second.url, second.url_id, second.version) == (first.url, first.url_id, 2)
    assert (second.attempt, second.etag) == (1, '"e1"')
    assert (second.revisit_interval, second.content_hash) == (100.0, "v1")
    assert not finish(frontier, first, revisited(first, 100.0, "v1"), 100.0)  # fenced
    # Unchanged (304): the interval doubles; changed: it halves (frontier/revisit.py).
    assert finish(frontier, second, not_modified(second, 100.0), 100.0)
    assert frontier.next_due_at() == 300.0
    frontier.promote_due(300.0)
    (third,) = frontier.lease(300.0, 1, LEASE_SECONDS)
    assert (third.version, third.revisit_interval, third.content_hash) == (3, 200.0, "v1")
    assert finish(frontier, third, revisited(third, 300.0, "v2"), 300.0)
    assert frontier.next_due_at() == 400.0


def test_revisits_and_new_urls_share_a_host(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(revisit_share=0.5))
    frontier.add([cand(HOST, f"/old{i}") for i in range(4)], 0.0)
    open_host(frontier, 0.0)
    now = 0.0
    for _ in range(4):
        (lease,) = frontier.lease(now, 1, LEASE_SECONDS)
        assert finish(frontier, lease, revisited(lease, now, "x"), now)
        now += 1.0
    frontier.add([cand(HOST, f"/new{i}") for i in range(4)], now)
    assert frontier.promote_due(200.0) == 4
    order = []
    for step in range(8):
        (lease,) = frontier.lease(200.0 + step, 1, LEASE_SECONDS)
        order.append("r" if lease.version == 2 else "n")
        assert finish(frontier, lease, revisited(lease, 200.0 + step, "x"), 200.0 + step)
    assert order == ["r", "n", "r", "n", "r", "n", "r", "n"]


def test_only_finished_visits_are_revisited(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand(HOST, "/a"), cand(HOST, "/moved"), cand(HOST, "/private")], 0.0)
    open_host(frontier, 0.0)
    endings = {
        "/a": lambda lease, now: revisited(lease, now, "a"),
        "/moved": lambda lease, now: Completion("redirected", next_allowed_at=now + 1.0),
        "/private": lambda lease, now: Completion("excluded", reason="robots"),
    }
    now = 0.0
    for _ in range(3):
        (lease,) = frontier.lease(now, 1, LEASE_SECONDS)
        path = lease.url.removeprefix(HOST)
        completion = endings[path](lease, now)
        revisit = completion.revisit or plan_revisit(lease, completion, now, REVISITS)
        completion = dataclasses.replace(completion, revisit=revisit)
        assert finish(frontier, lease, completion, now)
        now += 1.0
    assert frontier.promote_due(10_000.0) == 1
    (lease,) = frontier.lease(10_000.0, 1, LEASE_SECONDS)
    assert lease.url == f"{HOST}/a"


def test_excluded_links_are_remembered_with_their_reason(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand(HOST, "/")], 0.0)
    open_host(frontier, 0.0)
    (home,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    completion = page_done(home, 0.0)
    completion = dataclasses.replace(
        completion, excluded=[(f"{HOST}/a/a/a/a", "path_repeat"), ("http://b/x", "scope")]
    )
    assert finish(frontier, home, completion, 0.0)
    # Met again (say as a sitemap entry), each is seen: never queued, never refused twice.
    again = frontier.add([cand(HOST, "/a/a/a/a"), cand("http://b", "/x")], 1.0)
    assert (again.added, again.already_seen, again.rejected) == (0, 2, {})
    assert drain(frontier, 1.0)[0] == []


def test_a_url_too_deep_is_admitted_when_a_shallower_link_appears(
    make_frontier: FrontierFactory,
) -> None:
    frontier = make_frontier(FrontierLimits())
    frontier.add([cand(HOST, "/"), cand(HOST, "/b")], 0.0)
    open_host(frontier, 0.0)
    (home,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    completion = page_done(home, 0.0)
    completion = dataclasses.replace(
        completion, excluded=[(f"{HOST}/deep", "depth"), (f"{HOST}/off", "excluded_pattern")]
    )
    assert finish(frontier, home, completion, 0.0)
    (b,) = frontier.lease(5.0, 1, LEASE_SECONDS)
    assert b.url == f"{HOST}/b"
    shallow = [cand(HOST, "/deep", depth=1), cand(HOST, "/off", depth=1)]
    assert finish(frontier, b, page_done(b, 5.0, shallow), 5.0)
    leased, _ = drain(frontier, 10.0)
    assert leased == [f"{HOST}/deep"]  # a rule's exclusion stays; a depth one is lifted


@pytest.mark.parametrize("weight", [5, 0])
def test_in_links_move_a_queued_url_earlier(make_frontier: FrontierFactory, weight: int) -> None:
    frontier = make_frontier(FrontierLimits())
    policy = CompletionPolicy(inlink_weight=weight, inlink_cap=10)
    frontier.add([cand(HOST, "/")], 0.0)
    open_host(frontier, 0.0)
    (home,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    links = [
        cand(HOST, "/p1", priority=10),
        cand(HOST, "/p2", priority=10),
        cand(HOST, "/x", priority=30),
        cand(HOST, "/y", priority=29),
    ]
    assert finish(frontier, home, page_done(home, 0.0, links), 0.0, policy)
    now = 1.0
    for _ in range(2):  # /p1 and /p2 both link to /x
        (page,) = frontier.lease(now, 1, LEASE_SECONDS)
        assert page.url in (f"{HOST}/p1", f"{HOST}/p2")
        done = page_done(page, now, [cand(HOST, "/x", priority=30)])
        assert finish(frontier, page, done, now, policy)
        now += 2.0
    leased, _ = drain(frontier, now, policy=policy)
    assert leased == ([f"{HOST}/x", f"{HOST}/y"] if weight else [f"{HOST}/y", f"{HOST}/x"])


def test_a_host_that_keeps_minting_urls_sinks_its_new_links(
    make_frontier: FrontierFactory,
) -> None:
    frontier = make_frontier(FrontierLimits())
    policy = CompletionPolicy(
        discovery_window=2, discovery_trap_ratio=1.0, trap_priority_penalty=100
    )
    frontier.add([cand(HOST, "/")], 0.0)
    open_host(frontier, 0.0)
    now, minted = 0.0, []
    for n in range(4):  # each page finds three new pages; the ratio never falls
        (page,) = frontier.lease(now, 1, LEASE_SECONDS)
        links = [cand(HOST, f"/gen{n}/{i}", depth=1) for i in range(3)]
        minted.append([c.url for c in links])
        assert finish(frontier, page, page_done(page, now, links), now, policy)
        now += 2.0
    leased, _ = drain(frontier, now, policy=policy)
    # Flagged at the end of the second window (page 4): its links sink behind all the others.
    assert sorted(leased[-3:]) == sorted(minted[3])
    # (The loop itself leased "/" and the three /gen0 pages.)
    assert set(leased[:-3]) == {*minted[1], *minted[2]}


@pytest.mark.parametrize("tax", [0.1, None])
def test_aopic_cash_moves_a_url_linked_by_a_richer_path_earlier(
    make_frontier: FrontierFactory, tax: float | None
) -> None:
    # The seed's cash (1.0, less the tax) is split over /a, /b, /c (0.3 each); /a then hands its
    # 0.3 and Lambda's payment on to /c alone, so /c holds about twice /b's cash and goes first.
    # Under the score policy (tax None) /b, found before /c at the same depth, goes first.
    frontier = make_frontier(FrontierLimits(cash=None if tax is None else Aopic(tax)))
    policy = CompletionPolicy(inlink_weight=0)
    frontier.add([cand(HOST, "/", priority=0, depth=0)], 0.0)
    open_host(frontier, 0.0)
    (home,) = frontier.lease(0.0, 1, LEASE_SECONDS)
    assert home.url == f"{HOST}/"
    links = [cand(HOST, p, depth=1, priority=10) for p in ("/a", "/b", "/c")]
    assert finish(frontier, home, page_done(home, 0.0, links), 0.0, policy)
    (first,) = frontier.lease(1.0, 1, LEASE_SECONDS)
    assert first.url == f"{HOST}/a"
    on = [cand(HOST, "/c", depth=2, priority=20)]
    assert finish(frontier, first, page_done(first, 1.0, on), 1.0, policy)
    leased, _ = drain(frontier, 2.0, policy=policy)
    assert leased == ([f"{HOST}/c", f"{HOST}/b"] if tax else [f"{HOST}/b", f"{HOST}/c"])

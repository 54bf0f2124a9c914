"""The embedded store remembers URLs it need not look up again (store/sqlite/known.py): a link
on every page of a site is looked up once, not once a page. What it remembers must never change
an answer: a URL excluded for depth stays open to a shallower link however often it was
excluded, a rolled-back transaction teaches nothing, and in-link counts stop where they did."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from crawlspace.dedup.seen import dedup_seen_filter
from crawlspace.frontier.plans import CompletionPolicy, plan_completion
from crawlspace.records import Completion, FetchRecord, Lease, LeaseKind, UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.store import SqliteStore
from tests.conformance.conftest import LEASE_SECONDS, cand, robots_ok

HOST = "http://a.example"


def open_store(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(
        tmp_path / "crawl.db", FrontierLimits(), seen_filter=dedup_seen_filter(10_000, 0.001)
    )
    store.add([cand(HOST, "/")], 0.0)
    (robots,) = store.lease(0.0, 1, LEASE_SECONDS)
    assert robots.kind is LeaseKind.ROBOTS
    assert store.complete_robots(robots, robots_ok(robots, 0.0), 0.0)
    return store


def finish(
    store: SqliteStore,
    lease: Lease,
    now: float,
    links: list[UrlCandidate] | None = None,
    *,
    excluded: list[tuple[str, str]] | None = None,
    policy: CompletionPolicy = CompletionPolicy(),  # noqa: B008 - frozen
) -> None:
    fetch = FetchRecord(
        lease.url, lease.url, 200, now, 5.0, "text/html", 100, False, None, None, None, None
    )
    completion = Completion(
        state="fetched",
        fetch=fetch,
        next_allowed_at=now,
        discovered=links or [],
        excluded=excluded or [],
    )
    plan = plan_completion(lease, completion, {}, policy, now)
    assert store.complete(lease, dataclasses.replace(completion, plan=plan), now) is not None


def next_page(store: SqliteStore, now: float) -> Lease:
    (lease,) = store.lease(now, 1, LEASE_SECONDS)
    assert lease.kind is LeaseKind.PAGE
    return lease


def test_a_url_excluded_for_depth_on_every_page_is_admitted_by_a_shallower_link(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path)
    try:
        pages = [cand(HOST, f"/p{n}", depth=1) for n in range(4)]
        finish(store, next_page(store, 0.0), 0.0, pages)
        # Every page excludes the same two links: one for depth, one by a rule.
        refused = [(f"{HOST}/deep", "depth"), ("http://elsewhere.example/", "scope")]
        for n in range(3):
            finish(store, next_page(store, 1.0 + n), 1.0 + n, excluded=refused)
        # The last page links to /deep at a depth the crawl takes, and to the other again.
        shallow = [cand(HOST, "/deep", depth=2), cand("http://elsewhere.example", "/", depth=2)]
        finish(store, next_page(store, 5.0), 5.0, shallow)
        assert next_page(store, 6.0).url == f"{HOST}/deep"
        state = store._db.execute(
            "SELECT state, reason FROM urls WHERE url = 'http://elsewhere.example/'"
        ).fetchone()
        assert state == ("excluded", "scope")  # a rule's exclusion stays
    finally:
        store.close()


def learn_then_fail(store: SqliteStore) -> None:
    with store._transaction() as db:
        store.add_in(db, [cand(HOST, "/x", depth=1)], 1.0, admitted_urls=[])
        store.record_excluded(db, [(f"{HOST}/y", "scope")], 1, 1.0)
        raise RuntimeError("the batch fails after its links were added")


def test_a_url_learned_in_a_rolled_back_transaction_is_added_again(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        with pytest.raises(RuntimeError):
            learn_then_fail(store)
        with store._transaction() as db:
            admitted: list[str] = []
            result = store.add_in(db, [cand(HOST, "/x", depth=1)], 2.0, admitted_urls=admitted)
            store.record_excluded(db, [(f"{HOST}/y", "depth")], 1, 2.0)
        assert (result.added, admitted) == (1, [f"{HOST}/x"])
        reason = store._db.execute("SELECT reason FROM urls WHERE url = ?", (f"{HOST}/y",))
        assert reason.fetchone() == ("depth",)
    finally:
        store.close()


def test_in_links_past_the_cap_stop_counting_and_moving(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    policy = CompletionPolicy(inlink_weight=2, inlink_cap=3)
    try:
        pages = [cand(HOST, f"/p{n}", depth=1, priority=1) for n in range(8)]
        target = cand(HOST, "/x", depth=2, priority=50)
        finish(store, next_page(store, 0.0), 0.0, pages, policy=policy)
        for n in range(8):  # every page links to /x: the first made it, three move it
            finish(store, next_page(store, 1.0 + n), 1.0 + n, [target], policy=policy)
        inlinks, priority = store._db.execute(
            "SELECT inlinks, priority FROM urls WHERE url = ?", (target.url,)
        ).fetchone()
        assert (inlinks, priority) == (4, 50 - 3 * 2)
    finally:
        store.close()

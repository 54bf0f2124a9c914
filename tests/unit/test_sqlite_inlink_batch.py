"""A group commit's in-link steps are applied once per target at the batch's end
(store/sqlite/priority.py Ranking.batch): the counts and priorities must be those the same
completions give one by one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from crawlspace.frontier.plans import CompletionPolicy, plan_completion
from crawlspace.records import Completion, FetchRecord, Lease, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.store import SqliteStore

PAGES = [f"http://p{i}.test" for i in range(4)]
TARGET = "http://t.test"
POLICY = CompletionPolicy(inlink_weight=5, inlink_cap=3)


def cand(url: str, priority: int) -> UrlCandidate:
    return UrlCandidate(url, url.split("/", 3)[0] + "//" + url.split("/")[2], 1, priority)


def done(lease: Lease, links: list[UrlCandidate]) -> Completion:
    fetch = FetchRecord(lease.url, lease.url, 200, 1.0, 5.0, "text/html", 9, False, *[None] * 4)
    completion = Completion("fetched", fetch=fetch, next_allowed_at=2.0, discovered=links)
    plan = plan_completion(lease, completion, {}, POLICY, 1.0)
    return dataclasses.replace(completion, plan=plan)


def crawl(path: Path, *, batched: bool) -> dict[str, tuple[int, int, str]]:
    store = SqliteStore(path, FrontierLimits())
    # Targets already at 0, 1, 2 and 3 in-links (the cap is 3), and two at priority 2 (the
    # floor at 0 is reached part way; the first is leased with the pages: not queued).
    targets = [cand(f"{TARGET}/t{i}", 30 if i < 4 else 2) for i in range(6)]
    store.add([cand(f"{page}/", 0) for page in PAGES] + targets, 0.0)
    for url, n in zip([t.url for t in targets[:4]], range(4), strict=True):
        store._db.execute("UPDATE urls SET inlinks = ? WHERE url = ?", (n, url))
    leases = []
    for lease in store.lease(0.0, 10, 60.0):
        record = RobotsRecord(lease.host_key, 404, "allow_all", b"", 0.0, 9e9)
        assert lease.kind is LeaseKind.ROBOTS
        assert store.complete_robots(lease, record, 0.0)
    leases = [lease for lease in store.lease(0.0, 10, 60.0) if lease.host_key != TARGET]
    assert len(leases) == len(PAGES)
    # Every page links every target; the last two pages link the first target twice more.
    items = []
    for n, lease in enumerate(leases):
        links = [cand(t.url, 40) for t in targets] + [cand(targets[0].url, 40)] * (n // 2)
        items.append((lease, done(lease, links)))
    if batched:
        store.complete_many(items, 1.0)
    else:
        for lease, completion in items:
            store.complete(lease, completion, 1.0)
    rows = store._db.execute("SELECT url, inlinks, priority, state FROM urls").fetchall()
    store.close()
    return {url: (inlinks, priority, state) for url, inlinks, priority, state in rows}


def test_a_batch_gives_the_counts_and_priorities_of_one_by_one(tmp_path: Path) -> None:
    one_by_one = crawl(tmp_path / "a.db", batched=False)
    batched = crawl(tmp_path / "b.db", batched=True)
    assert batched == one_by_one
    moved = [one_by_one[f"{TARGET}/t{i}"] for i in range(6)]
    assert [inlinks for inlinks, _, _ in moved][:4] == [6, 5, 6, 7]  # 0+6, 1+4, 2+4, 3+4
    # 5 points a page while the count before it is in [1, 3]; never below 0; a URL not queued
    # (t4, its host's head, was leased with the pages) keeps its priority.
    assert [priority for _, priority, _ in moved] == [15, 15, 20, 25, 2, 0]
    assert moved[4][2] == "leased"

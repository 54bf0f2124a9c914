"""A group commit that rolls back leaves no trace in the store's memory (store/sqlite/store.py).

crawl/commit.py retries the completions of a failed batch one by one. Whatever the failed batch
taught
the store's in-memory state must go with its rollback: a host id cached for a host row that no
longer exists filed URLs under the id the next new host got (leased under that host's token and
robots.txt), and budget rejections added to the completion were counted twice (the store now
reports them in its outcome and leaves the completion as given).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crawlspace.dedup.seen import dedup_seen_filter
from crawlspace.lifecycle import IllegalTransition
from crawlspace.records import Completion, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.store import SqliteStore

A, B, C, D = (f"http://{name}.example" for name in "abcd")


def allow_all(store: SqliteStore, now: float) -> None:
    for lease in store.lease(now, 10, 100.0):
        assert lease.kind is LeaseKind.ROBOTS
        record = RobotsRecord(lease.host_key, 404, "allow_all", b"", now, 1e9)
        assert store.complete_robots(lease, record, now)


def test_a_rolled_back_batch_leaves_no_host_id_and_no_double_count(tmp_path: Path) -> None:
    path = tmp_path / "crawl.db"
    store = SqliteStore(
        path, FrontierLimits(max_pages_per_host=2), seen_filter=dedup_seen_filter(1000, 0.01)
    )
    try:
        store.add([UrlCandidate(A + "/1", A, 0), UrlCandidate(D + "/1", D, 0)], 0.0)
        allow_all(store, 0.0)
        la, ld = sorted(store.lease(1.0, 10, 100.0), key=lambda lease: lease.host_key)
        # Three links to a host first seen here, one over its budget of two pages.
        links = [UrlCandidate(f"{B}/{n}", B, 1) for n in range(3)]
        good = Completion(state="redirected", discovered=links, next_allowed_at=1.0)
        bad = Completion(state="bogus")  # any exception inside the group's transaction
        with pytest.raises(IllegalTransition):
            store.complete_many([(la, good), (ld, bad)], 2.0)
        assert good.rejections == {}  # untouched by the batch that rolled back
        outcome = store.complete(la, good, 2.0)  # crawl/commit.py's retry, one by one
        assert outcome is not None
        assert outcome.rejections == {"budget_host": 1}
        store.add([UrlCandidate(C + "/y", C, 0)], 3.0)

        db = sqlite3.connect(path)
        try:
            hosts = dict(db.execute("SELECT host_key, id FROM hosts"))
            queued = dict(db.execute("SELECT host_key, queued FROM hosts"))
            filed = dict(db.execute("SELECT url, host_id FROM urls WHERE state = 'queued'"))
            (rejected,) = db.execute(
                "SELECT value FROM counters WHERE name = 'rejected.budget_host'"
            ).fetchone()
        finally:
            db.close()
        assert len(set(hosts.values())) == len(hosts) == 4
        assert filed == {f"{B}/0": hosts[B], f"{B}/1": hosts[B], f"{C}/y": hosts[C]}
        assert queued[B] == 2
        assert queued[C] == 1
        assert rejected == 1
        # Each host's robots.txt first, then its own URLs under its own token.
        robots = store.lease(4.0, 10, 100.0)
        assert sorted(lease.host_key for lease in robots) == [B, C]
        assert {lease.kind for lease in robots} == {LeaseKind.ROBOTS}
    finally:
        store.close()

"""Reopening crawl.db with other limits (store/sqlite/store.py): the new ones hold for known
hosts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crawlspace.frontier.budgets import WINDOW_NOTE, DiscoveryWindow, decode_window
from crawlspace.ops.stats import trap_stats
from crawlspace.records import LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.store import SqliteStore

SITE = "http://a.example"


def page_leases(store: SqliteStore, now: float) -> int:
    return sum(1 for lease in store.lease(now, 10, 100.0) if lease.kind is LeaseKind.PAGE)


def test_a_resume_with_a_lower_per_host_allowance_applies_it_to_known_hosts(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crawl.db"
    store = SqliteStore(path, FrontierLimits(max_in_flight_per_host=4))
    try:
        store.add([UrlCandidate(f"{SITE}/{n}", SITE, 0) for n in range(8)], 0.0)
        (robots,) = store.lease(0.0, 10, 100.0)
        record = RobotsRecord(SITE, 404, "allow_all", b"", 0.0, 1e9)
        assert store.complete_robots(robots, record, 0.0)
        assert page_leases(store, 1.0) == 1  # one lease per host per call
        assert page_leases(store, 1.0) == 1  # a second one while the first is out: allowed
        store.recover(2.0)
    finally:
        store.close()
    store = SqliteStore(path, FrontierLimits(max_in_flight_per_host=1))
    try:
        assert page_leases(store, 3.0) == 1
        assert page_leases(store, 3.0) == 0  # the host's one slot is taken
    finally:
        store.close()


def test_the_host_id_cache_is_bounded_and_ids_stay_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("crawlspace.store.sqlite.records.HOST_ID_CACHE", 3)
    store = SqliteStore(tmp_path / "crawl.db")
    try:
        hosts = [f"http://h{n}.example" for n in range(10)]
        for round_ in range(2):  # the second round finds every host again after evictions
            store.add([UrlCandidate(f"{h}/{round_}", h, 0) for h in hosts], 0.0)
            assert len(store.records._host_ids) <= 3
        filed = store._db.execute(
            "SELECT h.host_key, COUNT(*), MAX(h.queued) FROM urls u JOIN hosts h"
            " ON h.id = u.host_id GROUP BY h.host_key"
        ).fetchall()
    finally:
        store.close()
    assert sorted(filed) == sorted((h, 2, 2) for h in hosts)


def test_an_older_files_discovery_windows_become_host_notes(tmp_path: Path) -> None:
    """A crawl.db written before the discovery window became a host note kept it in a
    host_discovery table: reopened, each window is its host's note, as the plan reads it
    (frontier/budgets.py decode_window), flags included, and stats still report the flag."""
    path = tmp_path / "crawl.db"
    store = SqliteStore(path)
    try:
        store.add(
            [
                UrlCandidate(f"{SITE}/", SITE, 0),
                UrlCandidate("http://b.example/", "http://b.example", 0),
            ],
            0.0,
        )
    finally:
        store.close()
    db = sqlite3.connect(path)
    try:
        db.executescript(
            "CREATE TABLE host_discovery (host_id INTEGER PRIMARY KEY, pages INTEGER NOT NULL,"
            " new_urls INTEGER NOT NULL, last_ratio REAL, flagged INTEGER NOT NULL);"
            "INSERT INTO host_discovery SELECT id, 3, 41, 2.5, 1 FROM hosts"
            " WHERE host_key = 'http://a.example';"
            "INSERT INTO host_discovery SELECT id, 7, 2, NULL, 0 FROM hosts"
            " WHERE host_key = 'http://b.example';"
        )
        db.commit()
    finally:
        db.close()
    store = SqliteStore(path)
    try:
        notes_a = store.host_notes(SITE, [WINDOW_NOTE])
        notes_b = store.host_notes("http://b.example", [WINDOW_NOTE])
    finally:
        store.close()
    assert decode_window(notes_a[WINDOW_NOTE]) == DiscoveryWindow(3, 41, 2.5, True)
    assert decode_window(notes_b[WINDOW_NOTE]) == DiscoveryWindow(7, 2, None, False)
    db = sqlite3.connect(path)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "host_discovery" not in tables
        assert trap_stats(db)["flagged_hosts"] == [{"host": SITE, "discovery_ratio": 2.5}]
    finally:
        db.close()

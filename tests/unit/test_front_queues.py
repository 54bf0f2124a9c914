"""The front bands (bands.py): pure, and the same in SQL as in Python."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from crawlspace.bands import REVISIT_BAND, FrontQueues
from crawlspace.frontier.aopic import SEED_CASH, cash_priority
from crawlspace.frontier.front_queues import front_queues
from crawlspace.records import UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.store import SqliteStore


def test_score_bands_are_link_depths_and_the_last_holds_the_rest() -> None:
    front = front_queues("score", 60.0)
    assert [front.band(p) for p in (0, 9, 10, 25, 89, 90, 500)] == [0, 0, 1, 2, 8, 9, 9]
    # A due revisit keeps the band of the priority it was queued with.
    assert front.band(25 - REVISIT_BAND) == 2


def test_aopic_bands_are_halvings_of_cash_below_a_seed() -> None:
    front = front_queues("aopic", 60.0)
    assert front.band(cash_priority(SEED_CASH)) == 0
    assert front.band(cash_priority(SEED_CASH * 4)) == 0
    assert front.band(cash_priority(SEED_CASH / 8)) == 3


def test_rank_trades_bands_for_waiting() -> None:
    front = FrontQueues(aging=30.0)
    assert front.rank(2, 100.0) == front.rank(0, 160.0)
    heads = [(3, 0.0, "old-deep"), (0, 95.0, "new-shallow"), (1, 50.0, "mid")]
    assert front.merge(heads, 3) == ["mid", "old-deep", "new-shallow"]
    assert FrontQueues(aging=0.0).merge(heads, 2) == ["old-deep", "mid"]


@pytest.mark.parametrize("policy", ["score", "aopic"])
def test_the_sql_band_is_the_python_band(policy: str) -> None:
    front = front_queues(policy, 60.0)
    db = sqlite3.connect(":memory:")
    priorities = [-REVISIT_BAND, 3 - REVISIT_BAND, 0, 1, 9, 10, 11, 99, 10**6, 63_000, 64_000]
    priorities += [64_999, 65_000, 70_123, 80_000, cash_priority(0.0)]
    for p in priorities:
        (band,) = db.execute(f"SELECT {front.sql_band(':p')}", {"p": p}).fetchone()
        assert band == front.band(p), p


def test_invalid_aging_is_refused() -> None:
    with pytest.raises(ValueError, match="host_priority_aging"):
        FrontQueues(aging=-1.0)
    with pytest.raises(ValueError, match="host_priority_aging"):
        FrontQueues(aging=float("inf"))


def bands(path: Path) -> dict[str, tuple[int | None, int]]:
    db = sqlite3.connect(path)
    rows = db.execute("SELECT host_key, head_priority, band FROM hosts").fetchall()
    db.close()
    return {key: (head, band) for key, head, band in rows}


def test_sqlite_keeps_each_hosts_head_and_recomputes_bands_when_they_change(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crawl.db"
    store = SqliteStore(path, FrontierLimits(front=front_queues("score", 60.0)))
    store.add(
        [
            UrlCandidate("http://a/1", "http://a", 3, 35),
            UrlCandidate("http://a/2", "http://a", 1, 15),
            UrlCandidate("http://b/1", "http://b", 9, 95),
        ],
        0.0,
    )
    store.close()
    assert bands(path) == {"http://a": (15, 1), "http://b": (95, 9)}
    # Reopened with other bands (AOPIC's): every host's band is recomputed from its head.
    store = SqliteStore(path, FrontierLimits(front=front_queues("aopic", 60.0)))
    store.close()
    assert bands(path) == {"http://a": (15, 0), "http://b": (95, 0)}

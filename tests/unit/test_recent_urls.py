"""The embedded store's memory of URLs it need not look up again (store/sqlite/known.py)."""

from __future__ import annotations

from crawlspace.store.sqlite.known import RecentUrls


def test_what_a_transaction_learns_is_known_at_once_and_kept_only_if_it_commits() -> None:
    recent = RecentUrls(size=8)
    recent.learn(["a", "b"])
    assert {"a", "b"} <= {url for url in "abc" if url in recent}
    recent.rollback()
    assert not {url for url in "abc" if url in recent}
    recent.learn(["c"])
    recent.commit()
    recent.rollback()  # a later rollback does not take back what committed
    assert "c" in recent


def test_it_holds_at_most_two_generations_and_keeps_the_urls_that_repeat() -> None:
    recent = RecentUrls(size=4)
    recent.learn(["nav"])
    recent.commit()
    for n in range(40):
        recent.learn([f"page{n}"])
        recent.commit()
        assert "nav" in recent  # met on every page: carried into each newer generation
    assert len(recent) <= 2 * 4
    assert "page0" not in recent  # met once, long ago: forgotten (looked up again)
    assert "page39" in recent

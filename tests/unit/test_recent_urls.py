"""The embedded store's memory of URLs it need not look up again (store/sqlite/known.py)."""

from __future__ import annotations

from crawlspace.store.sqlite.known import RecentUrls


def known(recent: RecentUrls, urls: str) -> set[str]:
    return {url for url in urls if url in recent}


def test_what_a_transaction_learns_is_known_at_once_and_kept_only_if_it_commits() -> None:
    recent = RecentUrls(size=8)
    recent.learn(["a"])
    recent.commit()
    recent.learn(["a", "b", "c"])
    assert known(recent, "abcd") == {"a", "b", "c"}
    recent.rollback()  # takes back what it learned, not what was known before
    assert known(recent, "abcd") == {"a"}
    recent.learn(["d"])
    recent.commit()
    recent.rollback()  # a later rollback does not take back what committed
    assert known(recent, "abcd") == {"a", "d"}


def test_it_holds_at_most_its_size_and_forgets_the_oldest_first() -> None:
    recent = RecentUrls(size=4)
    for n in range(10):
        recent.learn([f"page{n}", "nav"])
        recent.commit()
        assert len(recent) <= 4
    assert set(recent) == {"page6", "page7", "page8", "page9"}
    recent.learn(["nav"])  # forgotten, so looked up again and learned again
    recent.commit()
    assert "nav" in recent
    assert "page6" not in recent

"""The rendering tier's crawl-wide budget (limits.py RenderBudget), the same on every engine:
renders are taken while both totals are under their caps, browser seconds added as renders end;
a second frontier on the same store (another worker) sees the same totals."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawlspace.limits import RenderBudget
from crawlspace.store.base import FrontierLimits
from crawlspace.store.sqlite.store import SqliteStore
from tests.conformance.conftest import FrontierFactory


def test_renders_are_taken_under_the_page_cap(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(render=RenderBudget(max_pages=2)))
    assert frontier.reserve_render() == (None, 1, 0.0)
    frontier.spend_render(1.5)
    assert frontier.reserve_render() == (None, 2, 1.5)
    # The cap reached: refused, and nothing is taken however often it is asked.
    assert frontier.reserve_render() == ("crawl_pages", 2, 1.5)
    assert frontier.reserve_render() == ("crawl_pages", 2, 1.5)


def test_renders_stop_once_their_seconds_are_spent(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits(render=RenderBudget(max_seconds=10.0)))
    why, pages, _ = frontier.reserve_render()
    assert (why, pages) == (None, 1)
    frontier.spend_render(6.25)
    assert frontier.reserve_render()[:2] == (None, 2)
    frontier.spend_render(3.75)
    why, pages, seconds = frontier.reserve_render()
    assert (why, pages) == ("crawl_seconds", 2)
    assert seconds == pytest.approx(10.0)


def test_no_budget_takes_every_render(make_frontier: FrontierFactory) -> None:
    frontier = make_frontier(FrontierLimits())
    assert [frontier.reserve_render()[0] for _ in range(5)] == [None] * 5


def test_workers_share_the_render_budget(request: pytest.FixtureRequest) -> None:
    """Two frontiers on one Redis namespace (two workers): one budget between them."""
    from crawlspace.store.redis.frontier import RedisFrontier
    from tests.conformance.conftest import REDIS_BUCKETS, fresh_namespace

    client = request.getfixturevalue("redis_cluster_client")
    ns = fresh_namespace()
    limits = FrontierLimits(render=RenderBudget(max_pages=3, max_seconds=100.0))
    first, second = (
        RedisFrontier(client, limits, namespace=ns, buckets=REDIS_BUCKETS) for _ in range(2)
    )
    assert first.reserve_render()[0] is None
    assert second.reserve_render()[0] is None
    second.spend_render(2.0)
    assert first.reserve_render() == (None, 3, 2.0)
    assert second.reserve_render()[0] == "crawl_pages"


def test_a_resumed_crawl_counts_its_earlier_renders(tmp_path: Path) -> None:
    """The embedded engine keeps the totals in memory, from the crawl's counters on resume:
    renders that ended (rendered or failed) and their browser time."""
    limits = FrontierLimits(render=RenderBudget(max_pages=4, max_seconds=60.0))
    store = SqliteStore(tmp_path / "crawl.db", limits)
    store.bump_counters({"render.pages": 2, "render.failed": 1, "render.ms": 12_500})
    store.close()
    again = SqliteStore(tmp_path / "crawl.db", limits)
    assert again.reserve_render() == (None, 4, 12.5)
    assert again.reserve_render() == ("crawl_pages", 4, 12.5)
    again.close()

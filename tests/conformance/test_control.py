"""The operator's control channel (store/control.py) on both of its carriers, a crawl
directory's control.db and a shared frontier's Redis keys (one Redis and a 3-master cluster):
a pause holds until a resume, a stop is dated, and each seed asked for is taken once however
many processes take."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from crawlspace.store.control import CrawlControl, FileControl, RedisControl
from tests.conformance.conftest import fresh_namespace


@pytest.fixture(params=["file", "redis", "redis-cluster"])
def make_control(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "file":
        return lambda: FileControl(tmp_path / "control.db")
    name = "redis_single_client" if request.param == "redis" else "redis_cluster_client"
    client = request.getfixturevalue(name)
    namespace = fresh_namespace()
    return lambda: RedisControl(client, namespace)


def test_a_pause_holds_for_every_reader_until_a_resume(make_control: Any) -> None:
    dashboard, crawl = make_control(), make_control()  # two processes' views
    try:
        assert not crawl.state().paused
        dashboard.pause()
        assert crawl.state().paused
        assert make_control().state().paused  # a process that joins later sees it too
        dashboard.resume()
        assert not crawl.state().paused
    finally:
        dashboard.close()
        crawl.close()


def test_a_stop_is_dated(make_control: Any) -> None:
    control: CrawlControl = make_control()
    assert control.state().stop_asked_at is None
    before = time.time()
    control.stop()
    stopped = control.state().stop_asked_at
    assert stopped is not None
    assert before <= stopped <= time.time()
    control.close()


def test_each_seed_is_taken_once(make_control: Any) -> None:
    dashboard, first, second = make_control(), make_control(), make_control()
    dashboard.add_seeds([f"http://s{i}.test/" for i in range(5)])
    taken = first.take_seeds()
    dashboard.add_seeds(["http://late.test/"])
    taken += second.take_seeds() + first.take_seeds()
    assert taken == [f"http://s{i}.test/" for i in range(5)] + ["http://late.test/"]
    assert second.take_seeds() == []
    for control in (dashboard, first, second):
        control.close()

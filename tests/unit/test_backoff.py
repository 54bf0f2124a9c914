from __future__ import annotations

import pytest

from crawlspace.frontier.backoff import BackoffPolicy

POLICY = BackoffPolicy(
    base_seconds=5.0,
    max_seconds=3600.0,
    jitter=0.25,
    retry_seconds=2.0,
    pause_after=3,
    pause_seconds=300.0,
)


def test_retry_after_is_honoured_and_capped() -> None:
    assert POLICY.on_throttled(0, 0, 120.0, rand=0.9).wait == 120.0
    assert POLICY.on_throttled(0, 0, 86400.0 * 7, rand=0.9).wait == 3600.0
    assert POLICY.on_throttled(0, 0, -5.0, rand=0.9).wait == 0.0


def test_backoff_without_retry_after_grows_with_jitter() -> None:
    waits = [POLICY.on_throttled(level, 0, None, rand=0.5).wait for level in range(4)]
    assert waits == [5.0, 10.0, 20.0, 40.0]
    low = POLICY.on_throttled(2, 0, None, rand=0.0).wait
    high = POLICY.on_throttled(2, 0, None, rand=1.0).wait
    assert low == pytest.approx(15.0)
    assert high == pytest.approx(25.0)


def test_throttling_widens_the_gap_and_success_narrows_it_back() -> None:
    level = 0
    for _ in range(3):
        level = POLICY.on_throttled(level, 0, None, rand=0.5).level
    assert POLICY.gap_multiplier(level) == 8.0
    for expected in (4.0, 2.0, 1.0, 1.0):
        level = POLICY.on_success(level).level
        assert POLICY.gap_multiplier(level) == expected
    assert POLICY.on_throttled(POLICY.max_level, 0, None, 0.5).level == POLICY.max_level


def test_failures_retry_exponentially_then_pause_the_host() -> None:
    first = POLICY.on_failure(0, 0, attempt=1, rand=0.5)
    assert (first.failures, first.wait) == (1, 2.0)
    second = POLICY.on_failure(0, 1, attempt=2, rand=0.5)
    assert (second.failures, second.wait) == (2, 4.0)
    third = POLICY.on_failure(0, 2, attempt=3, rand=0.5)
    assert third.failures == 3
    assert third.wait == 300.0, "a streak of failures pauses the host"
    fourth = POLICY.on_failure(0, 3, attempt=1, rand=0.5)
    assert fourth.wait == 600.0
    assert POLICY.on_success(0).failures == 0


def test_retry_after_parsing() -> None:
    from crawlspace.crawl.responses import parse_retry_after

    now = 1_700_000_000.0
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after(" 1.5 ", now) == 1.5
    assert parse_retry_after("Tue, 14 Nov 2023 22:13:40 GMT", now) == pytest.approx(20.0)
    assert parse_retry_after("Tue, 14 Nov 2023 22:10:00 GMT", now) == 0.0
    for bad in ("", None, "soon", "-5", "nan"):
        assert parse_retry_after(bad, now) is None

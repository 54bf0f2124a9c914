from __future__ import annotations

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.fetch.transport import FetchResponse
from crawlspace.frontier.backoff import BackoffPolicy
from crawlspace.records import Lease, LeaseKind

POLICY = BackoffPolicy(
    base_seconds=5.0,
    max_seconds=3600.0,
    jitter=0.25,
    retry_seconds=2.0,
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


def test_failures_double_the_hosts_wait_per_failure_in_a_row() -> None:
    streak, waits = 0, []
    for _ in range(6):
        wait = POLICY.on_failure(0, streak, rand=0.5)
        streak = wait.failures
        waits.append(wait.wait)
    # A 35 s outage is probed at about 2, 6, 14, 30 and 62 s: no pause of minutes.
    assert waits == [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    assert streak == 6
    assert POLICY.on_failure(0, 40, rand=0.5).wait == 3600.0, "capped at max_seconds"
    assert POLICY.on_failure(0, 10_000, rand=1.0).wait == 3600.0, "even jittered, huge streaks"
    assert POLICY.on_failure(0, 2, rand=0.0).wait == pytest.approx(6.0)
    assert POLICY.on_failure(0, 2, rand=1.0).wait == pytest.approx(10.0)
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


def test_a_throttling_streak_begins_at_its_first_answer_and_ends_at_any_other() -> None:
    from crawlspace.frontier.backoff import throttle_note, throttled_since

    assert throttle_note(None, True, 100.5) == "100.5"  # a streak begins
    assert throttle_note(100.5, True, 130.0) is None  # it goes on: the note stays
    assert throttle_note(100.5, False, 140.0) == ""  # any other answer ends it
    assert throttle_note(None, False, 150.0) is None  # nothing to end
    assert throttled_since("100.5") == 100.5
    assert throttled_since("") is None
    assert throttled_since(None) is None


def _answer(status: int, ended_at: float, retry_after: str | None = "1") -> FetchResponse:
    headers = [] if retry_after is None else [("Retry-After", retry_after)]
    return FetchResponse(
        "http://h.test/a", status, "X", headers, b"", b"", [], ended_at - 0.1, ended_at, 0.1
    )


def _lease(attempt: int) -> Lease:
    return Lease(LeaseKind.PAGE, "l", "http://h.test", "http://h.test/a", 1, 1, attempt, 0, 0, 1e12)


def test_throttled_urls_are_tried_again_until_the_streak_outlasts_its_cap() -> None:
    from crawlspace.crawl.responses import retry_or_fail

    config = CrawlConfig(max_throttled_attempts=10, max_throttled_seconds=60.0, max_attempts=3)
    # Throttling is not failing: past max_attempts, within the streak cap, it waits again.
    for status in (429, 503):
        again = retry_or_fail(_lease(5), _answer(status, 1059.0), config, throttled_since=1000.0)
        assert (again.state, again.reason) == ("queued", f"http_{status}")
    # The host asked us to wait for 60 s in a row: given up on, whatever the attempt.
    late = retry_or_fail(_lease(2), _answer(429, 1060.0), config, throttled_since=1000.0)
    assert (late.state, late.reason) == ("failed", "throttled")
    # A first throttled answer never ends a URL; the attempt cap still applies.
    first = retry_or_fail(_lease(9), _answer(429, 5000.0), config, throttled_since=None)
    assert first.state == "queued"
    last = retry_or_fail(_lease(10), _answer(429, 5000.0), config, throttled_since=4990.0)
    assert (last.state, last.reason) == ("failed", "throttled")
    # A 503 without Retry-After is a failure: max_attempts, and the streak is not read.
    plain = retry_or_fail(_lease(3), _answer(503, 1e9, None), config, throttled_since=0.0)
    assert (plain.state, plain.reason) == ("failed", "http_503")
    plain = retry_or_fail(_lease(2), _answer(503, 1e9, None), config, throttled_since=0.0)
    assert plain.state == "queued"

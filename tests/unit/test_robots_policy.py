"""Fetch-side robots.txt policy (RFC 9309 §2.3.1, §2.4) on a virtual clock."""

from __future__ import annotations

import pytest

from crawlspace.records import RobotsRecord
from crawlspace.robots import RobotsPolicy, after_redirects, classify_status, robots_url
from crawlspace.robots.policy import rules_for

HOST = "http://example.com:8080"
POLICY = RobotsPolicy()
T0 = 1_000.0


@pytest.mark.parametrize(
    ("host_key", "url"),
    [
        ("http://example.com:8080", "http://example.com:8080/robots.txt"),
        ("https://example.com", "https://example.com/robots.txt"),
        ("https://[::1]:443", "https://[::1]:443/robots.txt"),
    ],
)
def test_robots_url(host_key: str, url: str) -> None:
    assert robots_url(host_key) == url


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, "rules"),
        (204, "rules"),
        (299, "rules"),
        (301, "redirect"),
        (308, "redirect"),
        (400, "allow_all"),
        (401, "allow_all"),
        (403, "allow_all"),
        (404, "allow_all"),
        (410, "allow_all"),
        (429, "allow_all"),
        (500, "disallow_all"),
        (503, "disallow_all"),
        (599, "disallow_all"),
        (None, "disallow_all"),
        (100, "disallow_all"),
        (600, "disallow_all"),
    ],
)
def test_classify_status(status: int | None, outcome: str) -> None:
    assert classify_status(status) == outcome


@pytest.mark.parametrize(("hops", "outcome"), [(0, None), (1, None), (5, None), (6, "allow_all")])
def test_after_redirects(hops: int, outcome: str | None) -> None:
    assert after_redirects(hops) == outcome


def test_after_redirects_custom_limit() -> None:
    assert after_redirects(2, max_hops=1) == "allow_all"
    assert after_redirects(1, max_hops=1) is None


def test_success_caches_rules_for_a_day() -> None:
    record = POLICY.record_for(HOST, 200, b"User-agent: *\nDisallow: /\n", T0)
    assert record == RobotsRecord(
        HOST, 200, "rules", b"User-agent: *\nDisallow: /\n", T0, T0 + 86400, 0, None
    )
    assert not rules_for(record).is_allowed("bot", HOST + "/x")


@pytest.mark.parametrize("status", [401, 403, 404])
def test_client_error_allows_all(status: int) -> None:
    record = POLICY.record_for(HOST, status, b"<html>not found</html>", T0)
    assert (record.outcome, record.body, record.expires_at) == ("allow_all", b"", T0 + 86400)
    assert rules_for(record).is_allowed("bot", HOST + "/x")


def test_unfollowed_redirect_is_unavailable() -> None:
    record = POLICY.record_for(HOST, 301, b"", T0)
    assert record.outcome == "allow_all"


@pytest.mark.parametrize("status", [500, 503, None])
def test_first_failure_disallows_and_retries_soon(status: int | None) -> None:
    record = POLICY.record_for(HOST, status, b"oops", T0)
    assert record.outcome == "disallow_all"
    assert record.attempts == 1
    assert record.expires_at == T0 + 60
    assert record.body == b""
    assert record.error == ("network_error" if status is None else f"http_{status}")
    assert not rules_for(record).is_allowed("bot", HOST + "/x")


def test_failures_back_off_exponentially_then_give_up() -> None:
    now = T0
    record = POLICY.record_for(HOST, None, b"", now, error="timeout")
    assert (record.attempts, record.expires_at, record.error) == (1, now + 60, "timeout")
    now = record.expires_at
    record = POLICY.record_for(HOST, 503, b"", now, previous=record)
    assert (record.attempts, record.expires_at, record.error) == (2, now + 120, "http_503")
    now = record.expires_at
    record = POLICY.record_for(HOST, 503, b"", now, previous=record)
    assert record.attempts == 3
    assert record.outcome == "disallow_all"
    assert record.expires_at == now + 86400
    assert record.error == "robots_unavailable"
    now = record.expires_at
    record = POLICY.record_for(HOST, 200, b"User-agent: *\nAllow: /\n", now, previous=record)
    assert (record.outcome, record.attempts, record.error) == ("rules", 0, None)


def test_backoff_is_capped_by_cache_seconds() -> None:
    policy = RobotsPolicy(cache_seconds=100.0, retry_delay=60.0, max_attempts=10)
    first = policy.record_for(HOST, 500, b"", T0)
    second = policy.record_for(HOST, 500, b"", T0, previous=first)
    assert second.expires_at == T0 + 100


@pytest.mark.parametrize(
    ("outcome", "status", "body"),
    [("rules", 200, b"User-agent: *\nDisallow: /a\n"), ("allow_all", 404, b"")],
)
def test_failure_keeps_cached_answer(outcome: str, status: int, body: bytes) -> None:
    cached = POLICY.record_for(HOST, status, body, T0)
    assert cached.outcome == outcome
    later = T0 + 86400
    record = POLICY.record_for(HOST, 503, b"", later, previous=cached)
    assert (record.outcome, record.status, record.body) == (outcome, status, body)
    assert record.fetched_at == T0
    assert record.expires_at == later + 60
    assert (record.attempts, record.error) == (1, "http_503")
    again = POLICY.record_for(HOST, None, b"", record.expires_at, previous=record)
    assert again.outcome == outcome
    assert again.attempts == 2
    assert again.expires_at == record.expires_at + 120


def test_policy_is_frozen() -> None:
    with pytest.raises(AttributeError):
        POLICY.retry_delay = 1.0  # type: ignore[misc]

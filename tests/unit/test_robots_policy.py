"""Fetch-side robots.txt policy (RFC 9309 §2.3.1, §2.4) on a virtual clock."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from crawlspace.config import CrawlConfig
from crawlspace.crawl.settings import SettingChange
from crawlspace.errors import ConfigError
from crawlspace.records import RobotsRecord
from crawlspace.robots import RobotsPolicy, after_redirects, classify_status, robots_url
from crawlspace.robots.policy import CacheHeaders, freshness_seconds, rules_for

HOST = "http://example.com:8080"
POLICY = RobotsPolicy(max_attempts=3)
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
    # Given up: asked again after one more backoff step (240 s), not after a day.
    assert record.expires_at == now + 240
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


# -- HTTP freshness (RFC 9111 §4.2) ---------------------------------------------------------

NOW = 1_700_000_000.0  # when the response was received, on our clock
DAY = 86400.0


def http_date(t: float) -> str:
    return formatdate(t, usegmt=True)  # IMF-fixdate, "Tue, 14 Nov 2023 22:13:20 GMT"


def cc(*lines: str, **fields: str) -> CacheHeaders:
    return CacheHeaders(lines, **fields)


@pytest.mark.parametrize(
    ("headers", "fresh"),
    [
        # No explicit lifetime: None, and the caller uses its default.
        (cc(), None),
        (cc("public"), None),
        (cc("private, must-revalidate"), None),
        (cc(date=http_date(NOW)), None),
        (cc(age="100"), None),
        # max-age: token or quoted form, any case, among other directives.
        (cc("max-age=3600"), 3600.0),
        (cc('max-age="3600"'), 3600.0),
        (cc("Public, MAX-AGE=600, must-revalidate"), 600.0),
        (cc("max-age=0"), 0.0),
        # An invalid max-age makes the response stale (§4.2.1).
        (cc("max-age=abc"), 0.0),
        (cc("max-age=-5"), 0.0),
        (cc("max-age=1.5"), 0.0),
        (cc("max-age="), 0.0),
        (cc("max-age"), 0.0),
        # A repeated directive: the first occurrence counts, across field lines too.
        (cc("max-age=60, max-age=6000"), 60.0),
        (cc("max-age=60", "max-age=6000"), 60.0),
        # Directives from several Cache-Control lines combine.
        (cc("public", "max-age=120"), 120.0),
        # no-cache and no-store: stale at once, whatever else is said.
        (cc("no-cache"), 0.0),
        (cc("max-age=3600, no-cache"), 0.0),
        (cc("max-age=3600", "No-Store"), 0.0),
        (cc("no-store", expires=http_date(NOW + 600), date=http_date(NOW)), 0.0),
        # Qualified no-cache withholds header fields only: the body may still be reused.
        (cc('no-cache="Set-Cookie", max-age=600'), 600.0),
        (cc('no-cache="Set-Cookie, X-Token", max-age=600'), 600.0),
        # s-maxage is for shared caches; ours is private.
        (cc("s-maxage=10, max-age=600"), 600.0),
        (cc("s-maxage=10"), None),
        (cc("private, max-age=600"), 600.0),
        # max-age wins over Expires (§5.3).
        (cc("max-age=60", expires=http_date(NOW + 6000), date=http_date(NOW)), 60.0),
        # Expires minus Date: the server's clock on both sides, so skew cancels out.
        (cc(expires=http_date(NOW + 600), date=http_date(NOW)), 600.0),
        (cc(expires=http_date(NOW - 3000 + 600), date=http_date(NOW - 3000)), 600.0),
        (cc(expires=http_date(NOW + 3000 + 600), date=http_date(NOW + 3000)), 600.0),
        # ...minus the response time when Date is missing or invalid.
        (cc(expires=http_date(NOW + 900)), 900.0),
        (cc(expires=http_date(NOW + 900), date="yesterday"), 900.0),
        # Expires in the past, equal to Date, or invalid ("0" included): already expired.
        (cc(expires=http_date(NOW - 60), date=http_date(NOW)), -60.0),
        (cc(expires=http_date(NOW), date=http_date(NOW)), 0.0),
        (cc(expires="0", date=http_date(NOW)), 0.0),
        (cc(expires="-1"), 0.0),
        (cc(expires="never"), 0.0),
        (cc(expires="Tue, 31 Feb 2023 10:00:00 GMT"), 0.0),
        # The obsolete date forms recipients must accept (RFC 9110 §5.6.7).
        (cc(expires="Sunday, 06-Nov-94 08:59:37 GMT", date="Sun, 06 Nov 1994 08:49:37 GMT"), 600.0),
        (cc(expires="Sun Nov  6 08:59:37 1994", date="Sun, 06 Nov 1994 08:49:37 GMT"), 600.0),
        # Age: the time an upstream cache already held it is subtracted.
        (cc("max-age=600", age="100"), 500.0),
        (cc(expires=http_date(NOW + 600), date=http_date(NOW), age="60"), 540.0),
        (cc("max-age=600", age="900"), -300.0),
        (cc("max-age=600", age=" 100 "), 600.0),  # not delta-seconds: ignored
        (cc("max-age=600", age="abc"), 600.0),
        (cc("max-age=600", age="-100"), 600.0),
        # Huge delta-seconds are taken as 2**31 (§1.2.2), not an overflow.
        (cc("max-age=99999999999999999999"), float(2**31)),
    ],
)
def test_freshness_seconds(headers: CacheHeaders, fresh: float | None) -> None:
    assert freshness_seconds(headers, NOW) == fresh


def test_freshness_ignores_the_apparent_age_of_a_skewed_server_clock() -> None:
    # Date an hour behind our clock: RFC 9111's apparent age would make max-age=600 stale; a
    # skewed server clock is common, so only the Age header counts.
    assert freshness_seconds(cc("max-age=600", date=http_date(NOW - 3600)), NOW) == 600.0


@pytest.mark.parametrize(
    ("headers", "kept"),
    [
        (None, DAY),  # no response (the caller has no headers to give)
        (cc(), DAY),  # no caching headers: the configured default
        (cc("public"), DAY),
        (cc("max-age=3600"), 3600.0),
        (cc(expires=http_date(NOW + 7200), date=http_date(NOW)), 7200.0),
        (cc("max-age=604800"), DAY),  # capped at 24 h (RFC 9309 §2.4)
        (cc(expires=http_date(NOW + 30 * DAY)), DAY),
        (cc("max-age=29"), 30.0),  # floored at min_cache_seconds
        (cc("max-age=30"), 30.0),
        (cc("max-age=31"), 31.0),
        (cc("no-cache"), 30.0),
        (cc("no-store"), 30.0),
        (cc("max-age=0"), 30.0),
        (cc(expires="0"), 30.0),
        (cc(expires=http_date(NOW - 600)), 30.0),
        (cc("max-age=60", age="3600"), 30.0),
    ],
)
def test_lifetime_is_http_freshness_within_floor_and_cap(
    headers: CacheHeaders | None, kept: float
) -> None:
    assert POLICY.min_cache_seconds == 30.0
    assert POLICY.lifetime(headers, NOW) == kept


def test_lifetime_with_custom_floor_and_cap() -> None:
    policy = RobotsPolicy(cache_seconds=600.0, min_cache_seconds=1.0)
    assert policy.lifetime(cc("max-age=5"), NOW) == 5.0
    assert policy.lifetime(cc("no-cache"), NOW) == 1.0
    assert policy.lifetime(cc("max-age=3600"), NOW) == 600.0
    assert policy.lifetime(cc(), NOW) == 600.0


def test_rules_are_kept_for_their_max_age() -> None:
    body = b"User-agent: *\nDisallow: /a\n"
    record = POLICY.record_for(HOST, 200, body, NOW, cache=cc("max-age=600"))
    assert record == RobotsRecord(HOST, 200, "rules", body, NOW, NOW + 600, 0, None)


def test_rules_without_caching_headers_are_kept_a_day() -> None:
    record = POLICY.record_for(HOST, 200, b"", NOW, cache=cc(date=http_date(NOW)))
    assert record.expires_at == NOW + DAY


@pytest.mark.parametrize(
    ("headers", "kept"), [(cc("max-age=600"), 600.0), (cc("no-store"), 30.0), (cc(), DAY)]
)
def test_4xx_allow_all_is_kept_for_its_http_lifetime(headers: CacheHeaders, kept: float) -> None:
    record = POLICY.record_for(HOST, 404, b"<html>gone</html>", NOW, cache=headers)
    assert (record.outcome, record.body, record.expires_at) == ("allow_all", b"", NOW + kept)


def test_too_many_redirects_ignore_the_last_hops_headers() -> None:
    # The last 3xx's max-age is about that redirect, not about robots.txt being unavailable.
    record = POLICY.record_for(HOST, 301, b"", NOW, cache=cc("max-age=5"))
    assert (record.outcome, record.expires_at) == ("allow_all", NOW + DAY)


@pytest.mark.parametrize("status", [500, 503, None])
def test_failures_keep_their_retry_schedule_whatever_the_headers(status: int | None) -> None:
    record = POLICY.record_for(HOST, status, b"", NOW, cache=cc("max-age=5000"))
    assert (record.outcome, record.expires_at) == ("disallow_all", NOW + 60)
    cached = POLICY.record_for(HOST, 200, b"Disallow: /a\n", NOW, cache=cc("max-age=5"))
    kept = POLICY.record_for(HOST, status, b"", NOW + 30, previous=cached, cache=cc("no-store"))
    assert (kept.outcome, kept.body, kept.expires_at) == ("rules", b"Disallow: /a\n", NOW + 90)


# -- an answer outlasts the host's next turn --------------------------------------------------


def test_short_lived_answer_is_kept_past_the_hosts_next_turn() -> None:
    # Crawl-delay 40 s with no-cache: expiring at +30 s would make every turn a robots.txt one.
    record = POLICY.record_for(HOST, 200, b"Crawl-delay: 40\n", NOW, cache=cc("no-cache"))
    assert record.expires_at == NOW + 30
    kept = POLICY.outlasting(record, NOW + 40, 40.0)
    assert kept == RobotsRecord(HOST, 200, "rules", record.body, NOW, NOW + 80, 0, None)


def test_long_lived_answer_is_not_shortened() -> None:
    record = POLICY.record_for(HOST, 404, b"", NOW, cache=cc("max-age=600"))
    assert POLICY.outlasting(record, NOW + 1, 1.0) is record


def test_outlasting_stays_within_cache_seconds() -> None:
    policy = RobotsPolicy(cache_seconds=100.0, min_cache_seconds=10.0)
    record = policy.record_for(HOST, 200, b"", NOW, cache=cc("no-cache"))
    assert policy.outlasting(record, NOW + 90, 90.0).expires_at == NOW + 100


@pytest.mark.parametrize(("status", "attempts"), [(503, 1), (None, 1)])
def test_outlasting_leaves_retries_alone(status: int | None, attempts: int) -> None:
    failed = POLICY.record_for(HOST, status, b"", NOW)
    assert POLICY.outlasting(failed, NOW + 600, 600.0) is failed
    cached = POLICY.record_for(HOST, 200, b"", NOW, cache=cc("no-cache"))
    retry = POLICY.record_for(HOST, status, b"", NOW, previous=cached)
    assert retry.attempts == attempts
    assert POLICY.outlasting(retry, NOW + 600, 600.0) is retry


# -- the settings -----------------------------------------------------------------------------


def test_config_defaults_and_validation() -> None:
    config = CrawlConfig()
    assert (config.robots_min_cache_seconds, config.robots_cache_seconds) == (30.0, DAY)
    assert CrawlConfig(robots_min_cache_seconds=0.0).robots_min_cache_seconds == 0.0
    with pytest.raises(ConfigError, match="robots_min_cache_seconds"):
        CrawlConfig(robots_min_cache_seconds=-1.0)
    with pytest.raises(ConfigError, match="robots_min_cache_seconds"):
        CrawlConfig(robots_cache_seconds=60.0, robots_min_cache_seconds=61.0)


def test_lowering_the_floor_is_less_polite() -> None:
    assert SettingChange("robots_min_cache_seconds", 30.0, 5.0).less_polite
    assert not SettingChange("robots_min_cache_seconds", 30.0, 60.0).less_polite

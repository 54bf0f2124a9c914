"""What to do with a robots.txt fetch result (RFC 9309 §2.3.1, §2.4). Pure: the clock is a value.

The fetcher requests :func:`robots_url`, follows redirects while :func:`after_redirects` says
so, and hands the final status to :meth:`RobotsPolicy.record_for`, which decides the outcome
and when to fetch again. :func:`rules_for` turns a stored record into matchable rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawlspace.records import RobotsRecord
from crawlspace.robots.parser import RobotsTxt

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "REDIRECT",
    "RULES",
    "RobotsPolicy",
    "after_redirects",
    "classify_status",
    "robots_url",
    "rules_for",
]

RULES = "rules"
REDIRECT = "redirect"
ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"
UNAVAILABLE_ERROR = "robots_unavailable"


def robots_url(host_key: str) -> str:
    """The robots.txt URL for ``host_key`` ("scheme://authority"), per RFC 9309 §2.3."""
    return host_key.rstrip("/") + "/robots.txt"


def classify_status(status: int | None) -> str:
    """Map a final HTTP status (None: timeout or network error) to an outcome class."""
    if status is None:
        # RFC 9309 §2.3.1.4: unreachable means assume complete disallow.
        return DISALLOW_ALL
    if 200 <= status < 300:
        return RULES  # §2.3.1.1
    if 300 <= status < 400:
        return REDIRECT  # §2.3.1.2
    if 400 <= status < 500:
        # §2.3.1.3: "unavailable", 401 and 403 included, means no restrictions.
        return ALLOW_ALL
    # §2.3.1.4: 5xx; anything outside 200..599 is no usable answer either.
    return DISALLOW_ALL


def after_redirects(hops: int, max_hops: int = 5) -> str | None:
    """Outcome once ``hops`` redirects have been received in a row, or None to keep following.

    RFC 9309 §2.3.1.2: crawlers SHOULD follow at least five redirects and MAY treat more as
    robots.txt being unavailable, which §2.3.1.3 makes "allow_all".
    """
    return ALLOW_ALL if hops > max_hops else None


def rules_for(record: RobotsRecord) -> RobotsTxt:
    """The rules a stored record stands for."""
    if record.outcome == RULES:
        return RobotsTxt.parse(record.body)
    if record.outcome == ALLOW_ALL:
        return RobotsTxt.allow_all()
    return RobotsTxt.disallow_all()


@dataclass(frozen=True, slots=True)
class RobotsPolicy:
    """When robots.txt answers expire and how failed fetches are retried.

    ``cache_seconds`` follows RFC 9309 §2.4 (SHOULD NOT cache for more than 24 hours).
    """

    cache_seconds: float = 86400.0
    retry_delay: float = 60.0
    max_attempts: int = 3

    def _backoff(self, attempts: int) -> float:
        return float(min(self.retry_delay * 2 ** (attempts - 1), self.cache_seconds))

    def record_for(
        self,
        host_key: str,
        status: int | None,
        body: bytes,
        now: float,
        *,
        previous: RobotsRecord | None = None,
        error: str | None = None,
    ) -> RobotsRecord:
        """The record to store after fetching robots.txt for ``host_key`` at ``now``.

        ``status`` is the final status after redirects (None: timeout or network error); a
        3xx here means the fetcher gave up following redirects.

        ``attempts`` counts consecutive failed fetches (5xx or network error) and is 0 after
        any fetch that produced an answer (2xx, 4xx, too many redirects). On a failure:

        * if ``previous`` holds a usable answer ("rules" or "allow_all"), that answer is kept
          (RFC 9309 §2.4 allows a cached copy while the file is unreachable), with
          ``attempts`` incremented and a retry after the backoff below;
        * otherwise the host is "disallow_all" (§2.3.1.4) and is retried after
          ``retry_delay * 2 ** (attempts - 1)`` seconds, capped at ``cache_seconds``; once
          ``attempts`` reaches ``max_attempts`` the verdict stays "disallow_all" for
          ``cache_seconds`` with error "robots_unavailable".
        """
        kind = classify_status(status)
        if kind == RULES:
            return RobotsRecord(host_key, status, RULES, body, now, now + self.cache_seconds)
        if kind in (ALLOW_ALL, REDIRECT):
            # Bodies of error pages and redirects hold no rules; don't store them.
            return RobotsRecord(host_key, status, ALLOW_ALL, b"", now, now + self.cache_seconds)
        reason = error or ("network_error" if status is None else f"http_{status}")
        if previous is not None and previous.outcome in (RULES, ALLOW_ALL):
            attempts = previous.attempts + 1
            return RobotsRecord(
                host_key,
                previous.status,
                previous.outcome,
                previous.body,
                previous.fetched_at,
                now + self._backoff(attempts),
                attempts,
                reason,
            )
        attempts = (previous.attempts if previous is not None else 0) + 1
        if attempts >= self.max_attempts:
            return RobotsRecord(
                host_key,
                status,
                DISALLOW_ALL,
                b"",
                now,
                now + self.cache_seconds,
                attempts,
                UNAVAILABLE_ERROR,
            )
        retry_at = now + self._backoff(attempts)
        return RobotsRecord(host_key, status, DISALLOW_ALL, b"", now, retry_at, attempts, reason)

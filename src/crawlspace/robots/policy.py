"""What to do with a robots.txt fetch result (RFC 9309 §2.3.1, §2.4). Pure: the clock is a value.

The fetcher requests :func:`robots_url`, follows redirects while :func:`after_redirects` says
so, and hands the final status (and the response's caching headers, :class:`CacheHeaders`) to
:meth:`RobotsPolicy.record_for`, which decides the outcome and when to fetch again: an answer
is kept for its HTTP freshness lifetime (:func:`freshness_seconds`, RFC 9111 §4.2, which
RFC 9309 §2.4 allows), within [``min_cache_seconds``, ``cache_seconds``].
:func:`rules_for` turns a stored record into matchable rules.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

from crawlspace.lifecycle import ROBOTS_UNAVAILABLE
from crawlspace.records import RobotsRecord
from crawlspace.robots.parser import RobotsTxt

__all__ = [
    "ALLOW_ALL",
    "DISALLOW_ALL",
    "REDIRECT",
    "RULES",
    "CacheHeaders",
    "RobotsPolicy",
    "after_redirects",
    "classify_status",
    "freshness_seconds",
    "rules_for",
]

RULES = "rules"
REDIRECT = "redirect"
ALLOW_ALL = "allow_all"
DISALLOW_ALL = "disallow_all"
UNAVAILABLE_ERROR = ROBOTS_UNAVAILABLE


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


# RFC 9111 §1.2.2: a delta-seconds too large to represent is taken as 2**31.
_MAX_DELTA_SECONDS = 2**31
# One Cache-Control directive: a name, then an optional token or quoted-string argument
# (§5.2: recipients accept both forms); a quoted argument may hold commas.
_DIRECTIVE = re.compile(r'\s*([^\s=,]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^,]*))?\s*(?:,|$)')


@dataclass(frozen=True, slots=True)
class CacheHeaders:
    """The response header fields that say how long a response stays fresh (RFC 9111 §5):
    every Cache-Control field line, and the first Expires, Date and Age values (§4.2.1 lets a
    cache use the first of repeated values)."""

    cache_control: tuple[str, ...] = ()
    expires: str | None = None
    date: str | None = None
    age: str | None = None


def _directives(lines: tuple[str, ...]) -> dict[str, str | None]:
    """Cache-Control directives, lower-cased name -> unquoted argument (None: no argument).
    A repeated directive keeps its first occurrence (RFC 9111 §4.2.1)."""
    found: dict[str, str | None] = {}
    for line in lines:
        for match in _DIRECTIVE.finditer(line):
            name, value = match.group(1).lower(), match.group(2)
            if value is not None:
                value = value.strip()
                if value.startswith('"') and value.endswith('"') and len(value) >= 2:
                    value = re.sub(r"\\(.)", r"\1", value[1:-1])
            found.setdefault(name, value)
    return found


def _delta_seconds(value: str | None) -> float | None:
    """RFC 9111 §1.2.2 delta-seconds (1*DIGIT), or None when absent or not one."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    return float(min(int(value), _MAX_DELTA_SECONDS))


def _http_date(value: str | None) -> float | None:
    """An HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms
    recipients must accept) as a Unix time, or None when absent or invalid."""
    if value is None:
        return None
    try:
        parsed = parsedate_to_datetime(value.strip())
    except (ValueError, TypeError, IndexError):
        return None
    if parsed.tzinfo is None:  # asctime has no zone; every HTTP-date is in GMT
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def freshness_seconds(headers: CacheHeaders, response_time: float) -> float | None:
    """How long after ``response_time`` (when it was received) a response stays fresh: its
    freshness lifetime less its age (RFC 9111 §4.2.1, §4.2.3). None: the response gives no
    explicit lifetime. Zero or less: stale at once, which the caller floors.

    * ``no-store`` and unqualified ``no-cache`` (§5.2.2.4-5): stale at once. We never
      revalidate robots.txt, so "reuse only after validation" means "fetch again". The
      qualified ``no-cache="field"`` only withholds those fields, so it is ignored; so is
      ``private``: the robots cache is a private cache (one client, this crawl).
    * ``s-maxage`` is ignored: it applies to shared caches only (§5.2.2.10), and ours is not.
    * ``max-age`` wins over Expires (§5.3); an invalid one (not digits) makes the response
      stale, as §4.2.1 encourages.
    * Otherwise ``Expires`` minus ``Date`` (minus ``response_time`` when Date is missing or
      invalid, RFC 9110 §6.6.1); an invalid Expires ("0" included) means already expired (§5.3).
    * ``Age`` (§5.1), when valid, is subtracted: an upstream cache held the response that long.
      The "apparent age" of §4.2.3 (our clock minus Date) is not: across the web server
      clocks are often off by minutes, and a skewed one would cut every lifetime short, while
      the gain is small against a lifetime already capped at a day.
    """
    directives = _directives(headers.cache_control)
    if "no-store" in directives or ("no-cache" in directives and not directives["no-cache"]):
        return 0.0
    if "max-age" in directives:
        lifetime = _delta_seconds(directives["max-age"])
        if lifetime is None:
            return 0.0
    elif headers.expires is not None:
        expires = _http_date(headers.expires)
        if expires is None:
            return 0.0
        date = _http_date(headers.date)
        # Expires - Date, both the server's clock: skew between it and ours cancels out.
        lifetime = expires - (response_time if date is None else date)
    else:
        return None
    return lifetime - (_delta_seconds(headers.age) or 0.0)


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

    ``cache_seconds`` follows RFC 9309 §2.4 (SHOULD NOT cache for more than 24 hours): an
    answer is kept that long when its response says nothing of caching, and never longer.
    ``min_cache_seconds`` is the shortest life of an answer, whatever its headers say (see
    ``robots_min_cache_seconds`` in config.py for why it is not zero).
    """

    cache_seconds: float = 86400.0
    retry_delay: float = 60.0
    max_attempts: int = 4  # tries over seven minutes at the default delay
    min_cache_seconds: float = 30.0

    def lifetime(self, cache: CacheHeaders | None, response_time: float) -> float:
        """Seconds an answer received at ``response_time`` is kept: its HTTP freshness
        (:func:`freshness_seconds`), ``cache_seconds`` without one, and always within
        [``min_cache_seconds``, ``cache_seconds``]."""
        fresh = None if cache is None else freshness_seconds(cache, response_time)
        if fresh is None:
            return self.cache_seconds
        return min(self.cache_seconds, max(self.min_cache_seconds, fresh))

    def outlasting(self, record: RobotsRecord, host_free_at: float, gap: float) -> RobotsRecord:
        """``record``, kept at least one politeness ``gap`` past ``host_free_at`` (when the
        host may next be fetched), within ``cache_seconds`` of its fetch.

        An expired record makes the frontier lease robots.txt again before any page, so an
        answer that expired before the host's next turn (a short lifetime against a long
        Crawl-delay, or a slow host's long gap) would have the host fetch robots.txt at every
        turn and never a page. Only fresh answers are touched: retries keep their backoff."""
        if record.attempts or record.outcome not in (RULES, ALLOW_ALL):
            return record
        keep = min(record.fetched_at + self.cache_seconds, host_free_at + gap)
        if record.expires_at >= keep:
            return record
        return dataclasses.replace(record, expires_at=keep)

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
        cache: CacheHeaders | None = None,
    ) -> RobotsRecord:
        """The record to store after fetching robots.txt for ``host_key`` at ``now``.

        ``status`` is the final status after redirects (None: timeout or network error); a
        3xx here means the fetcher gave up following redirects.

        ``attempts`` counts consecutive failed fetches (5xx or network error) and is 0 after
        any fetch that produced an answer (2xx, 4xx, too many redirects).

        An answer from a 2xx (rules) or a 4xx (allow all) is kept for :meth:`lifetime` of its
        ``cache`` headers: both are answers the server can say how long to keep. Giving up on
        redirects is kept ``cache_seconds``: the last hop's headers speak for that redirect,
        not for robots.txt being unavailable. On a failure (retry logic below) headers are
        not read: there is no new answer to keep.

        On a failure:

        * if ``previous`` holds a usable answer ("rules" or "allow_all"), that answer is kept
          (RFC 9309 §2.4 allows a cached copy while the file is unreachable), with
          ``attempts`` incremented and a retry after the backoff below;
        * otherwise the host is "disallow_all" (§2.3.1.4) and is retried after
          ``retry_delay * 2 ** (attempts - 1)`` seconds, capped at ``cache_seconds``; once
          ``attempts`` reaches ``max_attempts`` the verdict is "disallow_all" with error
          "robots_unavailable" (its host's URLs are excluded) until one more backoff step.
        """
        kind = classify_status(status)
        if kind == RULES:
            return RobotsRecord(host_key, status, RULES, body, now, now + self.lifetime(cache, now))
        if kind in (ALLOW_ALL, REDIRECT):
            kept = self.cache_seconds if kind == REDIRECT else self.lifetime(cache, now)
            # Bodies of error pages and redirects hold no rules; don't store them.
            return RobotsRecord(host_key, status, ALLOW_ALL, b"", now, now + kept)
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
            # Asked again after one more backoff step, not a day: a URL of the host queued
            # after that asks robots.txt first, and an answer then re-evaluates the URLs
            # excluded meanwhile (crawl/leases.py), so a long outage loses them for that long.
            return RobotsRecord(
                host_key,
                status,
                DISALLOW_ALL,
                b"",
                now,
                now + self._backoff(attempts),
                attempts,
                UNAVAILABLE_ERROR,
            )
        retry_at = now + self._backoff(attempts)
        return RobotsRecord(host_key, status, DISALLOW_ALL, b"", now, retry_at, attempts, reason)

"""When a page's host may be asked next, and how a request without an answer ends: the visit's
host timing (crawl/visit.py), by the policies of frontier/backoff.py, frontier/outage.py and
frontier/politeness.py."""

from __future__ import annotations

import logging
from dataclasses import replace

from crawlspace.crawl.responses import RETRY_STATUSES, parse_retry_after
from crawlspace.crawl.visit_parts import VisitParts
from crawlspace.fetch.transport import FetchResponse
from crawlspace.frontier.backoff import HostWait
from crawlspace.frontier.outage import OUTAGE_NOTE, Outage, failed_fetch
from crawlspace.lifecycle import HOST_DOWN
from crawlspace.records import Completion, Lease

__all__ = ["failed_request", "host_wait", "schedule_host"]

log = logging.getLogger("crawlspace.crawl.visit")


def failed_request(
    parts: VisitParts, lease: Lease, reason: str, outage: Outage | None, now: float
) -> tuple[Completion, bool]:
    """A request that got no complete response: charged to its URL, or to its host when the
    host is not answering at all (frontier/outage.py); and whether the host was given up."""
    end = failed_fetch(parts.outages, reason, lease.attempt, outage, now)
    if end.given_up:
        log.warning(
            "%s has not answered for %.0f s (max_outage_seconds): its queued URLs fail as %s",
            lease.host_key,
            now - outage.since if outage is not None else 0.0,
            HOST_DOWN,
        )
    elif outage is None and end.note:
        log.info("%s does not answer (%s); probing it, its URLs kept", lease.host_key, reason)
    notes = {} if end.note is None else {OUTAGE_NOTE: end.note}
    completion = Completion(end.state, end.reason, charged=end.charged, notes=notes)
    return completion, end.given_up


def host_wait(parts: VisitParts, lease: Lease, response: FetchResponse) -> HostWait:
    """How long the host waits after this response: backoff on 429/503 (Retry-After), on
    5xx, else none (frontier/backoff.py)."""
    status = response.status
    if status in RETRY_STATUSES:
        retry_after = parse_retry_after(response.header("retry-after"), response.ended_at)
        return parts.backoff.on_throttled(
            lease.host_backoff, lease.host_failures, retry_after, parts.rand()
        )
    if status >= 500:
        return parts.backoff.on_failure(lease.host_backoff, lease.host_failures, parts.rand())
    return parts.backoff.on_success(lease.host_backoff)


def schedule_host(
    parts: VisitParts,
    completion: Completion,
    host: HostWait,
    *,
    ended: float,
    seconds: float,
    crawl_delay: float | None,
    slowdown: float = 1.0,
) -> Completion:
    """The host's next start: the politeness gap, widened while it throttles us or by
    its allowance, and never before a Retry-After or backoff it earned."""
    politeness = parts.politeness.gap(seconds, crawl_delay)
    gap = politeness * parts.backoff.gap_multiplier(host.level) * slowdown
    return replace(
        completion,
        next_allowed_at=ended + max(gap, host.wait),
        host_backoff=host.level,
        host_failures=host.failures,
    )

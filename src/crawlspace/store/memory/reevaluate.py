"""The memory engine's robots exclusions: each host remembers the ids of the URLs its robots.txt
excluded (its rules, or its being unreachable), for its next robots.txt to re-evaluate
(crawl/leases.py; robots/policy.py ROBOTS_EXCLUSIONS)."""

from __future__ import annotations

from collections.abc import Sequence

from crawlspace.lifecycle import UrlState, check_reevaluation
from crawlspace.store.memory.records import MemHost, MemUrl


def robots_excluded(host: MemHost, urls: list[MemUrl | None], limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` (url_id, url) still excluded; ids that are not any more are forgotten."""
    found: list[tuple[int, str]] = []
    for url_id in sorted(host.robots_excluded):
        url = urls[url_id]
        if url is None or url.state is not UrlState.EXCLUDED:
            host.robots_excluded.discard(url_id)
        elif len(found) < limit:
            found.append((url_id, url.url))
    return found


def reopen_excluded(
    host: MemHost, urls: list[MemUrl | None], url_ids: Sequence[int]
) -> list[MemUrl]:
    """Those of ``url_ids`` the host's robots.txt excluded, made new visits (queued, version
    + 1, attempts 0); the caller puts them in the host's queue."""
    reopened = []
    for url_id in url_ids:
        if url_id not in host.robots_excluded:
            continue  # not this host's, or not excluded by its robots.txt (any more)
        host.robots_excluded.discard(url_id)
        url = urls[url_id]
        if url is None or url.state is not UrlState.EXCLUDED:
            continue
        check_reevaluation(url.state.value)
        url.state, url.reason = UrlState.QUEUED, None
        url.version += 1
        url.attempts = 0
        reopened.append(url)
    return reopened

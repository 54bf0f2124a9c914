"""Retirement (frontier/retirement.py) on plain leases and a virtual clock."""

from __future__ import annotations

import dataclasses

from crawlspace.frontier.retirement import RetirementPolicy
from crawlspace.records import Lease, LeaseKind

PASS = 100.0


def revisit(linked_at: float | None, *, version: int = 2, source: str = "link") -> Lease:
    lease = Lease(LeaseKind.PAGE, "l", "http://h", "http://h/p", 1, version, 1, 1, 0, 1e9)
    return dataclasses.replace(lease, linked_at=linked_at, source=source)


def test_a_url_not_linked_for_the_passes_is_retired_at_its_revisit() -> None:
    policy = RetirementPolicy(passes=3, pass_seconds=PASS)
    assert not policy.retired(revisit(1000.0), 1000.0 + 3 * PASS - 0.001)
    assert policy.retired(revisit(1000.0), 1000.0 + 3 * PASS)
    # Linked again meanwhile: the count starts over.
    assert not policy.retired(revisit(1000.0 + 2 * PASS), 1000.0 + 3 * PASS)


def test_what_is_never_retired() -> None:
    policy = RetirementPolicy(passes=1, pass_seconds=PASS)
    late = 10 * PASS
    assert not policy.retired(revisit(0.0, version=1), late)  # a first visit is fetched
    assert not policy.retired(revisit(None), late)  # no link time kept
    assert not policy.retired(revisit(0.0, source="seed"), late)
    assert not policy.retired(revisit(0.0, source="sitemap"), late)  # a sitemap document
    assert policy.retired(revisit(0.0, source="sitemap_entry"), late)  # a URL a sitemap listed
    assert not RetirementPolicy(passes=0, pass_seconds=PASS).retired(revisit(0.0), late)

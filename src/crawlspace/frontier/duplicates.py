"""Content dedup after fetch, the same on every engine: is this page an exact or a near duplicate,
and how far do its host's further links sink. Pure decisions over two store primitives.

Exact: another URL was fetched first with the same extracted-text hash (its ``claim_text``).
Near: within k bits of a stored 64-bit simhash (Manku et al. 2007), judged on a URL's first visit
only: a revisit would match its own earlier version. Duplicates are kept and their links
followed; they only count against their host: links found on a page of a host whose fetched
pages are duplicates at rate r sink ``ceil(DUP_PRIORITY_SCALE * r)`` priority points in its
queue, so a host that keeps serving the same content waits behind its own original pages.

Each engine supplies a ``ContentIndex``: SQLite answers from its fetches table and an in-memory
``NearDuplicateIndex``; a shared frontier from Redis keys spread over the cluster
(store/redis/content.py). Owners are the engine's identities of pages (fetch ids in SQLite,
URL ids on a shared frontier).
"""

from __future__ import annotations

import math
from typing import Final

from crawlspace.plans import ContentIndex, ContentVerdict
from crawlspace.records import FetchRecord

__all__ = ["DUP_PRIORITY_SCALE", "classify", "duplicate_penalty"]

# Two link depths (frontier/priority.py weighs a depth as 10; lower is leased first).
DUP_PRIORITY_SCALE: Final = 20


def classify(
    index: ContentIndex, fetch: FetchRecord, owner: int, *, first_visit: bool
) -> ContentVerdict:
    """Exact first; near only for a first visit that is no exact duplicate."""
    exact = None if fetch.text_sha256 is None else index.claim_text(fetch.text_sha256, owner)
    near = None
    if first_visit and exact is None and fetch.simhash is not None:
        near = index.near(fetch.simhash, owner)
    return ContentVerdict(exact, near)


def duplicate_penalty(duplicates: int, fetched: int) -> int:
    """Priority points added to a host's new links when ``duplicates`` of its ``fetched`` pages
    (this one included) were duplicates."""
    return math.ceil(DUP_PRIORITY_SCALE * duplicates / max(fetched, 1)) if duplicates else 0

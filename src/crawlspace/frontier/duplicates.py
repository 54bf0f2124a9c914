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

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from crawlspace.records import FetchRecord, UrlCandidate

__all__ = [
    "DUP_PRIORITY_SCALE",
    "ContentIndex",
    "ContentVerdict",
    "classify",
    "demote_links",
    "duplicate_penalty",
]

# Two link depths (frontier/priority.py weighs a depth as 10; lower is leased first).
DUP_PRIORITY_SCALE: Final = 20


class ContentIndex(Protocol):
    def claim_text(self, text_sha256: str, owner: int) -> int | None:
        """The owner of the first page of another URL with this text, else None (and this
        page's claim is recorded)."""
        ...

    def near(self, simhash: int, owner: int) -> int | None:
        """The cluster of the nearest stored fingerprint within k bits of another URL, else
        None; stores this fingerprint under that cluster, or as a cluster of its own."""
        ...


@dataclass(frozen=True, slots=True)
class ContentVerdict:
    exact_of: int | None = None
    near_of: int | None = None

    @property
    def duplicate(self) -> bool:
        return self.exact_of is not None or self.near_of is not None


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


def demote_links(
    discovered: Sequence[UrlCandidate], host_key: str, penalty: int
) -> list[UrlCandidate]:
    """The page's links, those on its own host ``penalty`` points later."""
    if not penalty:
        return list(discovered)
    return [
        dataclasses.replace(c, priority=c.priority + penalty) if c.host_key == host_key else c
        for c in discovered
    ]

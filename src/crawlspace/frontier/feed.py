"""Which completions reach the index feed, and as what. Pure.

A search index must hold a page's current document and drop the ones that should no longer be
found. Each URL version whose visit changes that gives one record (docs/feed.md):

- an **upsert** of a fetched 2xx page that was parsed, under the id of its canonical URL (a page
  and the canonical it names are one document);
- a **delete** of the URL's id when the visit shows it should not be in an index: the page is
  gone (404, 410), redirects elsewhere (the target is a document of its own), says noindex
  (meta robots or X-Robots-Tag), is another URL's content (an exact or near duplicate), or was
  retired unfetched because no page links to it any more (frontier/retirement.py).

Visits that say nothing new leave the index as it is and give no record: a retry, a failure (a
server that is down now may not be later; retries exhausted are not a deletion), an exclusion,
a 304 (the document held is current), a response nothing parsed (an image, a page whose parse
ran out of its budget).

A record's ``version`` is the completion time in microseconds: it only grows for a document,
whichever of its URLs it came from, so a consumer that keeps the newest version per id can
apply a replayed or reordered record without going back in time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from crawlspace.feed_format import DELETE, FEED_SCHEMA, UPSERT, document_id
from crawlspace.frontier.retirement import RETIRED
from crawlspace.plans import ContentVerdict, FeedEntry
from crawlspace.records import Completion, FetchRecord, Lease
from crawlspace.urls import normalize

__all__ = ["FeedSource", "feed_entry"]


@dataclass(frozen=True, slots=True)
class FeedSource:
    """What a completion's feed record is made of, kept by its plan until the verdict."""

    lease: Lease
    completion: Completion
    now: float


def feed_entry(source: FeedSource, verdict: ContentVerdict) -> FeedEntry | None:
    """The completion's feed record, or None when it leaves the index as it is."""
    lease, completion = source.lease, source.completion
    fetch = completion.fetch
    if completion.state == "redirected":
        return _delete(source, "redirected", fetch)
    if completion.state == "excluded" and completion.reason == RETIRED:
        return _delete(source, RETIRED, None)  # no page links to it any more
    if completion.state != "fetched" or fetch is None:
        return None
    if completion.reason == "gone":
        return _delete(source, "gone", fetch)
    if not 200 <= fetch.status < 300:
        return None
    if fetch.noindex:
        return _delete(source, "noindex", fetch)
    if verdict.exact_of is not None:
        return _delete(source, "duplicate", fetch)
    if verdict.near_of is not None:
        return _delete(source, "near_duplicate", fetch)
    if fetch.document is None:
        return None
    canonical = normalize(fetch.canonical, fetch.final_url) if fetch.canonical else None
    doc_id = document_id(canonical or lease.url)
    meta = _head(source, UPSERT, doc_id, None, fetch)
    meta.update(
        final_url=fetch.final_url,
        canonical=canonical,
        fetched_at=fetch.fetched_at,
        content_type=fetch.content_type,
        bytes=fetch.bytes,
        content_sha256=fetch.content_sha256,
        text_sha256=fetch.text_sha256,
        simhash=None if fetch.simhash is None else f"{fetch.simhash:016x}",
        warc={"file": fetch.warc_file, "offset": fetch.warc_offset, "length": fetch.warc_length},
    )
    return FeedEntry(doc_id, UPSERT, _json(meta), fetch.document)


def _delete(source: FeedSource, reason: str, fetch: FetchRecord | None) -> FeedEntry:
    """A delete of the URL's own id: a page that named another canonical was never indexed
    under it, and deleting the canonical's id would drop that page's document."""
    doc_id = document_id(source.lease.url)
    meta = _head(source, DELETE, doc_id, reason, fetch)
    if fetch is not None and fetch.redirect_to is not None:
        meta["redirect_to"] = fetch.redirect_to
    return FeedEntry(doc_id, DELETE, _json(meta))


def _head(
    source: FeedSource, kind: str, doc_id: str, reason: str | None, fetch: FetchRecord | None
) -> dict[str, Any]:
    return {
        "schema": FEED_SCHEMA,
        "kind": kind,
        "id": doc_id,
        "version": round(source.now * 1_000_000),
        "url": source.lease.url,
        "url_version": source.lease.version,
        "reason": reason,
        "status": None if fetch is None else fetch.status,
    }


def _json(value: dict[str, Any]) -> str:
    return orjson.dumps(value).decode()  # ~1 µs, in the crawl loop (the standard library: ~10)

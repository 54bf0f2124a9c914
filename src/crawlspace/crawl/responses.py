"""What a page's response means for its URL: retried, failed, redirected, and its fetch row.

Pure: a response in, a Completion (or a FetchRecord) out; the visit (``crawl/visit.py``) does the
I/O around them.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import math

from crawlspace.archive.warc import WarcLocation
from crawlspace.config import CrawlConfig
from crawlspace.dedup.simhash import simhash_and_sketch
from crawlspace.dedup.sketch import Sketch
from crawlspace.discovery.links import Discovery
from crawlspace.discovery.sitemaps import SITEMAP_SOURCE, admit_sitemap_doc
from crawlspace.fetch.transport import FetchResponse
from crawlspace.parse.directives import parse_x_robots_tag
from crawlspace.parse.processors import ProcessedContent
from crawlspace.records import Completion, FetchRecord, Lease
from crawlspace.urls import normalize

log = logging.getLogger("crawlspace.crawl.visit")

RETRY_STATUSES = frozenset({429, 503})
GONE_STATUSES = frozenset({404, 410})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def is_throttled(response: FetchResponse) -> bool:
    """A 429, or a 503 with Retry-After: the server asks us to wait, it is not failing."""
    status = response.status
    return status == 429 or (status == 503 and response.header("retry-after") is not None)


def retry_or_fail(
    lease: Lease,
    response: FetchResponse,
    config: CrawlConfig,
    throttled_since: float | None = None,
) -> Completion:
    """A 429 (or a 503 with Retry-After) asks us to wait, not to give up: the URL is tried
    again after the wait, up to ``max_throttled_attempts`` tries in all and while its host's
    throttling streak (begun at ``throttled_since``) is shorter than ``max_throttled_seconds``,
    and then fails saying so ("throttled"). Other 5xx answers are failures: ``max_attempts``."""
    status = response.status
    throttled = is_throttled(response)
    if throttled and throttled_since is not None:
        waited = response.ended_at - throttled_since
        if waited >= config.max_throttled_seconds:
            log.warning(
                "giving up on %s: %s has asked us to wait for %.0f s in a row "
                "(max_throttled_seconds %s)",
                lease.url,
                lease.host_key,
                waited,
                config.max_throttled_seconds,
            )
            return Completion(state="failed", reason="throttled")
    cap = config.max_throttled_attempts if throttled else config.max_attempts
    if lease.attempt < cap:
        return Completion(state="queued", reason=f"http_{status}")
    if throttled:
        log.warning("giving up on %s: still throttled after %d tries", lease.url, cap)
    return Completion(state="failed", reason="throttled" if throttled else f"http_{status}")


def redirect_completion(
    lease: Lease, response: FetchResponse, discovery: Discovery, max_redirects: int
) -> Completion:
    """A redirect's target enters the frontier as a new URL, one hop further."""
    location = response.header("location")
    if not location:
        return Completion(state="redirected", reason="redirect_without_location")
    hops = lease.redirect_hops + 1
    if hops > max_redirects:
        return Completion(
            state="redirected", reason="redirect_limit", rejections={"redirect_limit": 1}
        )
    # Each hop is a new URL through the frontier: robots and politeness apply to it.
    if lease.source == SITEMAP_SOURCE:
        candidate, reason = admit_sitemap_doc(
            discovery, location, lease.depth, response.url, redirect_hops=hops
        )
    else:
        candidate, reason = discovery.admit_one(
            location,
            depth=lease.depth,
            source="redirect",
            redirect_hops=hops,
            base=response.url,
        )
    if candidate is None:
        return Completion(state="redirected", rejections={reason or "invalid_url": 1})
    if reason is not None:
        return Completion(
            state="redirected", excluded=[(candidate.url, reason)], rejections={reason: 1}
        )
    return Completion(state="redirected", discovered=[candidate])


def fetch_record(
    lease: Lease,
    response: FetchResponse,
    location: WarcLocation,
    content: ProcessedContent | None,
    product_token: str,
    *,
    rendered: bool = False,
    render_error: str | None = None,
) -> FetchRecord:
    """The fetch row of a visit that got a response (``rendered``: in the browser too;
    ``render_error``: why a render tried failed)."""
    # The WARC's payload is the body unless content-encoding was undone: hashed once then.
    same = response.body is response.raw_body and location.payload_sha256 is not None
    simhash, sketch = page_fingerprints(content)
    return FetchRecord(
        url=lease.url,
        rendered=rendered,
        render_error=render_error,
        final_url=response.url,
        status=response.status,
        fetched_at=response.started_at,
        duration_ms=round(response.elapsed * 1000.0, 3),
        content_type=response.header("content-type"),
        bytes=len(response.raw_body),
        truncated=response.truncated,
        content_sha256=location.payload_sha256
        if same
        else hashlib.sha256(response.body).hexdigest(),
        warc_file=location.file,
        warc_offset=location.offset,
        warc_length=location.length,
        text_sha256=text_sha256(content),
        # A parsed page's noindex already has the header's; X-Robots-Tag is also what PDFs
        # and plain text have, which no processor parsed.
        noindex=content.noindex
        if content is not None
        else parse_x_robots_tag(response.header_values("x-robots-tag"), product_token).noindex,
        redirect_to=redirect_target(response),
        canonical=content.canonical if content is not None else None,
        simhash=simhash,
        sketch=sketch,
        document=content.document if content is not None else None,
        payload_key=location.payload_key,
        payload_digest=location.payload_digest if location.payload_key else None,
        items=tuple(content.items) if content is not None else (),
    )


def redirect_target(response: FetchResponse) -> str | None:
    location = response.header("location")
    if response.status not in REDIRECT_STATUSES or not location:
        return None
    return normalize(location, response.url)


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Retry-After as seconds from ``now`` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    # RFC 9110 allows only whole seconds; servers also send "1.5", which means what it says.
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 and not math.isnan(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def text_sha256(content: ProcessedContent | None) -> str | None:
    if content is None:
        return None
    if content.text_sha256 is not None:  # computed in the parse worker
        return content.text_sha256
    return hashlib.sha256(content.text.encode()).hexdigest() if content.text else None


def page_fingerprints(content: ProcessedContent | None) -> tuple[int | None, Sketch | None]:
    """The page's simhash and sketch: from the parse worker, or computed here from its text."""
    if content is None:
        return None, None
    if content.simhash is not None:  # computed in the parse worker
        return content.simhash, content.sketch
    if not content.text:
        return None, None
    return simhash_and_sketch(content.text)

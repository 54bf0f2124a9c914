"""One lease, one visit: fetch robots.txt or a page, archive it, parse it, and say how it ended.

The visits do the I/O of a single lease (transport, WARC) and return what the store must commit;
they never write the store (a request only takes its address token there, crawl/addresses.py),
so the commit stays one transaction in ``crawl/leases.py``. robots.txt visits are
``robots_visit.py``'s, the parts both kinds share ``visit_parts.py``'s; pages are here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace

from crawlspace.archive.captures import Lookup
from crawlspace.archive.reading import ArchiveReadError
from crawlspace.archive.records import ExchangeRecords
from crawlspace.archive.warc import WarcLocation
from crawlspace.crawl.host_timing import failed_request, host_wait, schedule_host
from crawlspace.crawl.render_visit import render_outcome, render_page
from crawlspace.crawl.responses import (
    GONE_STATUSES,
    REDIRECT_STATUSES,
    RETRY_STATUSES,
    fetch_record,
    is_throttled,
    redirect_completion,
    retry_or_fail,
)
from crawlspace.crawl.robots_visit import FINAL_ROBOTS_ERRORS, RobotsVisitor
from crawlspace.crawl.visit_parts import VisitParts, exchange_of
from crawlspace.discovery.sitemaps import (
    SITEMAP_SOURCE,
    admit_parsed_sitemap,
    is_sitemap_response,
    read_sitemap,
)
from crawlspace.errors import (
    BlockedAddressError,
    FetchError,
    ParseBudgetError,
    ParseCrashedError,
    ParseMemoryError,
)
from crawlspace.faults import crash_point
from crawlspace.fetch.transport import FetchRequest, FetchResponse
from crawlspace.frontier.backoff import THROTTLE_NOTE, throttle_note
from crawlspace.frontier.outage import OUTAGE_NOTE, Outage, answered
from crawlspace.frontier.render_entry import HostRenders
from crawlspace.parse.directives import parse_x_robots_tag
from crawlspace.parse.processors import ProcessedContent
from crawlspace.parse.sitemap import MAX_SITEMAP_BYTES
from crawlspace.records import Completion, Lease, RobotsRecord
from crawlspace.robots import RobotsTxt
from crawlspace.robots.policy import DISALLOW_ALL

log = logging.getLogger("crawlspace.crawl.visit")

# Why a parse can fail in a parse worker (errors.py); such a page is parsed again from its record.
PARSE_FAILURES = frozenset(
    {ParseBudgetError.reason, ParseMemoryError.reason, ParseCrashedError.reason}
)
# The counter of parses made again from WARC records (stats).
PARSE_RETRIED = "parse.retried"


class Visitor:
    """One per crawl: visits pages (here) and robots.txt (``robots_visit.py``, ``robots``),
    both with the crawl's ``VisitParts``."""

    def __init__(self, parts: VisitParts) -> None:
        self._parts = parts
        self.robots = RobotsVisitor(parts)

    async def visit_page(
        self,
        lease: Lease,
        robots: RobotsRecord,
        rules: RobotsTxt,
        *,
        throttled_since: float | None = None,
        outage: Outage | None = None,
        slowdown: float = 1.0,
        renders: HostRenders | None = None,
    ) -> Completion:
        """Fetch the leased page (``throttled_since``: when its host's current throttling
        streak began, frontier/backoff.py; ``outage``: its host's current run of unanswered
        requests, frontier/outage.py; ``slowdown``: its host's allowance, what its politeness
        gap is multiplied by, frontier/allowance.py; ``renders``: its host's renders so far,
        frontier/render_entry.py) and say how its visit ended."""
        config = self._parts.config
        if robots.outcome == DISALLOW_ALL and robots.error in FINAL_ROBOTS_ERRORS:
            return Completion(state="excluded", reason=robots.error)
        if not rules.is_allowed(config.user_agent, lease.url):
            return Completion(state="excluded", reason="robots")
        crawl_delay = rules.crawl_delay(config.user_agent)
        headers: list[tuple[str, str]] = []
        if lease.etag:
            headers.append(("If-None-Match", lease.etag))
        if lease.last_modified:
            headers.append(("If-Modified-Since", lease.last_modified))
        self._parts.check_lease(lease)
        started = self._parts.now()
        try:
            # sitemaps.org allows 50 MiB per sitemap, more than an ordinary page's limit.
            limit = MAX_SITEMAP_BYTES if lease.source == SITEMAP_SOURCE else None
            response = await self._parts.fetch(
                lease, FetchRequest(lease.url, headers=headers, max_body_bytes=limit)
            )
        except BlockedAddressError as exc:
            log.warning("refused %s: %s", lease.url, exc)
            return Completion(state="excluded", reason=exc.reason)
        except FetchError as exc:
            ended = self._parts.now()
            host = self._parts.backoff.on_failure(
                lease.host_backoff, lease.host_failures, self._parts.rand()
            )
            completion, given_up = failed_request(self._parts, lease, exc.reason, outage, ended)
            if given_up:  # its queued URLs fail next, unsent (frontier/outage.py)
                host = replace(host, wait=0.0)
            return schedule_host(
                self._parts,
                completion,
                host,
                ended=ended,
                seconds=ended - started,
                crawl_delay=crawl_delay,
                slowdown=slowdown,
            )
        host = host_wait(self._parts, lease, response)
        crash_point("after_response")
        lookup = self._parts.lookup(response)  # archived lately? (archive/captures.py)
        try:
            completion, content, records = await self._page_outcome(
                lease, response, throttled_since, lookup
            )
        except Exception:
            await self._parts.archive(response, lookup=lookup)  # whatever its parse did
            raise
        # A parsed page's records were built where it was parsed; appended before its commit.
        location = await self._parts.archive(response, records, lookup)
        crash_point("after_warc")
        if completion.reason in PARSE_FAILURES:
            completion, content = await self._parse_again(
                lease, response, completion, location, lookup
            )
        notes = dict(completion.notes)
        note = throttle_note(throttled_since, is_throttled(response), response.ended_at)
        if note is not None:
            notes[THROTTLE_NOTE] = note
        ended_outage = answered(outage)
        if ended_outage is not None:
            log.info("%s answers again", lease.host_key)
            notes[OUTAGE_NOTE] = ended_outage
        if notes != completion.notes:
            completion = replace(completion, notes=notes)
        completion = schedule_host(
            self._parts,
            completion,
            host,
            ended=response.ended_at,
            seconds=response.elapsed,
            crawl_delay=crawl_delay,
            slowdown=slowdown,
        )
        return await self._finished(
            lease,
            response,
            completion,
            content=content,
            location=location,
            rules=rules,
            crawl_delay=crawl_delay,
            renders=renders,
        )

    async def _finished(
        self,
        lease: Lease,
        response: FetchResponse,
        completion: Completion,
        *,
        content: ProcessedContent | None,
        location: WarcLocation,
        rules: RobotsTxt,
        crawl_delay: float | None,
        renders: HostRenders | None,
    ) -> Completion:
        """The page rendered too when the crawl renders and its entry rule asks for it
        (crawl/render_visit.py), then its fetch row."""
        rendered, render_error = False, None
        if self._parts.renderer is not None and renders is not None:  # crawl/render_visit.py
            completion, content = await render_page(
                self._parts,
                lease,
                response,
                completion,
                content=content,
                rules=rules,
                crawl_delay=crawl_delay,
                renders=renders,
                refers_to=location.record_id,
            )
            rendered, render_error = render_outcome(completion)
        fetch = fetch_record(
            lease,
            response,
            location,
            content,
            self._parts.config.product_token,
            rendered=rendered,
            render_error=render_error,
        )
        return replace(completion, fetch=fetch)

    async def _page_outcome(
        self,
        lease: Lease,
        response: FetchResponse,
        throttled_since: float | None,
        lookup: Lookup,
    ) -> tuple[Completion, ProcessedContent | None, ExchangeRecords | None]:
        """How the visit ended, the page's content if it was parsed, and the exchange's WARC
        records if they were built with it."""
        status = response.status
        if status in RETRY_STATUSES or status >= 500:
            return retry_or_fail(lease, response, self._parts.config, throttled_since), None, None
        if status in REDIRECT_STATUSES:
            completion = redirect_completion(
                lease, response, self._parts.discovery, self._parts.config.max_redirects
            )
            return completion, None, None
        completion = Completion(
            state="fetched",
            etag=response.header("etag"),
            last_modified=response.header("last-modified"),
        )
        if status == 304 and (lease.etag or lease.last_modified):
            # RFC 9110 §15.4.5: our stored copy is current. The small 304 response record is in
            # the WARC and a fetch row (status 304) keeps fetched_at; no body, no links, no parse.
            return replace(completion, state="not_modified"), None, None
        if status in GONE_STATUSES:
            # A tombstone: the URL stays known (rediscovery creates nothing) and is not refetched
            # in this crawl; recrawl revisits it rarely.
            completion = replace(completion, reason="gone")
        if not 200 <= status < 300:
            return completion, None, None
        if is_sitemap_response(lease.source, response.header("content-type")):
            return await self._sitemap_links(lease, response, completion), None, None
        return await self._page_links(lease, response, completion, lookup)

    async def _sitemap_links(
        self, lease: Lease, response: FetchResponse, completion: Completion
    ) -> Completion:
        """A sitemap's URLs enter like links, through the same admission
        (discovery/sitemaps.py)."""
        admission, reason = admit_parsed_sitemap(
            self._parts.discovery,
            await self._parts.pools.in_thread(read_sitemap, response.body),  # off the event loop
            url=lease.url,
            depth=lease.depth,
            max_sitemap_depth=self._parts.config.max_sitemap_depth,
            cut_in_transfer=response.truncated,
            now=response.started_at,
        )
        return replace(
            completion,
            reason=reason,
            links=admission.links,
            discovered=admission.candidates,
            excluded=admission.excluded,
            rejections=dict(admission.rejections),
        )

    async def _parse_again(
        self,
        lease: Lease,
        response: FetchResponse,
        failed: Completion,
        location: WarcLocation,
        lookup: Lookup,
    ) -> tuple[Completion, ProcessedContent | None]:
        """A page whose parse failed, parsed again (``parse_retries`` times at most) from its
        WARC record, on a parse worker (a new one when the last died): a worker killed under
        it, or a page near its budget on a busy machine, then loses nothing. A page that fails
        every time is kept as fetched, archived, without text or links."""
        tries = self._parts.config.parse_retries
        for attempt in range(1, tries + 1):
            try:
                stored = await self._parts.archived(response, location, lookup)
            except ArchiveReadError as exc:
                log.warning("%s: its WARC record cannot be read back: %s", response.url, exc)
                break
            unparsed = replace(failed, reason=None)
            completion, content, _ = await self._page_links(
                lease, stored, unparsed, lookup, archive=False
            )
            counters = {**completion.counters, PARSE_RETRIED: attempt}
            completion = replace(completion, counters=counters)
            if completion.reason not in PARSE_FAILURES:
                log.warning("%s: parsed again from its WARC record", response.url)
                return completion, content
            failed = completion
        log.warning("%s: kept without its text and links (%s)", response.url, failed.reason)
        return failed, None

    async def _page_links(
        self,
        lease: Lease,
        response: FetchResponse,
        completion: Completion,
        lookup: Lookup,
        *,
        archive: bool = True,
    ) -> tuple[Completion, ProcessedContent | None, ExchangeRecords | None]:
        """Parse the page with its MIME type's processor (in a parse worker when there are
        some, which builds its WARC records too, unless ``archive`` is False: they were
        written) and admit its links."""
        processor = self._parts.processors.for_content_type(response.header("content-type"))
        if processor is None:
            return completion, None, None
        header_directives = parse_x_robots_tag(
            response.header_values("x-robots-tag"), self._parts.config.product_token
        )
        try:
            page = await self._parts.pools.parse_page(
                processor,
                response.body,
                url=response.url,
                content_type=response.header("content-type"),
                product_token=self._parts.config.product_token,
                parent_depth=lease.depth,
                header_nofollow=header_directives.nofollow,
                archive=(
                    (self._parts.warc.builder, exchange_of(response), lookup.earlier_capture())
                    if archive
                    else None
                ),
                document_chars=self._parts.config.feed_text_chars
                if self._parts.config.feed
                else None,
                extractor=self._parts.extractor,
            )
        except ParseBudgetError as exc:
            # A hostile page, or a worker that died under it: parsed again from its WARC
            # record (_parse_again), never fetched again, which would spend the host's time.
            log.warning("%s: %s", response.url, exc)
            return replace(completion, reason=exc.reason), None, None
        content = page.content
        if content.extract_error is not None:
            log.warning("%s: the extraction hook failed: %s", response.url, content.extract_error)
        admission = page.admit(
            self._parts.discovery,
            parent_depth=lease.depth,
            header_nofollow=header_directives.nofollow,
        )
        if self._parts.config.path_ascending:
            self._parts.discovery.admit_ascending(
                response.url, parent_depth=lease.depth, into=admission
            )
        completion = replace(
            completion,
            links=admission.links,
            discovered=admission.candidates,
            excluded=admission.excluded,
            rejections=dict(admission.rejections),
            counters=_with_extraction(admission.counters, content),
        )
        if header_directives.noindex and not content.noindex:
            content = replace(content, noindex=True)
        return completion, content, page.records


def _with_extraction(counters: Mapping[str, int], content: ProcessedContent) -> dict[str, int]:
    """The page's counters, with what the extraction hook made of it (parse/extract.py)."""
    out = dict(counters)
    if content.items:
        out["extract.items"] = len(content.items)
    if content.extract_error is not None:
        out["extract.errors"] = 1
    return out

"""One lease, one visit: fetch robots.txt or a page, archive it, parse it, and say how it ended.

The functions here do the I/O of a single visit (transport, WARC) and return what the store must
commit; they never touch the store, so the commit stays one transaction in ``crawl/crawler.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from crawlspace.archive.warc import WarcWriter
from crawlspace.config import CrawlConfig
from crawlspace.crawl.addresses import AddressGate
from crawlspace.crawl.responses import (
    GONE_STATUSES,
    REDIRECT_STATUSES,
    RETRY_STATUSES,
    fetch_record,
    parse_retry_after,
    redirect_completion,
    retry_or_fail,
)
from crawlspace.crawl.stages import StagePools
from crawlspace.discovery.links import Discovery
from crawlspace.discovery.sitemaps import (
    SITEMAP_SOURCE,
    admit_parsed_sitemap,
    is_sitemap_response,
    read_sitemap,
)
from crawlspace.errors import BlockedAddressError, FetchError
from crawlspace.faults import crash_point
from crawlspace.fetch.transport import FetchRequest, FetchResponse, Transport
from crawlspace.frontier.backoff import BackoffPolicy, HostWait
from crawlspace.frontier.politeness import PolitenessPolicy
from crawlspace.parse.directives import parse_x_robots_tag
from crawlspace.parse.processors import ProcessedContent, ProcessorRegistry, admit_links
from crawlspace.parse.sitemap import MAX_SITEMAP_BYTES
from crawlspace.records import Completion, Lease, RobotsRecord
from crawlspace.robots import RobotsTxt
from crawlspace.robots.policy import (
    DISALLOW_ALL,
    REDIRECT,
    UNAVAILABLE_ERROR,
    CacheHeaders,
    RobotsPolicy,
    after_redirects,
    classify_status,
)
from crawlspace.urls import normalize

log = logging.getLogger("crawlspace.crawl.visit")


class LeaseTooShortError(Exception):
    """The lease would expire before a request started now could end: no request is sent."""


@dataclass(frozen=True, slots=True)
class RobotsVisit:
    record: RobotsRecord
    next_allowed_at: float


class Visitor:
    """Carries the collaborators a visit needs; one per crawl."""

    def __init__(
        self,
        config: CrawlConfig,
        transport: Transport,
        warc: WarcWriter,
        discovery: Discovery,
        *,
        processors: ProcessorRegistry,
        pools: StagePools,
        gate: AddressGate | None = None,
        rand: Callable[[], float] = random.random,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.pools = pools
        self.gate = gate  # per server address tokens (crawl/addresses.py); None: none
        self.now = now  # the lease clock (lease.expires_at is on it)
        self.config = config
        self.transport = transport
        self.warc = warc
        self.discovery = discovery
        self.processors = processors
        self.politeness = PolitenessPolicy(
            config.min_delay, config.delay_factor, config.max_crawl_delay
        )
        self.backoff = BackoffPolicy(
            base_seconds=config.backoff_base,
            max_seconds=config.max_backoff,
            retry_seconds=config.retry_delay,
            pause_after=config.host_pause_after,
            pause_seconds=config.host_pause_seconds,
        )
        self.rand = rand
        self.robots_policy = RobotsPolicy(
            config.robots_cache_seconds,
            config.robots_retry_delay,
            config.robots_max_attempts,
            config.robots_min_cache_seconds,
        )

    async def _archive(self, response: FetchResponse) -> tuple[str, int, int]:
        location = await self.pools.archive(
            self.warc.write_exchange,
            url=response.url,
            request_headers=response.request_headers,
            http_version=response.http_version,
            status=response.status,
            reason=response.reason,
            response_headers=response.headers,
            payload=response.raw_body,
            fetched_at=response.started_at,
            ip_address=response.peer_address,
            truncated="length" if response.truncated else None,
        )
        return location.file, location.offset, location.length

    async def _fetch(self, lease: Lease, request: FetchRequest) -> FetchResponse:
        """One request, holding its server address's token while it runs (AddressBusyError
        when the address has none free: nothing is sent)."""
        if self.gate is None:
            return await self.transport.fetch(request)
        async with self.gate.hold(lease, request.url):
            return await self.transport.fetch(request)

    def _check_lease(self, lease: Lease) -> None:
        """Refuse to start a request that could outlive its lease.

        A fetch ends within ``total_timeout``, and once a lease expires another worker may be
        given the host. A visit can start late: its task waits for the event loop, which a
        store call can hold for seconds (riding out a Redis failover, say). Started after
        ``expires_at - total_timeout``, its request could overlap the next lease holder's."""
        if self.now() + self.config.total_timeout > lease.expires_at:
            raise LeaseTooShortError(lease.url)

    # -- robots.txt --------------------------------------------------------------------------

    async def visit_robots(self, lease: Lease, previous: RobotsRecord | None) -> RobotsVisit:
        """Fetch robots.txt, following up to ``max_redirects`` hops (RFC 9309 §2.3.1.2)."""
        url = lease.url
        started = time.time()
        status: int | None = None
        body = b""
        error: str | None = None
        retry_after: float | None = None
        cache: CacheHeaders | None = None
        hops = 0
        while True:
            self._check_lease(lease)  # before each hop: a redirect chain may outlast the lease
            try:
                response = await self._fetch(
                    lease,
                    FetchRequest(
                        url,
                        max_body_bytes=self.config.robots_max_bytes,
                        # Decoded too: the record is stored and cached in memory per host.
                        max_decompressed_bytes=self.config.robots_max_bytes,
                    ),
                )
            except BlockedAddressError as exc:
                # Not a transient failure: our own policy forbids the host, so give up at once
                # (no request was made, so the host's clock does not move).
                now = time.time()
                record = RobotsRecord(
                    lease.host_key,
                    None,
                    DISALLOW_ALL,
                    b"",
                    now,
                    now + self.config.robots_cache_seconds,
                    self.config.robots_max_attempts,
                    exc.reason,
                )
                return RobotsVisit(record, now)
            except FetchError as exc:
                status, error = None, exc.reason
                break
            await self._archive(response)
            status, body = response.status, response.body
            cache = cache_headers(response)  # the final response's: the one that answers
            if status in RETRY_STATUSES:
                retry_after = parse_retry_after(response.header("retry-after"), response.ended_at)
            if classify_status(status) != REDIRECT:
                break
            hops += 1
            target = self._robots_hop(lease, url, response, hops)
            if target is None:
                break
            url = target
            # Every hop is a request: the next one waits the politeness gap, as a page would.
            await asyncio.sleep(self.politeness.gap(response.elapsed, None))
        return self.robots_outcome(
            lease,
            status,
            body,
            previous=previous,
            error=error,
            started=started,
            ended=time.time(),
            retry_after=retry_after,
            cache=cache,
        )

    def _robots_hop(self, lease: Lease, url: str, response: FetchResponse, hops: int) -> str | None:
        """Where a robots.txt redirect leads, or None to stop following: the 3xx then stands,
        which robots/policy.py reads as allow-all, as it does after too many hops."""
        location = response.header("location")
        target = normalize(location, url) if location else None
        if target is None or after_redirects(hops, self.config.max_redirects) is not None:
            return None
        # These hops bypass link admission (RFC 9309 lets robots.txt move across hosts), but
        # opt-ins stay narrow (#18): robots.txt must not lead to another port of an opted-in
        # address any more than a link may.
        if self.discovery.scope.opt_in_reason(target) is not None:
            log.warning(
                "not following %s's robots.txt redirect to %s: scope", lease.host_key, target
            )
            return None
        return target

    def robots_outcome(
        self,
        lease: Lease,
        status: int | None,
        body: bytes,
        *,
        previous: RobotsRecord | None,
        error: str | None,
        started: float,
        ended: float,
        retry_after: float | None = None,
        cache: CacheHeaders | None = None,
    ) -> RobotsVisit:
        """The record and the host's next start after a robots.txt visit (``status`` None: no
        answer, with ``error`` saying why; ``cache``: the response's caching headers, which
        set how long an answer is kept); also how the crawl records a visit that raised."""
        # The body may be cut at robots_max_bytes; RFC 9309 §2.5 lets us parse what we have.
        record = self.robots_policy.record_for(
            lease.host_key, status, body, ended, previous=previous, error=error, cache=cache
        )
        crawl_delay = None
        if record.outcome == "rules":
            crawl_delay = RobotsTxt.parse(record.body).crawl_delay(self.config.user_agent)
        next_allowed = self.politeness.next_allowed_at(ended, ended - started, crawl_delay)
        if retry_after is not None:
            # A 429 or 503 on robots.txt asks the whole host to wait, pages included.
            next_allowed = max(next_allowed, ended + min(retry_after, self.config.max_backoff))
        if robots_retrying(record):
            # Unreachable robots.txt: nothing may be fetched until the retry, so wait for it.
            next_allowed = max(next_allowed, record.expires_at)
        # A short HTTP lifetime must not outrun the host's own gap, or it never gets a page.
        record = self.robots_policy.outlasting(record, next_allowed, next_allowed - ended)
        return RobotsVisit(record, next_allowed)

    # -- pages -------------------------------------------------------------------------------

    async def visit_page(self, lease: Lease, robots: RobotsRecord, rules: RobotsTxt) -> Completion:
        config = self.config
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
        self._check_lease(lease)
        started = time.time()
        try:
            # sitemaps.org allows 50 MiB per sitemap, more than an ordinary page's limit.
            limit = MAX_SITEMAP_BYTES if lease.source == SITEMAP_SOURCE else None
            response = await self._fetch(
                lease, FetchRequest(lease.url, headers=headers, max_body_bytes=limit)
            )
        except BlockedAddressError as exc:
            log.warning("refused %s: %s", lease.url, exc)
            return Completion(state="excluded", reason=exc.reason)
        except FetchError as exc:
            ended = time.time()
            host = self.backoff.on_failure(
                lease.host_backoff, lease.host_failures, lease.attempt, self.rand()
            )
            state = "queued" if lease.attempt < config.max_attempts else "failed"
            completion = Completion(state=state, reason=exc.reason)
            self._schedule_host(completion, host, ended, ended - started, crawl_delay)
            return completion
        host = self._host_wait(lease, response)
        crash_point("after_response")
        location = await self._archive(response)
        crash_point("after_warc")
        completion, content = await self._page_outcome(lease, response)
        self._schedule_host(completion, host, response.ended_at, response.elapsed, crawl_delay)
        completion.fetch = fetch_record(
            lease, response, location, content, self.config.product_token
        )
        return completion

    def _host_wait(self, lease: Lease, response: FetchResponse) -> HostWait:
        status = response.status
        if status in RETRY_STATUSES:
            retry_after = parse_retry_after(response.header("retry-after"), response.ended_at)
            return self.backoff.on_throttled(
                lease.host_backoff, lease.host_failures, retry_after, self.rand()
            )
        if status >= 500:
            return self.backoff.on_failure(
                lease.host_backoff, lease.host_failures, lease.attempt, self.rand()
            )
        return self.backoff.on_success(lease.host_backoff)

    def _schedule_host(
        self,
        completion: Completion,
        host: HostWait,
        ended: float,
        seconds: float,
        crawl_delay: float | None,
    ) -> None:
        """The host's next start: the politeness gap, widened while it throttles us, and never
        before a Retry-After, backoff or pause it earned."""
        gap = self.politeness.gap(seconds, crawl_delay) * self.backoff.gap_multiplier(host.level)
        completion.next_allowed_at = ended + max(gap, host.wait)
        completion.host_backoff = host.level
        completion.host_failures = host.failures

    async def _page_outcome(
        self, lease: Lease, response: FetchResponse
    ) -> tuple[Completion, ProcessedContent | None]:
        status = response.status
        if status in RETRY_STATUSES or status >= 500:
            return retry_or_fail(lease, response, self.config), None
        if status in REDIRECT_STATUSES:
            return redirect_completion(
                lease, response, self.discovery, self.config.max_redirects
            ), None
        completion = Completion(
            state="fetched",
            etag=response.header("etag"),
            last_modified=response.header("last-modified"),
        )
        if status == 304 and (lease.etag or lease.last_modified):
            # RFC 9110 §15.4.5: our stored copy is current. The small 304 response record is in
            # the WARC and a fetch row (status 304) keeps fetched_at; no body, no links, no parse.
            completion.state = "not_modified"
            return completion, None
        if status in GONE_STATUSES:
            # A tombstone: the URL stays known (rediscovery creates nothing) and is not refetched
            # in this crawl; recrawl revisits it rarely.
            completion.reason = "gone"
        if not 200 <= status < 300:
            return completion, None
        if is_sitemap_response(lease.source, response.header("content-type")):
            await self._sitemap_links(lease, response, completion)
            return completion, None
        return await self._page_links(lease, response, completion)

    async def _sitemap_links(
        self, lease: Lease, response: FetchResponse, completion: Completion
    ) -> None:
        """A sitemap's URLs enter like links, through the same admission
        (discovery/sitemaps.py)."""
        admission, completion.reason = admit_parsed_sitemap(
            self.discovery,
            await self.pools.in_thread(read_sitemap, response.body),  # off the event loop
            url=lease.url,
            depth=lease.depth,
            max_sitemap_depth=self.config.max_sitemap_depth,
            cut_in_transfer=response.truncated,
            now=response.started_at,
        )
        completion.links = admission.links
        completion.discovered = admission.candidates
        completion.excluded = admission.excluded
        completion.rejections = dict(admission.rejections)

    async def _page_links(
        self, lease: Lease, response: FetchResponse, completion: Completion
    ) -> tuple[Completion, ProcessedContent | None]:
        """Parse the page with its MIME type's processor (in a parse worker when there are
        some) and admit its links."""
        processor = self.processors.for_content_type(response.header("content-type"))
        if processor is None:
            return completion, None
        header_directives = parse_x_robots_tag(
            response.header_values("x-robots-tag"), self.config.product_token
        )
        content, in_worker = await self.pools.parse_page(
            processor,
            response.body,
            url=response.url,
            content_type=response.header("content-type"),
            product_token=self.config.product_token,
            parent_depth=lease.depth,
            header_nofollow=header_directives.nofollow,
        )
        if in_worker is not None:
            admission = in_worker
        else:  # not admitted in a parse worker (crawl/stages.py): here, then
            admission = admit_links(
                self.discovery,
                content,
                parent_depth=lease.depth,
                header_nofollow=header_directives.nofollow,
            )
        if self.config.path_ascending:
            self.discovery.admit_ascending(response.url, parent_depth=lease.depth, into=admission)
        completion.links = admission.links
        completion.discovered = admission.candidates
        completion.excluded = admission.excluded
        completion.rejections = dict(admission.rejections)
        completion.counters = dict(admission.counters)
        if header_directives.noindex and not content.noindex:
            content = dataclasses.replace(content, noindex=True)
        return completion, content


# robots.txt failures after which the host's URLs are excluded instead of waiting for a retry.
FINAL_ROBOTS_ERRORS = frozenset({UNAVAILABLE_ERROR, BlockedAddressError.reason})


def cache_headers(response: FetchResponse) -> CacheHeaders:
    """The header fields that say how long ``response`` may be kept (robots/policy.py)."""
    return CacheHeaders(
        tuple(response.header_values("cache-control")),
        response.header("expires"),
        response.header("date"),
        response.header("age"),
    )


def robots_retrying(record: RobotsRecord) -> bool:
    """True while robots.txt is unreachable but will be retried: the host must wait."""
    return record.outcome == DISALLOW_ALL and record.error not in FINAL_ROBOTS_ERRORS

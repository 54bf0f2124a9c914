"""What every visit shares: its collaborators, the WARC write, and the one way a request is sent
(only while the lease outlives it, holding its server address's token). The page visit
(visit.py) and the robots.txt visit (robots_visit.py) each hold one ``VisitParts``."""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable

from crawlspace.archive.captures import Capture, Captures, Lookup
from crawlspace.archive.reading import ArchiveReadError, read_response
from crawlspace.archive.records import Exchange, ExchangeRecords
from crawlspace.archive.warc import WarcLocation, WarcWriter
from crawlspace.config import CrawlConfig
from crawlspace.crawl.addresses import AddressGate, CrawlTokens, HostGate
from crawlspace.crawl.setup import frontier_limits, outage_policy, render_policy, renderer_for
from crawlspace.crawl.stages import StagePools
from crawlspace.discovery.links import Discovery
from crawlspace.fetch.body import BodyReader
from crawlspace.fetch.request_headers import RequestHeaders
from crawlspace.fetch.transport import FetchRequest, FetchResponse, Transport
from crawlspace.frontier.backoff import BackoffPolicy
from crawlspace.frontier.politeness import PolitenessPolicy
from crawlspace.frontier.render_entry import CrawlRenders
from crawlspace.parse.extract import Extractor
from crawlspace.parse.processors import ProcessorRegistry
from crawlspace.records import Lease
from crawlspace.render.browser import Renderer
from crawlspace.robots.hop_answers import HopAnswers
from crawlspace.robots.policy import RobotsPolicy
from crawlspace.store.base import RenderCounts


class LeaseTooShortError(Exception):
    """The lease would expire before a request started now could end: no request is sent."""


class VisitParts:
    """The collaborators every visit uses, and the steps robots.txt and page visits share
    (one per crawl, held by both kinds of visit)."""

    def __init__(
        self,
        config: CrawlConfig,
        transport: Transport,
        warc: WarcWriter,
        discovery: Discovery,
        *,
        processors: ProcessorRegistry,
        pools: StagePools,
        extractor: Extractor | None = None,
        gate: AddressGate | None = None,
        hosts: HostGate | None = None,
        renderer: Renderer | None = None,
        render_counts: RenderCounts | None = None,
        rand: Callable[[], float] = random.random,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.pools = pools
        # The rendering tier (crawl/render_visit.py): its browser, None when the crawl renders
        # nothing; which pages go there; the crawl-wide render budget's totals, kept by the
        # store for every worker (None: this process's own), and the last of them seen here.
        self.renderer = renderer
        self.render_policy = render_policy(config)
        self.render_counts = render_counts
        self.renders = CrawlRenders()
        self.extractor = extractor  # the user's items of each parsed page (parse/extract.py)
        self.gate = gate  # per server address tokens (crawl/addresses.py); None: none
        # Other hosts' tokens, for robots.txt redirect hops (crawl/addresses.py); None: none.
        self.hosts = hosts
        self.now = now  # the lease clock (lease.expires_at is on it)
        self.config = config
        self.transport = transport
        self.warc = warc
        # Payloads archived lately: a repeat is written as a revisit record (captures.py).
        self.captures = Captures(config.warc_revisit_window)
        self.discovery = discovery
        self.processors = processors
        self.politeness = PolitenessPolicy(
            config.min_delay, config.delay_factor, config.max_crawl_delay
        )
        self.backoff = BackoffPolicy(
            base_seconds=config.backoff_base,
            max_seconds=config.max_backoff,
            retry_seconds=config.retry_delay,
        )
        self.outages = outage_policy(config)
        self.rand = rand
        # robots.txt answers fetched from other hosts through redirects (robots_visit.py).
        self.hop_answers = HopAnswers()
        # What a user adds to requests (fetch/request_headers.py); empty: nothing to add.
        self.request_headers = RequestHeaders.parse(
            config.headers, config.host_headers, config.auth
        )
        self.robots_policy = RobotsPolicy(
            config.robots_cache_seconds,
            config.robots_retry_delay,
            config.robots_max_attempts,
            config.robots_min_cache_seconds,
        )

    @classmethod
    def for_crawl(
        cls,
        config: CrawlConfig,
        transport: Transport,
        warc: WarcWriter,
        discovery: Discovery,
        *,
        processors: ProcessorRegistry,
        pools: StagePools,
        extractor: Extractor | None,
        tokens: CrawlTokens,
        render_counts: RenderCounts,
        now: Callable[[], float],
    ) -> VisitParts:
        """A crawl's parts: the address and host tokens (and the rate cap) from its store,
        the browser when it renders (crawl/setup.py)."""
        gate = AddressGate(
            transport.address_of,
            tokens,
            now,
            rate=frontier_limits(config).rate,
            total_timeout=config.total_timeout,
        )
        return cls(
            config,
            transport,
            warc,
            discovery,
            processors=processors,
            pools=pools,
            extractor=extractor,
            gate=gate,
            hosts=HostGate(tokens, now),
            renderer=renderer_for(config),
            render_counts=render_counts,
            now=now,
        )

    def lookup(self, response: FetchResponse) -> Lookup:
        """The response's payload among the crawl's recent captures (archive/captures.py)."""
        return self.captures.lookup(response.raw_body, cut=response.truncated)

    async def archive(
        self,
        response: FetchResponse,
        records: ExchangeRecords | None = None,
        lookup: Lookup | None = None,
    ) -> WarcLocation:
        """Append the exchange's records (built where its page was parsed, or now on the WARC
        thread; a revisit when its payload was archived lately) and return the record's
        location once they reached the OS. Appends happen here on the crawl loop only: the
        writer is one ordered stream."""
        if lookup is None:
            lookup = self.lookup(response)
        if records is None:
            build = self.warc.builder.capture
            exchange = exchange_of(response)
            records = await self.pools.archive(build, exchange, lookup.earlier_capture())
        location = self.warc.append(records)
        if records.revisit and lookup.earlier is not None:
            # The fetch row points at the revisit (a record of its own URL), with the hashes
            # of the payload it repeats (the same bytes).
            earlier = lookup.earlier.location
            return dataclasses.replace(
                location,
                payload_sha256=earlier.payload_sha256,
                payload_digest=earlier.payload_digest,
            )
        if lookup.key is not None:
            location = dataclasses.replace(location, payload_key=lookup.key)
            self.captures.remember(lookup, Capture(response.url, response.started_at, location))
        return location

    async def archived(
        self, response: FetchResponse, location: WarcLocation, lookup: Lookup
    ) -> FetchResponse:
        """``response`` as its WARC record at ``location`` keeps it (the payload of the capture
        it repeats, for a revisit), decoded again within the fetch's caps: read on the WARC
        thread. ArchiveReadError when the record is missing or not this response's."""
        earlier = lookup.earlier.location if lookup.earlier is not None else None
        directory = self.warc.directory
        stored = await self.pools.archive(read_response, directory, location, earlier=earlier)
        if stored.url != response.url or stored.status != response.status:
            raise ArchiveReadError(f"{location.file}@{location.offset} holds another response")
        config = self.config
        reader = BodyReader(
            response.header("content-encoding") or "",
            max_raw=len(stored.payload),
            max_decoded=config.max_decompressed_bytes,
        )
        reader.feed(stored.payload)
        raw, body, _truncated, _error = reader.result()
        return dataclasses.replace(response, raw_body=raw, body=body)

    async def fetch(self, lease: Lease, request: FetchRequest) -> FetchResponse:
        """One request, holding its server address's token while it runs (AddressBusyError
        when the address has none free: nothing is sent)."""
        if self.request_headers:
            added = self.request_headers.for_url(request.url)
            if added:
                request = dataclasses.replace(request, headers=[*added, *request.headers])
        if self.gate is None:
            return await self.transport.fetch(request)
        async with self.gate.hold(lease, request.url):
            return await self.transport.fetch(request)

    def outlasts(self, lease: Lease) -> bool:
        """True when a request started now could end after the lease does."""
        return self.now() + self.config.total_timeout > lease.expires_at

    def check_lease(self, lease: Lease) -> None:
        """Refuse to start a request that could outlive its lease.

        A fetch ends within ``total_timeout``, and once a lease expires another worker may be
        given the host. A visit can start late: its task waits for the event loop, which a
        store call can hold for seconds (riding out a Redis failover, say). Started after
        ``expires_at - total_timeout``, its request could overlap the next lease holder's."""
        if self.outlasts(lease):
            raise LeaseTooShortError(lease.url)


def exchange_of(response: FetchResponse) -> Exchange:
    """The WARC's view of a response: its payload as received (still content-encoded)."""
    return Exchange(
        url=response.url,
        request_headers=response.request_headers,
        status=response.status,
        reason=response.reason,
        response_headers=response.headers,
        payload=response.raw_body,
        fetched_at=response.started_at,
        http_version=response.http_version,
        ip_address=response.peer_address,
        truncated="length" if response.truncated else None,
    )

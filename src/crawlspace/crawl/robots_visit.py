"""A robots.txt visit (RFC 9309 §2.3): fetch it, follow its redirects one polite hop at a time
(a hop to another host holds that host's token, crawl/addresses.py HostGate), and turn the
answer into the record the store keeps and the host's next start."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from crawlspace.config import CrawlConfig
from crawlspace.crawl.addresses import AddressBusyError, TokenBusyError
from crawlspace.crawl.responses import RETRY_STATUSES, parse_retry_after
from crawlspace.crawl.visit_parts import VisitParts
from crawlspace.errors import BlockedAddressError, FetchError
from crawlspace.fetch.transport import FetchRequest, FetchResponse
from crawlspace.records import Lease, RobotsRecord
from crawlspace.robots import RobotsTxt
from crawlspace.robots.hop_answers import HopAnswer
from crawlspace.robots.policy import (
    ALLOW_ALL,
    DISALLOW_ALL,
    REDIRECT,
    RULES,
    UNAVAILABLE_ERROR,
    CacheHeaders,
    after_redirects,
    classify_status,
)
from crawlspace.urls import host_key, normalize, robots_url

log = logging.getLogger("crawlspace.crawl.visit")


@dataclass(frozen=True, slots=True)
class RobotsVisit:
    record: RobotsRecord
    next_allowed_at: float


@dataclass(slots=True)
class _Chain:
    """A robots.txt visit's redirect chain so far: where it is, and what answered last."""

    url: str
    started: float
    hops: int = 0
    free_at: float = 0.0  # when the lease's own host may be sent its next request
    own_elapsed: float | None = None  # how long the lease's host took to answer, last time
    status: int | None = None
    body: bytes = b""
    error: str | None = None
    retry_after: float | None = None
    cache: CacheHeaders | None = None

    def request(self, config: CrawlConfig) -> FetchRequest:
        return FetchRequest(
            self.url,
            max_body_bytes=config.robots_max_bytes,
            # Decoded too: the record is stored and cached in memory per host.
            max_decompressed_bytes=config.robots_max_bytes,
        )


# The error of a robots.txt visit whose redirect chain did not end within its lease.
UNFINISHED_CHAIN = "robots_redirects_unfinished"


class RobotsVisitor:
    """robots.txt visits, redirect hops and their answers (RFC 9309 §2.3.1)."""

    def __init__(self, parts: VisitParts) -> None:
        self._parts = parts

    async def visit_robots(self, lease: Lease, previous: RobotsRecord | None) -> RobotsVisit:
        """Fetch robots.txt, following up to ``max_redirects`` hops (RFC 9309 §2.3.1.2)."""
        chain = _Chain(lease.url, self._parts.now())
        while True:
            if not chain.hops:
                self._parts.check_lease(lease)  # nothing sent yet: a late lease goes back
            elif self._parts.outlasts(lease):
                # A chain that cannot finish within its lease (slow hops, a short grace):
                # robots.txt was not reached, as if unreachable. Retried after the backoff
                # and, after robots_max_attempts, final, instead of repeated for ever.
                chain.status, chain.error = None, UNFINISHED_CHAIN
                break
            answer = self._hop_answer(lease, chain.url) if chain.hops else None
            if answer is not None:
                chain.status, chain.body, chain.cache = answer
                break
            try:
                response = await self._send_hop(lease, chain.request(self._parts.config), chain)
                if response is None:  # answered while the hop waited for the host's token
                    continue
            except BlockedAddressError as exc:
                # Not a transient failure: our own policy forbids the host (or where its
                # robots.txt leads), so give up at once. No request was made to this address;
                # the lease's host waits its gap only if an earlier hop went to it.
                now = self._parts.now()
                return RobotsVisit(self._blocked_record(lease, exc, now), max(now, chain.free_at))
            except FetchError as exc:
                chain.status, chain.error = None, exc.reason
                break
            except TokenBusyError:
                if not chain.hops:
                    raise  # nothing was sent yet: the lease goes back as any would
                # Another host's token, or a server address, not free within the lease.
                chain.status, chain.error = None, UNFINISHED_CHAIN
                break
            if not await self._took_response(lease, chain, response):
                break
        ended = self._parts.now()
        # The host's gap scales with its own last response, not with the chain's waits for
        # other hosts' tokens (a timeout or error: the whole visit, as slow as it was).
        own = chain.own_elapsed
        return self.robots_outcome(
            lease,
            chain.status,
            chain.body,
            previous=previous,
            error=chain.error,
            started=ended - own if own is not None else chain.started,
            ended=ended,
            retry_after=chain.retry_after,
            cache=chain.cache,
        )

    async def _took_response(self, lease: Lease, chain: _Chain, response: FetchResponse) -> bool:
        """Archive a hop's response and keep what it says; True to follow its redirect."""
        if host_key(chain.url) == lease.host_key:
            chain.free_at = response.ended_at + self._parts.politeness.gap(response.elapsed, None)
            chain.own_elapsed = response.elapsed
        await self._parts.archive(response)
        self._keep_hop_answer(lease, chain.url, response)
        chain.status, chain.body = response.status, response.body
        chain.cache = cache_headers(response)  # the final response's: the one that answers
        if response.status in RETRY_STATUSES:
            header = response.header("retry-after")
            chain.retry_after = parse_retry_after(header, response.ended_at)
        if classify_status(response.status) != REDIRECT:
            return False
        chain.hops += 1
        target = self._robots_hop(lease, chain.url, response, chain.hops)
        if target is None:
            return False
        chain.url = target
        return True

    def _blocked_record(self, lease: Lease, exc: BlockedAddressError, now: float) -> RobotsRecord:
        """Disallow all, finally (no retries): the crawl's own policy refuses the address."""
        return RobotsRecord(
            lease.host_key,
            None,
            DISALLOW_ALL,
            b"",
            now,
            now + self._parts.config.robots_cache_seconds,
            self._parts.config.robots_max_attempts,
            exc.reason,
        )

    def _hop_answer(self, lease: Lease, url: str) -> tuple[int, bytes, CacheHeaders] | None:
        """What a hop to another host would fetch, while a fresh copy is at hand: that host's
        own robots.txt answer (http -> https, example.org -> www.), or an answer this process
        fetched there for another host (robots/hop_answers.py). Kept no longer than it is fresh,
        and no request: a thousand names pointing at one robots.txt cost its host one fetch
        per lifetime (per process)."""
        target = host_key(url)
        if target == lease.host_key:
            return None
        now = self._parts.now()
        kept = self._parts.hop_answers.get(url, now)
        if kept is not None:
            return kept.status, kept.body, _max_age(kept.expires_at - now)
        if self._parts.hosts is None or url != robots_url(target):
            return None
        record = self._parts.hosts.fresh_answer(target)
        if record is None or record.status is None:
            return None
        return record.status, record.body, _max_age(record.expires_at - now)

    def _keep_hop_answer(self, lease: Lease, url: str, response: FetchResponse) -> None:
        """An answer (2xx rules, 4xx allow all) fetched from another host, for the next hosts
        whose robots.txt leads there."""
        if host_key(url) == lease.host_key or classify_status(response.status) not in (
            RULES,
            ALLOW_ALL,
        ):
            return
        lifetime = self._parts.robots_policy.lifetime(cache_headers(response), response.ended_at)
        answer = HopAnswer(response.status, response.body, response.ended_at + lifetime)
        self._parts.hop_answers.put(url, answer)

    async def _send_hop(
        self, lease: Lease, request: FetchRequest, chain: _Chain
    ) -> FetchResponse | None:
        """One request of a robots.txt redirect chain, as polite as a page's (#18): to the
        lease's own host after its gap since the last hop there (``free_at``); to another host
        holding that host's token, as its own lease would. After the first hop a busy server
        address is waited for within the lease: giving the lease back would only send the
        chain's first requests again."""
        latest_start = lease.expires_at - self._parts.config.total_timeout
        while True:
            try:
                return await self._send_hop_once(lease, request, chain.free_at, latest_start)
            except AddressBusyError as busy:
                if not chain.hops or busy.retry_at > latest_start:
                    raise
                await asyncio.sleep(max(0.0, busy.retry_at - self._parts.now()))

    async def _send_hop_once(
        self, lease: Lease, request: FetchRequest, free_at: float, latest_start: float
    ) -> FetchResponse | None:
        """The hop's response, or None when another host's fresh robots.txt answer appeared
        while the hop waited for that host's token (nothing is sent; ``_hop_answer`` has it)."""
        target = host_key(request.url)
        if target == lease.host_key or self._parts.hosts is None:
            await asyncio.sleep(max(0.0, free_at - self._parts.now()))
            return await self._parts.fetch(lease, request)

        def answered() -> bool:
            return self._hop_answer(lease, request.url) is not None

        async with self._parts.hosts.hold(lease, target, latest_start, answered) as hold:
            if hold is None:
                return None  # answered while waiting: no token was taken
            began = self._parts.now()
            sent = True
            try:
                return await self._parts.fetch(lease, request)
            except AddressBusyError:
                sent = False  # nothing went out: the other host's clock stays
                raise
            finally:
                if sent:
                    ended = self._parts.now()
                    hold.next_allowed_at = ended + self._parts.politeness.gap(ended - began, None)

    def _robots_hop(self, lease: Lease, url: str, response: FetchResponse, hops: int) -> str | None:
        """Where a robots.txt redirect leads, or None to stop following: the 3xx then stands,
        which robots/policy.py reads as allow-all, as it does after too many hops."""
        location = response.header("location")
        target = normalize(location, url) if location else None
        if target is None or after_redirects(hops, self._parts.config.max_redirects) is not None:
            return None
        # These hops bypass link admission (RFC 9309 lets robots.txt move across hosts), but
        # opt-ins stay narrow (#18): robots.txt must not lead to another port of an opted-in
        # address any more than a link may.
        if self._parts.discovery.scope.opt_in_reason(target) is not None:
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
        record = self._parts.robots_policy.record_for(
            lease.host_key, status, body, ended, previous=previous, error=error, cache=cache
        )
        crawl_delay = None
        if record.outcome == "rules":
            crawl_delay = RobotsTxt.parse(record.body).crawl_delay(self._parts.config.user_agent)
        next_allowed = self._parts.politeness.next_allowed_at(ended, ended - started, crawl_delay)
        if retry_after is not None:
            # A 429 or 503 on robots.txt asks the whole host to wait, pages included.
            next_allowed = max(
                next_allowed, ended + min(retry_after, self._parts.config.max_backoff)
            )
        if robots_retrying(record):
            # Unreachable robots.txt: nothing may be fetched until the retry, so wait for it.
            next_allowed = max(next_allowed, record.expires_at)
        # A short HTTP lifetime must not outrun the host's own gap, or it never gets a page.
        record = self._parts.robots_policy.outlasting(record, next_allowed, next_allowed - ended)
        return RobotsVisit(record, next_allowed)


def _max_age(seconds: float) -> CacheHeaders:
    """Caching headers that keep an answer ``seconds`` more (what is left of its lifetime)."""
    return CacheHeaders((f"max-age={max(0, int(seconds))}",))


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


def robots_waits(record: RobotsRecord, continuous: bool) -> bool:
    """Whether a page lease of the host goes back unfetched, its host deferred until the
    record expires and robots.txt is asked again: while robots.txt is being retried, and in a
    ``--continuous`` crawl also once it was given up as unavailable, whose URLs then keep
    waiting (asked again on its backoff schedule, up to a day apart) instead of being
    excluded: a crawl that never ends has no reason to give up a host's queue. A finite crawl
    excludes them (robots_unavailable), so it ends; a later answer re-evaluates them."""
    if robots_retrying(record):
        return True
    return continuous and record.outcome == DISALLOW_ALL and record.error == UNAVAILABLE_ERROR

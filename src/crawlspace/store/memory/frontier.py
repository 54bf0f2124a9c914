"""The memory engine's frontier: the reference every store is held to by tests/conformance.
No I/O and no clock reads; every method takes ``now``.

Two levels, as in Mercator (Heydon & Najork, "Mercator: A scalable, extensible web crawler",
1999, §3.2): heaps of ready hosts keyed by (next_allowed_at, seq), one per front band
(bands.py: the band of the host's best queued URL; the lease takes the best rank
among the band heads), and per host a heap of (priority, seq, url_id). A host is in a ready heap
only while it can take another lease (it has queued URLs, a free token and no robots fetch
outstanding), so ``lease`` never scans idle or busy hosts. Heap entries are deleted lazily: each
host remembers the seq of its one live entry, and any popped entry with another seq is stale
(host queue entries likewise, records.py). A finished page's links move URLs by the rules of
links.py: in-link points, AOPIC cash, the discovery window's demotion.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Callable, Sequence

from crawlspace.lifecycle import ROBOTS_EXCLUSIONS, UrlState, check_transition
from crawlspace.limits import token_retry_at
from crawlspace.plans import NO_PLAN, Outcome
from crawlspace.records import (
    Completion,
    Lease,
    LeaseKind,
    RobotsRecord,
    UrlCandidate,
)
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.memory.addresses import AddressTokens, RequestStarts
from crawlspace.store.memory.admission import FrontierState, MemoryAdmission, url_key
from crawlspace.store.memory.due import DueRevisits
from crawlspace.store.memory.notes import host_notes
from crawlspace.store.memory.ready import COMPACT_FACTOR, COMPACT_MIN, ReadyHosts
from crawlspace.store.memory.records import (
    Active,
    MemHost,
    MemUrl,
    default_robots_url,
    page_lease,
    robots_lease,
)
from crawlspace.store.memory.reevaluate import reopen_excluded, robots_excluded
from crawlspace.store.memory.renders import RenderTotals

_STATES: dict[str, UrlState] = {s.value: s for s in UrlState}


class MemoryFrontier:
    """The frontier core; implements ``crawlspace.store.base.Frontier``."""

    def __init__(
        self,
        limits: FrontierLimits = FrontierLimits(),  # noqa: B008 - frozen, so sharing is safe
        robots_url: Callable[[str], str] = default_robots_url,
    ) -> None:
        if limits.max_in_flight_per_host < 1:
            raise ValueError(
                f"max_in_flight_per_host must be at least 1, got {limits.max_in_flight_per_host}"
            )
        self._limits = limits
        self.notes: dict[str, dict[str, str]] = {}  # host key -> name -> text
        self._robots_url = robots_url
        self._urls: dict[str, MemUrl] = {}  # every URL ever seen, by its key (admission.py)
        self._by_id: list[MemUrl | None] = [None]  # url_id 0 is the robots lease's placeholder
        self._hosts: dict[str, MemHost] = {}
        self._front = limits.front
        self._active: dict[str, Active] = {}
        self._expiry: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._due = DueRevisits(self._by_id, self._seq.__next__)  # planned revisits
        # One heap of ready hosts per front band (ready.py).
        self._ready = ReadyHosts(limits.front, self._seq.__next__)
        self._lease_ids = itertools.count(1)
        self._queued = 0
        state = FrontierState(
            limits,
            self._urls,
            self._by_id,
            self._hosts,
            self.notes,
            self._enqueue,
            self._reschedule,
            self._reprioritize,
            self._due.due_now,
        )
        self._admission = MemoryAdmission(state)  # the seen test, budgets, links (admission.py)
        self.address_tokens = AddressTokens(limits.address)  # per server address (addresses.py)
        self.request_starts = RequestStarts(limits.rate)  # the crawl's rate cap (limits.py)
        self.render_totals = RenderTotals(limits.render)  # the crawl-wide render budget

    # -------------------------------------------------- composed parts: admission, tokens, notes

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        return self._admission.add(candidates, now)

    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None:
        return self.address_tokens.take(address, holder, now, expires_at)

    def give_address(self, address: str, holder: str, ended: float) -> None:
        self.address_tokens.give(address, holder, ended)

    def take_start(self, now: float, latest_start: float) -> float:
        return self.request_starts.take(now, latest_start)

    def reserve_render(self) -> tuple[str | None, int, float]:
        return self.render_totals.reserve()

    def spend_render(self, seconds: float) -> None:
        self.render_totals.spend(seconds)

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        return host_notes(self.notes, host_key, names)

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        self.notes.setdefault(host_key, {})[name] = text

    # ----------------------------------------------------------------- queues (admission.py)

    def _enqueue(self, host: MemHost, url: MemUrl) -> None:
        host.push(url, next(self._seq))
        self._queued += 1

    def _reprioritize(self, url: MemUrl, priority: int) -> None:
        """A new priority; a queued URL gets a new queue entry (the old one is stale) and its
        host may move to another front band."""
        if priority == url.priority:
            return
        url.priority = priority
        if url.state is UrlState.QUEUED:
            host = self._hosts[url.host_key]
            host.push(url, next(self._seq))
            self._reschedule(host)

    # --------------------------------------------------------------------------------- leasing

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        leases: list[Lease] = []
        while len(leases) < limit:
            host = self._ready.pop_best(now)
            if host is None:
                break
            leases.append(self._grant(host, now, lease_seconds))
            # Back of the line among equally-ready hosts; only re-enters if it has a token left.
            self._reschedule(host)
        return leases

    def _grant(self, host: MemHost, now: float, lease_seconds: float) -> Lease:
        lease_id = f"L{next(self._lease_ids)}"
        expires_at = now + lease_seconds
        host.in_flight += 1
        heapq.heappush(self._expiry, (expires_at, next(self._seq), lease_id))
        if host.robots is None or host.robots.expires_at <= now:
            # RFC 9309 §2.4: a crawler must have the host's current rules before fetching pages.
            host.robots_lease_id = lease_id
            self._active[lease_id] = Active(host, None, expires_at)
            return robots_lease(lease_id, host.key, self._robots_url(host.key), expires_at)
        host.clean(self._by_id)
        url = self._by_id[heapq.heappop(self._band(host))[2]]
        assert url is not None, "host queue holds an unknown url_id"
        check_transition(url.state, UrlState.LEASED)  # the queue must hold only queued URLs
        self._queued -= 1
        url.state = UrlState.LEASED
        url.attempts += 1
        url.lease_id = lease_id
        self._active[lease_id] = Active(host, url, expires_at)
        return page_lease(lease_id, host.key, url, expires_at)

    def _band(self, host: MemHost) -> list[tuple[int, int, int]]:
        """The queue band the next lease takes: when both have URLs, about ``revisit_share`` of
        the contested leases go to revisits (a deficit count per host)."""
        if not (host.revisits and host.queue):
            return host.revisits or host.queue
        tally = host.band_tally
        take_revisit = tally[0] < self._limits.revisit_share * (tally[0] + tally[1] + 1)
        tally[0 if take_revisit else 1] += 1
        return host.revisits if take_revisit else host.queue

    def _reschedule(self, host: MemHost) -> None:
        """Give ``host`` exactly one live entry, in the heap of its front band, if it can take a
        lease, else none."""
        host.clean(self._by_id)
        leasable = (
            bool(host.queue or host.revisits)
            and host.in_flight < self._limits.max_in_flight_per_host
            and host.robots_lease_id is None
        )
        if not leasable:
            self._ready.drop(host)
            return
        head = (host.revisits or host.queue)[0][0]
        self._ready.place(host, self._front.band(head), len(self._hosts))

    def _move_clock(self, host: MemHost, next_allowed_at: float | None) -> None:
        if next_allowed_at is not None and next_allowed_at > host.next_allowed_at:
            host.next_allowed_at = next_allowed_at
            self._ready.drop(host)  # the old entry carries the old time; _reschedule pushes anew

    # ------------------------------------------------------------------------- lease endings

    def _current(self, lease: Lease, kind: LeaseKind) -> Active | None:
        """The live record of ``lease`` if it is still the current lease of its URL or host."""
        if lease.kind != kind:
            return None
        active = self._active.get(lease.lease_id)
        if active is None or active.host.key != lease.host_key:
            return None
        url = active.url
        if kind is LeaseKind.ROBOTS:
            return active if active.host.robots_lease_id == lease.lease_id else None
        if (
            url is None
            or url.url_id != lease.url_id
            or url.lease_id != lease.lease_id
            or url.version != lease.version
            or url.state is not UrlState.LEASED
        ):
            return None
        return active

    def _end(self, lease_id: str, active: Active) -> None:
        """Give the host's token back and forget the lease (its expiry entry goes stale)."""
        del self._active[lease_id]
        active.host.in_flight -= 1
        if active.url is None:
            if active.host.robots_lease_id == lease_id:  # else a host token's holder
                active.host.robots_lease_id = None
        else:
            # The lease id fences off every copy of the old lease; the version counts visits, and
            # a retry of the same visit keeps it (fetch records are unique per url and version).
            active.url.lease_id = None

    def complete(self, lease: Lease, completion: Completion, now: float) -> Outcome | None:
        active = self._current(lease, LeaseKind.PAGE)
        if active is None:
            return None
        url = active.url
        assert url is not None
        check_transition(url.state, completion.state)  # before any change, so a bad call is inert
        self._end(lease.lease_id, active)
        url.state = _STATES[completion.state]  # known: check_transition passed
        url.reason = completion.reason
        url.visited_at = now
        if completion.etag is not None:
            url.etag = completion.etag
        if completion.last_modified is not None:
            url.last_modified = completion.last_modified
        retry = url.state is UrlState.QUEUED
        plan = completion.plan or NO_PLAN
        rejections: dict[str, int] = {}
        if url.state is UrlState.EXCLUDED and url.reason in ROBOTS_EXCLUSIONS:
            active.host.robots_excluded.add(url.url_id)  # its next robots.txt re-evaluates it
        if retry:
            if not completion.charged:  # its host's failure, not its own (frontier/outage.py)
                url.attempts -= 1
            self._enqueue(active.host, url)  # a retry keeps its attempt count
        else:
            if plan.day is not None and active.host.count_page(plan.day):
                # The per-day page budget: at the cap the host waits for its ``until``.
                self._move_clock(active.host, plan.day.until)
                if active.host.day_pages == plan.day.cap:
                    rejections["budget_host_day"] = 1
            if completion.revisit is not None:
                self._due.schedule(url, completion.revisit)
        self._move_clock(active.host, completion.next_allowed_at)
        self._reschedule(active.host)
        if completion.notes:
            self.notes.setdefault(lease.host_key, {}).update(completion.notes)
        admitted = self._admission.take_links(
            active.host, url, completion, plan, rejections, retry=retry, now=now
        )
        self._admission.exclude(completion.excluded, lease.depth + 1)
        return Outcome(rejections, [u.url for u in admitted.new if u.host_key == lease.host_key])

    def promote_due(self, now: float, limit: int = 1000) -> int:
        """Recrawl: queue up to ``limit`` due URLs again, earliest first, each as a new visit
        in its host's revisit band (due.py)."""
        promoted = self._due.take(now, limit)
        for url in promoted:
            host = self._hosts[url.host_key]
            self._enqueue(host, url)
            self._reschedule(host)
        return len(promoted)

    def next_due_at(self) -> float | None:
        return self._due.next_at()

    def complete_robots(self, lease: Lease, record: RobotsRecord, next_allowed_at: float) -> bool:
        active = self._current(lease, LeaseKind.ROBOTS)
        if active is None:
            return False
        self._end(lease.lease_id, active)
        active.host.robots = record
        self._move_clock(active.host, next_allowed_at)
        self._reschedule(active.host)
        return True

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool:
        active = self._current(lease, lease.kind)
        if active is None:
            return False
        self._move_clock(active.host, not_before)
        self._return(lease.lease_id, active, tried=False)
        return True

    # A host's token held outside its leases (store/base.py take_host) is an Active without a
    # URL under the key "H:holder" (lease ids are "L<n>"), so expiry lapses it as a lost lease.

    def take_host(self, host_key: str, holder: str, now: float, expires_at: float) -> float | None:
        key = "H:" + holder
        host = self._hosts.setdefault(host_key, MemHost(host_key))
        if key in self._active:
            return None
        busy = host.in_flight >= self._limits.max_in_flight_per_host
        if busy or host.next_allowed_at > now:
            return token_retry_at(now, host.next_allowed_at, busy)
        host.in_flight += 1
        heapq.heappush(self._expiry, (expires_at, next(self._seq), key))
        self._active[key] = Active(host, None, expires_at)
        self._reschedule(host)
        return None

    def give_host(self, host_key: str, holder: str, next_allowed_at: float) -> None:
        key = "H:" + holder
        active = self._active.get(key)
        if active is None or active.host.key != host_key:
            return
        self._end(key, active)
        self._move_clock(active.host, next_allowed_at)
        self._reschedule(active.host)

    def url_of(self, url_id: int) -> str | None:
        url = self._by_id[url_id] if 0 < url_id < len(self._by_id) else None
        return None if url is None else url.url

    def robots_excluded(self, host_key: str, limit: int) -> list[tuple[int, str]]:
        host = self._hosts.get(host_key)
        return [] if host is None else robots_excluded(host, self._by_id, limit)

    def requeue_excluded(self, host_key: str, url_ids: Sequence[int], now: float) -> int:
        host = self._hosts.get(host_key)
        if host is None:
            return 0
        reopened = reopen_excluded(host, self._by_id, url_ids)
        for url in reopened:
            self._enqueue(host, url)
        self._reschedule(host)
        return len(reopened)

    def lift_exclusion(self, reason: str, now: float) -> int:
        queued = 0
        for host in self._hosts.values():
            if host.robots is not None and host.robots.error == reason:
                host.robots = dataclasses.replace(host.robots, expires_at=now)
            lifted = [
                url_id
                for url_id in sorted(host.robots_excluded)
                if (url := self._by_id[url_id]) is not None and url.reason == reason
            ]
            if lifted:
                queued += self.requeue_excluded(host.key, lifted, now)
        return queued

    def expire_leases(self, now: float) -> int:
        expired = 0
        expiry = self._expiry
        while expiry and expiry[0][0] <= now:
            _, _, lease_id = heapq.heappop(expiry)
            active = self._active.get(lease_id)
            if active is None:
                continue  # completed or released already
            # The fetch may have happened, so the attempt counts, and the host waits the
            # lost-lease gap from now: its last request may have ended just before.
            self._move_clock(active.host, now + self._limits.lost_lease_gap)
            self._return(lease_id, active, tried=True)
            expired += 1
        if len(expiry) > COMPACT_FACTOR * len(self._active) + COMPACT_MIN:
            self._expiry = [e for e in expiry if e[2] in self._active]
            heapq.heapify(self._expiry)
        return expired

    def _return(self, lease_id: str, active: Active, *, tried: bool) -> None:
        url = active.url
        self._end(lease_id, active)
        if url is not None:
            check_transition(url.state, UrlState.QUEUED)
            url.state = UrlState.QUEUED
            if not tried:
                url.attempts -= 1
            # Back in its old place (its leased entry was popped, so its seq is free again),
            # as the other engines keep it: ahead of URLs of its priority queued after it.
            active.host.push(url, url.queue_seq)
            self._queued += 1
        self._reschedule(active.host)

    # ------------------------------------------------------------------------------ inspection

    def next_ready_at(self) -> float | None:
        return self._ready.next_ready_at()

    def in_flight(self) -> int:
        return len(self._active)

    def robots(self, host_key: str) -> RobotsRecord | None:
        host = self._hosts.get(host_key)
        return host.robots if host else None

    def url_state(self, url: str) -> tuple[str, str | None]:
        """(state, reason) of a URL the frontier has seen; KeyError if it never saw it."""
        record = self._urls[url_key(url, self._limits)]
        return record.state.value, record.reason

    def queued_count(self) -> int:
        return self._queued

    def host_count(self) -> int:
        return len(self._hosts)

    def host_next_allowed_at(self, host_key: str) -> float:
        """The host's politeness clock (-inf before its first request); KeyError if unknown."""
        return self._hosts[host_key].next_allowed_at

    def host_in_flight(self, host_key: str) -> int:
        host = self._hosts.get(host_key)
        return host.in_flight if host else 0

"""The store interface: per-host atomic operations, so a Redis Cluster backend can implement it
with one server-side script per operation on the host's own hash slot.

Every method takes ``now`` from the caller: stores never read a clock, so they run on virtual time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from crawlspace.bands import FrontQueues
from crawlspace.limits import AddressPolicy, RateCap, RenderBudget
from crawlspace.plans import CashRule, Outcome
from crawlspace.records import Completion, Lease, RobotsRecord, StoredCapture, UrlCandidate
from crawlspace.store.control import CrawlControl


@dataclass(frozen=True, slots=True)
class FrontierLimits:
    """Host-level limits the frontier enforces atomically with the lease."""

    max_in_flight_per_host: int = 1
    max_pages_per_host: int | None = None
    # A lease that expired (or was orphaned by a crash) may have ended in a request we never saw
    # finish: its host waits at least this long from the moment the lease is taken back.
    lost_lease_gap: float = 0.0
    # Recrawl: when a host has both due revisits and new URLs queued, about this share of its
    # leases go to revisits (the rest to new URLs), so neither starves the other.
    revisit_share: float = 0.5
    # AOPIC's rules (plans.py CashRule, frontier/aopic.py) when the priority policy is "aopic":
    # the engine keeps the cash, the rules say every amount. None: the score policy.
    cash: CashRule | None = None
    # Cross-host order: the front band of each host's best URL, with aging (bands.py).
    front: FrontQueues = FrontQueues()  # noqa: RUF009 - frozen, so sharing is safe
    # Per server address: in-flight tokens and gap (limits.py).
    address: AddressPolicy = AddressPolicy()  # noqa: RUF009 - frozen, so sharing is safe
    # Crawl-wide: requests started per second, every worker together (limits.py).
    rate: RateCap = RateCap()  # noqa: RUF009 - frozen, so sharing is safe
    # Crawl-wide: renders and browser seconds, every worker together (limits.py).
    render: RenderBudget = RenderBudget()  # noqa: RUF009 - frozen, so sharing is safe
    # A URL whose query differs from a seen one's in parameter order only is seen: the seen
    # test is on urls.py seen_key (config query_order "ignored"); the request keeps the URL
    # as first linked. False: the URL as linked is its own key.
    ignore_query_order: bool = True
    # Keep each URL's last time a page or sitemap linked it (Lease.linked_at), for retirement
    # (frontier/retirement.py): on in a continuous crawl that retires URLs.
    link_times: bool = False


@dataclass(frozen=True, slots=True)
class AddResult:
    added: int
    already_seen: int
    rejected: dict[str, int]


class LeaseVerbs(Protocol):
    """The scheduling verbs: admit URLs, lease hosts' URLs, end leases, revisit."""

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        """Enqueue each URL that was never seen; seen URLs are counted, never enqueued twice."""
        ...

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        """Grant up to ``limit`` leases from hosts whose next-allowed time is <= now.

        A host whose robots.txt is unknown or stale yields a ROBOTS lease before any page lease.
        """
        ...

    def complete(self, lease: Lease, completion: Completion, now: float) -> Outcome | None:
        """Finish a page lease, applying the completion's plan (plans.py): what the engine
        did, or None for a stale or duplicate completion, which changes nothing."""
        ...

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool:
        """Give a lease back unused (shutdown): URL queued again, host clock unchanged, or
        moved to ``not_before`` when later (a lease its server's address could not take)."""
        ...

    def expire_leases(self, now: float) -> int:
        """Return leases whose expiry passed to their host queues and give the tokens back."""
        ...

    def next_ready_at(self) -> float | None:
        """Earliest next-allowed time of a host with work; None when nothing is leasable."""
        ...

    def in_flight(self) -> int:
        """Leases currently granted and not completed, released or expired."""
        ...

    def promote_due(self, now: float, limit: int = 1000) -> int:
        """Recrawl: queue again up to ``limit`` URLs whose revisit plan made them due by ``now``,
        each as a new visit (version + 1) in its host's revisit band."""
        ...

    def next_due_at(self) -> float | None:
        """The earliest time a planned revisit falls due, or None."""
        ...


class HostTokens(Protocol):
    """Politeness tokens held outside a host's own leases: a server address's, and another
    host's for a robots.txt redirect hop (limits.py)."""

    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None:
        """Hold a token of the server ``address`` for the lease ``holder`` until it is given
        back or ``expires_at`` passes: None when granted, else when to try again
        (limits.py)."""
        ...

    def give_address(self, address: str, holder: str, ended: float) -> None:
        """The holder's address token back; the address's gap starts at ``ended``."""
        ...

    def take_start(self, now: float, latest_start: float) -> float:
        """A start for one request under the crawl's rate cap (limits.py RateCap, limits'
        ``rate``; no cap: ``now``): taken, and the request waits for it, when it is no later
        than ``latest_start``; else nothing is taken and the request is not sent."""
        ...

    def take_host(self, host_key: str, holder: str, now: float, expires_at: float) -> float | None:
        """Hold one of ``host_key``'s tokens outside its own leases, for a request to the host
        that another host's lease makes (a robots.txt redirect hop, RFC 9309 §2.3.1.2).
        Granted (None) as a lease would be: the host has a free token (robots.txt leases
        included) and its next-allowed time has passed; else the time to try again
        (limits.py token_retry_at). The token counts as in flight until
        ``give_host`` or ``expires_at``, when it lapses as an expired lease does (the host
        then waits the lost-lease gap). A host the store does not know yet is made, with
        nothing queued."""
        ...

    def give_host(self, host_key: str, holder: str, next_allowed_at: float) -> None:
        """The holder's token of ``host_key`` back; the host's next start moves to
        ``next_allowed_at`` when later. A token not held (given back, or lapsed) changes
        nothing."""
        ...


class HostNotes(Protocol):
    """What crawl policy learns about a host, kept as text by name (the store only keeps it)."""

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        """Those of the host's notes ``names`` that exist (name -> text)."""
        ...

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        """Keep ``text`` as the host's note ``name`` (replacing it). Notes hold what crawl
        policy learns about a host (frontier/trap_yield.py); the store only keeps them."""
        ...


class RobotsRecords(Protocol):
    """A host's robots.txt: its lease's end, the record, and the re-evaluation of what it
    excluded."""

    def complete_robots(self, lease: Lease, record: RobotsRecord, next_allowed_at: float) -> bool:
        """Finish a ROBOTS lease: store the record (refetched after ``record.expires_at``)."""
        ...

    def robots(self, host_key: str) -> RobotsRecord | None: ...

    def url_of(self, url_id: int) -> str | None:
        """The URL of ``url_id`` (a lease's ``via_id``: the page an error names), or None."""
        ...

    def robots_excluded(self, host_key: str, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (url_id, url) of the host's URLs excluded for a robots reason
        (robots/policy.py ROBOTS_EXCLUSIONS), for its new robots.txt to re-evaluate."""
        ...

    def requeue_excluded(self, host_key: str, url_ids: Sequence[int], now: float) -> int:
        """Queue again those of ``url_ids`` still excluded for a robots reason, each as a new
        visit (version + 1, attempts from 0); returns how many."""
        ...

    def lift_exclusion(self, reason: str, now: float) -> int:
        """Every URL excluded for ``reason`` (one of ROBOTS_EXCLUSIONS) queued again as a new
        visit, and every robots.txt answer that failed with it expired at ``now``, so its host
        fetches robots.txt again before its next page; returns the URLs queued. For a crawl
        whose settings changed what made the exclusion (crawl/settings.py lifted_exclusions)."""
        ...


class RenderCounts(Protocol):
    """The rendering tier's crawl-wide budget, every worker of a shared crawl together."""

    def reserve_render(self) -> tuple[str | None, int, float]:
        """Take one render from the crawl-wide render budget (limits.py RenderBudget):
        (why not, or None when taken; renders and browser seconds so far, crawl-wide)."""
        ...

    def spend_render(self, seconds: float) -> None:
        """Add a render's browser seconds to the crawl-wide total."""
        ...


class Frontier(LeaseVerbs, HostTokens, HostNotes, RobotsRecords, RenderCounts, Protocol):
    """The scheduling core shared by the pure in-memory scheduler and every durable store: its
    named parts, each a narrow protocol a collaborator can be given alone.

    Invariants (checked by tests/conformance): a lease takes the host's token; no host ever has more
    than ``max_in_flight_per_host`` leases; no lease is granted before the host's next-allowed time;
    a completion or release that does not match the current lease changes nothing (a completion
    returns None, a release False).
    """


class CrawlRecordsView(Protocol):
    """The crawl's own records beside its frontier: local to each process of a shared crawl
    (store/sqlite/records.py), in the same file as the frontier on the embedded engine."""

    @property
    def path(self) -> str:
        """The crawl.db that holds the records."""
        ...

    def bump_counters(self, counts: dict[str, int]) -> None: ...

    def warc_offsets(self, warc_file: str) -> set[int]:
        """Offsets of the WARC records that fetch rows of ``warc_file`` point at."""
        ...

    def recent_captures(self, limit: int) -> list[StoredCapture]:
        """The ``limit`` payloads this crawl's records hold in full last, oldest first."""
        ...

    def fetched_pages(self) -> int: ...

    def fetched_bytes(self) -> int: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def record_sample(self, sample: dict[str, float | None]) -> None: ...


class CaptureLog(Protocol):
    """What the workers of a shared frontier archived in full lately, told to one another
    (store/redis/captures.py; crawl/capture_sharing.py)."""

    def publish(self, captures: Sequence[StoredCapture]) -> None:
        """Tell the others about payloads this process archived in full."""
        ...

    def read(self, after: str | None, limit: int) -> tuple[list[StoredCapture], str | None]:
        """The captures published after position ``after`` (None: from the oldest kept), at
        most ``limit``, oldest first; and the position to read on from."""
        ...


class Store(Frontier, CrawlRecordsView, Protocol):
    """A durable frontier plus the crawl's records (fetches, links, robots, counters): what the
    crawl loop (crawl/) is given, on the embedded engine or on a shared frontier."""

    def complete_many(
        self, items: Sequence[tuple[Lease, Completion]], now: float
    ) -> list[Outcome | None]:
        """Group commit: several completions in one go; each result as ``complete``'s."""
        ...

    def count_rejections(self, rejections: dict[str, int]) -> None:
        """Count URLs refused before they reached the frontier (``rejected.<reason>``)."""
        ...

    def reserve_pages(self, n: int, cap: int) -> tuple[int, int]:
        """Crawl-wide page holds (crawl/budget.py): (granted, pages done)."""
        ...

    def settle_pages(self, released: int, done: int, nbytes: int) -> tuple[int, int]:
        """Give holds back, count pages and bytes: (pages done, bytes), crawl-wide."""
        ...

    def queued(self) -> int: ...

    def ready_hosts(self, now: float) -> int: ...

    def control(self) -> CrawlControl:
        """Where the operator's commands to the running crawl arrive (store/control.py)."""
        ...

    def capture_log(self) -> CaptureLog | None:
        """Where the workers of a shared frontier tell each other what they archived (None:
        one process, no one to tell)."""
        ...

    def crawl_progress(self) -> tuple[int, int] | None:
        """(pages fetched, URLs known) across every process of a shared frontier, for the
        crawl-wide discovery ratio; None when this process's own counts are the crawl's."""
        ...

    def scope_seeds(self) -> list[str]:
        """URLs of the seeds' hosts and ports, what the crawl's scope starts from (the seeds
        themselves, or their host keys)."""
        ...

    def scope_revision(self) -> int:
        """A number that changes whenever another process adds seeds of a new host (a worker
        steered from its dashboard, `crawlspace seed` during the crawl): then ``scope_seeds``
        holds more, and this process's scope widens with them (crawl/scope_sharing.py). 0 on
        one process, whose seeds all come through it."""
        ...

    def recover(self, now: float) -> int:
        """At start-up of the single owner: return every lease of a dead process to its queue."""
        ...

    def close(self) -> None: ...

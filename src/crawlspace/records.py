"""Plain records passed between the crawl stages and the store. No behaviour, no I/O."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from crawlspace.plans import CompletionPlan

if TYPE_CHECKING:
    from crawlspace.dedup.sketch import Sketch


# A tuple subclass made from its values in one C call (no Python ``__new__`` per object).
_new_tuple = tuple.__new__


class LeaseKind(StrEnum):
    PAGE = "page"
    ROBOTS = "robots"


class UrlCandidate(NamedTuple):
    """A normalized URL on its way into the frontier (seed, link, redirect, sitemap entry).

    A tuple, not a frozen dataclass: a page's candidates are made in its parse worker and
    rebuilt on the crawl loop, hundreds a page on link-heavy sites, and a frozen dataclass of
    ten fields costs ten ``object.__setattr__`` calls each time (~1.5 µs; 0.3-0.5 ms of the
    loop's CPU a page on python3.11-doc). Rebuilt with ``tuple.__new__`` it is one C call
    (benchmarks/README.md, "Tenth session"). Change a field with ``_replace``."""

    url: str
    host_key: str
    depth: int
    priority: int = 0  # lower is leased first
    redirect_hops: int = 0
    source: str = "link"
    # From a sitemap's <url> entry (parse/sitemap.py); None for every other source.
    lastmod: str | None = None
    changefreq: str | None = None
    sitemap_priority: float | None = None
    # A known URL whose last visit ended before this time is due again now: its sitemap
    # <lastmod> says it changed since (frontier/revisit.py stale_before). None: no such hint.
    stale_before: float | None = None

    def at_priority(self, priority: int) -> UrlCandidate:
        """This candidate at ``priority``: ``_replace`` at a fraction of its cost (a duplicate
        page's links are all moved, on the crawl loop)."""
        return _new_tuple(UrlCandidate, (*self[:3], priority, *self[4:]))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _new_tuple, (UrlCandidate, tuple(self))


@dataclass(frozen=True, slots=True)
class Lease:
    """The right to make one request to one host. Holding it holds the host's politeness token."""

    kind: LeaseKind
    lease_id: str
    host_key: str
    url: str
    url_id: int
    version: int
    attempt: int
    depth: int
    redirect_hops: int
    expires_at: float
    etag: str | None = None
    last_modified: str | None = None
    crawl_delay: float | None = None
    # Fencing token: the epoch of the worker the lease was granted to (0 for one-process stores);
    # a shared frontier refuses a completion whose epoch is not the lease's (store/redis/).
    epoch: int = 0
    # The host's throttling level and failure streak at lease time (frontier/backoff.py).
    host_backoff: int = 0
    host_failures: int = 0
    # How the URL entered the frontier: "sitemap" leases are read as sitemaps (crawl/visit.py).
    source: str = "link"
    # The URL's recrawl state when leased (frontier/revisit.py plan_revisit): its learned
    # interval, the content hash of its last 200 and its sitemap changefreq.
    revisit_interval: float | None = None
    content_hash: str | None = None
    changefreq: str | None = None
    # AOPIC (frontier/aopic.py), on a shared frontier: the URL's cash when leased and Lambda's
    # per-page total when it was last paid, so the crawl can split the cash before the links
    # are admitted (the one-process store reads them in its completion transaction).
    cash: float = 0.0
    lambda_paid: float = 0.0
    # The URL's queue priority when leased (frontier/priority.py: lower is leased first, a
    # revisit's moved into the revisit band, bands.py): its value, which scales its revisits.
    # None: not known (its revisits wait their change interval as it is).
    priority: int | None = None
    # The last time a page or a sitemap linked the URL, kept while retirement is on
    # (frontier/retirement.py; FrontierLimits.link_times). None: not kept.
    linked_at: float | None = None
    # The URL id of the page (or sitemap, or redirect) that first led to it, as Heritrix's
    # crawl.log "via": the linking page an error names. None: a seed, or not known.
    via_id: int | None = None


@dataclass(frozen=True, slots=True)
class FetchRecord:
    """What one HTTP exchange produced, as stored in ``fetches`` and exported."""

    url: str
    final_url: str
    status: int
    fetched_at: float
    duration_ms: float
    content_type: str | None
    bytes: int
    truncated: bool
    content_sha256: str | None
    warc_file: str | None
    warc_offset: int | None
    warc_length: int | None
    text_sha256: str | None = None
    noindex: bool = False
    canonical: str | None = None
    redirect_to: str | None = None
    # Unsigned 64-bit simhash of the extracted text (dedup/simhash.py); None without text.
    simhash: int | None = None
    # Bottom-k sketch of its word pairs (dedup/sketch.py), for trap detection; not stored.
    sketch: Sketch | None = None
    # The index feed's page part (feed_codec.py), packed where the page was parsed.
    document: builtins.bytes | None = None  # (the field ``bytes`` hides the type)
    # A payload this record holds in full (not a revisit): its key among the crawl's captures
    # and its WARC-Payload-Digest (archive/captures.py), so a resumed crawl still finds it.
    payload_key: str | None = None
    payload_digest: str | None = None
    # The extraction hook's items of the page, as JSON texts (parse/extract.py).
    items: tuple[str, ...] = ()
    # Whether the page was rendered in the browser too (crawl/render_visit.py): its links then
    # include what only its rendered DOM had.
    rendered: bool = False
    render_error: str | None = None  # why a render tried failed (timeout, memory, crashed, ...)
    # An error's (status 400 or more) linking page: the URL of the page that led to this one
    # (Lease.via_id), as Heritrix's crawl.log "via". None: not an error, a seed, or not known.
    via: str | None = None


@dataclass(frozen=True, slots=True)
class StoredCapture:
    """A payload a fetch row's record holds in full (``FetchRecord.payload_key``): what a
    resumed crawl's captures reload (archive/captures.py), so a repeat is still a revisit."""

    key: str
    url: str
    fetched_at: float
    warc_file: str
    warc_offset: int
    warc_length: int
    payload_digest: str


class LinkRecord(NamedTuple):
    """A page's outlink as the store keeps it (a tuple for the reason UrlCandidate is one)."""

    to_url: str
    nofollow: bool

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _new_tuple, (LinkRecord, tuple(self))


@dataclass(frozen=True, slots=True)
class RevisitPlan:
    """When a URL is visited next, decided by frontier/revisit.py and applied by the store with
    the completion's own write: the interval learned, the next fetch time, whether this visit
    found the content changed, and the content hash to compare the next visit with (None:
    keep the stored one)."""

    interval: float
    next_fetch_at: float
    changed: bool
    content_hash: str | None


@dataclass(frozen=True, slots=True)
class Completion:
    """How a page lease ends. ``state`` is the URL's next state (queued means: retry later).
    A value: each step of a visit that adds to it makes a new one (``dataclasses.replace``),
    and the store never changes it (it says what it did in a plans.py ``Outcome``)."""

    state: str
    reason: str | None = None
    fetch: FetchRecord | None = None
    # False: a retry whose failure its host shared (frontier/outage.py): the attempt the lease
    # counted is given back, as a release gives it back.
    charged: bool = True
    links: Sequence[LinkRecord] = ()
    discovered: Sequence[UrlCandidate] = ()
    # URLs refused at the frontier's entry, kept so `export --what urls` can say why: (url, reason).
    excluded: Sequence[tuple[str, str]] = ()
    rejections: Mapping[str, int] = field(default_factory=dict)
    # None: no request was made, so the host's next-allowed time does not move.
    next_allowed_at: float | None = None
    etag: str | None = None
    last_modified: str | None = None
    # New values of the host's counters (None: unchanged), see frontier/backoff.py.
    host_backoff: int | None = None
    host_failures: int | None = None
    # Named counters added as given (e.g. dedup.links_total), unlike the rejected.* ones.
    counters: Mapping[str, int] = field(default_factory=dict)
    # The next visit (terminal completions; None: never revisited), see frontier/revisit.py.
    revisit: RevisitPlan | None = None
    # Host notes (name -> text) the store writes with the completion, before the host's token
    # is given back, so the host's next lease already reads them (crawl/host_rules.py).
    notes: Mapping[str, str] = field(default_factory=dict)
    # What the crawl decided about this completion, for the store to apply (plans.py; made by
    # frontier/plans.py). None: nothing decided (no budget, no content judgement).
    plan: CompletionPlan | None = None


@dataclass(frozen=True, slots=True)
class RobotsRecord:
    """A host's robots.txt as fetched (RFC 9309 §2.3.1): the verdict class and the body."""

    host_key: str
    status: int | None  # None: network error or timeout
    outcome: str  # "rules" | "allow_all" | "disallow_all"
    body: bytes
    fetched_at: float
    expires_at: float
    attempts: int = 0
    error: str | None = None

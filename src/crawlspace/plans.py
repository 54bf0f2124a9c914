"""What the crawl decided about one page's completion, in the terms the engines apply it.

A plan is made above the store (frontier/plans.py, from the lease, its completion and what the
crawl knows of the host) and handed to the store with the completion. The engines (memory,
SQLite, Redis) only apply it, each with its own atomic operations, so a decision is written
once for every engine. Two decisions depend on what only the engine learns inside its atomic
operation: whether the page's text is another URL's (its content claims) and how many new URLs
its links queued. For those the plan carries a pure continuation that the engine calls at that
point with what it found (``judge``, ``after_links``); the engine never interprets the answer,
it writes it. The page's index feed record (``feed_entry``) is the third: it depends on the
verdict.

No policy lives here: this module is vocabulary, below both ``frontier/`` and ``store/``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "NO_PLAN",
    "CashRule",
    "CompletionPlan",
    "ContentIndex",
    "ContentVerdict",
    "DayCount",
    "FeedEntry",
    "InlinkStep",
    "Judgement",
    "LinkEffects",
    "Outcome",
]


@dataclass(frozen=True, slots=True)
class DayCount:
    """Count the page against its host's pages of UTC day ``day``; once the count reaches
    ``cap`` the host waits until ``until`` (and the page that reached it is counted as
    ``rejected.budget_host_day``)."""

    day: int
    cap: int
    until: float


class ContentIndex(Protocol):
    """An engine's content claims: the two primitives content dedup is decided over."""

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


@dataclass(frozen=True, slots=True)
class Judgement:
    """A page's content verdict, and the priority points its links on its own host take
    (0: none) before they are admitted."""

    verdict: ContentVerdict = ContentVerdict()
    sink: int = 0


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """A completion's record in the index feed (feed_format.py), as the engine stores it: the
    document it adds or deletes, the record's JSON without its page part (``meta``), and the
    page part, packed (None for a delete)."""

    doc_id: str
    kind: str  # feed_format.UPSERT or DELETE
    meta: str
    document: bytes | None = None


@dataclass(frozen=True, slots=True)
class InlinkStep:
    """A followed link counts as an in-link of its target; a target still queued moves
    ``points`` earlier for each linking page beyond the first, up to ``pages`` such pages, and
    never from the new URLs' priorities (>= 0) into the revisit band below 0 (bands.py)."""

    points: int
    pages: int

    def moved(self, priority: int, inlinks_before: int) -> int:
        """A queued target's priority once one more page links to it."""
        if not (self.points and 1 <= inlinks_before <= self.pages):
            return priority
        if priority >= 0:
            return max(priority - self.points, 0)
        return priority - self.points


@dataclass(frozen=True, slots=True)
class LinkEffects:
    """What a finished page's admitted links lead to: host notes to write with the completion,
    and priority points added to the URLs of the page's own host it queued (0: none)."""

    notes: Mapping[str, str] = field(default_factory=dict)
    sink: int = 0


class CompletionPlan(Protocol):
    """The decisions an engine applies with one page completion (frontier/plans.py)."""

    @property
    def day(self) -> DayCount | None:
        """The per-day page budget's count for this page, or None."""
        ...

    @property
    def caps(self) -> Sequence[tuple[str, int]]:
        """The keyed budgets its links are admitted under: (reason, cap) each. A new URL is
        counted under each of its ``budget_keys`` and excluded with the first reason whose
        counter is full."""
        ...

    def budget_keys(self, url: str) -> Sequence[str]:
        """A link's key under each of ``caps``, in the same order."""
        ...

    @property
    def inlinks(self) -> InlinkStep | None:
        """How a finished page's links move the known URLs they point to (None: not at all)."""
        ...

    def judge(self, content: ContentIndex, owner: int, duplicates: int, fetched: int) -> Judgement:
        """The page's content verdict, decided over the engine's claims (``owner``: the
        engine's identity of the page), and how far its links on its own host sink, given its
        host's duplicates and fetched pages before this one."""
        ...

    def after_links(self, found: int, *, duplicate: bool = False) -> LinkEffects:
        """Once its links are admitted: ``found`` is how many new URLs they queued, or would
        have but for the per-host page budget; ``duplicate``: the page's content verdict."""
        ...

    def feed_entry(self, verdict: ContentVerdict) -> FeedEntry | None:
        """The completion's index feed record, given its content verdict (None: none)."""
        ...


class CashRule(Protocol):
    """AOPIC's rules (frontier/aopic.py), as every engine applies them to the cash it keeps:
    a URL's cash and the Lambda total it was last paid at, and the crawl's Lambda total per
    known page. The engine stores and adds amounts; every figure comes from here."""

    @property
    def seed(self) -> float:
        """A seed's (or a declared sitemap's) cash."""
        ...

    def owed(self, cash: float, lambda_paid: float, lambda_total: float) -> float:
        """A page's cash when its visit ends, Lambda's payments since it was last paid in."""
        ...

    def split(self, cash: float, outlinks: int) -> tuple[float, float]:
        """(each outlink's share, Lambda's cut) of a finished page's cash."""
        ...

    def lambda_share(self, cut: float, known: int) -> float:
        """What Lambda's ``cut`` adds to its per-page total, with ``known`` URLs known."""
        ...

    def price(self, cash: float) -> int:
        """The priority ``cash`` buys in its host's queue (not counting a revisit's band)."""
        ...


class _Unplanned:
    """Nothing decided: no budget counted, no content claimed or judged, links admitted as
    they are, nothing learned from them."""

    day: DayCount | None = None
    caps: Sequence[tuple[str, int]] = ()
    inlinks: InlinkStep | None = None

    def budget_keys(self, url: str) -> Sequence[str]:
        return ()

    def judge(self, content: ContentIndex, owner: int, duplicates: int, fetched: int) -> Judgement:
        return _NOT_JUDGED

    def after_links(self, found: int, *, duplicate: bool = False) -> LinkEffects:
        return _NO_EFFECTS

    def feed_entry(self, verdict: ContentVerdict) -> FeedEntry | None:
        return None


_NOT_JUDGED = Judgement()
_NO_EFFECTS = LinkEffects()
NO_PLAN: CompletionPlan = _Unplanned()


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the engine did with a completion it accepted: the refusals it counted (keyed and
    per-host budgets, the day budget spent), the URLs of the page's own host its links queued,
    and the content verdict."""

    rejections: Mapping[str, int] = field(default_factory=dict)
    admitted: Sequence[str] = ()
    duplicate: bool = False

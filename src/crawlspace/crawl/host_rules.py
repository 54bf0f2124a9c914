"""What the crawl learns about each host, applied to its leases and links on any engine: trap
verdicts by yield (frontier/trap_yield.py), rel=canonical rewrites (frontier/canonical.py) and
URL equivalences learned from content (frontier/url_equivalence.py); it also reads when the
host's current throttling streak began (frontier/backoff.py) and its outage
(frontier/outage.py: a host given up fails its queued URLs unfetched), with the same notes,
and keeps each host's sitemap documents within its budget (frontier/sitemap_budget.py).

All of it is kept as host notes in the store, so every worker of a shared frontier counts into
the same evidence and a resumed crawl keeps what it learned. Conclusions live in one small note
per host ("learned", frontier/learned.py), read before each fetch (a flagged family's queued URLs
end as excluded, unfetched; a variant is excluded and its equivalent form queued). What a first
visit shows of canonical rewrites and URL equivalences is learned before its completion goes to
the store and written with it, before the host's token is given back: the host's next lease,
on any worker, already applies it, so what is fetched follows the lease order alone. The page's
links are then screened with the updated conclusions. Its URL family's window needs the new URLs
the store queued, so it is counted after the commit; a verdict can lag by one page.

Notes are read when needed, not cached. Updates are a read and a write with no lock: with more
than one page of a host in flight (max_in_flight_per_host > 1), two may count from the same base
and one count is lost, which only delays a conclusion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from crawlspace.dedup.sketch import Sketch
from crawlspace.discovery.sitemaps import SITEMAP_SOURCE
from crawlspace.frontier import canonical as canon
from crawlspace.frontier import trap_yield as traps
from crawlspace.frontier import url_equivalence as dust
from crawlspace.frontier.allowance import AllowancePolicy
from crawlspace.frontier.backoff import THROTTLE_NOTE, throttled_since
from crawlspace.frontier.budgets import WINDOW_NOTE, decode_window
from crawlspace.frontier.learned import NOTE as LEARNED
from crawlspace.frontier.learned import Learned
from crawlspace.frontier.outage import OUTAGE_NOTE, Outage, OutagePolicy, down, read_outage
from crawlspace.frontier.priority import DEPTH_WEIGHT
from crawlspace.frontier.render_entry import RENDER_NOTE, HostRenders, read_host
from crawlspace.frontier.retirement import RETIRED, RetirementPolicy
from crawlspace.frontier.sitemap_budget import SITEMAP_BUDGET, SITEMAP_NOTE, count_sitemaps
from crawlspace.lifecycle import HOST_DOWN
from crawlspace.records import Completion, FetchRecord, Lease, UrlCandidate
from crawlspace.store.base import AddResult
from crawlspace.urls import normalize

__all__ = ["HostRules"]


class LearningStore(Protocol):
    """What host rules use of the store: the host's notes, queueing a variant's equivalent
    form, and a counter."""

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]: ...

    def put_host_note(self, host_key: str, name: str, text: str) -> None: ...

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult: ...

    def bump_counters(self, counts: dict[str, int]) -> None: ...


class HostRules:
    def __init__(
        self,
        store: LearningStore,
        rules: traps.YieldRules,
        now: Callable[[], float],
        *,
        learn_equivalence: bool = True,
        learn_order: bool = False,
        outages: OutagePolicy | None = None,
        retirement: RetirementPolicy | None = None,
        allowance: AllowancePolicy | None = None,
        max_sitemaps: int = 50,
        render: bool = False,
    ) -> None:
        self._store = store
        self._render = render  # the rendering tier is on: its host note is read too
        self._rules = rules
        self._now = now
        self._outages = outages or OutagePolicy()
        self._retirement = retirement or RetirementPolicy()
        self._allowance = allowance or AllowancePolicy(max_slowdown=1.0)
        self._max_sitemaps = max_sitemaps
        self._learn_equivalence = learn_equivalence
        # Evidence of parameter order only when the seen set keeps orders apart (config
        # query_order "learned"): when it ignores order, no two orders are fetched to compare.
        self._learn_order = learn_order
        # The host notes each lease in progress read before its fetch (lease id -> notes):
        # one read serves the lease's three steps. No other page of the host is in flight
        # (max_in_flight_per_host 1) to change them meanwhile, bar what the lease writes.
        self._read: dict[str, dict[str, str]] = {}

    def _note_names(self, lease: Lease) -> list[str]:
        """Every host note a visit of ``lease`` may read: the conclusions, and the evidence a
        first visit may add to."""
        url = lease.url
        names = [LEARNED, canon.NOTE, THROTTLE_NOTE, OUTAGE_NOTE, WINDOW_NOTE]
        if lease.source == SITEMAP_SOURCE:
            names.append(SITEMAP_NOTE)
        if self._render:
            names.append(RENDER_NOTE)
        if self._learn_equivalence:
            names += dust.note_names(url, order=self._learn_order)
        family = traps.url_family(url) if self._rules.sample else None
        if family is not None:
            names.append(traps.NOTE_PREFIX + family)
        return names

    def _notes(self, lease: Lease) -> dict[str, str]:
        notes = self._read.get(lease.lease_id)
        if notes is None:  # a commit without before_fetch (a failed attempt): read them now
            notes = self._store.host_notes(lease.host_key, self._note_names(lease))
        return notes

    def read_for(self, lease: Lease) -> Mapping[str, str]:
        """The host notes read before the lease's fetch, as its visit has updated them (empty
        when it fetched nothing); what its completion is planned from (frontier/plans.py)."""
        return self._read.get(lease.lease_id, {})

    def throttled_since(self, lease: Lease) -> float | None:
        """When the lease's host began its current throttling streak (frontier/backoff.py),
        from the notes read before its fetch."""
        return throttled_since(self._notes(lease).get(THROTTLE_NOTE))

    def outage(self, lease: Lease) -> Outage | None:
        """The lease's host's current run of unanswered requests (frontier/outage.py), from
        the notes read before its fetch."""
        return read_outage(self._notes(lease).get(OUTAGE_NOTE))

    def renders(self, lease: Lease) -> HostRenders:
        """The lease's host's renders so far (frontier/render_entry.py), from the notes read
        before its fetch."""
        return read_host(self._notes(lease).get(RENDER_NOTE))

    def slowdown(self, lease: Lease) -> float:
        """What the politeness gap after this lease's page is multiplied by: its host's
        allowance (frontier/allowance.py), from the notes read before its fetch."""
        window = decode_window(self._notes(lease).get(WINDOW_NOTE))
        return self._allowance.slowdown(window, lease.priority)

    def forget(self, lease: Lease) -> None:
        """The lease's run ended: drop what was read for it."""
        self._read.pop(lease.lease_id, None)

    def _usable(self, learned: Learned) -> Learned:
        if not self._learn_equivalence:  # switched off: URLs stay as linked, whatever was learned
            return dataclasses.replace(learned, equivalence=dust.Rules())
        return learned

    def before_fetch(self, lease: Lease) -> Completion | None:
        """The exclusion (or the given-up host's failure) that ends a leased URL unfetched, or
        None to fetch it."""
        if self._retirement.retired(lease, self._now()):
            return Completion(state="excluded", reason=RETIRED)
        notes = self._store.host_notes(lease.host_key, self._note_names(lease))
        self._read[lease.lease_id] = notes
        if down(self._outages, read_outage(notes.get(OUTAGE_NOTE)), self._now()):
            return Completion(state="failed", reason=HOST_DOWN)
        learned = self._usable(Learned.decode(notes.get(LEARNED)))
        if not learned:
            return None
        family = traps.url_family(lease.url)
        reason = None if family is None else learned.traps.get(family)
        if reason is not None:
            return Completion(state="excluded", reason=reason)
        rewritten = learned.apply(lease.url)
        if rewritten is None:
            return None
        # The variant's equivalent form is queued in its place (nothing if it was seen).
        target, reason = rewritten
        queued = UrlCandidate(target, lease.host_key, lease.depth, DEPTH_WEIGHT * lease.depth)
        self._store.add([queued], self._now())
        return Completion(state="excluded", reason=reason)

    def before_commit(self, lease: Lease, completion: Completion) -> Completion:
        """Before a visit's completion goes to the store: learn what the page shows of its
        host's canonical rewrites and URL equivalences (notes written with the completion, so
        the host's next lease reads them), then screen its links: those into a flagged family
        of its own host refused, variants admitted as their equivalent form (each refusal
        counted and kept as an exclusion with its reason). Returns the completion to commit."""
        if lease.source == SITEMAP_SOURCE:
            completion = self._count_sitemaps(lease, completion)
        fetch = completion.fetch
        learning = fetch is not None and completion.state == "fetched" and lease.version == 1
        own_links = any(c.host_key == lease.host_key for c in completion.discovered)
        if not learning and not own_links:
            return completion
        notes = self._notes(lease)
        before = Learned.decode(notes.get(LEARNED))
        learned = before
        written = dict(completion.notes)
        if learning and fetch is not None:
            learned = self._learn(lease, fetch, before, notes, written)
        if learned != before:
            written[LEARNED] = learned.encode()
        notes.update(written)  # what after_commit starts from
        completion = dataclasses.replace(completion, notes=written)
        if own_links and learned:
            return _screen(lease, completion, self._usable(learned))
        return completion

    def _count_sitemaps(self, lease: Lease, completion: Completion) -> Completion:
        """A sitemap index's documents within its host's sitemap budget
        (frontier/sitemap_budget.py); those past it excluded."""
        documents = [c.url for c in completion.discovered if c.source == SITEMAP_SOURCE]
        if not documents:
            return completion
        notes = self._notes(lease)
        count = count_sitemaps(documents, notes.get(SITEMAP_NOTE), self._max_sitemaps)
        if count.note is not None:
            notes[SITEMAP_NOTE] = count.note
            completion = dataclasses.replace(
                completion, notes={**completion.notes, SITEMAP_NOTE: count.note}
            )
        if not count.over:
            return completion
        over = set(count.over)
        rejections = dict(completion.rejections)
        rejections[SITEMAP_BUDGET] = rejections.get(SITEMAP_BUDGET, 0) + len(over)
        return dataclasses.replace(
            completion,
            discovered=[c for c in completion.discovered if c.url not in over],
            excluded=[*completion.excluded, *((url, SITEMAP_BUDGET) for url in count.over)],
            rejections=rejections,
        )

    def declared_sitemaps(self, host_key: str, urls: Sequence[str]) -> Sequence[str]:
        """The sitemaps a fresh robots.txt of ``host_key`` names, within the host's sitemap
        budget; the count is written at once (the robots.txt lease holds the host's token)."""
        note = self._store.host_notes(host_key, [SITEMAP_NOTE]).get(SITEMAP_NOTE)
        count = count_sitemaps(urls, note, self._max_sitemaps)
        if count.note is not None:
            self._store.put_host_note(host_key, SITEMAP_NOTE, count.note)
        if count.over:
            self._store.bump_counters({f"rejected.{SITEMAP_BUDGET}": len(count.over)})
        return count.admitted

    def _learn(
        self,
        lease: Lease,
        fetch: FetchRecord,
        learned: Learned,
        notes: dict[str, str],
        written: dict[str, str],
    ) -> Learned:
        """The host's conclusions after this page; changed evidence goes to ``written``."""
        canonical_href, text_hash = fetch.canonical, fetch.text_sha256
        canonical = None if canonical_href is None else normalize(canonical_href, lease.url)
        canon_note = canon.observe_canonical(lease.url, canonical, notes.get(canon.NOTE))
        if canon_note is not None:
            written[canon.NOTE] = canon_note
            learned = learned.with_rewrites(canon.active_rewrites(canon_note))
        if text_hash is not None and self._learn_equivalence:
            observed = dust.observe_page(lease.url, text_hash, notes, order=self._learn_order)
            for name, text in observed.items():
                written[name] = text
                rule = name.removeprefix(dust.NOTE_PREFIX)
                learned = learned.with_equivalence(rule, dust.settled(text))
        return learned

    def after_commit(self, lease: Lease, completion: Completion, admitted: Sequence[str]) -> None:
        """Once a page's first visit is committed: its URL family counts it, with the new
        URLs of the family the store queued (``admitted``: those of its host, only known
        now)."""
        fetch = completion.fetch
        if fetch is None or completion.state != "fetched" or lease.version != 1:
            return
        family = traps.url_family(lease.url) if self._rules.sample else None
        if family is None or fetch.sketch is None:
            return
        note = traps.NOTE_PREFIX + family
        notes = self._notes(lease)
        state = traps.decode(notes.get(note))
        new = self._count_page(lease, admitted, fetch.sketch, family, state)
        if new != state:
            self._store.put_host_note(lease.host_key, note, traps.encode(new))
        learned = Learned.decode(notes.get(LEARNED))
        if new.verdict is not None and family not in learned.traps:
            # Also when the verdict is older: a page whose lease began before the verdict was
            # written may have replaced the "learned" note without it; the family note keeps it.
            learned = learned.with_trap(family, new.verdict)
            self._store.put_host_note(lease.host_key, LEARNED, learned.encode())

    def _count_page(
        self,
        lease: Lease,
        admitted: Sequence[str],
        sketch: Sketch,
        family: str,
        state: traps.FamilyYield,
    ) -> traps.FamilyYield:
        """The page in its family's window; a new verdict is counted crawl-wide."""
        new = traps.observe(
            state,
            family,
            url=lease.url,
            sketch=sketch,
            minted=traps.family_members(family, admitted),
            rules=self._rules,
        )
        if new.verdict is not None and state.verdict is None:
            self._store.bump_counters({"traps.families_flagged": 1})
        return new


def _refusal(cand: UrlCandidate, learned: Learned) -> tuple[str, str | None] | None:
    """Why a link of the page's own host is not admitted as it is (and the form to admit
    instead, if any), or None."""
    family = traps.url_family(cand.url)
    reason = None if family is None else learned.traps.get(family)
    if reason is not None:
        return reason, None
    rewritten = learned.apply(cand.url)
    return None if rewritten is None else (rewritten[1], rewritten[0])


def _screen(lease: Lease, completion: Completion, learned: Learned) -> Completion:
    known = {c.url for c in completion.discovered}
    kept: list[UrlCandidate] = []
    excluded = list(completion.excluded)
    rejections = dict(completion.rejections)
    for cand in completion.discovered:
        refusal = None if cand.host_key != lease.host_key else _refusal(cand, learned)
        if refusal is None:
            kept.append(cand)
            continue
        reason, target = refusal
        excluded.append((cand.url, reason))
        rejections[reason] = rejections.get(reason, 0) + 1
        if target is not None and target not in known:
            known.add(target)
            kept.append(cand._replace(url=target))
    return dataclasses.replace(
        completion, discovered=kept, excluded=excluded, rejections=rejections
    )

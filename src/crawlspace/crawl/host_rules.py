"""What the crawl learns about each host, applied to its leases and links on any engine: trap
verdicts by yield (frontier/trap_yield.py) and rel=canonical rewrites (frontier/canonical.py).

Both are kept as host notes in the store, so every worker of a shared frontier counts into the
same windows and confirmations, and a resumed crawl keeps what it learned. Before a page is
fetched its URL is checked (a flagged family's queued URLs end as excluded, unfetched; a
variant an active rewrite covers is excluded and its rewritten form queued); before a page's
links are admitted, those into a flagged family of the page's own host are refused and those
under a rewrite's source are admitted as their rewritten form; once a page's first visit is
committed, its family counts it (with the new URLs the store queued) and its canonical counts
toward a rewrite.

Notes are read from the store when needed, not cached: what another worker learned applies from
the next lease on. Counts are a read and a write of one note with no lock, so two workers
finishing pages of one host at once may lose one page's count: that only delays a verdict, and
the per-host in-flight limit (1 by default) makes it rare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from crawlspace.frontier import canonical as canon
from crawlspace.frontier import trap_yield as traps
from crawlspace.frontier.priority import DEPTH_WEIGHT
from crawlspace.records import Completion, Lease, UrlCandidate
from crawlspace.store.base import Store
from crawlspace.urls import normalize

__all__ = ["HostRules"]

CANONICAL_VARIANT = "canonical_variant"


class HostRules:
    def __init__(self, store: Store, rules: traps.YieldRules, now: Callable[[], float]) -> None:
        self._store = store
        self._rules = rules
        self._now = now

    def before_fetch(self, lease: Lease) -> Completion | None:
        """The exclusion that ends a leased URL unfetched, or None to fetch it."""
        family = traps.url_family(lease.url) if self._rules.sample else None
        notes = self._store.host_notes(lease.host_key)
        if not notes:
            return None
        if family is not None:
            reason = traps.verdicts(notes).get(family)
            if reason is not None:
                return Completion(state="excluded", reason=reason)
        target = canon.apply_rewrite(lease.url, canon.active_rewrites(notes))
        if target is None:
            return None
        # The variant's rewritten form is queued in its place (nothing if it was seen).
        queued = UrlCandidate(target, lease.host_key, lease.depth, DEPTH_WEIGHT * lease.depth)
        self._store.add([queued], self._now())
        return Completion(state="excluded", reason=CANONICAL_VARIANT)

    def screen(self, lease: Lease, completion: Completion) -> None:
        """Before the page's links are admitted: refuse those into a flagged family of its own
        host, rewrite those an active rewrite covers (each refusal counted and kept as an
        exclusion with its reason)."""
        own = [c for c in completion.discovered if c.host_key == lease.host_key]
        if not own:
            return
        notes = self._store.host_notes(lease.host_key)
        if not notes:
            return
        flagged = traps.verdicts(notes) if self._rules.sample else {}
        rewrites = canon.active_rewrites(notes)
        if not flagged and not rewrites:
            return
        known = {c.url for c in completion.discovered}
        kept: list[UrlCandidate] = []
        for cand in completion.discovered:
            if cand.host_key != lease.host_key:
                kept.append(cand)
                continue
            reason = self._screen_one(cand, flagged, rewrites, known, kept)
            if reason is not None:
                completion.excluded.append((cand.url, reason))
                completion.rejections[reason] = completion.rejections.get(reason, 0) + 1
        completion.discovered = kept

    @staticmethod
    def _screen_one(
        cand: UrlCandidate,
        flagged: dict[str, str],
        rewrites: list[canon.Rewrite],
        known: set[str],
        kept: list[UrlCandidate],
    ) -> str | None:
        """Why ``cand`` is refused (None: kept); a rewritten form goes into ``kept``."""
        family = traps.url_family(cand.url)
        reason = None if family is None else flagged.get(family)
        if reason is not None:
            return reason
        target = canon.apply_rewrite(cand.url, rewrites)
        if target is None:
            kept.append(cand)
            return None
        if target not in known:
            known.add(target)
            kept.append(dataclasses.replace(cand, url=target))
        return CANONICAL_VARIANT

    def observe(self, lease: Lease, completion: Completion) -> None:
        """Learn from a committed fetched page (first visits with text only: a revisit would
        be its own sibling): its family's window, its canonical's rewrite."""
        fetch = completion.fetch
        if fetch is None or completion.state != "fetched" or lease.version != 1:
            return
        notes = self._store.host_notes(lease.host_key)
        changed = {}
        if fetch.canonical is not None or any(n.startswith(canon.NOTE_PREFIX) for n in notes):
            target = None if fetch.canonical is None else normalize(fetch.canonical, lease.url)
            changed.update(canon.observe_canonical(lease.url, target, notes))
        if fetch.simhash is not None and self._rules.sample:
            changed.update(self._observe_family(lease, completion, fetch.simhash, notes))
        for name, text in changed.items():
            self._store.put_host_note(lease.host_key, name, text)

    def _observe_family(
        self, lease: Lease, completion: Completion, simhash: int, notes: dict[str, str]
    ) -> dict[str, str]:
        family = traps.url_family(lease.url)
        if family is None:
            return {}
        name = traps.NOTE_PREFIX + family
        if name not in notes:
            tracked = sum(1 for n in notes if n.startswith(traps.NOTE_PREFIX))
            if tracked >= traps.MAX_FAMILIES:
                return {}
        state = traps.decode(notes.get(name))
        minted = traps.family_members(family, completion.admitted)
        new = traps.observe(
            state, family, url=lease.url, simhash=simhash, minted=minted, rules=self._rules
        )
        if new == state:
            return {}
        if new.verdict is not None and state.verdict is None:
            self._store.bump_counters({"traps.families_flagged": 1})
        return {name: traps.encode(new)}

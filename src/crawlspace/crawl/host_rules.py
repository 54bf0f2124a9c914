"""What the crawl learns about each host, applied to its leases and links on any engine: trap
verdicts by yield (frontier/trap_yield.py), rel=canonical rewrites (frontier/canonical.py) and
URL equivalences learned from content (frontier/url_equivalence.py).

All of it is kept as host notes in the store, so every worker of a shared frontier counts into
the same evidence and a resumed crawl keeps what it learned. Conclusions live in one small note
per host ("learned", frontier/learned.py), read before each fetch (a flagged family's queued URLs
end as excluded, unfetched; a variant is excluded and its equivalent form queued) and before a
page's links are admitted (links into a flagged family of the page's own host are refused,
variants admitted as their equivalent form). The evidence lives in notes of its own, read by
name only after a first visit that may add to it: its URL family's window (with the new URLs
the store queued), the host's canonical rewrites, the equivalences of its query parameters.

Notes are read when needed, not cached: what another worker learned applies from the next lease
on. An update is a read and a write with no lock, so two workers finishing pages of one host at
once may lose one page's count: that only delays a conclusion, and the per-host in-flight limit
(1 by default) makes it rare.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from crawlspace.dedup.sketch import Sketch
from crawlspace.frontier import canonical as canon
from crawlspace.frontier import trap_yield as traps
from crawlspace.frontier import url_equivalence as dust
from crawlspace.frontier.learned import NOTE as LEARNED
from crawlspace.frontier.learned import Learned
from crawlspace.frontier.priority import DEPTH_WEIGHT
from crawlspace.records import Completion, Lease, UrlCandidate
from crawlspace.store.base import Store
from crawlspace.urls import normalize

__all__ = ["HostRules"]


class HostRules:
    def __init__(
        self,
        store: Store,
        rules: traps.YieldRules,
        now: Callable[[], float],
        *,
        learn_equivalence: bool = True,
    ) -> None:
        self._store = store
        self._rules = rules
        self._now = now
        self._learn_equivalence = learn_equivalence

    def _learned(self, host_key: str) -> Learned:
        learned = Learned.decode(self._store.host_notes(host_key, [LEARNED]).get(LEARNED))
        if not self._learn_equivalence:  # switched off: URLs stay as linked, whatever was learned
            learned = dataclasses.replace(learned, equivalence=dust.Rules())
        return learned

    def before_fetch(self, lease: Lease) -> Completion | None:
        """The exclusion that ends a leased URL unfetched, or None to fetch it."""
        learned = self._learned(lease.host_key)
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

    def screen(self, lease: Lease, completion: Completion) -> None:
        """Before the page's links are admitted: refuse those into a flagged family of its own
        host, admit variants as their equivalent form (each refusal counted and kept as an
        exclusion with its reason)."""
        if not any(c.host_key == lease.host_key for c in completion.discovered):
            return
        learned = self._learned(lease.host_key)
        if not learned:
            return
        known = {c.url for c in completion.discovered}
        kept: list[UrlCandidate] = []
        for cand in completion.discovered:
            reason = None if cand.host_key != lease.host_key else _refusal(cand, learned)
            if reason is None:
                kept.append(cand)
                continue
            completion.excluded.append((cand.url, reason))
            completion.rejections[reason] = completion.rejections.get(reason, 0) + 1
            rewritten = None if reason in traps.TRAP_REASONS else learned.apply(cand.url)
            if rewritten is not None and rewritten[0] not in known:
                known.add(rewritten[0])
                kept.append(dataclasses.replace(cand, url=rewritten[0]))
        completion.discovered = kept

    def observe(self, lease: Lease, completion: Completion) -> None:
        """Learn from a committed fetched page (its first visit: a revisit would be its own
        sibling and its own variant)."""
        fetch = completion.fetch
        if fetch is None or completion.state != "fetched" or lease.version != 1:
            return
        family = traps.url_family(lease.url) if self._rules.sample else None
        dust_names = dust.note_names(lease.url) if self._learn_equivalence else []
        names = [LEARNED, canon.NOTE, *dust_names]
        if family is not None and fetch.sketch is not None:
            names.append(traps.NOTE_PREFIX + family)
        notes = self._store.host_notes(lease.host_key, names)
        learned = before = Learned.decode(notes.get(LEARNED))
        changed: dict[str, str] = {}
        canonical = None if fetch.canonical is None else normalize(fetch.canonical, lease.url)
        canon_note = canon.observe_canonical(lease.url, canonical, notes.get(canon.NOTE))
        if canon_note is not None:
            changed[canon.NOTE] = canon_note
            learned = learned.with_rewrites(canon.active_rewrites(canon_note))
        if fetch.text_sha256 is not None and dust_names:
            for name, text in dust.observe_page(lease.url, fetch.text_sha256, notes).items():
                changed[name] = text
                rule = name.removeprefix(dust.NOTE_PREFIX)
                learned = learned.with_equivalence(rule, dust.settled(text))
        if family is not None and fetch.sketch is not None:
            note = traps.NOTE_PREFIX + family
            state = traps.decode(notes.get(note))
            new = self._count_page(lease, completion, fetch.sketch, family, state)
            if new != state:
                changed[note] = traps.encode(new)
            if new.verdict is not None and state.verdict is None:
                learned = learned.with_trap(family, new.verdict)
        if learned != before:
            changed[LEARNED] = learned.encode()
        for name, text in changed.items():
            self._store.put_host_note(lease.host_key, name, text)

    def _count_page(
        self,
        lease: Lease,
        completion: Completion,
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
            minted=traps.family_members(family, completion.admitted),
            rules=self._rules,
        )
        if new.verdict is not None and state.verdict is None:
            self._store.bump_counters({"traps.families_flagged": 1})
        return new


def _refusal(cand: UrlCandidate, learned: Learned) -> str | None:
    """Why a link of the page's own host is not admitted as it is, or None."""
    family = traps.url_family(cand.url)
    reason = None if family is None else learned.traps.get(family)
    if reason is not None:
        return reason
    rewritten = learned.apply(cand.url)
    return None if rewritten is None else rewritten[1]

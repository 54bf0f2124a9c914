"""Trap verdicts by yield (frontier/trap_yield.py) applied to the crawl's leases, on any engine.

Each family's state is a host note in the store, so every worker of a shared frontier counts
into the same windows and a resumed crawl keeps its verdicts. Before a page is fetched its URL's
family is checked (a flagged family's queued URLs end as excluded, unfetched); before a page's
links are admitted, those into a flagged family of the page's own host are refused; once a
page's first visit is committed, its family counts it with the new URLs the store queued.

Verdicts are read from the store when they are needed (a lease of a URL with a family, a page
with links into one), not cached: a verdict another worker stores is applied from the next lease
on. A window's counts are a read and a write of one note with no lock, so two workers finishing
pages of one family at once may lose one page's count: that only delays a verdict, and the
per-host in-flight limit (1 by default) makes it rare.
"""

from __future__ import annotations

from crawlspace.frontier.trap_yield import (
    MAX_FAMILIES,
    NOTE_PREFIX,
    YieldRules,
    decode,
    encode,
    family_members,
    observe,
    url_family,
    verdicts,
)
from crawlspace.records import Completion, Lease
from crawlspace.store.base import Store

__all__ = ["TrapWatch"]


class TrapWatch:
    def __init__(self, store: Store, rules: YieldRules) -> None:
        self._store = store
        self._rules = rules

    @property
    def enabled(self) -> bool:
        return self._rules.sample > 0

    def _verdicts(self, host_key: str) -> dict[str, str]:
        return verdicts(self._store.host_notes(host_key))

    def verdict(self, lease: Lease) -> str | None:
        """The reason a leased URL is not fetched: its family on its host is a trap."""
        if not self.enabled:
            return None
        family = url_family(lease.url)
        if family is None:
            return None
        return self._verdicts(lease.host_key).get(family)

    def observe(self, lease: Lease, completion: Completion) -> None:
        """Count a committed fetched page (first visits with text only: a revisit would be its
        own sibling) in its family's window."""
        fetch = completion.fetch
        if (
            not self.enabled
            or fetch is None
            or completion.state != "fetched"
            or lease.version != 1
            or fetch.simhash is None
        ):
            return
        family = url_family(lease.url)
        if family is None:
            return
        name = NOTE_PREFIX + family
        notes = self._store.host_notes(lease.host_key)
        if name not in notes:
            tracked = sum(1 for n in notes if n.startswith(NOTE_PREFIX))
            if tracked >= MAX_FAMILIES:
                return
        state = decode(notes.get(name))
        minted = family_members(family, completion.admitted)
        new = observe(
            state, family, url=lease.url, simhash=fetch.simhash, minted=minted, rules=self._rules
        )
        if new == state:
            return
        self._store.put_host_note(lease.host_key, name, encode(new))
        if new.verdict is not None and state.verdict is None:
            self._store.bump_counters({"traps.families_flagged": 1})

    def screen(self, lease: Lease, completion: Completion) -> None:
        """Refuse the page's links into a flagged family of its own host (each counted and
        kept as an exclusion with the family's reason)."""
        if not self.enabled or not completion.discovered:
            return
        families = [
            url_family(cand.url) if cand.host_key == lease.host_key else None
            for cand in completion.discovered
        ]
        if not any(families):
            return
        flagged = self._verdicts(lease.host_key)
        if not flagged:
            return
        kept = []
        for cand, family in zip(completion.discovered, families, strict=True):
            reason = None if family is None else flagged.get(family)
            if reason is None:
                kept.append(cand)
                continue
            completion.excluded.append((cand.url, reason))
            completion.rejections[reason] = completion.rejections.get(reason, 0) + 1
        completion.discovered = kept

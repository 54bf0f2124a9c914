"""The memory engine's admission: the URL-seen test and enqueue-if-new, with the per-host cap and
the keyed budgets a completion's plan counts its links under (plans.py). A mixin of
``MemoryFrontier`` (frontier.py), which owns the state it reads and the queues it feeds
(``_enqueue``, ``_reschedule``).
"""

from __future__ import annotations

from collections.abc import Sequence

from crawlspace.lifecycle import UrlState
from crawlspace.plans import NO_PLAN, CompletionPlan
from crawlspace.records import UrlCandidate
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.memory.links import Admitted, LinkPolicy
from crawlspace.store.memory.records import MemHost, MemUrl
from crawlspace.urls import host_key

_BUDGET_HOST = "budget_host"


class MemoryAdmission:
    """``add`` (store/base.py Frontier) and the admission steps a completion's links take."""

    _limits: FrontierLimits
    _urls: dict[str, MemUrl]
    _by_id: list[MemUrl | None]
    _hosts: dict[str, MemHost]
    _links: LinkPolicy

    def _enqueue(self, host: MemHost, url: MemUrl) -> None:
        raise NotImplementedError  # frontier.py

    def _reschedule(self, host: MemHost) -> None:
        raise NotImplementedError  # frontier.py

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        admitted = Admitted()
        result = self._admit(self._links.priced(candidates, seeded=True), NO_PLAN, admitted)
        self._links.endow(admitted)  # AOPIC: seeds and sitemaps start with the seed cash
        return result

    def _admit(
        self,
        candidates: Sequence[UrlCandidate],
        plan: CompletionPlan,
        admitted: Admitted,
    ) -> AddResult:
        """Enqueue-if-new, with the per-host cap and the plan's keyed budgets; ``admitted``
        records what happened to each URL, for the link policy (links.py)."""
        added = seen = 0
        rejected: dict[str, int] = {}
        cap = self._limits.max_pages_per_host
        for cand in candidates:
            known = self._urls.get(cand.url)
            if known is not None and not self._readmit(known, cand):
                seen += 1
                admitted.known.append(known)
                continue
            if known is not None:
                added += 1
                admitted.new.append(known)
                continue
            host = self._hosts.get(cand.host_key)
            if host is None:
                host = self._hosts[cand.host_key] = MemHost(cand.host_key)
            keys = plan.budget_keys(cand.url) if plan.caps else ()
            reason = _BUDGET_HOST if cap is not None and host.admitted >= cap else None
            for (name, budget_cap), key in zip(plan.caps, keys, strict=True):
                if reason is None and host.budget_counts.get(key, 0) >= budget_cap:
                    reason = name
            if reason is not None:
                rejected[reason] = rejected.get(reason, 0) + 1
                admitted.over_host_budget += reason == _BUDGET_HOST
                # Remembered, so a link seen again later counts as seen, not as a new rejection.
                url = self._new_url(cand, UrlState.EXCLUDED)
                url.reason = reason
                continue
            for key in keys:
                host.budget_counts[key] = host.budget_counts.get(key, 0) + 1
            host.admitted += 1
            url = self._new_url(cand, UrlState.QUEUED)
            self._enqueue(host, url)
            self._reschedule(host)
            admitted.new.append(url)
            added += 1
        return AddResult(added=added, already_seen=seen, rejected=rejected)

    def _readmit(self, url: MemUrl, cand: UrlCandidate) -> bool:
        """A URL excluded for its depth, met again within it: admitted (as every store does)."""
        if url.state is not UrlState.EXCLUDED or url.reason != "depth":
            return False
        host = self._hosts.setdefault(cand.host_key, MemHost(cand.host_key))
        cap = self._limits.max_pages_per_host
        if cap is not None and host.admitted >= cap:
            return False
        url.state, url.reason = UrlState.QUEUED, None
        url.depth, url.priority = cand.depth, cand.priority
        host.admitted += 1
        self._enqueue(host, url)
        self._reschedule(host)
        return True

    def _exclude(self, excluded: Sequence[tuple[str, str]], depth: int) -> None:
        """Remember URLs refused at admission with their reasons: met again, they are seen."""
        for url, reason in excluded:
            if url not in self._urls:
                record = self._new_url(UrlCandidate(url, host_key(url), depth), UrlState.EXCLUDED)
                record.reason = reason

    def _new_url(self, cand: UrlCandidate, state: UrlState) -> MemUrl:
        url = MemUrl(
            url_id=len(self._by_id),
            url=cand.url,
            host_key=cand.host_key,
            depth=cand.depth,
            priority=cand.priority,
            redirect_hops=cand.redirect_hops,
            state=state,
            changefreq=cand.changefreq,
        )
        self._by_id.append(url)
        self._urls[cand.url] = url
        return url

"""The memory engine's admission: the URL-seen test and enqueue-if-new, with the per-host cap and
the keyed budgets a completion's plan counts its links under (plans.py), and what a page's
links then lead to (the plan's notes and sink, in-links and cash: links.py). A part of
``MemoryFrontier`` (frontier.py), given the state it shares and the frontier's queue steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from crawlspace.lifecycle import UrlState
from crawlspace.plans import NO_PLAN, CompletionPlan
from crawlspace.records import Completion, UrlCandidate
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.memory.links import Admitted, LinkPolicy
from crawlspace.store.memory.records import MemHost, MemUrl
from crawlspace.urls import host_key, seen_key

_BUDGET_HOST = "budget_host"


def url_key(url: str, limits: FrontierLimits) -> str:
    """``url``'s key in the memory frontier's seen set: its query in name order when order is
    ignored (urls.py seen_key), the URL itself otherwise. The record keeps the URL as linked."""
    key = seen_key(url) if limits.ignore_query_order else None
    return url if key is None else key


@dataclass(frozen=True, slots=True)
class FrontierState:
    """The memory frontier's records admission reads and grows (frontier.py owns them), and
    its queue steps: a URL into its host's queue, a host into its ready heap, a new priority."""

    limits: FrontierLimits
    # Every URL ever seen, by its key (``seen_key``): the source of truth for dedup.
    urls: dict[str, MemUrl]
    by_id: list[MemUrl | None]
    hosts: dict[str, MemHost]
    notes: dict[str, dict[str, str]]  # host notes (notes.py)
    enqueue: Callable[[MemHost, MemUrl], None]
    reschedule: Callable[[MemHost], None]
    reprioritize: Callable[[MemUrl, int], None]
    due_now: Callable[[MemUrl, float], None]  # a planned revisit moved to now (due.py)


class MemoryAdmission:
    """``add`` (store/base.py Frontier) and the admission steps a completion's links take."""

    def __init__(self, state: FrontierState) -> None:
        self._state = state
        self._limits = state.limits
        self._urls = state.urls
        self._by_id = state.by_id
        self._hosts = state.hosts
        self._enqueue = state.enqueue
        self._reschedule = state.reschedule
        self._links = LinkPolicy(state.limits, state.reprioritize)

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        admitted = Admitted()
        result = self._admit(self._links.priced(candidates, seeded=True), NO_PLAN, admitted, now)
        self._links.endow(admitted)  # AOPIC: seeds and sitemaps start with the seed cash
        return result

    def _admit(
        self,
        candidates: Sequence[UrlCandidate],
        plan: CompletionPlan,
        admitted: Admitted,
        now: float,
        via: int | None = None,
    ) -> AddResult:
        """Enqueue-if-new, with the per-host cap and the plan's keyed budgets; ``admitted``
        records what happened to each URL, for the link policy (links.py). ``via``: the URL
        id of the page whose completion admits them."""
        added = seen = 0
        rejected: dict[str, int] = {}
        cap = self._limits.max_pages_per_host
        linked_at = now if self._limits.link_times else None
        for cand in candidates:
            known = self._urls.get(url_key(cand.url, self._limits))
            if known is not None and linked_at is not None:
                known.linked_at = linked_at  # (retirement: frontier/retirement.py)
            if known is not None and not self._readmit(known, cand):
                seen += 1
                admitted.known.append(known)
                if cand.stale_before is not None:
                    self._stale(known, cand.stale_before, now)
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
                url.reason, url.via_id = reason, via
                continue
            for key in keys:
                host.budget_counts[key] = host.budget_counts.get(key, 0) + 1
            host.admitted += 1
            url = self._new_url(cand, UrlState.QUEUED)
            url.linked_at, url.via_id = linked_at, via
            self._enqueue(host, url)
            self._reschedule(host)
            admitted.new.append(url)
            added += 1
        return AddResult(added=added, already_seen=seen, rejected=rejected)

    def take_links(
        self,
        host: MemHost,
        url: MemUrl,
        completion: Completion,
        plan: CompletionPlan,
        rejections: dict[str, int],
        *,
        retry: bool,
        now: float,
    ) -> Admitted:
        """Admit the page's links under its plan's budgets and apply what they led to (the
        plan's notes and sink); a finished visit's links also carry its cash and count as
        in-links (links.py), a retry's are only admitted."""
        links: Sequence[UrlCandidate] = completion.discovered
        cash = (0.0, 0.0)
        if not retry:
            links, cash = self._links.take_cash(url, links)
        admitted = Admitted()
        if links:
            result = self._admit(links, plan, admitted, now, via=url.url_id)
            for reason, n in result.rejected.items():
                rejections[reason] = rejections.get(reason, 0) + n
        effects = plan.after_links(len(admitted.new) + admitted.over_host_budget)
        if effects.notes:
            self._state.notes.setdefault(host.key, {}).update(effects.notes)
        if effects.sink:
            for new in admitted.new:
                if new.host_key == host.key:
                    self._state.reprioritize(new, new.priority + effects.sink)
        if not retry:
            self._links.after_page(admitted, cash, len(self._by_id) - 1, plan.inlinks)
        return admitted

    def _stale(self, url: MemUrl, before: float, now: float) -> None:
        """A planned revisit made due now: the URL's last visit ended before ``before``
        (UrlCandidate.stale_before)."""
        planned = url.next_fetch_at is not None and url.next_fetch_at > now
        if planned and url.visited_at is not None and url.visited_at < before:
            self._state.due_now(url, now)

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

    def exclude(self, excluded: Sequence[tuple[str, str]], depth: int) -> None:
        """Remember URLs refused at admission with their reasons: met again, they are seen."""
        for url, reason in excluded:
            if url_key(url, self._limits) not in self._urls:
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
        self._urls[url_key(cand.url, self._limits)] = url
        return url

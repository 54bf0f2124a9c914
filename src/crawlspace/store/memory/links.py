"""What a fetched page's links do in the memory engine: in-link points (as the completion's plan
steps them, plans.py InlinkStep) and AOPIC's cash (frontier/aopic.py, which the SQLite and Redis
engines apply next to their rows too); here they only meet the in-memory records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from crawlspace.bands import REVISIT_BAND
from crawlspace.lifecycle import UrlState
from crawlspace.plans import InlinkStep
from crawlspace.records import UrlCandidate
from crawlspace.store.base import FrontierLimits
from crawlspace.store.memory.records import MemUrl

__all__ = ["Admitted", "LinkPolicy"]


@dataclass(slots=True)
class Admitted:
    """What one admission did: the URLs it queued, those it had seen, the new ones the per-host
    budget refused (still found, for the discovery window)."""

    new: list[MemUrl] = field(default_factory=list)
    known: list[MemUrl] = field(default_factory=list)
    over_host_budget: int = 0


class LinkPolicy:
    """What a page's links do to the URLs they reach in one memory frontier: in-link steps (a
    completion's plan) and AOPIC's cash by its rules (``limits.cash``), with Lambda's total."""

    def __init__(self, limits: FrontierLimits, reprioritize: Callable[[MemUrl, int], None]):
        self._cash = limits.cash
        self._reprioritize = reprioritize
        self.lambda_total = 0.0

    def priced(self, candidates: Sequence[UrlCandidate], seeded: bool) -> list[UrlCandidate]:
        """AOPIC, for URLs added directly (``seeded``): the priority a seed's cash buys."""
        if self._cash is None or not seeded:
            return list(candidates)
        priority = self._cash.price(self._cash.seed)
        return [c.at_priority(priority) for c in candidates]

    def endow(self, admitted: Admitted) -> None:
        """AOPIC, for URLs added directly (seeds, sitemaps): the seed cash, once."""
        rule = self._cash
        if rule is None:
            return
        for url in admitted.new:
            url.cash, url.lambda_paid = rule.seed, self.lambda_total
        for url in admitted.known:
            fresh = url.version == 1 and not url.cash and not url.inlinks
            if url.state is UrlState.QUEUED and fresh:
                url.cash, url.lambda_paid = rule.seed, self.lambda_total
                self._reprioritize(url, rule.price(rule.seed))

    def take_cash(
        self, url: MemUrl, links: Sequence[UrlCandidate]
    ) -> tuple[list[UrlCandidate], tuple[float, float]]:
        """AOPIC, when a visit ends: the page's links at the priority their share buys, and
        (each link's share, Lambda's cut) of the page's cash, which it no longer holds. The
        links as they are and (0, 0) under the score policy."""
        rule = self._cash
        if rule is None:
            return list(links), (0.0, 0.0)
        cash = rule.owed(url.cash, url.lambda_paid, self.lambda_total)
        url.cash, url.lambda_paid = 0.0, self.lambda_total
        url.priority = rule.price(0.0) - (REVISIT_BAND if url.priority < 0 else 0)
        share, to_lambda = rule.split(cash, len(links))
        priority = rule.price(share)
        return [c.at_priority(priority) for c in links], (share, to_lambda)

    def after_page(
        self,
        admitted: Admitted,
        cash: tuple[float, float],
        known_urls: int,
        step: InlinkStep | None,
    ) -> None:
        """A finished visit's links: in-links (moved by the plan's ``step``) and cash."""
        share, to_lambda = cash
        rule = self._cash
        for url in admitted.new:
            url.inlinks = 1
            if rule is not None:
                url.cash, url.lambda_paid = share, self.lambda_total
        for url in admitted.known:
            before = url.inlinks
            url.inlinks += 1
            if rule is not None:
                url.cash += share
                band = REVISIT_BAND if url.priority < 0 else 0
                self._reprioritize(url, rule.price(url.cash) - band)
            elif step is not None and url.state is UrlState.QUEUED:
                self._reprioritize(url, step.moved(url.priority, before))
        if rule is not None and to_lambda > 0.0:
            self.lambda_total += rule.lambda_share(to_lambda, known_urls)

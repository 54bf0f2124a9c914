"""What a fetched page's links do in the memory engine: in-link points (as the completion's plan
steps them, plans.py InlinkStep) and AOPIC's cash (frontier/aopic.py, which the SQLite and Redis
engines apply next to their rows too); here they only meet the in-memory records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from crawlspace.bands import REVISIT_BAND
from crawlspace.frontier.aopic import (
    NO_CASH_PRIORITY,
    SEED_CASH,
    cash_priority,
    lambda_per_page,
    page_cash,
    split_cash,
)
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
    """The link-driven priority rules and AOPIC's Lambda total of one memory frontier."""

    def __init__(self, limits: FrontierLimits, reprioritize: Callable[[MemUrl, int], None]):
        self._limits = limits
        self._reprioritize = reprioritize
        self.lambda_total = 0.0

    @property
    def aopic(self) -> bool:
        return self._limits.aopic_tax is not None

    def priced(self, candidates: Sequence[UrlCandidate], cash: float) -> list[UrlCandidate]:
        """AOPIC: the candidates at the priority ``cash`` buys (each new one starts with it)."""
        if not self.aopic:
            return list(candidates)
        priority = cash_priority(cash)
        return [dataclasses.replace(c, priority=priority) for c in candidates]

    def endow(self, admitted: Admitted) -> None:
        """AOPIC, for URLs added directly (seeds, sitemaps): the seed cash, once."""
        if not self.aopic:
            return
        for url in admitted.new:
            url.cash, url.lambda_paid = SEED_CASH, self.lambda_total
        for url in admitted.known:
            fresh = url.version == 1 and not url.cash and not url.inlinks
            if url.state is UrlState.QUEUED and fresh:
                url.cash, url.lambda_paid = SEED_CASH, self.lambda_total
                self._reprioritize(url, cash_priority(SEED_CASH))

    def take_cash(self, url: MemUrl, outlinks: int) -> tuple[float, float]:
        """AOPIC, when a visit ends: (each outlink's share, Lambda's cut) of the page's cash,
        which it no longer holds. (0, 0) under the score policy."""
        if not self.aopic:
            return 0.0, 0.0
        cash = page_cash(url.cash, url.lambda_paid, self.lambda_total)
        url.cash, url.lambda_paid = 0.0, self.lambda_total
        url.priority = NO_CASH_PRIORITY - (REVISIT_BAND if url.priority < 0 else 0)
        tax = self._limits.aopic_tax
        assert tax is not None  # (aopic)
        return split_cash(cash, outlinks, tax)

    def after_page(
        self,
        admitted: Admitted,
        cash: tuple[float, float],
        known_urls: int,
        step: InlinkStep | None,
    ) -> None:
        """A finished visit's links: in-links (moved by the plan's ``step``) and cash."""
        share, to_lambda = cash
        for url in admitted.new:
            url.inlinks = 1
            if self.aopic:
                url.cash, url.lambda_paid = share, self.lambda_total
        for url in admitted.known:
            before = url.inlinks
            url.inlinks += 1
            if self.aopic:
                url.cash += share
                band = REVISIT_BAND if url.priority < 0 else 0
                self._reprioritize(url, cash_priority(url.cash) - band)
            elif step is not None and url.state is UrlState.QUEUED:
                self._reprioritize(url, step.moved(url.priority, before))
        if to_lambda > 0.0:
            self.lambda_total = lambda_per_page(self.lambda_total, to_lambda, known_urls)

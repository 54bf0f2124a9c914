"""The crawl-wide render budget of a crawl one process owns (limits.py RenderBudget), in
memory; a shared frontier keeps the same totals in Redis (lua/render.lua)."""

from __future__ import annotations

from crawlspace.limits import RenderBudget

__all__ = ["RenderTotals"]


class RenderTotals:
    """Renders taken and their browser seconds, crawl-wide, against the budget."""

    def __init__(self, budget: RenderBudget, pages: int = 0, seconds: float = 0.0) -> None:
        self.budget = budget
        self.pages = pages
        self.seconds = seconds

    def reserve(self) -> tuple[str | None, int, float]:
        refusal = self.budget.refusal(self.pages, self.seconds)
        if refusal is None:
            self.pages += 1
        return refusal, self.pages, self.seconds

    def spend(self, seconds: float) -> None:
        self.seconds += max(0.0, seconds)

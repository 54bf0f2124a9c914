"""Adaptive On-line Page Importance Computation as a frontier order. Pure.

Abiteboul, Preda & Cobena, "Adaptive On-Line Page Importance Computation", WWW 2003: every page
holds *cash*. Seeds start with ``SEED_CASH``. Fetching a page hands its cash on: a tax goes to
the virtual page Lambda, which links to every page, and the rest is split equally among the
page's outlinks (all of them, known or new, so a URL linked from many pages grows rich); the
page keeps nothing. A page with no outlinks gives everything to Lambda. The total cash is
constant, so a URL's cash is its share of the importance found so far, and each host queue
leases its richest URL first.

Why trap pages starve: a trap (a calendar, a server inventing paths) is a tree of fresh URLs,
each with one in-link, so the cash entering it is split again at every level and shrinks
geometrically, while pages of a real site link to each other and collect cash from many pages.

Lambda pays every known page the same amount, which cannot change the order of URLs already
queued; the store therefore pays it lazily (a global "Lambda per page" total; a URL's cash when
fetched includes what Lambda paid since it was added) and orders by the cash received from links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "NO_CASH_PRIORITY",
    "POINTS_PER_DOUBLING",
    "SEED_CASH",
    "TOP_EXPONENT",
    "Aopic",
    "cash_priority",
    "lambda_per_page",
    "page_cash",
    "split_cash",
]

SEED_CASH = 1.0
# Priority points per halving of cash: 1/1000 of a doubling is finer than any real difference.
POINTS_PER_DOUBLING = 1000
# Cash of 2**64 (far above any total) maps to 0; revisits live below 0 (store/sqlite/revisit.py).
TOP_EXPONENT = 64
# A URL with no cash at all (e.g. only Lambda's share, or a trap page's last crumbs) goes last.
NO_CASH_PRIORITY = POINTS_PER_DOUBLING * (TOP_EXPONENT + 1100)


def cash_priority(cash: float) -> int:
    """Lower is richer: ``1000 * (64 - log2(cash))``, never negative."""
    if not cash > 0.0 or math.isnan(cash):
        return NO_CASH_PRIORITY
    points = round(POINTS_PER_DOUBLING * (TOP_EXPONENT - math.log2(cash)))
    return min(max(points, 0), NO_CASH_PRIORITY)


def split_cash(cash: float, outlinks: int, tax: float) -> tuple[float, float]:
    """(cash for each outlink, cash for Lambda) when a page holding ``cash`` is fetched."""
    if cash <= 0.0:
        return 0.0, 0.0
    if outlinks <= 0:
        return 0.0, cash
    to_lambda = cash * tax
    return (cash - to_lambda) / outlinks, to_lambda


def page_cash(cash: float, lambda_paid: float, lambda_now: float) -> float:
    """A page's cash when its visit ends: what links gave it, plus what Lambda paid every page
    since this one was last paid (``lambda_paid``: Lambda's per-page total then)."""
    return cash + max(0.0, lambda_now - lambda_paid)


def lambda_per_page(total: float, to_lambda: float, known: int) -> float:
    """Lambda's per-page total after it receives ``to_lambda``: it links to every known page,
    so each of the ``known`` pages is owed an equal part."""
    return total + to_lambda / max(known, 1)


@dataclass(frozen=True, slots=True)
class Aopic:
    """AOPIC's rules as the engines apply them (plans.py CashRule), with Lambda's ``tax``."""

    tax: float
    seed: float = SEED_CASH

    def owed(self, cash: float, lambda_paid: float, lambda_total: float) -> float:
        return page_cash(cash, lambda_paid, lambda_total)

    def split(self, cash: float, outlinks: int) -> tuple[float, float]:
        return split_cash(cash, outlinks, self.tax)

    def lambda_share(self, cut: float, known: int) -> float:
        return lambda_per_page(0.0, cut, known)

    def price(self, cash: float) -> int:
        return cash_priority(cash)

"""AOPIC on the shared frontier (frontier/aopic.py): Lambda's per-page total in a slot of its
own, and a finished page's cash split among its links before they are admitted.

The one-process store takes a page's cash inside its completion transaction. Here the links are
admitted first (other buckets, lua/add.lua) and the page completed after (its bucket,
lua/complete.lua), so the lease carries the page's cash and the Lambda total it was last paid
at; the split is computed here with the policy's own functions, each link's share travels with
it to add.lua, and complete.lua subtracts exactly the cash taken (a share that reached the page
while it was leased stays for its next visit). Lambda's total only grows; a worker that reads it
a little late pays a page a little later, never twice (the page records the total it was paid
at).
"""

from __future__ import annotations

from dataclasses import dataclass

from crawlspace.frontier.aopic import page_cash, split_cash
from crawlspace.records import Completion, Lease
from crawlspace.store.redis.scripts import ScriptRunner

__all__ = ["CashLedger", "PageCash"]


@dataclass(frozen=True, slots=True)
class PageCash:
    """A finished page's cash: each link's share, Lambda's cut, the stored cash it takes and the
    Lambda total it was paid at."""

    share: float
    to_lambda: float
    taken: float
    lambda_total: float


class CashLedger:
    """Lambda's per-page total and the number of known URLs, in ``{ns:cash}`` (lua/cash.lua)."""

    def __init__(self, scripts: ScriptRunner) -> None:
        self._f = scripts
        self.prefix = f"{{{scripts.namespace}:cash}}:"
        self._total: float | None = None

    def lambda_total(self) -> float:
        if self._total is None:
            key = self.prefix + "st"
            value = self._f.retrying(lambda: self._f.client.hget(key, "lambda"))
            self._total = float(value or 0.0)
        return self._total

    def settle(self, lease: Lease, completion: Completion, tax: float) -> PageCash:
        """The split of a page that is done (not a retry), by frontier/aopic.py."""
        total = self.lambda_total()
        cash = page_cash(lease.cash, lease.lambda_paid, total)
        share, to_lambda = split_cash(cash, len(completion.discovered), tax)
        return PageCash(share, to_lambda, lease.cash, total)

    def pay(self, known: int, to_lambda: float) -> None:
        """Count ``known`` more URLs and give Lambda its cut (frontier/aopic.py
        lambda_per_page, in the script: one known count, however many workers)."""
        if known <= 0 and to_lambda <= 0.0:
            return
        reply = self._f.run_key("cash", self.prefix + "st", (self.prefix, known, repr(to_lambda)))
        self._total = float(reply)

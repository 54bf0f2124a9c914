"""AOPIC on the shared frontier (plans.py CashRule, frontier/aopic.py): Lambda's per-page total
and the count of known URLs in a slot of their own, and a finished page's cash split among its
links before they are admitted.

The one-process store takes a page's cash inside its completion transaction. Here the links are
admitted first (other buckets, lua/add.lua) and the page completed after (its bucket,
lua/complete.lua), so the lease carries the page's cash and the Lambda total it was last paid
at; the split is computed here by the crawl's rules, each link's share travels with it to
add.lua, and complete.lua subtracts exactly the cash taken (a share that reached the page while
it was leased stays for its next visit). The scripts only add amounts: the priority a URL's new
cash buys is priced here and written by lua/reprice.lua while that cash is still the URL's.
Lambda's total only grows; a worker that reads it a little late pays a page a little later,
never twice (the page records the total it was paid at).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crawlspace.plans import CashRule
from crawlspace.records import Completion, Lease
from crawlspace.store.redis.index import BucketIndex
from crawlspace.store.redis.scripts import ScriptRunner

__all__ = ["CashLedger", "PageCash"]


@dataclass(frozen=True, slots=True)
class PageCash:
    """A finished page's cash: each link's share, Lambda's cut, the stored cash it takes, the
    Lambda total it was paid at, and the priorities of a link's share and of no cash."""

    share: float
    to_lambda: float
    taken: float
    lambda_total: float
    priced: int
    broke: int


class CashLedger:
    """Lambda's per-page total and the number of known URLs, in ``{ns:cash}``, by ``rule``."""

    def __init__(
        self, scripts: ScriptRunner, rule: CashRule | None, index: BucketIndex, max_in_flight: int
    ) -> None:
        self._f = scripts
        self.rule = rule
        self._index = index
        self._max_in_flight = max_in_flight
        self.prefix = f"{{{scripts.namespace}:cash}}:"
        self._total: float | None = None

    def lambda_total(self) -> float:
        if self._total is None:
            key = self.prefix + "st"
            value = self._f.retrying(lambda: self._f.client.hget(key, "lambda"))
            self._total = float(value or 0.0)
        return self._total

    def settle(self, rule: CashRule, lease: Lease, completion: Completion) -> PageCash:
        """The split of a page that is done (not a retry)."""
        total = self.lambda_total()
        cash = rule.owed(lease.cash, lease.lambda_paid, total)
        share, to_lambda = rule.split(cash, len(completion.discovered))
        return PageCash(share, to_lambda, lease.cash, total, rule.price(share), rule.price(0.0))

    def prices(self, rule: CashRule, grown: Sequence[object]) -> list[tuple[str, str, int]]:
        """(id, cash, priority) for the flat (id, cash) pairs of URLs a script grew the cash of
        (lua/add.lua, lua/complete.lua); lua/reprice.lua keeps a revisit's band."""
        out = []
        for i in range(0, len(grown), 2):
            url_id, cash = str(grown[i]), str(grown[i + 1])
            out.append((url_id, cash, rule.price(float(cash))))
        return out

    def after_page(
        self, rule: CashRule, grown: Sequence[object], paid: PageCash | None, known: int
    ) -> None:
        """Once a page's completing write ran: when the page took (``paid``), count the URLs
        it made known and give Lambda its cut; then price the URLs whose cash its links (and,
        kept while it was leased, its own) grew."""
        if paid is not None:
            self.pay(rule, known, paid.to_lambda)
        self.reprice(self.prices(rule, grown))

    def reprice(self, prices: Sequence[tuple[str, str, int]]) -> None:
        """The priorities of URLs whose cash a script grew, each in its own bucket
        (lua/reprice.lua), written only while that cash is still theirs."""
        by_bucket: dict[int, list[object]] = {}
        for url_id, cash, priority in prices:
            by_bucket.setdefault(int(url_id) % self._f.buckets, []).extend((url_id, cash, priority))
        calls: list[tuple[int, Sequence[object]]] = [
            (bucket, (self._max_in_flight, *fields)) for bucket, fields in by_bucket.items()
        ]
        if calls:
            self._index.apply_replies([b for b, _ in calls], self._f.run_many("reprice", calls))

    def pay(self, rule: CashRule, known: int, to_lambda: float) -> None:
        """Count ``known`` more URLs and give Lambda its cut, each known URL an equal part
        (the rule's lambda_share): the count first, so the part divides by every URL known
        then, however many workers count at once."""
        if known <= 0 and to_lambda <= 0.0:
            return
        key = self.prefix + "st"
        client = self._f.client

        def count() -> list[object]:
            pipe = client.pipeline(transaction=False)
            pipe.hincrby(key, "known", known)
            pipe.hget(key, "lambda")
            return list(pipe.execute())

        counted, total = self._f.retrying(count)
        if to_lambda > 0.0:
            part = rule.lambda_share(to_lambda, int(str(counted)))
            total = self._f.retrying(lambda: client.hincrbyfloat(key, "lambda", repr(part)))
        self._total = float(str(total or 0.0))

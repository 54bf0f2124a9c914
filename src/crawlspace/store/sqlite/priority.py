"""The SQLite side of URL priority: in-link counts and AOPIC cash, applied as links arrive.

The in-link points are the completion's plan's (plans.py InlinkStep), AOPIC's amounts its rules'
(plans.py CashRule, frontier/aopic.py). Here they meet rows: after a page's links are added,
an UPDATE per target bumps its in-link count and moves it in its host queue (score policy: a
few points earlier per linking page; aopic: the page's cash share and the priority that cash
buys). Everything runs inside the caller's completion transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

from crawlspace.bands import REVISIT_BAND
from crawlspace.plans import CashRule, InlinkStep
from crawlspace.store.sqlite.known import RecentUrls

__all__ = ["Ranking", "migrate"]

URL_COLUMNS: Final = (
    ("inlinks", "INTEGER NOT NULL DEFAULT 0"),  # distinct fetched pages linking here
    ("cash", "REAL NOT NULL DEFAULT 0"),  # AOPIC cash received from links (frontier/aopic.py)
    ("lambda_paid", "REAL NOT NULL DEFAULT 0"),  # Lambda's per-page total when last paid
)
_LAMBDA_KEY: Final = "aopic_lambda_per_page"


def migrate(db: sqlite3.Connection) -> None:
    have = {row[1] for row in db.execute("PRAGMA table_info(urls)")}
    for column, kind in URL_COLUMNS:
        if column not in have:
            db.execute(f"ALTER TABLE urls ADD COLUMN {column} {kind}")


# A queued target's priority once one more page links to it (plans.py InlinkStep.moved; the
# parameters: the cap, the points, the points again).
_MOVED: Final = (
    "CASE WHEN state = 'queued' AND inlinks BETWEEN 1 AND ? THEN CASE WHEN priority >= 0"
    " THEN MAX(priority - ?, 0) ELSE priority - ? END ELSE priority END"
)
_COUNT_INLINK: Final = (
    f"UPDATE urls SET inlinks = inlinks + 1, priority = {_MOVED} WHERE url = ? AND inlinks <= ?"
)

# A revisit keeps its band (negative priorities) when its cash changes.
_BANDED: Final = (
    f"CASE WHEN priority < 0 THEN cash_priority(cash + ?) - {REVISIT_BAND}"
    " ELSE cash_priority(cash + ?) END"
)


class Ranking:
    """One store's priority applications, and AOPIC's Lambda total (the store is its only
    writer). AOPIC's amounts come from its rules (``cash``, plans.py CashRule), installed
    on the connection as the SQL function ``cash_priority``; None: the score policy."""

    def __init__(self, db: sqlite3.Connection, cash: CashRule | None = None) -> None:
        self.cash = cash
        self._lambda: float | None = None
        # Targets whose in-link count is past the cap (store/sqlite/known.py), for that cap.
        self.saturated = RecentUrls()
        self._saturated_cap: int | None = None
        if cash is not None:
            db.create_function("cash_priority", 1, cash.price, deterministic=True)

    @property
    def aopic(self) -> bool:
        return self.cash is not None

    def _lambda_per_page(self, db: sqlite3.Connection) -> float:
        if self._lambda is None:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (_LAMBDA_KEY,)).fetchone()
            self._lambda = float(row[0]) if row else 0.0
        return self._lambda

    def take_cash(self, db: sqlite3.Connection, url_id: int) -> float:
        """AOPIC, when a visit ends: the page's cash (links' shares plus what Lambda paid every
        page since it was last paid), which it now hands on and no longer holds."""
        if self.cash is None:
            return 0.0
        lam = self._lambda_per_page(db)
        row = db.execute("SELECT cash, lambda_paid FROM urls WHERE id = ?", (url_id,)).fetchone()
        broke = self.cash.price(0.0)
        db.execute(
            "UPDATE urls SET cash = 0, lambda_paid = ?, priority = CASE WHEN priority < 0"
            " THEN ? ELSE ? END WHERE id = ?",
            (lam, broke - REVISIT_BAND, broke, url_id),
        )
        return self.cash.owed(float(row[0]), float(row[1]), lam)

    def pass_on(
        self,
        db: sqlite3.Connection,
        cash: float,
        targets: Sequence[str],
        step: InlinkStep | None,
        linked_at: float | None = None,
    ) -> None:
        """A visit's followed links: in-link counts (moved as the plan's ``step`` says), under
        AOPIC the page's cash, and when given the time they were linked (retirement)."""
        if not targets and not (self.aopic and cash > 0.0):
            return
        # The link time only while retirement keeps it: the common UPDATE stays as it was.
        linked, at = ("", ()) if linked_at is None else (", linked_at = ?", (linked_at,))
        if self.cash is None:
            if step is not None and step.points and step.pages and not linked:
                self._count_inlinks(db, step, targets)
            elif step is not None and step.points and step.pages:
                db.executemany(
                    f"UPDATE urls SET inlinks = inlinks + 1, priority = {_MOVED}{linked}"
                    " WHERE url = ?",
                    [(step.pages, step.points, step.points, *at, url) for url in targets],
                )
            elif linked:  # in-links move nothing: only the link time is kept
                db.executemany(
                    f"UPDATE urls SET {linked.removeprefix(', ')} WHERE url = ?",
                    [(*at, u) for u in targets],
                )
            return
        share, to_lambda = self.cash.split(cash, len(targets))
        lam = self._lambda_per_page(db)
        db.executemany(
            f"UPDATE urls SET inlinks = inlinks + 1, priority = {_BANDED}, cash = cash + ?,"
            " lambda_paid = CASE WHEN inlinks = 0 AND cash = 0 THEN ? ELSE lambda_paid END"
            f"{linked} WHERE url = ?",
            [(share, share, share, lam, *at, url) for url in targets],
        )
        if to_lambda > 0.0:
            # Lambda links to every known page, so each gets an equal part (paid lazily).
            known = db.execute("SELECT MAX(id) FROM urls").fetchone()[0] or 1
            self._lambda = lam + self.cash.lambda_share(to_lambda, int(known))
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (_LAMBDA_KEY, repr(self._lambda)),
            )

    def _count_inlinks(
        self, db: sqlite3.Connection, step: InlinkStep, targets: Sequence[str]
    ) -> None:
        """One more in-link for each target, moved as ``step`` says. A new URL's priority stays
        >= 0: below 0 is the revisit band (sqlite/revisit.py), where it would be taken for a
        due revisit. Past the cap an in-link moves nothing, so the count stops at cap + 1: most
        of a page's links are its site's navigation, linked by every page, and a target past
        the cap (``saturated``) is not even read again. Every target has its row by now (the
        links were added first), so an UPDATE that changed nothing found it past the cap.

        One statement per target: a single ``WHERE url IN (...)`` UPDATE took ~25% longer for
        a page's links (SQLite collects the rows first), one with RETURNING ~40%."""
        if self._saturated_cap != step.pages:
            self.saturated = RecentUrls()
            self._saturated_cap = step.pages
        saturated = self.saturated
        execute = db.execute
        params = (step.pages, step.points, step.points)
        past_cap = [
            url
            for url in targets
            if url not in saturated
            and not execute(_COUNT_INLINK, (*params, url, step.pages)).rowcount
        ]
        saturated.learn(past_cap)

    def endow(self, db: sqlite3.Connection, urls: Sequence[str]) -> None:
        """AOPIC: seeds and declared sitemaps start with the seed cash (once: a seed given
        again on resume, already holding cash or already visited, gets nothing more)."""
        if self.cash is None or not urls:
            return
        lam = self._lambda_per_page(db)
        seed = self.cash.seed
        db.executemany(
            "UPDATE urls SET cash = ?, lambda_paid = ?, priority = ? WHERE url = ?"
            " AND state = 'queued' AND version = 1 AND cash = 0 AND inlinks = 0",
            [(seed, lam, self.cash.price(seed), url) for url in urls],
        )

"""Extraction hooks for the tests of `--extract` (parse/extract.py): plain functions in a module,
as a user's would be, imported by name in the crawl and in its parse workers."""

from __future__ import annotations

import os
from typing import Any

from crawlspace.parse.extract import Page


def headings(page: Page) -> dict[str, Any]:
    """One item a page: its title, its first <h1>, how many links it has."""
    first = page.css_first("h1")
    return {
        "title": page.title,
        "h1": first.text() if first is not None else None,
        "links": len(page.css("a[href]")),
    }


def one_per_row(page: Page) -> list[dict[str, Any]]:
    """One item per table row with a name and a price: a listing page's products."""
    rows = []
    for row in page.css("tr.product"):
        name, price = row.css_first(".name"), row.css_first(".price")
        if name is not None and price is not None:
            rows.append({"name": name.text(), "price": float(price.text())})
    return rows


def fails_on_sale(page: Page) -> dict[str, Any] | None:
    """A hook with a bug on one page: it raises there, and makes items everywhere else."""
    if "/sale" in page.url:
        raise ValueError("no price on the sale page")
    return {"url_seen": page.url}


def where(page: Page) -> dict[str, Any]:
    """Which process ran the hook."""
    return {"title": page.title, "pid": os.getpid()}

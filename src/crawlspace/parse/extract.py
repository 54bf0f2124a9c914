"""The extraction hook (``extract = "module:function"``, or ``Crawler(extractor=...)``): a user's
function that turns a fetched page into items, as a Scrapy callback does, run where the page is
parsed (a parse worker) and stored as the crawl's ``items`` (``crawlspace export --what items``).

The function gets a ``Page`` and returns a dict (one item), a list of dicts, or None (nothing).
Items are stored as JSON (values JSON cannot hold, such as a datetime, as their text). A
function that raises, or returns something else, costs its page its items only: the page is
kept as any other, the failure counted (``extract.errors``) and its first line logged.

    def extract(page):
        heading = page.css_first("h1")
        return {"title": page.title, "heading": heading.text() if heading else None}
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawlspace.errors import ConfigError

__all__ = ["Extractor", "Page", "load_extractor", "run_extractor"]

# At most this many items a page: a function that returns a list per link is bounded too.
MAX_ITEMS_PER_PAGE = 1000


@dataclass(slots=True)
class Page:
    """A fetched page, as an extraction function sees it."""

    url: str
    body: bytes
    content_type: str | None
    title: str | None
    text: str | None
    _tree: LexborHTMLParser | None = field(default=None, repr=False)

    def tree(self) -> LexborHTMLParser:
        """The page's HTML tree (selectolax's lexbor parser), parsed on first use."""
        if self._tree is None:
            self._tree = LexborHTMLParser(self.body)
        return self._tree

    def css(self, selector: str) -> list[LexborNode]:
        return self.tree().css(selector)

    def css_first(self, selector: str) -> LexborNode | None:
        return self.tree().css_first(selector)


Extractor = Callable[[Page], Any]


def load_extractor(spec: str) -> Extractor:
    """``module:function`` (a module on the crawl's path) as the function it names; ConfigError
    in one line when it cannot be found."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise ConfigError(
            f"extract {spec!r}: expected MODULE:FUNCTION, e.g. myproject.items:extract"
        )
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # the user's module: any error in it is theirs to see, in one line
        raise ConfigError(f"extract {spec!r}: cannot import {module_name}: {exc}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ConfigError(f"extract {spec!r}: {module_name} has no function {name}")
    return function  # type: ignore[no-any-return]


def run_extractor(extractor: Extractor, page: Page) -> tuple[list[str], str | None]:
    """The page's items as JSON texts, and the error that cost it its items (None: none)."""
    try:
        found = extractor(page)
    except Exception as exc:
        return [], f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    if found is None:
        return [], None
    items: Sequence[Any] = [found] if isinstance(found, dict) else found
    if not isinstance(items, list | tuple) or not all(isinstance(i, dict) for i in items):
        return [], f"returned {type(found).__name__}: expected a dict, a list of dicts or None"
    try:
        texts = [
            json.dumps(item, ensure_ascii=False, default=str) for item in items[:MAX_ITEMS_PER_PAGE]
        ]
    except (TypeError, ValueError) as exc:  # keys that are not strings, a circular value
        return [], f"an item JSON cannot hold: {exc}"
    return texts, None

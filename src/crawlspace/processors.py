"""Content processors, chosen by MIME type: a fetched body in, links and text out.

HTML is built in; users register others (``Crawler.register_processor("application/pdf", ...)``).
A processor is a plain synchronous function so it can run in a worker thread or process.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from crawlspace.dedup.simhash import simhash64
from crawlspace.discovery.links import PreLinks, prenormalize
from crawlspace.parse.html import extract


@dataclass(frozen=True, slots=True)
class ProcessedContent:
    base_url: str
    links: list[tuple[str, bool]] = field(default_factory=list)  # (raw href, nofollow)
    text: str | None = None
    canonical: str | None = None
    noindex: bool = False
    nofollow: bool = False
    # The built-in HTML processor does this work where it parses (a worker process), so the
    # crawl loop, the bottleneck, does not: the text's hashes, and the links normalized and
    # counted (``links`` is then empty). Other processors may leave them None. With the hashes
    # present the text itself is not needed by the loop: the HTML processor leaves it behind
    # rather than pickle tens of KB per page back across the process boundary.
    text_sha256: str | None = None
    simhash: int | None = None
    prelinks: PreLinks | None = None


class ContentProcessor(Protocol):
    def __call__(
        self, body: bytes, *, url: str, content_type: str | None, product_token: str
    ) -> ProcessedContent: ...


def process_html(
    body: bytes, *, url: str, content_type: str | None, product_token: str
) -> ProcessedContent:
    page = extract(body, base_url=url, content_type=content_type, product_token=product_token)
    return ProcessedContent(
        base_url=page.base_url,
        prelinks=prenormalize(((link.href, link.nofollow) for link in page.links), page.base_url),
        text_sha256=hashlib.sha256(page.text.encode()).hexdigest() if page.text else None,
        simhash=simhash64(page.text) if page.text else None,
        canonical=page.canonical,
        noindex=page.directives.noindex,
        nofollow=page.directives.nofollow,
    )


class ProcessorRegistry:
    """Maps a MIME type (``text/html``) or a major type (``text/*``) to a processor."""

    def __init__(self) -> None:
        self._by_type: dict[str, ContentProcessor] = {
            "text/html": process_html,
            "application/xhtml+xml": process_html,
        }

    def register(self, mime_type: str, processor: ContentProcessor) -> None:
        self._by_type[mime_type.lower()] = processor

    def for_content_type(self, content_type: str | None) -> ContentProcessor | None:
        if not content_type:
            return None
        mime = content_type.split(";", 1)[0].strip().lower()
        return self._by_type.get(mime) or self._by_type.get(mime.split("/", 1)[0] + "/*")

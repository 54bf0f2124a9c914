"""Content processors, chosen by MIME type: a fetched body in, links and text out.

HTML is built in; users register others (``Crawler.register_processor("application/pdf", ...)``).
A processor is a plain synchronous function so it can run in a worker thread or process.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from crawlspace.dedup.simhash import simhash_and_sketch
from crawlspace.dedup.sketch import Sketch
from crawlspace.discovery.links import Admission, Discovery, PreLinks, prenormalize
from crawlspace.heap import TRIM_AFTER_BYTES, release_free_heap
from crawlspace.parse.html import extract
from crawlspace.urls import host_key, normalize


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
    sketch: Sketch | None = None  # dedup/sketch.py, for trap detection by yield
    prelinks: PreLinks | None = None


class ContentProcessor(Protocol):
    def __call__(
        self, body: bytes, *, url: str, content_type: str | None, product_token: str
    ) -> ProcessedContent: ...


def process_html(
    body: bytes, *, url: str, content_type: str | None, product_token: str
) -> ProcessedContent:
    page = extract(body, base_url=url, content_type=content_type, product_token=product_token)
    links = [(link.href, link.nofollow) for link in page.links]
    simhash, sketch = simhash_and_sketch(page.text) if page.text else (None, None)
    canonical = normalize(page.canonical, page.base_url) if page.canonical else None
    if canonical is not None and canonical != url and host_key(canonical) == host_key(url):
        # A canonical URL of the page's own host is admitted like a link (scope and every
        # check apply), so the page a variant names is crawled even when nothing links to
        # it. Another host's is only recorded: a site does not get to enqueue other sites.
        links.append((canonical, False))
    return ProcessedContent(
        base_url=page.base_url,
        prelinks=prenormalize(links, page.base_url),
        text_sha256=hashlib.sha256(page.text.encode()).hexdigest() if page.text else None,
        simhash=simhash,
        sketch=sketch,
        canonical=page.canonical,
        noindex=page.directives.noindex,
        nofollow=page.directives.nofollow,
    )


# The crawl's link admission, installed in each parse worker process when it starts
# (crawl/stages.py), so the per-URL policy, scope and trap checks run there, not in the loop.
_worker_discovery: Discovery | None = None


def install_discovery(discovery: Discovery | None) -> None:
    global _worker_discovery  # noqa: PLW0603 -- one per worker process, set once at its start
    _worker_discovery = discovery


def admit_links(
    discovery: Discovery,
    content: ProcessedContent,
    *,
    parent_depth: int,
    header_nofollow: bool,
) -> Admission:
    """The page's links through the crawl's admission (in a parse worker, or in the loop when
    the worker could not): normalized ones as they are, a custom processor's hrefs first
    normalized against the page's base."""
    prelinks = content.prelinks
    if prelinks is None:
        prelinks = prenormalize(content.links, content.base_url)
    return discovery.admit_prenormalized(
        prelinks, parent_depth=parent_depth, page_nofollow=content.nofollow or header_nofollow
    )


def process_and_admit(
    processor: ContentProcessor,
    body: bytes,
    *,
    url: str,
    content_type: str | None,
    product_token: str,
    parent_depth: int,
    header_nofollow: bool,
) -> tuple[ProcessedContent, Admission | None]:
    """Run ``processor`` (in a parse worker process); then, where a Discovery is installed,
    admit its normalized links as the crawl loop would (``None``: not admitted here, the loop
    does it)."""
    content = processor(body, url=url, content_type=content_type, product_token=product_token)
    if len(body) >= TRIM_AFTER_BYTES:
        release_free_heap()  # the big page's DOM, freed, would stay with this worker (heap.py)
    if _worker_discovery is None or content.prelinks is None:
        return content, None
    admission = admit_links(
        _worker_discovery, content, parent_depth=parent_depth, header_nofollow=header_nofollow
    )
    # The loop needs the admission only: the normalized links need not travel back too.
    return dataclasses.replace(content, prelinks=None), admission


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

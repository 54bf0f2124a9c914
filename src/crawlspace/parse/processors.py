"""Content processors, chosen by MIME type: a fetched body in, links and text out.

HTML is built in; users register others (``Crawler.register_processor("application/pdf", ...)``).
A processor is a plain synchronous function so it can run in a worker thread or process.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from crawlspace.dedup.simhash import simhash_and_sketch
from crawlspace.dedup.sketch import Sketch
from crawlspace.parse.css import css_references
from crawlspace.parse.html import extract
from crawlspace.pickling import by_fields
from crawlspace.urls import host_key, normalize


@by_fields
@dataclass(frozen=True, slots=True)
class ProcessedContent:
    base_url: str
    links: list[tuple[str, bool]] = field(default_factory=list)  # (raw href, nofollow)
    text: str | None = None
    canonical: str | None = None
    noindex: bool = False
    nofollow: bool = False
    # The built-in HTML processor does this work where it parses (a worker process), so the
    # crawl loop, the bottleneck, does not: the text's hashes (its links are normalized there
    # too, crawl/parse_jobs.py). Other processors may leave them None. With the hashes present
    # the text itself is not needed by the loop: parse_jobs.py leaves it behind (in the feed's
    # document) rather than pickle tens of KB per page back across the process boundary.
    text_sha256: str | None = None
    simhash: int | None = None
    sketch: Sketch | None = None  # dedup/sketch.py, for trap detection by yield
    # For the index feed (feed/document.py): the page's title and declared language, and each
    # link's anchor text (same order as ``links``; None: the processor has none).
    title: str | None = None
    lang: str | None = None
    anchors: list[str] | None = None
    # The feed's page part, built where the page was parsed (crawl/parse_jobs.py): the text,
    # title and outlinks travel back once, compressed, and the loop never decodes them.
    document: bytes | None = None
    # What the page embeds, raw (stylesheets, scripts, images, fonts): fetched as its
    # requisites when the crawl asks (``page_requisites``); not links, so no depth.
    requisites: list[str] = field(default_factory=list)
    # The extraction hook's items, as JSON texts, and what cost the page its items (None:
    # nothing), parse/extract.py.
    items: list[str] = field(default_factory=list)
    extract_error: str | None = None
    # For the rendering tier's entry rule (frontier/render_entry.py): the visible text's length,
    # and whether the page looks like an app shell (asked for only while rendering is on).
    text_chars: int = 0
    app_shell: bool = False


class ContentProcessor(Protocol):
    def __call__(
        self, body: bytes, *, url: str, content_type: str | None, product_token: str
    ) -> ProcessedContent: ...


def process_html(
    body: bytes,
    *,
    url: str,
    content_type: str | None,
    product_token: str,
    requisites: bool = False,
    shell: bool = False,
) -> ProcessedContent:
    """A page's links, text and head; its requisites too when asked (``page_requisites``), and
    whether it looks like an app shell (``shell``: while the crawl renders pages)."""
    page = extract(
        body,
        base_url=url,
        content_type=content_type,
        product_token=product_token,
        requisites=requisites,
        shell=shell,
    )
    links = [(link.href, link.nofollow) for link in page.links]
    anchors = [link.anchor for link in page.links]
    simhash, sketch = simhash_and_sketch(page.text) if page.text else (None, None)
    canonical = normalize(page.canonical, page.base_url) if page.canonical else None
    if canonical is not None and canonical != url and host_key(canonical) == host_key(url):
        # A canonical URL of the page's own host is admitted like a link (scope and every
        # check apply), so the page a variant names is crawled even when nothing links to
        # it. Another host's is only recorded: a site does not get to enqueue other sites.
        links.append((canonical, False))
        anchors.append("")
    return ProcessedContent(
        base_url=page.base_url,
        links=links,
        text=page.text,
        title=page.title,
        lang=page.lang,
        anchors=anchors,
        text_sha256=hashlib.sha256(page.text.encode()).hexdigest() if page.text else None,
        simhash=simhash,
        sketch=sketch,
        canonical=page.canonical,
        noindex=page.directives.noindex,
        nofollow=page.directives.nofollow,
        requisites=page.requisites,
        text_chars=len(page.text),
        app_shell=page.app_shell,
    )


def process_css(
    body: bytes, *, url: str, content_type: str | None, product_token: str
) -> ProcessedContent:
    """A stylesheet's requisites (its @import rules, fonts and images); no text, no links."""
    charset = "utf-8"
    if content_type and "charset=" in content_type.lower():
        charset = content_type.lower().split("charset=", 1)[1].split(";")[0].strip(" \"'")
    try:
        text = body.decode(charset, errors="replace")
    except LookupError:  # an unknown charset label: CSS references are ASCII in practice
        text = body.decode("utf-8", errors="replace")
    return ProcessedContent(base_url=url, requisites=css_references(text))


class ProcessorRegistry:
    """Maps a MIME type (``text/html``) or a major type (``text/*``) to a processor."""

    def __init__(self) -> None:
        self._by_type: dict[str, ContentProcessor] = {
            "text/html": process_html,
            "application/xhtml+xml": process_html,
        }

    def fetch_requisites(self) -> None:
        """Pages report what they embed, and stylesheets what they import (page_requisites);
        a processor a user registered for HTML or CSS is kept as it is."""
        self._html_with(requisites=True)
        self._by_type.setdefault("text/css", process_css)

    def render_signals(self) -> None:
        """Pages say whether they look like an app shell (the rendering tier's entry rule);
        a processor a user registered for HTML is kept as it is."""
        self._html_with(shell=True)

    def _html_with(self, *, requisites: bool | None = None, shell: bool | None = None) -> None:
        for mime in ("text/html", "application/xhtml+xml"):
            current = self._by_type.get(mime)
            if current is process_html:
                had: dict[str, bool] = {}
            elif isinstance(current, functools.partial) and current.func is process_html:
                had = dict(current.keywords)
            else:
                continue
            self._by_type[mime] = functools.partial(
                process_html,
                requisites=had.get("requisites", False) if requisites is None else requisites,
                shell=had.get("shell", False) if shell is None else shell,
            )

    def register(self, mime_type: str, processor: ContentProcessor) -> None:
        self._by_type[mime_type.lower()] = processor

    def for_content_type(self, content_type: str | None) -> ContentProcessor | None:
        if not content_type:
            return None
        mime = content_type.split(";", 1)[0].strip().lower()
        return self._by_type.get(mime) or self._by_type.get(mime.split("/", 1)[0] + "/*")

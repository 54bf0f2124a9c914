"""One-pass HTML extraction: raw links and their anchor text, canonical, robots meta, title,
declared language and visible text, and, when asked, the page's requisites (what it embeds).

Pure: bytes in, an :class:`HtmlPage` out, no exception but MemoryError. Hrefs are returned raw;
resolving and normalizing them is discovery's job, so this module only resolves ``<base href>``.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Final, NamedTuple

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from crawlspace.parse.app_shell import app_shell
from crawlspace.parse.css import css_references
from crawlspace.parse.directives import NO_DIRECTIVES, RobotsDirectives, parse_robots_meta
from crawlspace.urls import normalize

__all__ = ["HtmlPage", "RawLink", "extract"]

DEFAULT_MAX_BYTES: Final = 10 * 1024 * 1024


class RawLink(NamedTuple):
    """An outlink exactly as written in the page (a tuple: ~800 per page are made and sent)."""

    href: str
    nofollow: bool  # rel contained nofollow, ugc or sponsored
    tag: str  # "a", "area", "frame" or "iframe"
    anchor: str = ""  # the link's text (an <area>'s alt), whitespace collapsed, capped


@dataclass(frozen=True, slots=True)
class HtmlPage:
    base_url: str  # <base href> resolved against the page URL, else the page URL
    links: list[RawLink]
    canonical: str | None  # raw href of the first <link rel="canonical">
    directives: RobotsDirectives  # from <meta name="robots"> and <meta name="{product_token}">
    title: str | None
    text: str  # visible body text, whitespace collapsed, for content hashes
    charset: str  # Python codec name the body was decoded with
    lang: str | None = None  # <html lang>, as declared (lowercase)
    # What the page embeds (stylesheets, scripts, images, media, fonts through its <style>), raw
    # and in document order; empty unless extract() was asked for them.
    requisites: list[str] = field(default_factory=list)
    # Whether it looks like a JavaScript app's empty shell (parse/app_shell.py); False unless
    # extract() was asked (the rendering tier's entry rule reads it).
    app_shell: bool = False


_LINK_SELECTOR: Final = "a[href], area[href], frame[src], iframe[src]"
_NOFOLLOW_RELS: Final = frozenset({"nofollow", "ugc", "sponsored"})
_HEAD_SELECTOR: Final = "base[href], link[rel][href], meta[name][content], title"
_INVISIBLE_TAGS: Final = ["script", "style", "noscript", "template"]
# Page requisites (wget's --page-requisites, Heritrix's embeds): what a browser loads to show the
# page. <link> only for the relations that load something the page needs.
_REQUISITE_SELECTOR: Final = (
    "link[href][rel], script[src], img[src], img[srcset], picture source[srcset], source[src],"
    " input[src], video[src], video[poster], audio[src], track[src], embed[src], object[data],"
    ' style, [style*="url("]'
)
_REQUISITE_RELS: Final = frozenset(
    {
        "stylesheet",
        "icon",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "mask-icon",
        "manifest",
        "preload",
        "modulepreload",
    }
)
_SOURCE_ATTRS: Final = ("src", "poster", "data")
# An anchor text longer than this is a block of the page wrapped in a link, not a label.
MAX_ANCHOR_CHARS: Final = 200
# BCP 47 tags are short; a longer lang attribute is junk (RFC 5646 §4.4.1 advises 35).
_MAX_LANG_CHARS: Final = 35

# ---- charset -------------------------------------------------------------------------------

# The HTML Standard prescans 1024 bytes; we look further because real pages put <meta charset>
# after long comments or inline scripts.
_PRESCAN_BYTES: Final = 4096
_META_CHARSET_RE: Final = re.compile(
    rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]{1,40})""", re.IGNORECASE
)
# WHATWG Encoding Standard: these labels mean windows-1252, which is what servers actually send.
_WINDOWS_1252_LABELS: Final = frozenset(
    {"ascii", "us-ascii", "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "cp819"}
)
# Codecs Python knows that are not web encodings; decoding with them either raises regardless of
# `errors` (idna) or turns backslash sequences into characters (unicode_escape).
_REFUSED_CODECS: Final = frozenset(
    {"idna", "punycode", "raw-unicode-escape", "unicode-escape", "utf-7", "undefined"}
)
_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _codec_name(label: str | None) -> str | None:
    """Map a charset label to a Python text codec name, or None if unusable."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _WINDOWS_1252_LABELS:
        return "cp1252"
    try:
        name = codecs.lookup(label).name
        b"".decode(name)  # rejects codecs that are not text encodings (base64, zlib, ...)
    except (LookupError, ValueError):
        return None
    return None if name in _REFUSED_CODECS else name


def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return _codec_name(value)
    return None


def _decode(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode following the HTML Standard's order: BOM, then header, then <meta>, then UTF-8."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(name, errors="replace"), name
    charset = _header_charset(content_type)
    if charset is None:
        match = _META_CHARSET_RE.search(body, 0, _PRESCAN_BYTES)
        charset = _codec_name(match.group(1).decode("ascii")) if match else None
        # HTML Standard §13.2.3.2: a <meta> we could read as ASCII cannot really be UTF-16.
        if charset is not None and charset.startswith(("utf-16", "utf-32")):
            charset = "utf-8"
    charset = charset or "utf-8"
    try:
        return body.decode(charset, errors="replace"), charset
    except (LookupError, UnicodeError, ValueError):
        return body.decode("utf-8", errors="replace"), "utf-8"


# ---- nesting guard -------------------------------------------------------------------------

# lexbor walks the stack of open elements on every block start tag ("has a p element in button
# scope", HTML Standard §13.2.6.4.7), so parse time is sum-of-depths: 40k nested <div>s take
# ~5 s. We estimate that sum with a cheap tag scan and cut the document where it exceeds this
# budget (~0.3 s of parsing). Real pages are far below it: 300k tags at depth 30 is 9M.
_MAX_NESTING_WORK: Final = 100_000_000
try:
    from crawlspace.parse import _nesting  # the compiled helper (setup.py)
except ImportError:  # built without a C compiler: python_nesting_cut
    _nesting = None  # type: ignore[assignment]
# Below this size the worst case is already cheap (a few thousand tags), so skip the scan.
_SCAN_MIN_CHARS: Final = 64 * 1024
_TAG_RE: Final = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]{0,9})")
_VOID_TAGS: Final = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param"}
    | {"source", "track", "wbr", "keygen", "frame"}
)


def nesting_cut(html: str) -> int | None:
    """Where to cut ``html`` so that parsing stays within the nesting budget (None: no cut):
    the compiled helper's answer (_nesting.c, built by setup.py where a C compiler is found),
    else ``python_nesting_cut``'s, the same to the character."""
    if _nesting is not None:
        return _nesting.nesting_cut(html, _MAX_NESTING_WORK)
    return python_nesting_cut(html)


def python_nesting_cut(html: str, budget: int = _MAX_NESTING_WORK) -> int | None:
    """``nesting_cut`` in Python: the reference the compiled helper is tested against.

    The work is the sum, over tags, of the depth of open elements after each. An end tag closes
    only an element of its name that is open (and those opened after it), as in the parser's
    stack: one that matches nothing is ignored there, so counting it as a close would let
    "<div></b>" repeated build depth unseen (a 1.4 MB page took 113 s to parse)."""
    open_names: dict[str, int] = {}
    stack: list[str] = []
    work = 0
    for index, (closing, tag) in enumerate(_TAG_RE.findall(html)):
        name = tag.lower()
        if closing:
            if open_names.get(name):
                while stack:
                    top = stack.pop()
                    open_names[top] -= 1
                    if top == name:
                        break
        elif name not in _VOID_TAGS:
            stack.append(name)
            open_names[name] = open_names.get(name, 0) + 1
        work += len(stack)
        if work > budget:
            return next(islice(_TAG_RE.finditer(html), index, None)).start()
    return None


def _limit_nesting(html: str) -> str:
    """Return ``html``, cut short if parsing it would cost more than the nesting budget."""
    if len(html) < _SCAN_MIN_CHARS:
        return html
    # Each tag deepens the stack by one at most, so n tags cost at most n(n+1)/2: under the
    # budget, no cut is possible and the scan (1.4 ms of a python3.11-doc page's ~6 ms in the
    # parse worker) is skipped. Every "<" is counted, tags or not: an upper bound, in C.
    tags = html.count("<")
    if tags * (tags + 1) // 2 <= _MAX_NESTING_WORK:
        return html
    cut = nesting_cut(html)
    return html if cut is None else html[:cut]


# ---- extraction ----------------------------------------------------------------------------


try:
    from crawlspace.parse import _text  # the compiled helper (setup.py)
except ImportError:  # built without a C compiler: python_collapse
    _text = None  # type: ignore[assignment]


def python_collapse(text: str) -> str:
    """``text`` with every run of whitespace one space and none at either end: the reference
    the compiled helper (_text.c) is tested against."""
    return " ".join(text.split())


# One pass in C where it was built: a python3.11-doc page's text took ~0.2-0.4 ms of split and
# join in the parse worker, ~0.05 ms in C (benchmarks/README.md, "Near the limit").
_collapse: Final[Callable[[str], str]] = python_collapse if _text is None else _text.collapse


def _links(tree: LexborHTMLParser) -> list[RawLink]:
    links: list[RawLink] = []
    for node in tree.css(_LINK_SELECTOR):
        tag = node.tag or ""
        # All of the node's attributes as one dict: a lookup per .get of ``node.attrs`` cost
        # ~18% of this loop on python3.11-doc (~200 links a page).
        attrs = node.attributes
        href = attrs.get("src" if tag in ("frame", "iframe") else "href")
        if href is None:
            continue
        stripped = href.strip()
        if not stripped or stripped.startswith("#"):
            continue
        rel = attrs.get("rel")
        nofollow = rel is not None and not _NOFOLLOW_RELS.isdisjoint(rel.lower().split())
        # What an index says a page is about from the pages that link to it (the feed's
        # outlinks): ~0.4 µs a link in lexbor.
        label = (attrs.get("alt") or "") if tag == "area" else node.text()
        anchor = _collapse(label)[:MAX_ANCHOR_CHARS] if label else ""
        links.append(RawLink(href, nofollow, tag, anchor))
    return links


def _requisites(tree: LexborHTMLParser) -> list[str]:
    """What the page embeds, raw, in document order, each once."""
    found: dict[str, None] = {}
    for node in tree.css(_REQUISITE_SELECTOR):
        tag, attrs = node.tag or "", node.attrs
        refs: list[str] = []
        if tag == "link":
            rels = (attrs.get("rel") or "").lower().split()
            if not _REQUISITE_RELS.isdisjoint(rels):
                refs.append(attrs.get("href") or "")
        elif tag == "style":
            refs += css_references(node.text(deep=True))
        else:
            refs += [value for name in _SOURCE_ATTRS if (value := attrs.get(name))]
            srcset = attrs.get("srcset")
            if srcset:  # "a.png 1x, b.png 2x": every candidate (a replay may pick any)
                refs += [part.split()[0] for part in srcset.split(",") if part.split()]
        style = attrs.get("style")
        if style and "url(" in style.lower():
            refs += css_references(style)
        for ref in refs:
            stripped = ref.strip()
            if stripped and not stripped.startswith(("#", "data:", "javascript:")):
                found.setdefault(stripped, None)
    return list(found)


def _lang(tree: LexborHTMLParser) -> str | None:
    root = tree.root
    declared = root.attrs.get("lang") if root is not None else None
    if not declared:
        return None
    lang = declared.strip().lower()
    return lang if 0 < len(lang) <= _MAX_LANG_CHARS else None


@dataclass(slots=True)
class _Head:
    base_href: str | None = None
    canonical: str | None = None
    directives: RobotsDirectives = NO_DIRECTIVES
    title: str | None = None


def _head(tree: LexborHTMLParser, product_token: str) -> _Head:
    """Read <base>, canonical, robots meta and <title> in one traversal.

    Document-wide rather than <head>-only: sloppy markup (or a <noscript> in <head>) moves
    these into <body>, and they still mean what they say.
    """
    found = _Head()
    meta_names = {"robots", product_token.strip().lower()}
    seen_title = False
    for node in tree.css(_HEAD_SELECTOR):
        tag, attrs = node.tag, node.attrs
        if tag == "base":
            # HTML Standard §4.2.3: only the first <base> with an href counts.
            if found.base_href is None:
                found.base_href = attrs.get("href") or ""
        elif tag == "link":
            rels = (attrs.get("rel") or "").lower().split()
            if found.canonical is None and "canonical" in rels:
                found.canonical = (attrs.get("href") or "").strip() or None
        elif tag == "meta":
            if (attrs.get("name") or "").strip().lower() in meta_names:
                content = parse_robots_meta(attrs.get("content") or "")
                found.directives = found.directives.merge(content)
        elif not seen_title:
            seen_title = True
            found.title = _collapse(node.text()) or None
    return found


def extract(
    body: bytes,
    *,
    base_url: str,
    content_type: str | None,
    product_token: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    requisites: bool = False,
    shell: bool = False,
) -> HtmlPage:
    """Parse ``body`` (the page fetched from ``base_url``) once and pull out what the crawl needs.

    Never raises on any ``body``: malformed markup, binary junk and bogus charsets all yield a
    (possibly empty) page. Only a lack of memory does (MemoryError).
    """
    html, charset = _decode(body[:max_bytes], content_type)
    # Scripting off, because we are a client without scripting: <noscript> fallback links are
    # what we can see. That can push head elements into <body>, so head lookups are document-wide.
    try:
        tree = LexborHTMLParser(_limit_nesting(html), scripting=False)
    except SelectolaxError:
        # lexbor's parse fails only when it cannot allocate (a process held to parse_memory_mb,
        # crawl/parse_jobs.py): said as what it is, so the worker is replaced.
        raise MemoryError("lexbor could not allocate the page's tree") from None
    links = _links(tree)
    embedded = _requisites(tree) if requisites else []  # (before <style> is stripped)
    head = _head(tree, product_token)
    page_base = base_url
    if head.base_href and head.base_href.strip():
        page_base = normalize(head.base_href.strip(), base_url) or base_url
    looks_like_shell = app_shell(tree) if shell else False  # (reads <script> and <noscript>)
    tree.strip_tags(_INVISIBLE_TAGS, recursive=True)
    body_node = tree.body
    text = _collapse(body_node.text(separator=" ")) if body_node is not None else ""
    return HtmlPage(
        base_url=page_base,
        links=links,
        canonical=head.canonical,
        directives=head.directives,
        title=head.title,
        text=text,
        charset=charset,
        lang=_lang(tree),
        requisites=embedded,
        app_shell=looks_like_shell,
    )

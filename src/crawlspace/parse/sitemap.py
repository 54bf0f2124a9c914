"""Sitemaps (https://www.sitemaps.org/protocol.html): bytes in, listed URLs out. Pure, streaming.

Formats: an XML ``<urlset>`` (pages) or ``<sitemapindex>`` (further sitemaps), optionally gzipped
(recognized by the gzip magic bytes, not by a file name or Content-Type, which servers get wrong),
or a plain-text sitemap (one URL per line).

Safety against untrusted XML: the document is fed to expat in chunks, and any document type
declaration is refused the moment expat reports it, before a single entity is declared. Without
a DTD there are no entities besides the five predefined ones, so neither an entity-expansion
bomb ("billion laughs") nor an external entity (XXE: a file or URL read by the parser) can do
anything; this is defusedxml's ``forbid_dtd`` policy, written against expat directly so the
parser needs no dependency. Decompression is incremental and stops at the protocol's size limit,
so a gzip bomb costs at most that many bytes of work.

Limits (sitemaps.org): at most 50,000 URLs and 50 MiB (52,428,800 bytes) uncompressed per file;
ours: at most 1,000 concatenated gzip members. A larger file is cut at the limit; what came before
is kept and the cut is reported in ``Sitemap.warnings``. Every failure is a
:class:`SitemapError`; nothing else escapes.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal
from xml.parsers import expat

from crawlspace.errors import CrawlspaceError

__all__ = [
    "CHANGEFREQS",
    "MAX_SITEMAP_BYTES",
    "MAX_SITEMAP_URLS",
    "Sitemap",
    "SitemapEntry",
    "SitemapError",
    "parse_sitemap",
]

MAX_SITEMAP_URLS = 50_000
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # "50MB (52,428,800 bytes)"
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 64 * 1024
# Concatenated gzip members read at most (real sitemaps have one; each costs a decoder).
MAX_GZIP_MEMBERS = 1000
_MAX_FIELD_CHARS = 4096  # a <loc> is at most 2,048 characters; anything longer is not a URL
# W3C Datetime (https://www.w3.org/TR/NOTE-datetime), the format sitemaps.org requires.
_W3C_DATETIME = re.compile(
    r"\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?"
)
_ENTRY_TAGS = {"url": "urlset", "sitemap": "sitemapindex"}
_FIELDS = frozenset({"loc", "lastmod", "changefreq", "priority"})

Kind = Literal["urlset", "sitemapindex", "text"]


class SitemapError(CrawlspaceError):
    """The body is not a sitemap we may read (not XML/text, unknown root, DTD, bad gzip)."""


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One ``<url>`` or ``<sitemap>``. Optional fields are None when absent or invalid."""

    loc: str
    lastmod: str | None = None
    changefreq: str | None = None
    priority: float | None = None


@dataclass(slots=True)
class Sitemap:
    """``kind`` says what ``entries`` are: pages (urlset, text) or sitemaps (sitemapindex)."""

    kind: Kind
    entries: list[SitemapEntry] = field(default_factory=list)
    # Counted anomalies: truncated_urls, truncated_bytes, malformed, bad_lastmod, ...
    warnings: Counter[str] = field(default_factory=Counter)

    @property
    def truncated(self) -> bool:
        return any(
            self.warnings[name]
            for name in ("truncated_urls", "truncated_bytes", "truncated_gzip_members")
        )


class _Stop(Exception):
    """Raised from a handler to end parsing early (URL limit reached)."""


def _chunks(body: bytes, max_bytes: int, warnings: Counter[str]) -> Iterator[bytes]:
    """The uncompressed body in pieces, at most ``max_bytes`` in total.

    gzip is detected by its magic bytes (RFC 1952 §2.3.1); concatenated members are read in turn.
    """
    left = max_bytes
    if not body.startswith(_GZIP_MAGIC):
        if len(body) > max_bytes:
            warnings["truncated_bytes"] += 1
        for start in range(0, min(len(body), max_bytes), _CHUNK):
            yield body[start : min(start + _CHUNK, max_bytes)]
        return
    view = memoryview(body)
    at = 0  # where the undecoded input starts
    for _member in range(MAX_GZIP_MEMBERS):
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            while not inflater.eof:
                # Input in slices: zlib copies whatever follows a member's end into
                # unused_data, so feeding the whole rest of the body would copy it once per
                # member, quadratic in a body made of many tiny members.
                piece_in = view[at : at + _CHUNK]
                # max_length bounds each step, so a bomb never inflates more than we asked for;
                # past the limit one more byte is asked for, to tell "cut" from "exactly full".
                piece = inflater.decompress(piece_in, max(1, min(_CHUNK, left)))
                at += len(piece_in) - len(inflater.unconsumed_tail) - len(inflater.unused_data)
                if piece:
                    if left <= 0:
                        warnings["truncated_bytes"] += 1
                        return
                    left -= len(piece)
                    yield piece
                elif not inflater.eof and at >= len(body):
                    warnings["truncated_gzip"] += 1  # the stream ends before its end marker
                    return
        except zlib.error as exc:
            raise SitemapError(f"invalid gzip data: {exc}") from None
        if not body.startswith(_GZIP_MAGIC, at):
            return  # the last member, perhaps with trailing garbage as gzip(1) tolerates
    warnings["truncated_gzip_members"] += 1


class _XmlReader:
    """expat callbacks building the entry list; DTDs are refused (see the module docstring)."""

    def __init__(self, max_urls: int, warnings: Counter[str]) -> None:
        self.max_urls = max_urls
        self.warnings = warnings
        self.kind: Kind | None = None
        self.entries: list[SitemapEntry] = []
        self._depth = 0
        self._entry: dict[str, str] | None = None
        self._field: str | None = None
        self._text: list[str] = []
        self._size = 0

    def parser(self) -> expat.XMLParserType:
        # Namespaces are split off (" " separator) and ignored: many sitemaps use a wrong or
        # no namespace, and extension elements (image:loc) are recognized by their depth.
        parser = expat.ParserCreate(namespace_separator=" ")
        parser.StartDoctypeDeclHandler = self._refuse_dtd
        parser.EntityDeclHandler = self._refuse_entity
        parser.ExternalEntityRefHandler = self._refuse_external
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._chars
        parser.buffer_text = True
        return parser

    def _refuse_dtd(self, name: str, *_: object) -> None:
        raise SitemapError(f"document type declaration <!DOCTYPE {name}> refused (no DTDs)")

    def _refuse_entity(self, name: str, *_: object) -> None:
        raise SitemapError(f"entity declaration {name!r} refused")

    def _refuse_external(self, *_: object) -> int:
        raise SitemapError("external entity reference refused")

    def _start(self, name: str, _attrs: dict[str, str]) -> None:
        local = name.rpartition(" ")[2]
        self._depth += 1
        if self._depth == 1:
            if local not in ("urlset", "sitemapindex"):
                raise SitemapError(f"root element <{local}> is neither <urlset> nor <sitemapindex>")
            self.kind = "urlset" if local == "urlset" else "sitemapindex"
        elif self._depth == 2 and _ENTRY_TAGS.get(local) == self.kind:
            self._entry = {}
        elif self._depth == 3 and self._entry is not None and local in _FIELDS:
            self._field, self._text, self._size = local, [], 0

    def _chars(self, data: str) -> None:
        if self._field is not None and self._size < _MAX_FIELD_CHARS:
            self._text.append(data)
            self._size += len(data)

    def _end(self, name: str) -> None:
        if self._depth == 3 and self._field is not None:
            assert self._entry is not None
            self._entry.setdefault(self._field, "".join(self._text).strip())
            self._field = None
        elif self._depth == 2 and self._entry is not None:
            entry = _entry_from(self._entry, self.warnings)
            self._entry = None
            if entry is not None:
                if len(self.entries) >= self.max_urls:
                    self.warnings["truncated_urls"] += 1
                    raise _Stop
                self.entries.append(entry)
        self._depth -= 1


def _entry_from(values: dict[str, str], warnings: Counter[str]) -> SitemapEntry | None:
    loc = values.get("loc", "")
    if not loc or len(loc) >= _MAX_FIELD_CHARS:
        warnings["missing_loc" if not loc else "bad_loc"] += 1
        return None
    lastmod = values.get("lastmod") or None
    if lastmod is not None and not _W3C_DATETIME.fullmatch(lastmod):
        warnings["bad_lastmod"] += 1
        lastmod = None
    changefreq = (values.get("changefreq") or "").lower() or None
    if changefreq is not None and changefreq not in CHANGEFREQS:
        warnings["bad_changefreq"] += 1
        changefreq = None
    priority: float | None = None
    if values.get("priority"):
        try:
            priority = float(values["priority"])
        except ValueError:
            priority = None
        if priority is None or not 0.0 <= priority <= 1.0:  # also rejects nan
            warnings["bad_priority"] += 1
            priority = None
    return SitemapEntry(loc, lastmod, changefreq, priority)


def _parse_xml(
    pieces: Iterator[bytes], first: bytes, max_urls: int, sitemap_warnings: Counter[str]
) -> Sitemap:
    reader = _XmlReader(max_urls, sitemap_warnings)
    parser = reader.parser()
    try:
        parser.Parse(first, False)
        for piece in pieces:
            parser.Parse(piece, False)
        if not sitemap_warnings["truncated_bytes"] and not sitemap_warnings["truncated_gzip"]:
            parser.Parse(b"", True)
    except _Stop:
        pass
    except expat.ExpatError as exc:
        if reader.kind is None:
            raise SitemapError(f"not well-formed XML: {exc}") from None
        # Keep what was read before the error, as for a cut file.
        sitemap_warnings["malformed"] += 1
    except RecursionError:  # pragma: no cover - expat does not recurse in Python
        raise SitemapError("document nested too deeply") from None
    if reader.kind is None:
        raise SitemapError("no root element")
    return Sitemap(reader.kind, reader.entries, sitemap_warnings)


def _parse_text(data: bytes, max_urls: int, warnings: Counter[str]) -> Sitemap:
    """sitemaps.org "Text file": UTF-8, one absolute http(s) URL per line, nothing else."""
    sitemap = Sitemap("text", warnings=warnings)
    for raw_line in data.decode("utf-8", "replace").splitlines():
        line = raw_line.strip()
        if not line:
            continue
        lowered = line[:8].lower()
        if not (lowered.startswith(("http://", "https://"))) or len(line) >= _MAX_FIELD_CHARS:
            warnings["bad_loc"] += 1
            continue
        if len(sitemap.entries) >= max_urls:
            warnings["truncated_urls"] += 1
            break
        sitemap.entries.append(SitemapEntry(line))
    if not sitemap.entries and warnings["bad_loc"]:
        raise SitemapError("neither XML nor a text sitemap (no line is an http(s) URL)")
    return sitemap


def parse_sitemap(
    body: bytes, *, max_urls: int = MAX_SITEMAP_URLS, max_bytes: int = MAX_SITEMAP_BYTES
) -> Sitemap:
    """Parse one sitemap file; raises only :class:`SitemapError`."""
    warnings: Counter[str] = Counter()
    pieces = _chunks(body, max_bytes, warnings)
    try:
        first = next(pieces, b"")
        # Peek past a BOM and whitespace: XML starts with "<", a text sitemap with a URL.
        head = first.lstrip(b"\xef\xbb\xbf \t\r\n")
        if not head and not first:
            raise SitemapError("empty sitemap")
        if head.startswith(b"<") or head[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return _parse_xml(pieces, first, max_urls, warnings)
        rest = b"".join(pieces)
        return _parse_text(first + rest, max_urls, warnings)
    except SitemapError:
        raise
    except (ValueError, UnicodeError, MemoryError) as exc:  # defensive: never leak another type
        raise SitemapError(f"unreadable sitemap: {exc}") from None

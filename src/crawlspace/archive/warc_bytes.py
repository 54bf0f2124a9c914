"""A page's WARC records written as bytes here, to the byte what warcio writes.

Why not warcio's writer, as for the rarer records (records.py: warcinfo, conversion): warcio is a
reader's library first. Importing any of it imports its readers (its package imports the
archive iterator, the record loader, six): ~20 ms of each parse worker's start, where only
records are built. Building a record pair through it also cost ~0.03-0.06 ms of Python a page
(header lists searched case-insensitively on every add, a digester object per digest, a buffer
per record), on every page (benchmarks/README.md, "Eleventh session"). The part a page needs is
small and fixed: WARC/1.1 named fields (§4), a block of the HTTP head and the payload (§6.3-6.5,
§6.7), two SHA-1 digests in base32.

tests/unit/test_warc_bytes.py holds every record built here to warcio's own bytes for the same
exchange (random heads, payloads, addresses, truncation, revisits) and reads them back with
warcio's ArchiveIterator. An HTTP head that is not ASCII is handed to warcio itself, which
percent-encodes it (RFC 8187): rare, and its rules are warcio's to keep.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Final, NamedTuple

__all__ = ["REVISIT_PROFILE", "HttpHead", "sha1_digest", "warc_record"]

REVISIT_PROFILE: Final = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
RESPONSE_TYPE: Final = "application/http; msgtype=response"
REQUEST_TYPE: Final = "application/http; msgtype=request"


class HttpHead(NamedTuple):
    """An HTTP message's start line and header fields, as the record's block begins."""

    protocol: str  # "HTTP/1.1" for a response; "" for a request (its line holds it)
    line: str  # "200 OK"; "GET /path HTTP/1.1"
    fields: list[tuple[str, str]]

    def block(self) -> bytes:
        """The head as the block's first bytes: the start line, the fields, a blank line."""
        text = self.protocol
        if text and self.line:
            text += " "
        text += self.line
        if text:
            text += "\r\n"
        text += "".join(f"{name}: {value}\r\n" for name, value in self.fields)
        try:
            return text.encode("ascii") + b"\r\n"
        except UnicodeEncodeError:
            return _percent_encoded(self)


def _percent_encoded(head: HttpHead) -> bytes:
    """A head with non-ASCII fields, as warcio writes it (it percent-encodes them)."""
    from warcio.statusandheaders import StatusAndHeaders

    fields = StatusAndHeaders(head.line, list(head.fields), protocol=head.protocol)
    fields.compute_headers_buffer()
    block: bytes = fields.headers_buff
    return block


def sha1_digest(*parts: bytes) -> str:
    """A WARC digest of ``parts`` one after another: ``sha1:`` and the digest in base32."""
    digest = hashlib.sha1()
    for part in parts:
        digest.update(part)
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")


EMPTY_SHA1: Final = sha1_digest()


def warc_record(fields: list[tuple[str, str]], head: bytes, payload: bytes = b"") -> bytes:
    """One uncompressed record: ``WARC/1.1``, the named ``fields`` in order (the caller's, with
    its digests, Content-Type and Content-Length), a blank line, the block (``head`` and
    ``payload``), and the two line ends that close a record (WARC 1.1 §4)."""
    text = "WARC/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields) + "\r\n"
    return b"".join((text.encode("utf-8"), head, payload, b"\r\n\r\n"))

"""A response body as it arrives, held to the caps: every transport reads bodies through this.

Library-neutral: a transport feeds it the wire bytes (de-chunked, still content-encoded) in
whatever pieces its client delivers, and stops reading when ``feed`` says so. The raw bytes are
kept up to ``max_raw`` (the WARC's payload); the decoded bytes are produced piece by piece as
they arrive (decoding.py) and abandoned at ``max_decoded``, so a gzip bomb never grows past the
cap in memory.
"""

from __future__ import annotations

from crawlspace.fetch.decoding import DecodeError, Decoder, decoder_for
from crawlspace.fetch.transport import TruncatedReason

__all__ = ["BodyReader", "ReadBody"]

# (raw, decoded, truncated_reason, decode_error)
ReadBody = tuple[bytes, bytes, TruncatedReason | None, str | None]


class BodyReader:
    """One response's body: ``feed`` each piece, then ``result``."""

    __slots__ = (
        "_decoded",
        "_decoder",
        "_max_decoded",
        "_max_raw",
        "_raw",
        "decode_error",
        "truncated",
    )

    def __init__(self, content_encoding: str, max_raw: int, max_decoded: int) -> None:
        self._max_raw = max_raw
        self._max_decoded = max_decoded
        self._raw = bytearray()
        self._decoded = bytearray()
        self.truncated: TruncatedReason | None = None
        self.decode_error: str | None = None
        self._decoder: Decoder | None = None
        try:
            self._decoder = decoder_for(content_encoding)
        except DecodeError as exc:
            self.decode_error = str(exc)

    def feed(self, chunk: bytes) -> bool:
        """Take the next piece of the body; False once a cap is reached (read no more: the rest
        of the body is abandoned, so its connection cannot be reused)."""
        room = self._max_raw - len(self._raw)
        data = chunk
        if len(chunk) > room:
            data, self.truncated = chunk[:room], "max_body_bytes"
        self._raw += data
        decoder = self._decoder
        if decoder is not None and self.decode_error is None:
            try:
                for piece in decoder.feed(data):
                    self._decoded += piece
                    if len(self._decoded) > self._max_decoded:
                        del self._decoded[self._max_decoded :]
                        self.truncated = "max_decompressed_bytes"
                        break
            except DecodeError as exc:
                self.decode_error = str(exc)
        return self.truncated is None

    def result(self) -> ReadBody:
        """(raw, decoded, truncated_reason, decode_error). The decoded body is the raw one when
        there is no coding, or when nothing decoded cleanly (servers do label plain bodies as
        gzip): the capture is never lost."""
        wire = bytes(self._raw)
        decoder, truncated, decode_error = self._decoder, self.truncated, self.decode_error
        if decoder is None:
            return wire, wire, truncated, decode_error
        if decode_error is None and truncated is None and wire and not decoder.finished():
            decode_error = "encoded body ends before the end of its compressed stream"
        if decode_error is not None and not self._decoded:
            return wire, wire, truncated, decode_error
        return wire, bytes(self._decoded), truncated, decode_error

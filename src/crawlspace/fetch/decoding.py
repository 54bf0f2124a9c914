"""Content decoding with caps: gzip (multi-member), deflate and brotli, decoded piece by piece so
a bomb is abandoned at the cap, and stacked codings bounded. Library-neutral (no aiohttp)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Final, Protocol

import brotli

_PIECE: Final = 64 * 1024  # largest decoded piece held before the cap is checked
_GZIP_OR_ZLIB: Final = 32 + zlib.MAX_WBITS  # auto-detects the header; some "gzip" is zlib
# Untrusted headers and bodies: real servers stack at most two codings and rarely send more than
# one gzip member, while each extra coding is a decoder and each member copies what follows it.
_MAX_CODINGS: Final = 3
_MAX_GZIP_MEMBERS: Final = 1000


class DecodeError(Exception):
    pass


class Decoder(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...

    def finished(self) -> bool: ...


class _ZlibDecoder:
    """gzip (possibly multi-member) or deflate, emitting at most _PIECE bytes at a time."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._pending = b""
        self._d: zlib._Decompress | None = None
        if gzip:
            self._d = zlib.decompressobj(_GZIP_OR_ZLIB)
        self._members = 1
        # Once a member has ended: the bytes after it that cannot tell yet whether another
        # member follows (None while inside a member); True once they are trailing garbage.
        self._between: bytes | None = None
        self._trailing = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._d is None:
            # HTTP "deflate" should be zlib-wrapped (RFC 9110 §8.4.1.2) but some servers send raw
            # deflate; a zlib header is 2 bytes whose big-endian value is a multiple of 31.
            self._pending += data
            if len(self._pending) < 2:
                return
            data, self._pending = self._pending, b""
            zlib_wrapped = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._d = zlib.decompressobj(zlib.MAX_WBITS if zlib_wrapped else -zlib.MAX_WBITS)
        try:
            yield from self._drain(self._d, data)
        except zlib.error as exc:
            raise DecodeError(f"corrupt {'gzip' if self._gzip else 'deflate'} body: {exc}") from exc

    def _drain(self, d: zlib._Decompress, data: bytes) -> Iterator[bytes]:
        while True:
            if d.eof:
                # Concatenated gzip members decode as one body; other trailing bytes are ignored.
                # A member may end exactly at a chunk's end, or one byte into the next magic,
                # so what follows it is decided on the bytes left over plus those just arrived.
                if self._between is None:
                    self._between = d.unused_data
                rest, self._between = self._between + data, b""
                if not self._gzip or self._trailing:
                    return
                if len(rest) < 2 and b"\x1f\x8b".startswith(rest):
                    self._between = rest
                    return
                if not rest.startswith(b"\x1f\x8b"):
                    self._trailing = True
                    return
                self._members += 1
                if self._members > _MAX_GZIP_MEMBERS:
                    raise DecodeError(f"more than {_MAX_GZIP_MEMBERS} gzip members")
                self._d = d = zlib.decompressobj(_GZIP_OR_ZLIB)
                self._between = None
                data = rest
            out = d.decompress(data, _PIECE)
            data = d.unconsumed_tail
            if out:
                yield out
            # A full piece may leave output buffered inside zlib even with no input left.
            if not data and len(out) < _PIECE and not d.eof:
                return

    def finished(self) -> bool:
        return self._d is not None and self._d.eof


class _BrotliDecoder:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            out: bytes = self._d.process(data, output_buffer_limit=_PIECE)
            while True:
                if out:
                    yield out
                # brotli >= 1.2: with a limit, pending output comes out on empty-input calls.
                if not out or self._d.can_accept_more_data():
                    return
                out = self._d.process(b"", output_buffer_limit=_PIECE)
        except brotli.error as exc:
            raise DecodeError(f"corrupt brotli body: {exc}") from exc

    def finished(self) -> bool:
        return bool(self._d.is_finished())


class _ChainDecoder:
    """``Content-Encoding: gzip, br`` means gzip applied first, so decode br then gzip."""

    def __init__(self, decoders: Sequence[Decoder]) -> None:
        self._decoders = decoders

    def feed(self, data: bytes) -> Iterator[bytes]:
        return self._through(0, data)

    def _through(self, index: int, data: bytes) -> Iterator[bytes]:
        if index == len(self._decoders):
            yield data
            return
        for piece in self._decoders[index].feed(data):
            yield from self._through(index + 1, piece)

    def finished(self) -> bool:
        return all(d.finished() for d in self._decoders)


def decoder_for(content_encoding: str) -> Decoder | None:
    """None for identity; raises DecodeError for codings we never asked for."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if len(codings) > _MAX_CODINGS:
        raise DecodeError(f"{len(codings)} content codings stacked (at most {_MAX_CODINGS})")
    decoders: list[Decoder] = []
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            decoders.append(_ZlibDecoder(gzip=True))
        elif coding == "deflate":
            decoders.append(_ZlibDecoder(gzip=False))
        elif coding == "br":
            decoders.append(_BrotliDecoder())
        else:
            raise DecodeError(f"unsupported content-encoding {coding!r}")
    if not decoders:
        return None
    return decoders[0] if len(decoders) == 1 else _ChainDecoder(decoders)

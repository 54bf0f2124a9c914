"""Which payloads this crawl process archived lately, so a repeat is written as a revisit record.

A body served again, under another URL (mirrors, a page at two addresses) or the same one
(a revisit of a page without validators), would be stored again in full. WARC's
identical-payload-digest profile stores it once: the repeat's record is a ``revisit`` that names
the earlier capture by its URL and date (WARC 1.1 §6.7.2), and replay tools (pywb) serve the
earlier record's payload for it.

The crawl loop looks a payload up by XXH3-128 (~2 µs for a 100 KB page, against ~65 µs for the
SHA-1 the WARC digest is): it only chooses which record to build. XXH3 is no cryptographic hash
and a hostile page could be made to collide with another, so whoever builds the record (a parse
worker, the WARC thread) checks the payload's own WARC-Payload-Digest against the capture's
before writing a revisit (records.py ``RecordBuilder.capture``), and writes the full response if
they differ.

Only payloads this crawl wrote are remembered, so the earlier record is always in this
crawl's WARC files (written before the commit of its own visit, it survives a crash of that
visit too). A resumed crawl reloads the last ones from its fetch rows (``reload``), which keep
each full capture's key and payload digest. The memory is bounded: the ``size`` payloads
used most lately (~350 bytes each); a repeat older than that is written in full, as before.
Small payloads are always written in full: a revisit record's headers cost about what they
would save.

Workers of a shared frontier also remember what the others archived (``share``, ``fresh``,
``learn``; the exchange is crawl/capture_sharing.py's): a revisit of another worker's capture
names it by URL and date like any other, and its record is in that worker's WARC files.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import xxhash

from crawlspace.archive.records import EarlierCapture
from crawlspace.archive.warc import WarcLocation
from crawlspace.records import StoredCapture

__all__ = ["MIN_PAYLOAD_BYTES", "Capture", "Captures", "Lookup"]

MIN_PAYLOAD_BYTES: Final = 1024


@dataclass(frozen=True, slots=True)
class Capture:
    """An archived response: its URL, the time its record is dated with, and where it is."""

    url: str
    fetched_at: float
    location: WarcLocation


@dataclass(frozen=True, slots=True)
class Lookup:
    """A payload looked up: its key (None: never a revisit) and the capture it may repeat."""

    key: str | None
    earlier: Capture | None = None

    def earlier_capture(self) -> EarlierCapture | None:
        """What a revisit of the earlier capture names (None: write the response in full)."""
        found = self.earlier
        if found is None or found.location.payload_digest is None:
            return None
        return EarlierCapture(found.location.payload_digest, found.url, found.fetched_at)


NOT_LOOKED_UP: Final = Lookup(None)


class Captures:
    """The ``size`` most recently archived payloads (0: none kept)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._by_key: OrderedDict[str, Capture] = OrderedDict()
        # Payloads written in full since ``fresh`` was last asked, for other workers (None:
        # not shared).
        self._fresh: list[StoredCapture] | None = None

    def share(self) -> None:
        """Keep what this process archives for ``fresh`` from now on."""
        if self._fresh is None:
            self._fresh = []

    def fresh(self) -> list[StoredCapture]:
        """The payloads written in full since the last call (at most ``size``), oldest first."""
        if self._fresh is None:
            return []
        fresh, self._fresh = self._fresh, []
        return fresh

    def learn(self, captures: Iterable[StoredCapture]) -> None:
        """Remember other processes' captures (oldest first), except payloads this one holds
        already: its own record of them is the one it can read back (crawl/visit.py)."""
        for capture in captures:
            if capture.key not in self._by_key:
                self._keep(capture.key, _from_stored(capture))

    def lookup(self, payload: bytes, *, cut: bool = False) -> Lookup:
        """``payload``'s key and the capture it may repeat. A body cut short (``cut``) or
        smaller than MIN_PAYLOAD_BYTES is always written in full."""
        if not self.size or cut or len(payload) < MIN_PAYLOAD_BYTES:
            return NOT_LOOKED_UP
        key = xxhash.xxh3_128_hexdigest(payload)
        found = self._by_key.get(key)
        if found is not None:
            self._by_key.move_to_end(key)
        return Lookup(key, found)

    def reload(self, stored: Iterable[StoredCapture]) -> None:
        """Remember the payloads a crawl's records hold in full (oldest first), so a resumed
        crawl writes a repeat of them as a revisit too. Their records are in this crawl's WARC
        files, written before the visits that stored them were committed."""
        for capture in stored:
            self._keep(capture.key, _from_stored(capture))

    def remember(self, lookup: Lookup, capture: Capture) -> None:
        """Remember a payload written in full at ``capture``."""
        if lookup.key is None:
            return
        self._keep(lookup.key, capture)
        location = capture.location
        if self._fresh is not None and location.payload_digest is not None:
            self._fresh.append(
                StoredCapture(
                    lookup.key,
                    capture.url,
                    capture.fetched_at,
                    location.file,
                    location.offset,
                    location.length,
                    location.payload_digest,
                )
            )
            if len(self._fresh) > self.size:  # not asked for a while: the newest are kept
                del self._fresh[0]

    def _keep(self, key: str, capture: Capture) -> None:
        self._by_key[key] = capture
        self._by_key.move_to_end(key)
        if len(self._by_key) > self.size:
            self._by_key.popitem(last=False)


def _from_stored(capture: StoredCapture) -> Capture:
    location = WarcLocation(
        capture.warc_file,  # "" for another process's record: not in this one's files
        capture.warc_offset,
        capture.warc_length,
        None,  # (a revisit's fetch row then hashes its own body)
        capture.payload_digest,
        capture.key,
    )
    return Capture(capture.url, capture.fetched_at, location)

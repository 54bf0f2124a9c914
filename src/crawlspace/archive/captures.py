"""Which payloads this crawl process archived lately, so a repeat is written as a revisit record.

A body served again, under another URL (mirrors, a page at two addresses) or the same one
(a revisit of a page without validators), would be stored again in full. WARC's
identical-payload-digest profile stores it once: the repeat's record is a ``revisit`` that names
the earlier capture by its URL and date (WARC 1.1 §6.7.2), and replay tools (pywb) serve the
earlier record's payload for it.

Only payloads this process wrote are remembered, so the earlier record is always in this
crawl's WARC files (written before the commit of its own visit, it survives a crash of that
visit too). The memory is bounded: the ``size`` payloads used most lately (~350 bytes each);
a repeat older than that is written in full, as before. Small payloads are always written in
full: a revisit record's headers cost about what they would save.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from crawlspace.archive.warc import WarcLocation

__all__ = ["MIN_PAYLOAD_BYTES", "Capture", "Captures"]

MIN_PAYLOAD_BYTES: Final = 1024


@dataclass(frozen=True, slots=True)
class Capture:
    """An archived response: its URL, the time its record is dated with, and where it is."""

    url: str
    fetched_at: float
    location: WarcLocation


class Captures:
    """The ``size`` most recently archived payloads, by WARC-Payload-Digest (0: none kept)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._by_digest: OrderedDict[str, Capture] = OrderedDict()

    def earlier(self, digest: str | None, payload_bytes: int) -> Capture | None:
        """The capture a payload of ``digest`` repeats, or None: write it in full."""
        if digest is None or payload_bytes < MIN_PAYLOAD_BYTES or not self.size:
            return None
        found = self._by_digest.get(digest)
        if found is not None:
            self._by_digest.move_to_end(digest)
        return found

    def remember(self, digest: str | None, payload_bytes: int, capture: Capture) -> None:
        """Remember a payload written in full at ``capture``."""
        if digest is None or payload_bytes < MIN_PAYLOAD_BYTES or not self.size:
            return
        self._by_digest[digest] = capture
        self._by_digest.move_to_end(digest)
        if len(self._by_digest) > self.size:
            self._by_digest.popitem(last=False)

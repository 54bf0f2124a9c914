"""The payloads every worker of a shared frontier archived lately, so a worker writes a payload
another worker archived as a revisit record too (archive/captures.py; WARC 1.1 §6.7.2).

One Redis stream, ``{ns}:captures``, capped near the crawl's ``warc_revisit_window``: each
worker adds the payloads it wrote in full (``publish``, batched about once a second) and reads
the others' (``read``, from where it last stopped). Nothing here is on a page's path: a worker
looks payloads up in its own memory, which this exchange keeps filled, so a repeat within the
second after another worker's capture may still be written in full, as one older than the
window is. A revisit names its earlier capture by URL and date (as Heritrix's deduplication
does), so replay tools find it in the other worker's WARC files of the same collection.

Each entry is written after its capture's record reached the worker's WARC file (a worker that
dies first publishes nothing), so a revisit never names a capture that was not written.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from crawlspace.records import StoredCapture

if TYPE_CHECKING:
    from crawlspace.store.redis.frontier import RedisFrontier

__all__ = ["RedisCaptureLog"]

# Entries read per round trip.
READ_BATCH: Final = 1000


class RedisCaptureLog:
    """The crawl's capture stream, capped at about ``entries`` entries (Redis trims whole
    nodes of the stream, so it may keep a few more)."""

    def __init__(self, frontier: RedisFrontier, entries: int) -> None:
        self._f = frontier
        self.entries = entries
        self.key = f"{frontier.namespace}:captures"

    def publish(self, captures: Sequence[StoredCapture]) -> None:
        """Add ``captures`` (payloads this worker archived in full), in one round trip."""
        if not captures:
            return
        client, key = self._f.client, self.key

        def add() -> None:
            pipe = client.pipeline(transaction=False)
            for capture in captures:
                fields = {
                    "k": capture.key,
                    "u": capture.url,
                    "t": repr(capture.fetched_at),
                    "d": capture.payload_digest,
                }
                pipe.xadd(key, fields, maxlen=self.entries, approximate=True)
            pipe.execute()

        self._f.retrying(add)

    def read(self, after: str | None, limit: int) -> tuple[list[StoredCapture], str | None]:
        """The captures added after entry ``after`` (None: all the stream holds), at most
        ``limit`` of them, oldest first; and the entry to read on from next time."""
        client, key = self._f.client, self.key
        captures: list[StoredCapture] = []
        while len(captures) < limit:
            start = "-" if after is None else f"({after}"
            count = min(READ_BATCH, limit - len(captures))
            entries: list[Any] = self._f.retrying(
                functools.partial(client.xrange, key, min=start, count=count)
            )
            for entry_id, fields in entries:  # (strings: the client decodes responses)
                # Another worker's record: its location means nothing in this one's directory.
                captures.append(
                    StoredCapture(
                        fields["k"], fields["u"], float(fields["t"]), "", 0, 0, fields["d"]
                    )
                )
                after = entry_id
            if len(entries) < count:
                break
        return captures, after

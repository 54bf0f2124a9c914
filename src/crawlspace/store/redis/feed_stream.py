"""The shared frontier's index feed: one Redis stream per bucket (``{ns:bN}:feed``), each record
added by the completion's own write (lua/complete.lua), so every worker's pages reach it once.

A consumer reads it through a consumer group: ``read`` hands out a batch, ``ack`` acknowledges
it once the consumer has committed it. Redis keeps what was handed out and not acknowledged
(the group's pending entries): a consumer that dies is given them again when it starts, before
anything new (at-least-once; the feed's versions make a record applied twice harmless).
Each stream is capped (``RedisFrontier.feed_maxlen``): a consumer that falls further behind
than the cap loses the oldest records here, and finds them in the workers' own feeds.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crawlspace.feed_codec import unpack
from crawlspace.store.redis.frontier import RedisFrontier

__all__ = ["GROUP", "FeedEntryRead", "FeedStream"]

GROUP = "crawlspace-index"


@dataclass(frozen=True, slots=True)
class FeedEntryRead:
    bucket: int
    entry_id: str
    record: dict[str, Any]


class FeedStream:
    """Reads the feed streams of ``frontier`` as ``consumer`` of consumer group ``group``."""

    def __init__(self, frontier: RedisFrontier, *, group: str = GROUP, consumer: str = "1"):
        self.frontier = frontier
        self.group = group
        self.consumer = consumer
        # Buckets whose entries handed to this consumer before (a previous life) may be
        # unacknowledged: read those first ('0'), then only new ones ('>').
        self._pending = set(range(frontier.buckets))
        self._ensure_groups()

    def _key(self, bucket: int) -> str:
        return self.frontier.key_prefix(bucket) + "feed"

    def _ensure_groups(self) -> None:
        def create() -> list[Any]:
            pipe = self.frontier.client.pipeline(transaction=False)
            for bucket in range(self.frontier.buckets):
                pipe.xgroup_create(self._key(bucket), self.group, id="0", mkstream=True)
            return list(pipe.execute(raise_on_error=False))

        for answer in self.frontier.retrying(create):
            if isinstance(answer, Exception) and "BUSYGROUP" not in str(answer):
                raise answer

    def read(self, count: int) -> list[FeedEntryRead]:
        """The next entries, at most ``count`` from each bucket, unacknowledged ones first
        (empty: nothing new)."""
        checking = bool(self._pending)
        found = self._read(count)
        if not found and checking:  # no backlog left: what is new, then
            found = self._read(count)
        return found

    def _read(self, count: int) -> list[FeedEntryRead]:
        buckets = list(range(self.frontier.buckets))

        def fetch() -> list[Any]:
            pipe = self.frontier.client.pipeline(transaction=False)
            for bucket in buckets:
                start = "0" if bucket in self._pending else ">"
                pipe.xreadgroup(self.group, self.consumer, {self._key(bucket): start}, count=count)
            return list(pipe.execute())

        found: list[FeedEntryRead] = []
        trimmed: list[FeedEntryRead] = []
        for bucket, answer in zip(buckets, self.frontier.retrying(fetch), strict=True):
            entries = answer[0][1] if answer else []
            if bucket in self._pending and len(entries) < count:
                self._pending.discard(bucket)  # its backlog is all in hand now
            for entry_id, fields in entries:
                if fields:
                    found.append(FeedEntryRead(bucket, entry_id, _record(fields)))
                else:  # trimmed while pending: gone, acknowledged so it is not handed out again
                    trimmed.append(FeedEntryRead(bucket, entry_id, {}))
        self.ack(trimmed)
        return found

    def ack(self, entries: Sequence[FeedEntryRead]) -> None:
        """Acknowledge ``entries`` (once the consumer has committed them)."""
        by_bucket: dict[int, list[str]] = {}
        for entry in entries:
            by_bucket.setdefault(entry.bucket, []).append(entry.entry_id)

        def send() -> None:
            pipe = self.frontier.client.pipeline(transaction=False)
            for bucket, ids in by_bucket.items():
                pipe.xack(self._key(bucket), self.group, *ids)
            pipe.execute()

        if by_bucket:
            self.frontier.retrying(send)


def _record(fields: dict[str, str]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(fields["meta"])
    document = fields.get("document")
    if document:
        record.update(unpack(base64.b64decode(document)))
    return record

"""Host notes a worker has put but not yet written: they ride along with its next round trip.

What a visit learns about its host (crawl/host_rules.py: a URL family's window after each first
visit, a new verdict) would otherwise be one more round trip per page. Notes are evidence whose
updates are unlocked anyway (two workers counting from the same base lose one count, which only
delays a conclusion), so a write may wait: it goes out with the worker's next call that runs a
script (scripts.py ``Rider``), with the host's next completion notes, on its own when many are
pending, and at close. The worker that put a note reads it back at once (``overlay``); a kill -9
loses at most a moment of evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from crawlspace.store.redis.scripts import ScriptRunner

FLUSH_AT: Final = 64  # pending notes that make a put write them all at once


class PendingNotes:
    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, str]] = {}
        self._count = 0

    def put(self, key: str, name: str, text: str) -> bool:
        """Keep the note; True when enough are pending to write them now."""
        notes = self._by_key.setdefault(key, {})
        if name not in notes:
            self._count += 1
        notes[name] = text
        return self._count >= FLUSH_AT

    def overlay(self, key: str, names: list[str], found: dict[str, str]) -> dict[str, str]:
        """``found`` (read from Redis) with this worker's pending notes of ``names`` on top."""
        pending = self._by_key.get(key)
        if pending:
            found.update((name, pending[name]) for name in names if name in pending)
        return found

    def take(self, key: str) -> dict[str, str]:
        """The key's pending notes, no longer pending (written by the caller)."""
        notes = self._by_key.pop(key, {})
        self._count -= len(notes)
        return notes

    def __bool__(self) -> bool:
        return bool(self._by_key)

    def items(self) -> list[tuple[str, dict[str, str]]]:
        """Every pending note by key (still pending until ``clear``)."""
        return list(self._by_key.items())

    def clear(self) -> None:
        self._by_key, self._count = {}, 0


class RedisHostNotes:
    """``host_notes`` and ``put_host_note`` of ``crawlspace.store.base.Frontier``: a hash per
    host in its bucket's slot. A part of ``RedisFrontier`` (frontier.py), which writes the
    host's pending notes with its completions."""

    def __init__(self, scripts: ScriptRunner) -> None:
        self._scripts = scripts
        self.pending = PendingNotes()  # host notes put, written with the next round trip
        scripts.riders.append(self)

    def key(self, host_key: str) -> str:
        """The host's notes hash."""
        return f"{self._scripts.key_prefix(self._scripts.bucket(host_key))}n:{host_key}"

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        if not names:
            return {}
        key = self.key(host_key)
        asked = list(names)
        client = self._scripts.client
        texts = self._scripts.retrying(lambda: client.hmget(key, asked))
        found = {name: text for name, text in zip(asked, texts, strict=True) if text is not None}
        return self.pending.overlay(key, asked, found)

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        if self.pending.put(self.key(host_key), name, text):
            self.flush()

    def flush(self) -> None:
        """Write every pending host note now, one pipeline for all."""
        if self.pending:
            self._scripts.round_trip(lambda pipe: None)

    # -- as a Rider (scripts.py) ---------------------------------------------------------------

    def waiting(self) -> bool:
        return bool(self.pending)

    def queue_waiting(self, pipe: Any) -> int:
        pending = self.pending.items()
        for key, notes in pending:
            pipe.hset(key, mapping=notes)
        return len(pending)

    def sent(self) -> None:
        self.pending.clear()

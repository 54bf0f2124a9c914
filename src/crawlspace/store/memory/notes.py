"""Host notes in memory (store/base.py ``Frontier.host_notes``): what crawl policy learns about a
host, kept as text by name. Shared by the memory engine; durable engines keep them in their
own storage."""

from __future__ import annotations

from collections.abc import Sequence


class HostNotesInMemory:
    notes: dict[str, dict[str, str]]  # host key -> name -> text, set by the engine's __init__

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        kept = self.notes.get(host_key, {})
        return {name: kept[name] for name in names if name in kept}

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        self.notes.setdefault(host_key, {})[name] = text

"""Host notes in memory (store/base.py ``Frontier.host_notes``): what crawl policy learns about a
host, kept as text by name, host key -> name -> text. The memory engine's; durable engines keep
them in their own storage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["host_notes"]


def host_notes(
    notes: Mapping[str, Mapping[str, str]], host_key: str, names: Sequence[str]
) -> dict[str, str]:
    """Those of the host's notes ``names`` that exist."""
    kept = notes.get(host_key, {})
    return {name: kept[name] for name in names if name in kept}

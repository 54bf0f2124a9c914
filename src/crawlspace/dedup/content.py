"""The in-memory ContentIndex (frontier/duplicates.py): exact claims in a dict, near duplicates
in a ``NearDuplicateIndex``. The reference the shared one (store/redis/content.py) is held to."""

from __future__ import annotations

from crawlspace.dedup.near_index import NearDuplicateIndex

__all__ = ["MemoryContentIndex"]


class MemoryContentIndex:
    def __init__(self, k: int = 3, max_entries: int | None = None) -> None:
        self._claims: dict[str, int] = {}
        self._near = NearDuplicateIndex(k, max_entries)
        self._owners: dict[int, int] = {}  # owner -> its cluster, as stored

    def claim_text(self, text_sha256: str, owner: int) -> int | None:
        first = self._claims.setdefault(text_sha256, owner)
        return None if first == owner else first

    def near(self, simhash: int, owner: int) -> int | None:
        if owner in self._owners:  # this page's own earlier try: judged then
            cluster = self._owners[owner]
            return None if cluster == owner else cluster
        match = self._near.find(simhash)
        cluster = owner if match is None else match[0]
        self._near.add(simhash, cluster)
        self._owners[owner] = cluster
        return None if match is None else cluster

"""Content dedup on a shared frontier: ``frontier/duplicates.py``'s ContentIndex in Redis, so
workers find the duplicates of pages other workers fetched. Owners are URL ids (global).

Exact: ``{ns:tN}:text`` hashes (text sha256 -> URL id of the first claimant), N = crc32 of the
hash modulo the frontier's buckets, so claims spread over the cluster's slots. A claim is one
``HSETNX``; the value never changes afterwards, so reading it back needs no script.

Near (Manku, Jain, Das Sarma, WWW 2007, §3): the k+1 block tables of ``dedup/near_index.py``,
one Redis set per (block, value), ``{ns:nN}:nd:<scheme>:<block>:<value>``, each member
"<fingerprint hex>:<cluster url id>:<url id>". The simhash scheme (dedup/simhash.py) is in the
key: fingerprints of another recipe, written by an older version of a worker, are never compared
with this one's. Two fingerprints within k bits agree on a whole
block, so a query reads k+1 sets (one pipelined round trip) and compares their members here; the
new fingerprint is then added to the same k+1 sets. Two near duplicates fetched at the same
moment by two workers may both start a cluster: the verdict is a heuristic that lowers
priority, never one that hides a page. ``max_entries`` bounds the fingerprints stored crawl-wide
(``{ns}:counters`` ``dedup.near_entries``), as ``near_duplicate_max_pages`` does in one process.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from crawlspace.dedup.near_index import blocks
from crawlspace.dedup.simhash import SCHEME as SIMHASH_SCHEME

if TYPE_CHECKING:
    from crawlspace.store.redis.frontier import RedisFrontier

__all__ = ["RedisContentIndex"]


class RedisContentIndex:
    def __init__(self, frontier: RedisFrontier, k: int, max_entries: int | None) -> None:
        self._f = frontier
        self.k = k
        self.max_entries = max_entries
        self._blocks = blocks(k)
        self._counters = f"{frontier.namespace}:counters"

    def _tag(self, kind: str, text: str) -> str:
        slot = zlib.crc32(text.encode()) % self._f.buckets
        return f"{{{self._f.namespace}:{kind}{slot}}}"

    def claim_text(self, text_sha256: str, owner: int) -> int | None:
        key = self._tag("t", text_sha256) + ":text"

        def claim() -> Any:
            # The claim and its read back in one round trip: the value is ours or the first's.
            pipe = self._f.client.pipeline(transaction=False)
            pipe.hsetnx(key, text_sha256, owner)
            pipe.hget(key, text_sha256)
            return pipe.execute()[1]

        first = int(self._f.retrying(claim))
        return None if first == owner else first

    def near(self, simhash: int, owner: int) -> int | None:
        keys = []
        for i, (shift, mask) in enumerate(self._blocks):
            value = f"{i}:{(simhash >> shift) & mask:x}"
            keys.append(f"{self._tag('n', value)}:nd:{SIMHASH_SCHEME}:{value}")
        best: tuple[int, int] | None = None  # (distance, cluster)
        for members in self._read(keys):
            for member in members:
                fp_hex, cluster_text, url_id = member.split(":")
                if int(url_id) == owner:
                    continue  # this URL's own earlier try (its completion was refused)
                d = (int(fp_hex, 16) ^ simhash).bit_count()
                if d <= self.k and (best is None or (d, int(cluster_text)) < best):
                    best = (d, int(cluster_text))
        cluster = owner if best is None else best[1]
        self._store(keys, f"{simhash:x}:{cluster}:{owner}")
        # A page whose cluster is its own (its earlier try started it) is no duplicate.
        return None if cluster == owner else cluster

    def _read(self, keys: list[str]) -> list[set[str]]:
        def read() -> list[set[str]]:
            pipe = self._f.client.pipeline(transaction=False)
            for key in keys:
                pipe.smembers(key)
            return list(pipe.execute())

        return self._f.retrying(read)

    def _store(self, keys: list[str], member: str) -> None:
        client = self._f.client
        if self.max_entries is not None:
            stored = self._f.retrying(
                lambda: client.hincrby(self._counters, "dedup.near_entries", 1)
            )
            if int(stored) > self.max_entries:
                self._f.retrying(lambda: client.hincrby(self._counters, "dedup.near_index_full", 1))
                return

        def write() -> None:
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.sadd(key, member)
            pipe.execute()

        self._f.retrying(write)

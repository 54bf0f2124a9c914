"""A replication barrier for the Redis Cluster frontier: ``WAIT`` on the shards that took links.

A page's discovered links are added to their own buckets, usually on other shards, *before* the
page's completing write on its own shard (store/redis/frontier.py). Replication is asynchronous,
so without a barrier a failover of a link's shard could lose an acknowledged ``add`` while the
parent's completion survives on its own shard: the link would be lost for good. ``WAIT
numreplicas timeout`` blocks until replicas acknowledged every write made *on that connection*
before it (https://redis.io/commands/wait/), so each shard gets a small write followed by
``WAIT`` on the same connection: the write moves the connection's replication
offset past every earlier write of that master by any client, since a master's replication stream
is one ordered log, and so past the links whichever connection added them.

The parent's own shard needs no barrier: its completion is written after the links there, and a
replica that has the completion has everything its master wrote before. A single Redis (no
cluster) keeps everything on one master, so it never needs one either.

Each master is asked for at most ``min(replicas, its connected replicas)`` acknowledgements; its
replicas are counted with ``ROLE`` every few seconds rather than taken from the client's slot map,
which learns about a replica only when it reloads the topology. A master with no replica (one
just promoted by a failover, say) gets no WAIT: it would only sit out its timeout.

Best effort by design: replicas that do not acknowledge within the timeout (lagging, down, or a
failover under way) delay the completion by at most that long and are reported as a shortfall;
the completion then proceeds (the frontier counts it as ``wait.short``), so a bad replica slows
the crawl down but never stops it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import redis
from redis.cluster import RedisCluster

log = logging.getLogger(__name__)

# The field the barrier increments in a bucket's stats hash: any write would do.
BARRIER_FIELD = "wseq"
_ROLE_TTL = 5.0  # seconds a master's count of connected replicas is trusted
_ERRORS = (redis.exceptions.RedisError, redis.exceptions.RedisClusterException)


class ReplicationBarrier:
    """WAIT for ``replicas`` acknowledgements (``timeout`` s at most) on the masters of keys."""

    def __init__(self, client: Any, replicas: int, timeout: float) -> None:
        self.client = client
        self.replicas = replicas
        self.timeout_ms = max(1, round(timeout * 1000))
        self._connected: dict[str, tuple[int, float]] = {}  # node name -> (replicas, asked at)

    def wait(self, keys: Iterable[str], parent_key: str) -> bool:
        """WAIT on the masters of ``keys`` other than ``parent_key``'s: True if all confirmed."""
        if not isinstance(self.client, RedisCluster) or self.replicas <= 0:
            return True  # one master holds the parent too: its completion comes after the links
        try:
            short = self._wait(self._targets(keys, parent_key))
        except _ERRORS as exc:
            log.warning("replication barrier failed (%s); completing without it", exc)
            return False
        if short:
            log.warning("%d shard(s) did not confirm the replication of new links in time", short)
        return short == 0

    def unconfirmed(self, keys: Iterable[str]) -> set[str]:
        """WAIT on the masters of ``keys`` (all of them): the keys whose master did not confirm.

        For lease grants (store/redis/frontier.py): a grant a failover can still lose must not be
        acted on. An error (the master died, say) leaves all of its keys unconfirmed."""
        keys = set(keys)
        if not isinstance(self.client, RedisCluster) or self.replicas <= 0 or not keys:
            return set()
        node_of: Callable[[str], Any] = self.client.get_node_from_key
        try:
            # Each key's master as the barrier saw it: a topology refresh during the WAIT must
            # not move a key to a new master that was never asked.
            master_of = {key: node_of(key).name for key in keys}
            targets = self._targets(keys, None)
            confirmed = self._acks(targets)
        except _ERRORS as exc:
            log.warning("replication barrier failed (%s); treating the grants as unconfirmed", exc)
            return keys
        short_masters = {
            node.name for (node, _, _), ok in zip(targets, confirmed, strict=True) if not ok
        }
        if not short_masters:
            return set()
        log.warning("%d shard(s) did not confirm lease grants in time", len(short_masters))
        return {key for key in keys if master_of[key] in short_masters}

    def _targets(self, keys: Iterable[str], parent_key: str | None) -> list[tuple[Any, str, int]]:
        """(master, one of its keys, acknowledgements to ask for) per master of ``keys``, but
        ``parent_key``'s master if one is given."""
        node_of: Callable[[str], Any] = self.client.get_node_from_key  # the client's slot map
        parent = None if parent_key is None else node_of(parent_key).name
        targets: dict[str, tuple[Any, str, int]] = {}
        for key in keys:
            node = node_of(key)
            if node.name == parent or node.name in targets:
                continue
            wanted = min(self.replicas, self._replicas_of(node))
            if wanted > 0:
                targets[node.name] = (node, key, wanted)
        return list(targets.values())

    def _replicas_of(self, node: Any) -> int:
        count, asked = self._connected.get(node.name, (0, -_ROLE_TTL))
        now = time.monotonic()
        if now - asked >= _ROLE_TTL:
            # ROLE on a master: ["master", offset, [[host, port, offset], ...]].
            role = self.client.get_redis_connection(node).execute_command("ROLE")
            count = len(role[2]) if role[0] == "master" else 0
            self._connected[node.name] = (count, now)
        return count

    def _wait(self, targets: list[tuple[Any, str, int]]) -> int:
        """How many of the targets' masters fell short (see _acks)."""
        return sum(not ok for ok in self._acks(targets))

    def _acks(self, targets: list[tuple[Any, str, int]]) -> list[bool]:
        """Per master a small write, then WAIT on the same connection; per target, whether its
        master took the write and got the acknowledgements.

        Each master gets its own connection, written to first for all of them and read
        afterwards, so the shards wait in parallel. Not the cluster client's pipeline: when a
        master's connection breaks during WAIT, that pipeline retries the keyless WAIT alone, on
        a fresh connection to some other node, which has written nothing and so "confirms" at
        once (a failover then lost a grant the barrier had passed)."""
        sent: list[tuple[Any, Any] | None] = []
        for node, key, wanted in targets:
            pool = self.client.get_redis_connection(node).connection_pool
            conn = pool.get_connection()
            try:
                conn.send_packed_command(
                    conn.pack_commands(
                        [("HINCRBY", key, BARRIER_FIELD, 1), ("WAIT", wanted, self.timeout_ms)]
                    )
                )
            except _ERRORS:
                conn.disconnect()
                pool.release(conn)
                sent.append(None)
            else:
                sent.append((pool, conn))
        confirmed = []
        for (_, _, wanted), entry in zip(targets, sent, strict=True):
            ok = False
            if entry is not None:
                pool, conn = entry
                try:
                    wrote = conn.read_response()
                    acks = conn.read_response()
                    ok = isinstance(wrote, int) and isinstance(acks, int) and acks >= wanted
                except _ERRORS:  # an error reply or a broken connection: short
                    conn.disconnect()  # a reply may still be unread on it
                finally:
                    pool.release(conn)
            confirmed.append(ok)
        return confirmed

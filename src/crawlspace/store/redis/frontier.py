"""A shared frontier on Redis or Redis Cluster: many crawlers, one politeness owner per host.
The key layout is in this package's ``__init__.py``.

Each atomic operation is one Lua script (``lua/``) that touches one bucket, hence one slot on
one shard: no CROSSSLOT errors, no client-side locks. The cross-bucket questions a worker asks
all the time (which buckets have ready hosts or due revisits, the earliest ready time, the
earliest lease expiry) are answered by a crawl-wide index of each bucket's marks (index.py),
which every write script's reply keeps current: their cost does not grow with the number of
buckets. ``lease`` takes the buckets that have waited longest, counts their ready hosts
(ZCOUNT), then runs the lease script on those with ready hosts, sharing ``limit`` among them;
within a bucket the earliest-ready hosts go first. Rarer questions (leases in flight, queued
and fetched counts) are a pipelined scan over all buckets, one round trip per shard.

Discovered links belong to other buckets, so ``complete`` adds them *before* the completing write:
a crash in between re-fetches the page (at-least-once) but never loses a link. With
``wait_replicas`` the links' other shards also pass a replication barrier first (wait.py), so a
failover of those shards cannot lose them either.
"""

from __future__ import annotations

import base64
import contextlib
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from importlib.resources import files
from typing import Any, TypeVar

import redis
from redis.cluster import ClusterNode, RedisCluster

from crawlspace.frontier.aopic import (
    NO_CASH_PRIORITY,
    POINTS_PER_DOUBLING,
    SEED_CASH,
    TOP_EXPONENT,
)
from crawlspace.frontier.front_queues import REVISIT_BAND
from crawlspace.frontier.states import IllegalTransition
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.robots.policy import robots_url
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.redis.admission import admit, exclude
from crawlspace.store.redis.cash import CashLedger
from crawlspace.store.redis.codec import num
from crawlspace.store.redis.completion import plan_args
from crawlspace.store.redis.index import BucketIndex
from crawlspace.store.redis.wait import ReplicationBarrier

DEFAULT_BUCKETS = 1024
_LEASE_FIELDS = 19
# Errors a failover, a restart or a moving slot produce; the operation is retried.
_TRANSIENT: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
)
_RERUN: tuple[type[Exception], ...] = (*_TRANSIENT, redis.exceptions.NoScriptError)
_T = TypeVar("_T")
_SCRIPTS = (
    "add",
    "lease",
    "complete",
    "complete_robots",
    "release",
    "expire",
    "index",
    "peek",
    "front",
    "promote",
    "budget",
    "exclude",
    "cash",
)
_READ_SCRIPTS = ("count_urls", "read_urls")
# Written after the bucket count in {ns}:buckets; a frontier without it has an older key layout.
LAYOUT = ";front=1"  # for store/redis/views.py


def stored_buckets(value: bytes | str | None, key: str) -> int | None:
    """The bucket count in ``{ns}:buckets`` (None: no crawl there), if its layout is this one's."""
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else value
    count, _, layout = text.partition(";")
    if f";{layout}" != LAYOUT:
        raise ValueError(
            f"{key}: this frontier was made by an older crawlspace (its key layout lacks the"
            " front bands); finish it with that version or seed a new --namespace"
        )
    return int(count)


def connect(url: str) -> Any:
    """``redis://HOST:PORT[/DB]``: one Redis; ``redis+cluster://H:P,H:P,...``: a Redis Cluster."""
    if url.startswith("redis+cluster://"):
        nodes = []
        for part in url.removeprefix("redis+cluster://").strip("/").split(","):
            host, _, port = part.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"{url!r}: expected redis+cluster://HOST:PORT,HOST:PORT,...")
            nodes.append(ClusterNode(host.strip("[]"), int(port)))  # type: ignore[no-untyped-call]
        return RedisCluster(startup_nodes=nodes, decode_responses=True)
    if url.startswith(("redis://", "rediss://", "unix://")):
        return redis.Redis.from_url(url, decode_responses=True)
    raise ValueError(f"{url!r}: a Redis frontier URL starts with redis:// or redis+cluster://")


class RedisFrontier:
    """Implements ``crawlspace.store.base.Frontier`` on Redis or Redis Cluster."""

    def __init__(
        self,
        client: Any,
        limits: FrontierLimits | None = None,
        *,
        namespace: str = "cs",
        buckets: int = DEFAULT_BUCKETS,
        epoch: int | None = None,
        events_maxlen: int = 1_000_000,
        retry_seconds: float = 30.0,
        wait_replicas: int = 0,
        wait_timeout: float = 0.2,
        sweep_seconds: float = 10.0,
    ) -> None:
        self.limits = limits or FrontierLimits()
        if self.limits.max_in_flight_per_host < 1:
            raise ValueError("max_in_flight_per_host must be at least 1")
        self.client = client
        self.namespace = namespace
        self.buckets = buckets
        self._events_maxlen = events_maxlen
        # A worker's page holds (crawlspace/budget.py) lapse this long after its last call, so a
        # dead worker's holds return to the crawl; the crawl sets it above its lease lifetime.
        self.hold_seconds = 300.0
        self.retry_seconds = retry_seconds
        # Replicas that must acknowledge a page's links on other shards before it completes.
        self._barrier = ReplicationBarrier(client, wait_replicas, wait_timeout)
        self.retrying(self._check_layout)
        # The worker epoch: a fencing token every lease carries and every ending must match.
        if epoch is None:
            epoch = int(self.retrying(lambda: self.client.incr(f"{namespace}:epoch")))
        self.epoch = epoch
        front = self.limits.front
        prelude = (
            f"local FRONT_ORIGIN, FRONT_WIDTH, FRONT_BANDS, REVISIT_BAND = {front.origin},"
            f" {front.width}, {front.count}, {REVISIT_BAND}\n"
            f"local CASH_POINTS, CASH_TOP, NO_CASH = {POINTS_PER_DOUBLING}, {TOP_EXPONENT},"
            f" {NO_CASH_PRIORITY}\n"
            + (files("crawlspace.store.redis") / "lua" / "_common.lua").read_text()
        )
        self._src = {
            name: prelude + (files("crawlspace.store.redis") / "lua" / f"{name}.lua").read_text()
            for name in (*_SCRIPTS, *_READ_SCRIPTS)
        }
        self._sha: dict[str, str] = {}
        self.retrying(self._load_scripts)
        # A lost index mark hides its bucket's hosts for at most sweep_seconds (index.py).
        self.index = BucketIndex(self, sweep_seconds)
        self.cash = CashLedger(self)  # AOPIC's Lambda (cash.py)

    def _check_layout(self) -> None:
        """Every process must hash hosts into the same number of buckets, or hosts split; and
        read the key layout the crawl was made with (a frontier of an older layout is refused:
        its ready hosts would be invisible to this one's scripts)."""
        key = f"{self.namespace}:buckets"
        self.client.set(key, f"{self.buckets}{LAYOUT}", nx=True)
        stored = stored_buckets(self.client.get(key), key)
        if stored != self.buckets:
            raise ValueError(f"{key} is {stored} in Redis, this process was given {self.buckets}")

    # -- keys and scripts ---------------------------------------------------------------------

    def bucket(self, host_key: str) -> int:
        return zlib.crc32(host_key.encode()) % self.buckets

    def key_prefix(self, bucket: int) -> str:
        return f"{{{self.namespace}:b{bucket}}}:"

    def retrying(self, call: Callable[[], _T], *, retried: list[bool] | None = None) -> _T:
        """Ride out a failover or a restart: retry while the deadline allows, then raise.

        Retrying a script whose reply was lost is safe: add is idempotent (the seen set), a
        repeated release is refused as stale, a repeated completion says it was applied
        already (``complete``), and a lease granted twice leaves one orphan lease that expires
        (at-least-once, never a lost URL). ``retried`` is set when a call failed in transit.
        """
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.05
        while True:
            try:
                return call()
            except redis.exceptions.NoScriptError:
                # A promoted replica or a restarted node may lack the script cache.
                self._load_scripts()
            except _TRANSIENT:
                if retried is not None:
                    retried[:] = [True]
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)  # bounded by the deadline; nothing to do until Redis is back
                delay = min(delay * 2, 1.0)

    def _load_scripts(self) -> None:
        self._sha = {name: self.client.script_load(src) for name, src in self._src.items()}

    def _run(self, name: str, bucket: int, *args: object, retried: list[bool] | None = None) -> Any:
        prefix = self.key_prefix(bucket)
        return self.run_key(name, prefix + "st", (prefix, *args), retried=retried)

    def _run_indexed(
        self, name: str, bucket: int, *args: object, retried: list[bool] | None = None
    ) -> Any:
        """Run a write script on one bucket, copy its index update (index.py), return the
        rest of its reply."""
        reply = self._run(name, bucket, *args, retried=retried)
        return self.index.apply_replies([bucket], [reply])[0]

    def run_key(
        self, name: str, key: str, args: Sequence[object], *, retried: list[bool] | None = None
    ) -> Any:
        return self.retrying(
            lambda: self.client.evalsha(self._sha[name], 1, key, *args), retried=retried
        )

    def run_many(self, name: str, calls: Sequence[tuple[int, Sequence[object]]]) -> list[Any]:
        """One pipelined round trip per shard; a call that failed is rerun on its own."""
        pipe = self.client.pipeline(transaction=False)
        for bucket, args in calls:
            prefix = self.key_prefix(bucket)
            # execute_command: redis-py's cluster pipeline blocks .evalsha() but routes EVALSHA
            # by its one key like any keyed command.
            pipe.execute_command("EVALSHA", self._sha[name], 1, prefix + "st", prefix, *args)
        try:
            results: list[Any] = pipe.execute(raise_on_error=False)
        except _RERUN as exc:
            results = [exc] * len(calls)
        for i, result in enumerate(results):
            if isinstance(result, _RERUN):
                results[i] = self._run(name, calls[i][0], *calls[i][1])
            elif isinstance(result, Exception):
                raise result
        return results

    def per_bucket(self, key: str, command: Callable[[Any, str], object]) -> list[Any]:
        """Run ``command(pipe, key)`` on one key of every bucket, pipelined (per shard)."""

        def scan() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for bucket in range(self.buckets):
                command(pipe, self.key_prefix(bucket) + key)
            return list(pipe.execute())

        return self.retrying(scan)

    def _sum_counter(self, field: str) -> int:
        return sum(int(v or 0) for v in self.per_bucket("st", lambda p, k: p.hget(k, field)))

    # -- the Frontier protocol -----------------------------------------------------------------

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        if self.limits.aopic_tax is None:
            return admit(self, candidates, now, ())[0]
        # AOPIC: seeds and sitemaps start with the seed cash (frontier/aopic.py).
        result = admit(self, candidates, now, (), cash=(self.cash.lambda_total(), SEED_CASH))[0]
        self.cash.pay(result.added, 0.0)
        return result

    def _ready_counts(self, now: float, limit: int) -> dict[int, int]:
        """How many leases each bucket grants, for the ``limit`` best-ranked hosts ready at
        ``now`` (frontier/front_queues.py), read from the buckets the index ranks best; a bucket
        the index sent us to in vain gets its marks corrected."""
        at = num(now)
        buckets = self.index.ready_buckets(at, limit)
        if not buckets:
            return {}
        peeks = self.index.peek(buckets, at, limit)
        self.index.apply({b: p.marks for b, p in zip(buckets, peeks, strict=True) if p.marks})
        # Ties keep the index's order of buckets (FrontQueues.merge).
        ranked = sorted(
            (
                (rank, i, b)
                for i, (b, p) in enumerate(zip(buckets, peeks, strict=True))
                for rank in p.ranks
            ),
            key=lambda t: (t[0], t[1]),
        )
        counts = Counter(b for _, _, b in ranked[:limit])
        return {b: counts[b] for b in buckets if counts[b]}

    def ready_hosts(self, now: float) -> int:
        at = num(now)
        buckets = self.index.ready_buckets(at, self.buckets)
        return sum(p.ready for p in self.index.peek(buckets, at, 0))

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        self.index.sweep(now, num(now))
        if limit <= 0:
            return []
        calls: list[tuple[int, Sequence[object]]] = []
        expires_at = now + lease_seconds
        head = (num(expires_at), self.epoch, self.limits.max_in_flight_per_host)
        share, aging = self.limits.revisit_share, self.limits.front.aging
        for bucket, take in self._ready_counts(now, limit).items():
            # One lease per ready host in a pass; a host with spare tokens waits its turn.
            calls.append((bucket, (num(now), take, *head, bucket, share, aging)))
        if not calls:
            return []
        replies = self.run_many("lease", calls)
        leases: list[Lease] = []
        for fields in self.index.apply_replies((b for b, _ in calls), replies):
            for i in range(0, len(fields), _LEASE_FIELDS):
                leases.append(self._lease(fields[i : i + _LEASE_FIELDS], expires_at))
        if self._barrier.replicas > 0 and leases:
            return self._confirmed(leases, now)
        return leases

    def _confirmed(self, leases: list[Lease], now: float) -> list[Lease]:
        """The leases whose grant has reached the replicas; the others are given back unused.

        Replication is asynchronous: a master that dies right after granting a host's token may
        be replaced by a replica that never saw the grant and hands the token to another worker
        while this one's request is still running, two requests at once on one host. A lease
        is fetched only once its bucket's master confirmed that the replicas have it (``WAIT``,
        store/redis/wait.py). An unconfirmed grant is released if its master still answers, and
        otherwise left to expire; its URL stays queued either way."""
        keys = {
            lease.lease_id: f"{self.key_prefix(self.bucket(lease.host_key))}st" for lease in leases
        }
        short = self._barrier.unconfirmed(set(keys.values()))
        if not short:
            return leases
        kept: list[Lease] = []
        for lease in leases:
            if keys[lease.lease_id] not in short:
                kept.append(lease)
                continue
            # If the master is gone, the grant expires (or was lost with it).
            with contextlib.suppress(*_TRANSIENT):
                self.release(lease, now)
        key = f"{self.namespace}:counters"
        self.retrying(lambda: self.client.hincrby(key, "wait.lease_short", len(leases) - len(kept)))
        return kept

    def _lease(self, f: Sequence[str], expires_at: float) -> Lease:
        kind, lease_id, host_key, url, url_id, version, attempt, depth, hops, etag, lm, src = f[:12]
        robots = kind == LeaseKind.ROBOTS.value
        return Lease(
            kind=LeaseKind.ROBOTS if robots else LeaseKind.PAGE,
            lease_id=lease_id,
            host_key=host_key,
            url=robots_url(host_key) if robots else url,
            url_id=int(url_id),
            version=int(version),
            attempt=int(attempt),
            depth=int(depth),
            redirect_hops=int(hops),
            expires_at=expires_at,
            etag=etag or None,
            last_modified=lm or None,
            epoch=self.epoch,
            host_backoff=int(f[12]),
            host_failures=int(f[13]),
            source=src,
            revisit_interval=float(f[14]) if f[14] else None,
            content_hash=f[15] or None,
            changefreq=f[16] or None,
            cash=float(f[17] or 0.0),
            lambda_paid=float(f[18] or 0.0),
        )

    def _url_id(self, url_id: int) -> str:
        return f"{url_id:016d}"

    def complete(self, lease: Lease, completion: Completion, now: float) -> bool:
        if lease.kind is not LeaseKind.PAGE:
            return False
        found: list[str] = []
        found_new = 0
        tax = self.limits.aopic_tax
        cash = None
        if tax is not None and completion.state != "queued":
            cash = self.cash.settle(lease, completion, tax)
        if completion.discovered:
            # Other buckets, so not atomic with the completion: add first (see module docstring).
            page = lease.host_key if completion.state != "queued" else None
            result, found = admit(
                self,
                completion.discovered,
                now,
                self.limits.budgets,
                page_host=page,
                cash=None if cash is None else (cash.lambda_total, cash.share),
            )
            found_new = result.added + result.rejected.get("budget_host", 0)
            for name, n in result.rejected.items():
                completion.rejections[name] = completion.rejections.get(name, 0) + n
            if self._barrier.replicas > 0:
                self._replicate(lease.host_key, {c.host_key for c in completion.discovered})
        if completion.excluded:
            # Records of refusals only: a failover that loses one costs a repeated refusal.
            exclude(self, completion.excluded, lease.depth + 1, now)
        nxt = completion.next_allowed_at
        retried: list[bool] = []
        reply = self._run_indexed(
            "complete",
            self.bucket(lease.host_key),
            self._url_id(lease.url_id),
            lease.lease_id,
            lease.version,
            lease.epoch,
            completion.state,
            completion.reason or "",
            "" if nxt is None else num(nxt),
            completion.etag or "",
            completion.last_modified or "",
            self.limits.max_in_flight_per_host,
            int(completion.fetch is not None),  # counted for terminal completions only
            self._events_maxlen,
            num(now),
            "" if completion.host_backoff is None else completion.host_backoff,
            "" if completion.host_failures is None else completion.host_failures,
            *plan_args(self, lease, completion, now, found=found_new, same_host=found, cash=cash),
            retried=retried,
        )
        done = int(reply[0])
        if done == 1 and cash is not None:
            self.cash.pay(found_new, cash.to_lambda)
        if done == 1 and int(reply[1]):
            rejections = completion.rejections
            rejections["budget_host_day"] = rejections.get("budget_host_day", 0) + 1
        if done < 0:
            raise IllegalTransition("leased", completion.state)
        # 2: this lease was completed already. After a lost reply that was this very call, so
        # the completion holds (the worker keeps its local rows); a second call is refused.
        return done == 1 or (done == 2 and bool(retried))

    def _replicate(self, host_key: str, link_hosts: set[str]) -> None:
        """WAIT on the links' other shards; a shortfall is counted, never fatal (wait.py)."""
        parent = f"{self.key_prefix(self.bucket(host_key))}st"
        keys = {f"{self.key_prefix(self.bucket(h))}st" for h in link_hosts}
        if not self._barrier.wait(keys, parent):
            key = f"{self.namespace}:counters"
            self.retrying(lambda: self.client.hincrby(key, "wait.short", 1))

    def complete_robots(self, lease: Lease, record: RobotsRecord, next_allowed_at: float) -> bool:
        if lease.kind is not LeaseKind.ROBOTS:
            return False
        return 1 == int(  # noqa: SIM300 - the script's status code first reads best
            self._run_indexed(
                "complete_robots",
                self.bucket(lease.host_key),
                lease.host_key,
                lease.lease_id,
                num(next_allowed_at),
                self.limits.max_in_flight_per_host,
                "" if record.status is None else record.status,
                record.outcome,
                base64.b64encode(record.body).decode("ascii"),
                num(record.fetched_at),
                num(record.expires_at),
                record.attempts,
                record.error or "",
            )
        )

    def release(self, lease: Lease, now: float) -> bool:
        return 1 == int(  # noqa: SIM300 - the script's status code first reads best
            self._run_indexed(
                "release",
                self.bucket(lease.host_key),
                lease.kind.value,
                lease.host_key,
                self._url_id(lease.url_id),
                lease.lease_id,
                lease.version,
                lease.epoch,
                self.limits.max_in_flight_per_host,
            )
        )

    def expire_leases(self, now: float) -> int:
        at = num(now)
        self.index.sweep(now, at)
        return self._expire(at, now, self.index.due_lease_buckets(at))

    def recover(self, now: float) -> int:
        """Return *every* lease, of every worker: only for a crawl with no live workers."""
        return self._expire("+inf", now, range(self.buckets))

    def _expire(self, cutoff: str, now: float, buckets: Sequence[int]) -> int:
        hold = num(now + self.limits.lost_lease_gap)
        args = (cutoff, self.limits.max_in_flight_per_host, hold)
        calls = [(b, args) for b in buckets]
        if not calls:
            return 0
        replies = self.run_many("expire", calls)
        return sum(int(n) for n in self.index.apply_replies(buckets, replies))

    def promote_due(self, now: float, limit: int = 1000) -> int:
        """Recrawl: queue again up to ``limit`` due URLs in each bucket the index says has some."""
        at = num(now)
        buckets = self.index.buckets_before("due", at)
        if not buckets:
            return 0
        args = (at, limit, self.limits.max_in_flight_per_host, REVISIT_BAND)
        replies = self.run_many("promote", [(b, args) for b in buckets])
        return sum(int(n) for n in self.index.apply_replies(buckets, replies))

    def next_due_at(self) -> float | None:
        return self.index.first("due")

    # -- crawl-wide budgets (crawlspace/budget.py), in their own slot (lua/budget.lua) --------

    def _budget(self, *args: object) -> tuple[int, int]:
        prefix = f"{{{self.namespace}:budget}}:"
        ttl = max(1, round(self.hold_seconds))
        reply = self.run_key(
            "budget", prefix + "st", (prefix, *args[:1], self.epoch, ttl, *args[1:])
        )
        return int(reply[0]), int(reply[1])

    def reserve_pages(self, n: int, cap: int) -> tuple[int, int]:
        return self._budget("reserve", n, cap)

    def settle_pages(self, released: int, done: int, nbytes: int) -> tuple[int, int]:
        return self._budget("settle", released, done, nbytes)

    def next_ready_at(self) -> float | None:
        ready = self.index.first("ready")
        if ready is not None or self.index.first("leases") is not None:
            return ready
        # The index says the crawl is over: make sure with a full read (and repair the index)
        # before a worker stops on it. Reached once per worker at the end of a crawl.
        peeks = self.index.resync(range(self.buckets), "-inf")
        return min((at for p in peeks for at in p.ready_times()), default=None)

    def earliest_lease_expiry(self) -> float | None:
        return self.index.first("leases")

    def in_flight(self) -> int:
        return self._sum_counter("inflight")

    def robots(self, host_key: str) -> RobotsRecord | None:
        key = f"{self.key_prefix(self.bucket(host_key))}r:{host_key}"
        f = self.client.hgetall(key)
        if not f:
            return None
        # The body travels base64-encoded: the client decodes replies as text, bodies are bytes.
        return RobotsRecord(
            host_key=host_key,
            status=int(f["status"]) if f["status"] else None,
            outcome=f["outcome"],
            body=base64.b64decode(f["body"]),
            fetched_at=float(f["fetched_at"]),
            expires_at=float(f["expires_at"]),
            attempts=int(f["attempts"]),
            error=f["error"] or None,
        )

    # -- crawl bookkeeping and inspection ------------------------------------------------------

    def count_rejections(self, rejections: dict[str, int]) -> None:
        self.count({f"rejected.{name}": n for name, n in rejections.items()})

    def count(self, counts: dict[str, int]) -> None:
        """Add to the crawl-wide named counters (``stats --frontier``)."""
        key = f"{self.namespace}:counters"
        counts = {name: n for name, n in counts.items() if n}
        if not counts:
            return

        def bump() -> None:
            pipe = self.client.pipeline(transaction=False)
            for name, n in counts.items():
                pipe.hincrby(key, name, n)
            pipe.execute()

        self.retrying(bump)

    def host_counts(self, host_key: str) -> tuple[int, int]:
        """(duplicates, fetched pages) of a host, for the duplicate penalty."""
        key = f"{self.key_prefix(self.bucket(host_key))}h:{host_key}"
        dups, fetched = self.retrying(lambda: self.client.hmget(key, "dups", "fetched"))
        return int(dups or 0), int(fetched or 0)

    def queued(self) -> int:
        return self._sum_counter("queued")

    def fetched_pages(self) -> int:
        return self._sum_counter("fetched")

    def seed_urls(self) -> list[str]:
        return sorted(self.client.smembers(f"{self.namespace}:seeds"))

    def url_state(self, url: str, host_key: str) -> tuple[str, str | None] | None:
        prefix = self.key_prefix(self.bucket(host_key))
        url_id = self.client.hget(prefix + "seen", url)
        if url_id is None:
            return None
        state, reason = self.client.hmget(f"{prefix}u:{url_id}", "state", "reason")
        return str(state), reason or None

    def completion_events(self) -> list[dict[str, str]]:
        """Every completion event of every bucket (for audits and tests; O(events))."""
        events: list[dict[str, str]] = []
        for bucket in range(self.buckets):
            events.extend(f for _, f in self.client.xrange(self.key_prefix(bucket) + "events"))
        return events

    def close(self) -> None:
        self.client.close()

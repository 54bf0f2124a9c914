"""A shared frontier on Redis or Redis Cluster: many crawlers, one politeness owner per host.
The key layout is in this package's ``__init__.py``.

Each atomic operation is one Lua script (``lua/``) that touches one bucket, hence one slot on
one shard: no CROSSSLOT errors, no client-side locks. The cross-bucket questions a worker asks
all the time (which buckets have ready hosts or due revisits, the earliest ready time, the
earliest lease expiry) are answered by a crawl-wide index of each bucket's marks (index.py),
which every write script's reply keeps current: their cost does not grow with the number of
buckets. ``lease`` grants the best-ranked ready hosts of the whole crawl (leasing.py, the
front bands of bands.py). Rarer questions (leases in flight, queued and fetched
counts) are a pipelined scan over all buckets, one round trip per shard. Scripts, retries and
pipelines are scripts.py's; tokens held outside a host's leases (an address's, a host's for a
robots.txt redirect hop) tokens.py's.

Discovered links belong to other buckets, so ``complete`` adds them *before* the completing write:
a crash in between re-fetches the page (at-least-once) but never loses a link. With
``wait_replicas`` the links' other shards also pass a replication barrier first (wait.py), so a
failover of those shards cannot lose them either.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from typing import Any

from redis.exceptions import RedisError

from crawlspace.bands import REVISIT_BAND
from crawlspace.lifecycle import IllegalTransition
from crawlspace.plans import NO_PLAN, Outcome
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.redis import leasing
from crawlspace.store.redis.admission import admit, exclude
from crawlspace.store.redis.cash import CashLedger
from crawlspace.store.redis.codec import num
from crawlspace.store.redis.completion import plan_args
from crawlspace.store.redis.index import BucketIndex
from crawlspace.store.redis.notes import PendingNotes, RedisHostNotes
from crawlspace.store.redis.scripts import connect, stored_buckets
from crawlspace.store.redis.tokens import HeldTokens
from crawlspace.store.redis.wait import ReplicationBarrier

__all__ = ["DEFAULT_BUCKETS", "RedisFrontier", "connect", "stored_buckets"]

DEFAULT_BUCKETS = 1024

log = logging.getLogger("crawlspace.store.redis")


class RedisFrontier(HeldTokens, RedisHostNotes):
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
        super().__init__(
            client,
            namespace=namespace,
            buckets=buckets,
            retry_seconds=retry_seconds,
            front=self.limits.front,
        )
        self._events_maxlen = events_maxlen
        # A worker's page holds (crawl/budget.py) lapse this long after its last call, so a
        # dead worker's holds return to the crawl; the crawl sets it above its lease lifetime.
        self.hold_seconds = 300.0
        # Replicas that must acknowledge a page's links on other shards before it completes.
        self.barrier = ReplicationBarrier(client, wait_replicas, wait_timeout)
        # The worker epoch: a fencing token every lease carries and every ending must match.
        if epoch is None:
            epoch = int(self.retrying(lambda: self.client.incr(f"{namespace}:epoch")))
        self.epoch = epoch
        # A lost index mark hides its bucket's hosts for at most sweep_seconds (index.py).
        self.index = BucketIndex(self, sweep_seconds)
        self.spread = leasing.Spread()  # how many buckets a lease peeks first (leasing.py)
        self.cash = CashLedger(self, self.limits.cash)  # AOPIC's Lambda (cash.py)
        self.pending_notes = PendingNotes()  # host notes put, written each lease round

    # -- the Frontier protocol -----------------------------------------------------------------

    def add(self, candidates: Sequence[UrlCandidate], now: float) -> AddResult:
        rule = self.limits.cash
        if rule is None:
            return admit(self, candidates, now, NO_PLAN).result
        # AOPIC: seeds and sitemaps start with a seed's cash, at the priority it buys.
        seeded = (self.cash.lambda_total(), rule.seed, rule.price(rule.seed))
        result = admit(self, candidates, now, NO_PLAN, cash=seeded).result
        self.cash.pay(rule, result.added, 0.0)
        return result

    def _run_indexed(
        self, name: str, bucket: int, *args: object, retried: list[bool] | None = None
    ) -> Any:
        """Run a write script on one bucket, copy its index update (index.py), return the
        rest of its reply."""
        reply = self._run(name, bucket, *args, retried=retried)
        return self.index.apply_replies([bucket], [reply])[0]

    def ready_hosts(self, now: float) -> int:
        return leasing.ready_hosts(self, now)

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        return leasing.grant(self, now, limit, lease_seconds)

    def _url_id(self, url_id: int) -> str:
        return f"{url_id:016d}"

    def complete(
        self, lease: Lease, completion: Completion, now: float, *, duplicate: bool = False
    ) -> Outcome | None:
        """``duplicate``: the page's content verdict (store/shared.py judges it first)."""
        if lease.kind is not LeaseKind.PAGE:
            return None
        plan = completion.plan or NO_PLAN
        rejections: dict[str, int] = {}
        found: list[str] = []
        admitted: list[str] = []
        found_new = 0
        rule = self.limits.cash
        cash = None
        grown: list[object] = []
        if rule is not None and completion.state != "queued":
            cash = self.cash.settle(rule, lease, completion)
        if completion.discovered:
            # Other buckets, so not atomic with the completion: add first (see module docstring).
            page = lease.host_key if completion.state != "queued" else None
            links = None if cash is None else (cash.lambda_total, cash.share, cash.priced)
            admission = admit(self, completion.discovered, now, plan, page_host=page, cash=links)
            result, found, admitted, grown = admission
            found_new = result.added + result.rejected.get("budget_host", 0)
            rejections.update(result.rejected)
            if self.barrier.replicas > 0:
                self._replicate(lease.host_key, {c.host_key for c in completion.discovered})
        if completion.excluded:
            # Records of refusals only: a failover that loses one costs a repeated refusal.
            exclude(self, completion.excluded, lease.depth + 1, now)
        effects = plan.after_links(found_new)
        # The host's pending notes go with its completion's, which are newer (notes.py); the
        # script writes them if the lease is still current, before the host's token goes back.
        notes = {
            **self.pending_notes.take(self._notes_key(lease.host_key)),
            **completion.notes,
            **effects.notes,
        }
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
            *plan_args(
                completion,
                plan.day if completion.state != "queued" else None,
                duplicate=duplicate,
                cash=cash,
                notes=notes,
                effects=effects,
                same_host=found,
            ),
            retried=retried,
        )
        done = int(reply[0])
        if rule is not None:
            # The links' gifts stand whatever the completion's fate (they were added first).
            if done == 1 and cash is not None and reply[2]:
                # A share reached the page while it was leased: it keeps that.
                grown = [*grown, self._url_id(lease.url_id), reply[2], reply[3]]
            self._reprice(self.cash.prices(rule, grown))
            if done == 1 and cash is not None:
                self.cash.pay(rule, found_new, cash.to_lambda)
        if done == 1 and int(reply[1]):
            rejections["budget_host_day"] = rejections.get("budget_host_day", 0) + 1
        if done < 0:
            raise IllegalTransition("leased", completion.state)
        # 2: this lease was completed already. After a lost reply that was this very call, so
        # the completion holds (the worker keeps its local rows); a second call is refused.
        if done == 1 or (done == 2 and bool(retried)):
            return Outcome(rejections, admitted, duplicate)
        return None

    def _reprice(self, prices: Sequence[tuple[str, str, int]]) -> None:
        """AOPIC: the priorities of URLs whose cash a script grew, each in its own bucket
        (lua/reprice.lua), written only while that cash is still theirs."""
        by_bucket: dict[int, list[object]] = {}
        for url_id, cash, priority in prices:
            by_bucket.setdefault(int(url_id) % self.buckets, []).extend((url_id, cash, priority))
        calls: list[tuple[int, Sequence[object]]] = [
            (bucket, (self.limits.max_in_flight_per_host, *fields))
            for bucket, fields in by_bucket.items()
        ]
        if calls:
            self.index.apply_replies([b for b, _ in calls], self.run_many("reprice", calls))

    def _replicate(self, host_key: str, link_hosts: set[str]) -> None:
        """WAIT on the links' other shards; a shortfall is counted, never fatal (wait.py)."""
        parent = f"{self.key_prefix(self.bucket(host_key))}st"
        keys = {f"{self.key_prefix(self.bucket(h))}st" for h in link_hosts}
        if not self.barrier.wait(keys, parent):
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

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool:
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
                "" if not_before is None else num(not_before),
            )
        )

    # -- robots re-evaluation (crawl/leases.py), in the host's bucket (lua/reevaluate.lua) ------

    def robots_excluded(self, host_key: str, limit: int) -> list[tuple[int, str]]:
        reply = self._run("reevaluate", self.bucket(host_key), "list", host_key, limit)
        pairs = [(int(reply[i]), str(reply[i + 1])) for i in range(0, len(reply), 2)]
        return sorted(pairs)

    def requeue_excluded(self, host_key: str, url_ids: Sequence[int], now: float) -> int:
        ids = [self._url_id(url_id) for url_id in url_ids]
        return int(
            self._run_indexed(
                "reevaluate",
                self.bucket(host_key),
                "requeue",
                host_key,
                self.limits.max_in_flight_per_host,
                *ids,
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

    # -- crawl-wide budgets (crawl/budget.py), in their own slot (lua/budget.lua) --------

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
        try:
            self.flush_notes()
        except RedisError as exc:  # what was learned is evidence: losing a round only delays
            log.warning("host notes of the last lease round not written: %s", exc)
        finally:
            self.client.close()

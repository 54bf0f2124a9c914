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
robots.txt redirect hop) tokens.py's and host notes notes.py's, both composed parts.

Discovered links belong to other buckets, so ``complete`` adds them *before* the completing write:
a crash in between re-fetches the page (at-least-once) but never loses a link. With
``wait_replicas`` the links' other shards also pass a replication barrier first (wait.py), so a
failover of those shards cannot lose them either.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from redis.exceptions import RedisError

from crawlspace.bands import REVISIT_BAND
from crawlspace.errors import StoreIOError
from crawlspace.lifecycle import IllegalTransition
from crawlspace.plans import NO_PLAN, CompletionPlan, FeedEntry, Outcome
from crawlspace.records import Completion, Lease, LeaseKind, RobotsRecord, UrlCandidate
from crawlspace.store.base import AddResult, FrontierLimits
from crawlspace.store.redis import leasing
from crawlspace.store.redis.admission import Admission, admit, exclusion_calls
from crawlspace.store.redis.cash import CashLedger, PageCash
from crawlspace.store.redis.codec import num, robots_args, robots_record, url_key
from crawlspace.store.redis.completion import complete_args
from crawlspace.store.redis.index import BucketIndex
from crawlspace.store.redis.notes import RedisHostNotes
from crawlspace.store.redis.scripts import ScriptRunner, connect, stored_buckets
from crawlspace.store.redis.tokens import HeldTokens
from crawlspace.store.redis.wait import ReplicationBarrier

__all__ = ["DEFAULT_BUCKETS", "RedisFrontier", "connect", "stored_buckets"]

DEFAULT_BUCKETS = 1024
LIFT_CHUNK = 64  # buckets per pipeline of lift_exclusion

log = logging.getLogger("crawlspace.store.redis")


class RedisFrontier(ScriptRunner):
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
        feed_entries: int = 100_000,
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
            ignore_query_order=self.limits.ignore_query_order,
        )
        self._events_maxlen = events_maxlen
        # The index feed's streams keep about this many records, all buckets together (their
        # cap is per bucket: Redis trims each stream on its own); 0: no feed stream.
        self.feed_maxlen = max(1, feed_entries // buckets) if feed_entries > 0 else 0
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
        # AOPIC's Lambda and the pricing of grown cash (cash.py).
        self.cash = CashLedger(
            self, self.limits.cash, self.index, self.limits.max_in_flight_per_host
        )
        self.notes = RedisHostNotes(self)  # what policy learns per host (notes.py)
        # Tokens held outside a host's own leases (tokens.py).
        self.tokens = HeldTokens(self, self.limits, self.index)

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
        reply = self.run(name, bucket, *args, retried=retried)
        return self.index.apply_replies([bucket], [reply])[0]

    def ready_hosts(self, now: float) -> int:
        return leasing.ready_hosts(self, now)

    def lease(self, now: float, limit: int, lease_seconds: float) -> list[Lease]:
        return leasing.grant(self, now, limit, lease_seconds)

    def complete(
        self,
        lease: Lease,
        completion: Completion,
        now: float,
        *,
        duplicate: bool = False,
        feed: FeedEntry | None = None,
    ) -> Outcome | None:
        """``duplicate``: the page's content verdict (store/shared.py judges it first);
        ``feed``: the index feed record the plan made with it, added to the bucket's feed
        stream by the completion's own write."""
        if lease.kind is not LeaseKind.PAGE:
            return None
        plan = completion.plan or NO_PLAN
        rule = self.limits.cash
        cash = None
        if rule is not None and completion.state != "queued":
            cash = self.cash.settle(rule, lease, completion)
        links = self._admit_links(lease, completion, now, plan, cash)
        rejections = dict(links.result.rejected)
        grown = links.grown
        found_new = links.result.added + rejections.get("budget_host", 0)
        effects = plan.after_links(found_new, duplicate=duplicate)
        # The host's pending notes go with its completion's, which are newer (notes.py); the
        # script writes them if the lease is still current, before the host's token goes back.
        notes = {
            **self.notes.pending.take(self.notes.key(lease.host_key)),
            **completion.notes,
            **effects.notes,
        }
        args = complete_args(
            lease,
            completion,
            now,
            max_in_flight=self.limits.max_in_flight_per_host,
            events_maxlen=self._events_maxlen,
            duplicate=duplicate,
            cash=cash,
            notes=notes,
            effects=effects,
            same_host=links.ids,
            feed=feed,
            feed_maxlen=self.feed_maxlen,
        )
        retried: list[bool] = []
        reply = self._run_indexed("complete", self.bucket(lease.host_key), *args, retried=retried)
        done = int(reply[0])
        if rule is not None:
            # The links' gifts stand whatever the completion's fate (they were added first);
            # a share that reached the page while it was leased, it keeps.
            if done == 1 and cash is not None and reply[2]:
                grown = [*grown, url_key(lease.url_id), reply[2]]
            self.cash.after_page(rule, grown, cash if done == 1 else None, found_new)
        if done == 1 and int(reply[1]):
            rejections["budget_host_day"] = rejections.get("budget_host_day", 0) + 1
        if done < 0:
            raise IllegalTransition("leased", completion.state)
        # 2: this lease was completed already. After a lost reply that was this very call, so
        # the completion holds (the worker keeps its local rows); a second call is refused.
        if done == 1 or (done == 2 and bool(retried)):
            return Outcome(rejections, links.urls, duplicate)
        return None

    def _admit_links(
        self,
        lease: Lease,
        completion: Completion,
        now: float,
        plan: CompletionPlan,
        cash: PageCash | None,
    ) -> Admission:
        """A completion's links, added *before* its completing write: they belong to other
        buckets, so it cannot be atomic with them (see the module docstring); and the links it
        refused, remembered in the same round trip (records of refusals only: a failover that
        loses one costs a repeated refusal)."""
        refused = exclusion_calls(self, completion.excluded, lease.depth + 1, now)
        if not completion.discovered:
            if refused:
                self.run_many("exclude", refused)
            return Admission(AddResult(0, 0, {}), [], [], [])
        page = lease.host_key if completion.state != "queued" else None
        links = None if cash is None else (cash.lambda_total, cash.share, cash.priced)
        admission = admit(
            self,
            completion.discovered,
            now,
            plan,
            page_host=page,
            cash=links,
            exclusions=refused,
            via=lease.url_id,
        )
        if self.barrier.replicas > 0:
            self._replicate(lease.host_key, {c.host_key for c in completion.discovered})
        return admission

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
                *robots_args(record),
            )
        )

    def release(self, lease: Lease, now: float, not_before: float | None = None) -> bool:
        return 1 == int(  # noqa: SIM300 - the script's status code first reads best
            self._run_indexed(
                "release",
                self.bucket(lease.host_key),
                lease.kind.value,
                lease.host_key,
                url_key(lease.url_id),
                lease.lease_id,
                lease.version,
                lease.epoch,
                self.limits.max_in_flight_per_host,
                "" if not_before is None else num(not_before),
            )
        )

    # -- robots re-evaluation (crawl/leases.py), in the host's bucket (lua/reevaluate.lua) ------

    def url_of(self, url_id: int) -> str | None:
        (text,) = self.run("read_urls", url_id % self.buckets, "ids", url_key(url_id))
        return str(json.loads(text)["url"]) if text else None

    def robots_excluded(self, host_key: str, limit: int) -> list[tuple[int, str]]:
        reply = self.run("reevaluate", self.bucket(host_key), "list", host_key, limit)
        pairs = [(int(reply[i]), str(reply[i + 1])) for i in range(0, len(reply), 2)]
        return sorted(pairs)

    def requeue_excluded(self, host_key: str, url_ids: Sequence[int], now: float) -> int:
        ids = [url_key(url_id) for url_id in url_ids]
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

    def lift_exclusion(self, reason: str, now: float) -> int:
        args = ("lift", reason, num(now), self.limits.max_in_flight_per_host)
        queued = 0
        for start in range(0, self.buckets, LIFT_CHUNK):  # bounded pipelines, once per run
            buckets = range(start, min(start + LIFT_CHUNK, self.buckets))
            replies = self.run_many("reevaluate", [(b, args) for b in buckets])
            queued += sum(int(n) for n in self.index.apply_replies(buckets, replies))
        return queued

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
        return self.index.first("due")[0]

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
        ready, lease = self.index.first("ready", "leases")
        if ready is not None or lease is not None:
            return ready
        # The index says the crawl is over: make sure with a full read (and repair the index)
        # before a worker stops on it. Reached once per worker at the end of a crawl.
        peeks = self.index.resync(range(self.buckets), "-inf")
        return min((at for p in peeks for at in p.ready_times()), default=None)

    def earliest_lease_expiry(self) -> float | None:
        return self.index.first("leases")[0]

    def in_flight(self) -> int:
        return self._sum_counter("inflight")

    def robots(self, host_key: str) -> RobotsRecord | None:
        key = f"{self.key_prefix(self.bucket(host_key))}r:{host_key}"
        fields = self.client.hgetall(key)
        return robots_record(host_key, fields) if fields else None

    # -- crawl bookkeeping and inspection ------------------------------------------------------

    def count_rejections(self, rejections: dict[str, int]) -> None:
        self.count({f"rejected.{name}": n for name, n in rejections.items()})

    def count(self, counts: dict[str, int]) -> None:
        """Add to the crawl-wide named counters (``stats --frontier``)."""
        counts = {name: n for name, n in counts.items() if n}
        if counts:  # with the next read of the index (index.py): no round trip of their own
            self.index.count(f"{self.namespace}:counters", counts)

    def host_counts(self, host_key: str) -> tuple[int, int]:
        """(duplicates, fetched pages) of a host, for the duplicate penalty."""
        key = f"{self.key_prefix(self.bucket(host_key))}h:{host_key}"
        dups, fetched = self.retrying(lambda: self.client.hmget(key, "dups", "fetched"))
        return int(dups or 0), int(fetched or 0)

    def queued(self) -> int:
        return self._sum_counter("queued")

    def fetched_pages(self) -> int:
        return self._sum_counter("fetched")

    def seen_urls(self) -> int:
        """URLs the frontier has seen (each got an id, queued or not)."""
        return self._sum_counter("useq")

    def scope_seeds(self) -> list[str]:
        """The seeds' host keys (a frontier written before they were, its seed URLs)."""
        return sorted(self.client.smembers(f"{self.namespace}:seeds"))

    def scope_revision(self) -> int:
        """Bumped by each admission that added a seed host (admission.py)."""
        return int(self.retrying(lambda: self.client.get(f"{self.namespace}:seeds:rev")) or 0)

    # -- composed parts: host tokens outside leases (tokens.py), host notes (notes.py) --------

    def take_address(
        self, address: str, holder: str, now: float, expires_at: float
    ) -> float | None:
        return self.tokens.take_address(address, holder, now, expires_at)

    def give_address(self, address: str, holder: str, ended: float) -> None:
        self.tokens.give_address(address, holder, ended)

    def take_start(self, now: float, latest_start: float) -> float:
        return self.tokens.take_start(now, latest_start)

    def reserve_render(self) -> tuple[str | None, int, float]:
        return self.tokens.reserve_render()

    def spend_render(self, seconds: float) -> None:
        self.tokens.spend_render(seconds)

    def take_host(self, host_key: str, holder: str, now: float, expires_at: float) -> float | None:
        return self.tokens.take_host(host_key, holder, now, expires_at)

    def give_host(self, host_key: str, holder: str, next_allowed_at: float) -> None:
        self.tokens.give_host(host_key, holder, next_allowed_at)

    def host_notes(self, host_key: str, names: Sequence[str]) -> dict[str, str]:
        return self.notes.host_notes(host_key, names)

    def put_host_note(self, host_key: str, name: str, text: str) -> None:
        self.notes.put_host_note(host_key, name, text)

    def close(self) -> None:
        try:
            self.flush_riders()  # host notes, given address tokens, index marks, counters
        except (RedisError, StoreIOError) as exc:  # evidence and hints: losing them only delays
            log.warning("host notes, index marks or counters not written at close: %s", exc)
        finally:
            self.client.close()

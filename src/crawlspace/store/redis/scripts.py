"""The shared frontier's connection to its Redis: bucket keys, the Lua scripts (``lua/``, each
with the prelude ``_common.lua``), pipelined runs per shard, and retries that ride out a
failover. Policy-free: ``frontier.py`` says what to run.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
import zlib
from collections.abc import Callable, Sequence
from importlib.resources import files
from typing import Any, Protocol, TypeVar

import redis
from redis.cluster import ClusterNode, RedisCluster

from crawlspace.bands import REVISIT_BAND, FrontQueues
from crawlspace.errors import StoreError, StoreIOError
from crawlspace.urls import seen_key

__all__ = ["LAYOUT", "TRANSIENT", "ScriptRunner", "connect", "ride_out", "stored_buckets"]

# Errors a failover, a restart or a moving slot produce; the operation is retried.
TRANSIENT: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
)
RERUN: tuple[type[Exception], ...] = (*TRANSIENT, redis.exceptions.NoScriptError)
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
    "reprice",
    "address",
    "rate",
    "render",
    "host_token",
    "reevaluate",
)
_READ_SCRIPTS = ("count_urls", "read_urls")
# Written after the bucket count in {ns}:buckets; a frontier without it has an older key layout
# (front=1: front bands; urls=2: packed URL records and a fingerprint seen set; urls=3: the
# records keep the page that led to each URL, "via").
LAYOUT = ";front=1;urls=3"  # for store/redis/views.py


# A prelude paragraph's definitions, the names a piece of Lua uses, and Lua comments.
_DEFINES = re.compile(r"^local (?:function (\w+)|([\w, ]+?)\s*=)", re.MULTILINE)
_NAME = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"--[^\n]*")


def _names(lua: str) -> set[str]:
    return set(_NAME.findall(_COMMENT.sub("", lua)))


def trim_prelude(prelude: str, body: str) -> str:
    """The paragraphs of ``prelude`` that ``body`` uses, directly or through one another, in
    their order. Redis runs a script's whole prelude on every call (each ``local function`` is a
    closure made anew, each key name a string built anew) and this VM's Lua is slow per
    operation, so a script pays only for what it calls. A paragraph uses only names defined
    above it (Lua locals), so one pass from the last paragraph up finds them all."""
    paragraphs = prelude.split("\n\n")
    needed = _names(body)
    keep: list[str] = []
    for paragraph in reversed(paragraphs):
        defined = {
            name.strip()
            for fn, names in _DEFINES.findall(paragraph)
            for name in (fn or names).split(",")
        }
        if defined & needed:
            keep.append(paragraph)
            needed |= _names(paragraph)
    return "\n\n".join(reversed(keep)) + "\n"


def stored_buckets(value: bytes | str | None, key: str) -> int | None:
    """The bucket count in ``{ns}:buckets`` (None: no crawl there), if its layout is this one's."""
    if value is None:
        return None
    text = value.decode() if isinstance(value, bytes) else value
    count, _, layout = text.partition(";")
    if f";{layout}" != LAYOUT:
        raise ValueError(
            f"{key}: this frontier was made by an older crawlspace (its key layout is"
            f" {layout or 'the first'!r}, this one's {LAYOUT[1:]!r}); finish it with that"
            " version or seed a new --namespace"
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


def ride_out(
    call: Callable[[], _T],
    seconds: float,
    *,
    retried: list[bool] | None = None,
    reload: Callable[[], None] | None = None,
) -> _T:
    """Retry ``call`` through a failover or a restart while ``seconds`` allow, then raise
    StoreIOError (the crawl handles every engine's I/O errors alike)."""
    deadline = time.monotonic() + seconds
    delay = 0.05
    while True:
        try:
            return call()
        except redis.exceptions.NoScriptError:
            if reload is None:
                raise
            reload()
        except TRANSIENT as exc:
            if retried is not None:
                retried[:] = [True]
            if time.monotonic() + delay > deadline:
                raise StoreIOError(
                    f"the frontier stayed unreachable for {seconds:g} s: {exc}"
                ) from exc
            time.sleep(delay)  # bounded by the deadline; nothing to do until Redis is back
            delay = min(delay * 2, 1.0)


def compose_script(body: str, front: FrontQueues, buckets: int) -> str:
    """A script as Redis runs it: the crawl's constants, the parts of the prelude
    (``_common.lua``) that ``body`` uses, and ``body``."""
    constants = (
        f"local FRONT_ORIGIN, FRONT_WIDTH, FRONT_BANDS, REVISIT_BAND = {front.origin},"
        f" {front.width}, {front.count}, {REVISIT_BAND}\nlocal BUCKETS = {buckets}\n"
    )
    prelude = (files("crawlspace.store.redis") / "lua" / "_common.lua").read_text()
    return constants + trim_prelude(prelude, body) + body


class Rider(Protocol):
    """Writes that need no answer and may wait: they go out with this process's next round trip
    that runs scripts (``ScriptRunner.round_trip``, ``run_key``, ``run_mixed``) instead of
    costing one of their own."""

    def waiting(self) -> bool: ...

    def queue_waiting(self, pipe: Any) -> int:
        """Add the waiting writes to ``pipe``; how many commands."""
        ...

    def sent(self) -> None:
        """The writes queued last went through: they no longer wait."""
        ...


class ScriptRunner:
    """Runs the frontier's scripts on the buckets of one namespace."""

    def __init__(
        self,
        client: Any,
        *,
        namespace: str,
        buckets: int,
        retry_seconds: float,
        front: FrontQueues,
        ignore_query_order: bool = True,
    ) -> None:
        self.client = client
        # Fingerprint a URL's seen key, not the URL (``fingerprint``; FrontierLimits).
        self.ignore_query_order = ignore_query_order
        self.namespace = namespace
        self.buckets = buckets
        self.retry_seconds = retry_seconds
        self.front = front  # the crawl's front bands, compiled into the scripts
        self.retrying(self._check_layout)
        # Keyed once; each fingerprint starts from a copy (a third faster than keying anew).
        self._fingerprinter = hashlib.blake2b(
            digest_size=8, key=self.retrying(self._read_fingerprint_key)
        )
        lua = files("crawlspace.store.redis") / "lua"
        self._src = {
            name: compose_script((lua / f"{name}.lua").read_text(), front, buckets)
            for name in (*_SCRIPTS, *_READ_SCRIPTS)
        }
        self._sha: dict[str, str] = {}
        self.retrying(self._load_scripts)
        self.riders: list[Rider] = []  # parts whose waiting writes ride along (Rider)

    def _check_layout(self) -> None:
        """Every process must hash hosts into the same number of buckets, or hosts split; and
        read the key layout the crawl was made with (a frontier of an older layout is refused:
        its ready hosts would be invisible to this one's scripts)."""
        key = f"{self.namespace}:buckets"
        self.client.set(key, f"{self.buckets}{LAYOUT}", nx=True)
        stored = stored_buckets(self.client.get(key), key)
        if stored != self.buckets:
            raise ValueError(f"{key} is {stored} in Redis, this process was given {self.buckets}")

    def _read_fingerprint_key(self) -> bytes:
        """The crawl's secret key of seen-set fingerprints (``fingerprint``), made by the first
        process: every process must fingerprint a URL alike. A crawl that ran (it has taken a
        worker epoch) without one lost it: a new key would take every URL for new, so the
        process stops instead."""
        key = f"{self.namespace}:fpkey"
        if not self.client.exists(key) and self.client.exists(f"{self.namespace}:epoch"):
            raise StoreError(
                f"{key} is gone though namespace {self.namespace!r} holds a crawl: its seen set"
                " can no longer recognize a URL; restore the key from a backup of this Redis,"
                " or seed a new --namespace"
            )
        self.client.set(key, secrets.token_hex(16), nx=True)
        return bytes.fromhex(self.client.get(key))

    def fingerprint(self, url: str) -> bytes:
        """A URL's key in the seen set: 64 bits of keyed BLAKE2b. Keyed, so no one who does
        not know the crawl's key can make a URL collide with another and hide it; 64 bits, so
        the seen set's entries are 8 bytes whatever the URL's length (about 3 collisions, so 3
        URLs taken for seen and not crawled, expected among 10 billion URLs: the design's
        accepted cost). When query order is ignored it is the fingerprint of the URL's seen
        key (urls.py seen_key): the record keeps the URL as first linked."""
        key = seen_key(url) if self.ignore_query_order else None
        hasher = self._fingerprinter.copy()
        hasher.update((url if key is None else key).encode("utf-8", "surrogatepass"))
        return hasher.digest()

    # -- keys and scripts ---------------------------------------------------------------------

    def bucket(self, host_key: str) -> int:
        return zlib.crc32(host_key.encode()) % self.buckets

    def key_prefix(self, bucket: int) -> str:
        return f"{{{self.namespace}:b{bucket}}}:"

    def retrying(self, call: Callable[[], _T], *, retried: list[bool] | None = None) -> _T:
        """Ride out a failover or a restart (``ride_out``), reloading the scripts a promoted
        replica or a restarted node may lack.

        Retrying a script whose reply was lost is safe: add is idempotent (the seen set), a
        repeated release is refused as stale, a repeated completion says it was applied
        already (``complete``), and a lease granted twice leaves one orphan lease that expires
        (at-least-once, never a lost URL). ``retried`` is set when a call failed in transit.
        """
        return ride_out(call, self.retry_seconds, retried=retried, reload=self._load_scripts)

    def _load_scripts(self) -> None:
        self._sha = {name: self.client.script_load(src) for name, src in self._src.items()}

    def run(self, name: str, bucket: int, *args: object, retried: list[bool] | None = None) -> Any:
        prefix = self.key_prefix(bucket)
        return self.run_key(name, prefix + "st", (prefix, *args), retried=retried)

    def run_key(
        self, name: str, key: str, args: Sequence[object], *, retried: list[bool] | None = None
    ) -> Any:
        if self._riding():
            queued = self.round_trip(lambda pipe: self.queue(pipe, name, key, args), retried)
            return queued[0]
        return self.retrying(
            lambda: self.client.evalsha(self._sha[name], 1, key, *args), retried=retried
        )

    # -- writes that ride along: no round trip of their own ------------------------------------

    def _riding(self) -> bool:
        return any(rider.waiting() for rider in self.riders)

    def flush_riders(self) -> None:
        """Send every waiting write now (at close)."""
        if self._riding():
            self.round_trip(lambda pipe: None)

    def round_trip(
        self, queue: Callable[[Any], object], retried: list[bool] | None = None
    ) -> list[Any]:
        """One pipeline: the riders' waiting writes, then the commands ``queue(pipe)`` adds;
        the replies of those. The writes stop waiting once their replies came back, whatever
        the commands' own (a try whose replies were lost in transit sends them again: each
        rider's writes bear repeating)."""

        def call() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            riding = sum(rider.queue_waiting(pipe) for rider in self.riders)
            queue(pipe)
            replies = list(pipe.execute(raise_on_error=False))
            self._settle_riders(replies[:riding])
            for reply in replies[riding:]:
                if isinstance(reply, Exception):
                    raise reply  # a missing script is reloaded and the call tried again
            return replies[riding:]

        return self.retrying(call, retried=retried)

    def _settle_riders(self, replies: Sequence[Any]) -> None:
        """The riders' writes went through (they stop waiting), or raise their error."""
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        for rider in self.riders:
            rider.sent()

    def queue(self, pipe: Any, name: str, key: str, args: Sequence[object]) -> None:
        """Add a run of script ``name`` to ``pipe`` (its reply comes with the pipeline's)."""
        # execute_command: redis-py's cluster pipeline blocks .evalsha() but routes EVALSHA
        # by its one key like any keyed command.
        pipe.execute_command("EVALSHA", self._sha[name], 1, key, *args)

    def read_on(self, client: Any, name: str, bucket: int, *args: object) -> Any:
        """Run a read-only script (``_READ_SCRIPTS``) on ``client``, which may be a replica
        (EVAL_RO, with the script's text: a replica need not have loaded it)."""
        assert name in _READ_SCRIPTS, name
        prefix = self.key_prefix(bucket)
        return client.eval_ro(self._src[name], 1, prefix + "st", prefix, *args)

    def run_many(self, name: str, calls: Sequence[tuple[int, Sequence[object]]]) -> list[Any]:
        """One pipelined round trip per shard; a call that failed is rerun on its own."""
        return self.run_mixed([(name, bucket, args) for bucket, args in calls])

    def run_mixed(self, calls: Sequence[tuple[str, int, Sequence[object]]]) -> list[Any]:
        """As ``run_many``, each call naming its script (the riders' writes go first)."""
        pipe = self.client.pipeline(transaction=False)
        riding = sum(rider.queue_waiting(pipe) for rider in self.riders)
        for name, bucket, args in calls:
            prefix = self.key_prefix(bucket)
            self.queue(pipe, name, prefix + "st", (prefix, *args))
        try:
            results: list[Any] = pipe.execute(raise_on_error=False)
        except RERUN as exc:
            results = [exc] * (riding + len(calls))
        try:
            self._settle_riders(results[:riding])
        except RERUN:
            self.round_trip(lambda pipe: None)  # the riders' writes on their own, retried
        results = results[riding:]
        for i, result in enumerate(results):
            if isinstance(result, RERUN):
                name, bucket, args = calls[i]
                results[i] = self.run(name, bucket, *args)
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

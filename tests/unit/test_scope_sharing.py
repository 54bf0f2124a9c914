"""crawl/scope_sharing.py on a virtual clock: seeds another process added join this process's
scope at the next look (at most once a second), or at once when it leases such a seed."""

from __future__ import annotations

from crawlspace.crawl.scope_sharing import SharedScope
from crawlspace.discovery.scope import Scope


class Seeds:
    """The store's side: the seeds' host keys and their revision."""

    def __init__(self, seeds: list[str]) -> None:
        self.seeds = list(seeds)
        self.revision = 0
        self.reads = 0

    def scope_seeds(self) -> list[str]:
        self.reads += 1
        return list(self.seeds)

    def scope_revision(self) -> int:
        return self.revision

    def add(self, host_key: str) -> None:
        self.seeds.append(host_key)
        self.revision += 1


def test_seeds_added_elsewhere_join_the_scope_at_the_next_look() -> None:
    store = Seeds(["http://a.example"])
    scope = Scope("host", store.seeds)
    shared = SharedScope(scope, store, list(store.seeds), store.revision)
    assert shared.refresh(10.0) == 0  # nothing moved: nothing read
    assert store.reads == 0
    store.add("http://b.example")
    assert scope.reason("http://b.example/x") == "scope"
    assert shared.refresh(10.5) == 0  # within a second of the last look
    assert shared.refresh(11.0) == 1
    assert scope.reason("http://b.example/x") is None
    assert shared.refresh(12.0) == 0  # the same revision: not read again
    assert store.reads == 1


def test_a_lease_out_of_scope_reads_the_seeds_at_once() -> None:
    store = Seeds(["http://a.example"])
    scope = Scope("host", store.seeds)
    shared = SharedScope(scope, store, list(store.seeds), store.revision)
    shared.refresh(10.0)
    store.add("http://c.example")
    shared.leased("http://a.example/x", 10.1)  # covered: nothing read
    assert store.reads == 0
    shared.leased("http://c.example/", 10.1)  # another worker's scope admitted it
    assert scope.reason("http://c.example/p") is None
    assert store.reads == 1


def test_one_process_reads_nothing() -> None:
    store = Seeds(["http://a.example"])
    scope = Scope("host", store.seeds)
    alone = SharedScope(scope, store, list(store.seeds), store.revision, shared=False)
    store.add("http://c.example")
    alone.leased("http://c.example/", 10.0)
    assert alone.refresh(20.0) == 0
    assert store.reads == 0

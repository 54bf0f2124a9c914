"""crawl/host_rules.py on the memory engine: what a lease reads, what a page teaches."""

from __future__ import annotations

from typing import cast

from crawlspace.crawl.host_rules import HostRules
from crawlspace.dedup.simhash import simhash_and_sketch
from crawlspace.frontier.learned import NOTE as LEARNED
from crawlspace.frontier.learned import Learned
from crawlspace.frontier.trap_yield import FamilyYield, YieldRules, encode
from crawlspace.records import Completion, FetchRecord, Lease, LeaseKind
from crawlspace.store.base import Store
from crawlspace.store.memory import MemoryFrontier

HOST = "http://h.test"


def lease(path: str, n: int = 1) -> Lease:
    return Lease(LeaseKind.PAGE, f"L{n}", HOST, HOST + path, n, 1, 1, 1, 0, 1e18)


def fetched(url: str, text: str) -> Completion:
    simhash, sketch = simhash_and_sketch(text)
    fetch = FetchRecord(
        url, url, 200, 0.0, 1.0, "text/html", 100, False, "c", None, None, None,
        text_sha256="t", simhash=simhash, sketch=sketch,
    )  # fmt: skip
    return Completion(state="fetched", fetch=fetch)


def test_a_flagged_family_missing_from_the_learned_note_is_restored() -> None:
    store = MemoryFrontier()
    rules = HostRules(cast(Store, store), YieldRules(), lambda: 0.0)
    # The family note holds the verdict; the "learned" note was replaced without it.
    store.put_host_note(HOST, "yield:/cal/", encode(FamilyYield(total=20, verdict="trap_template")))
    store.put_host_note(HOST, LEARNED, Learned().encode())
    first = lease("/cal/2030/01/01")
    assert rules.before_fetch(first) is None  # not applied: the learned note lacks it
    done = fetched(first.url, "no events today")
    rules.before_commit(first, done)
    rules.after_commit(first, done, admitted=[])
    rules.forget(first)
    # The next lease of the family is excluded with the verdict's reason.
    excluded = rules.before_fetch(lease("/cal/2030/01/02", 2))
    assert excluded is not None
    assert (excluded.state, excluded.reason) == ("excluded", "trap_template")

"""A Bloom filter in front of the exact seen set: it may only ever say "definitely new".

The durable UNIQUE ``urls.url`` key in the store stays the source of truth. A Bloom filter
(Bloom, CACM 13(7), 1970) has no false negatives, so a "not in filter" answer proves that a URL
was never added and the store can take a cheaper insert-only path; a "maybe seen" answer always
goes to the store, so a false positive costs one ordinary lookup, never a page.

Implementation: ``rbloom`` (Rust). ``benchmarks/seen_set_bench.py`` measures it against a pure
Python filter over a ``bytearray`` with double hashing (Kirsch & Mitzenmacher, ESA 2006): rbloom
did 0.8-0.9 M checks/s against 0.07-0.13 M, see benchmarks/README.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rbloom import Bloom

__all__ = ["SeenFilter", "SeenStats", "dedup_seen_filter"]


def dedup_seen_filter(expected_urls: int, fp_rate: float) -> SeenFilter | None:
    """The filter a crawl configuration asks for (None: ``bloom_expected_urls = 0``)."""
    return SeenFilter(expected_urls, fp_rate) if expected_urls > 0 else None


@dataclass(slots=True)
class SeenStats:
    """Counters since this filter was built (the store persists them as ``seen.*`` counters)."""

    checks: int = 0
    definitely_new: int = 0  # store lookup skipped
    maybe_seen: int = 0  # went to the store
    false_positives: int = 0  # maybe_seen, but the store had never seen the URL


class SeenFilter:
    """Sized from the expected number of URLs and the wanted false-positive rate.

    Past ``expected_urls`` the false-positive rate rises (costing store reads), correctness does
    not change. ``hash_func`` exists for tests that force collisions; the default is Python's
    string hash, which is randomized per process -- fine, because the filter is rebuilt from the
    store on every start and never persisted.
    """

    def __init__(
        self,
        expected_urls: int,
        fp_rate: float,
        hash_func: Callable[[str], int] | None = None,
    ) -> None:
        if expected_urls < 1:
            raise ValueError(f"expected_urls must be >= 1 (got {expected_urls})")
        if not 0.0 < fp_rate < 1.0:
            raise ValueError(f"fp_rate must be in (0, 1) (got {fp_rate})")
        self.expected_urls = expected_urls
        self.fp_rate = fp_rate
        self._bloom = (
            Bloom(expected_urls, fp_rate)
            if hash_func is None
            else Bloom(expected_urls, fp_rate, hash_func)
        )
        self.stats = SeenStats()
        # False while the filter is being rebuilt in the background (resume of a big frontier):
        # until it holds every stored URL, no answer may be "definitely new".
        self._complete = True

    @property
    def size_bytes(self) -> int:
        return int(self._bloom.size_in_bits) // 8

    def rebuild(self, urls: Iterable[str]) -> int:
        """Add every URL the store already holds (on resume). Returns how many were added."""
        n = 0
        add = self._bloom.add
        for url in urls:
            add(url)
            n += 1
        return n

    def check_and_add(self, url: str) -> bool:
        """True if ``url`` is definitely new. Either way it is in the filter afterwards.

        The caller must then insert a definitely-new URL into the store (or put it back on the
        slow path): the filter must never hold less than the store, or a new answer could lie.
        """
        self.stats.checks += 1
        if not self._complete or url in self._bloom:
            if not self._complete:
                self._bloom.add(url)
            self.stats.maybe_seen += 1
            return False
        self._bloom.add(url)
        self.stats.definitely_new += 1
        return True

    def begin_rebuild(self) -> None:
        """Every URL is "maybe seen" (a store read) until ``end_rebuild``."""
        self._complete = False

    def end_rebuild(self) -> None:
        self._complete = True

    @property
    def complete(self) -> bool:
        return self._complete

    def add(self, url: str) -> None:
        """Record a URL the store gained by another path (e.g. an excluded URL)."""
        self._bloom.add(url)

    def proves_new(self, url: str) -> bool:
        """Whether ``url`` is definitely new, without counting a check or adding it."""
        return self._complete and url not in self._bloom

    def note_false_positive(self, n: int = 1) -> None:
        self.stats.false_positives += n

    def drain_counters(self) -> dict[str, int]:
        """Counter increments since the last drain, named as in the ``counters`` table."""
        s = self.stats
        out = {
            "seen.bloom_checks": s.checks,
            "seen.bloom_definitely_new": s.definitely_new,
            "seen.bloom_maybe_seen": s.maybe_seen,
            "seen.bloom_false_positives": s.false_positives,
        }
        self.stats = SeenStats()
        return {k: v for k, v in out.items() if v}

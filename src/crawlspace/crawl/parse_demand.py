"""When the parse pool takes one more worker process. Pure: the pool reports each job's CPU time
and wall time, and asks, with the time, whether to start another.

The pool starts one worker and grows to ``parse_workers`` (one per core by default) only while
parsing is what the crawl waits for: when its workers spent more than ``busy_share`` of a window
of wall time parsing, on average. On ordinary pages one worker is ~75% busy and the crawl loop
~80%, each on its own core; a second worker there only takes turns with the loop on the same two
cores (3 processes, 2 cores: each job waits for a core, and the loop for its answers), and
costs its memory. Measured on postgresql-doc-15 (benchmarks/README.md, fourteenth session): one
worker 1.05x the pages/s of two, 0.97x the CPU per page, 32 MB less peak RSS. On link-heavy
pages one worker is saturated within the first window and the second starts at once.

The share is of CPU time, as the worker's kernel counts it: a worker kept off its core by a busy
machine does not look busy. A second signal covers a processor that waits inside its job (on a
service it calls, say): jobs that fill more than ``wait_share`` of the window by their own wall
time, back to back, ask for a sibling too, as one worker per core always gave them. Workers
are never ended for lack of work: a crawl's pages do not get lighter as it goes, and a worker
that waits costs only its memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ParseDemand"]

# A window long enough to hold a hundred ordinary jobs and short enough that a crawl of
# link-heavy pages asks for its second worker a quarter of a second into parsing (the worker
# then takes ~0.3 s to import). One worker on postgresql-doc-15 stayed alone with windows of
# 0.1 s as of 0.25 s (its CPU share ~0.63), and python3.11-doc's grew with either.
WINDOW_SECONDS = 0.25
# Above this a worker is close to saturated: a job that arrives waits for the one before it.
BUSY_SHARE = 0.85
# Jobs that take this share of the wall time leave a worker no gap, whatever they spend it on.
# One worker on postgresql-doc-15: ~0.5.
WAIT_SHARE = 0.95


@dataclass(slots=True)
class ParseDemand:
    """``most``: the workers the pool may have (``parse_workers``)."""

    most: int
    busy_share: float = BUSY_SHARE
    wait_share: float = WAIT_SHARE
    window: float = WINDOW_SECONDS
    _began: float | None = field(default=None, init=False)
    _spent: float = field(default=0.0, init=False)
    _taken: float = field(default=0.0, init=False)

    def spent(self, cpu_seconds: float, wall_seconds: float = 0.0) -> None:
        """A job's answer came back: its worker spent ``cpu_seconds`` of CPU on it, in
        ``wall_seconds`` from its start to its end."""
        self._spent += cpu_seconds
        self._taken += wall_seconds

    def grow(self, now: float, workers: int) -> bool:
        """Whether to start one more worker at ``now``, ``workers`` running (counting any still
        starting). One at a time: each decision opens a new window, and a worker just started
        counts in the next window's average before it has taken any share of the work."""
        if workers >= self.most:
            return False
        if self._began is None:
            self._began, self._spent, self._taken = now, 0.0, 0.0
            return False
        elapsed = now - self._began
        if elapsed < self.window:
            return False
        busy, taken = self._spent, self._taken
        self._began, self._spent, self._taken = now, 0.0, 0.0
        capacity = elapsed * workers
        return busy > self.busy_share * capacity or taken > self.wait_share * capacity

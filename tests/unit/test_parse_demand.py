"""When the parse pool starts one more worker (crawl/parse_demand.py), on a virtual clock."""

from __future__ import annotations

from crawlspace.crawl.parse_demand import BUSY_SHARE, WINDOW_SECONDS, ParseDemand


def _window(
    demand: ParseDemand, began: float, workers: int, busy: float, taken: float | None = None
) -> bool:
    """A window from ``began``: jobs worth ``busy`` of the workers' time in CPU and ``taken``
    in wall time (``busy``'s, when not given), then the question."""
    jobs = 100
    share = WINDOW_SECONDS * workers / jobs
    for _ in range(jobs):
        demand.spent(busy * share, (busy if taken is None else taken) * share)
    return demand.grow(began + WINDOW_SECONDS, workers)


def test_a_nearly_always_busy_worker_gets_a_second() -> None:
    demand = ParseDemand(most=2)
    assert not demand.grow(0.0, 1)  # the first job opens the first window
    assert _window(demand, 0.0, 1, 0.95)


def test_a_worker_with_room_stays_alone() -> None:
    # Ordinary pages: one worker ~75% busy beside a loop ~80% busy (benchmarks/README.md).
    demand = ParseDemand(most=2)
    demand.grow(0.0, 1)
    for n in range(20):
        assert not _window(demand, n * WINDOW_SECONDS, 1, 0.75)


def test_no_answer_before_a_whole_window() -> None:
    demand = ParseDemand(most=2)
    demand.grow(0.0, 1)
    demand.spent(10.0)  # more CPU than a window holds, but the window is not over
    assert not demand.grow(WINDOW_SECONDS / 2, 1)
    assert demand.grow(WINDOW_SECONDS, 1)


def test_the_share_is_per_running_worker() -> None:
    # Two workers 60% busy each: 1.2 workers' worth of CPU, not a third worker's need.
    demand = ParseDemand(most=4)
    demand.grow(0.0, 2)
    assert not _window(demand, 0.0, 2, 0.6)
    assert _window(demand, WINDOW_SECONDS, 2, BUSY_SHARE + 0.05)


def test_never_past_the_most_and_one_at_a_time() -> None:
    demand = ParseDemand(most=3)
    demand.grow(0.0, 1)
    assert _window(demand, 0.0, 1, 1.0)
    # The same instant again: a new window has just begun, so no second worker yet.
    assert not demand.grow(WINDOW_SECONDS, 2)
    assert _window(demand, WINDOW_SECONDS, 2, 1.0)
    demand.spent(100.0)
    assert not demand.grow(10.0, 3)  # at the most: never more


def test_a_busy_window_after_a_quiet_one_counts_alone() -> None:
    demand = ParseDemand(most=2)
    demand.grow(0.0, 1)
    assert not _window(demand, 0.0, 1, 0.1)
    assert _window(demand, WINDOW_SECONDS, 1, 0.99)


def test_jobs_that_wait_back_to_back_ask_for_a_sibling_too() -> None:
    # A processor waiting on a service inside its job: little CPU, no gap between jobs.
    demand = ParseDemand(most=2)
    demand.grow(0.0, 1)
    assert _window(demand, 0.0, 1, 0.05, taken=0.99)


def test_jobs_that_leave_gaps_do_not() -> None:
    # One worker on ordinary pages: ~0.63 of its time by CPU, ~0.5-0.8 by wall (preempted).
    demand = ParseDemand(most=2)
    demand.grow(0.0, 1)
    assert not _window(demand, 0.0, 1, 0.63, taken=0.8)
    assert not _window(demand, WINDOW_SECONDS, 1, 0.05, taken=0.9)

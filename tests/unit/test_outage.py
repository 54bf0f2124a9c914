"""A host that stops answering, on a virtual clock (frontier/outage.py): its URLs are charged for
the first unanswered request only, the host for the rest, and a host given up fails its queued
URLs without a request for as long as it was probed."""

from __future__ import annotations

from crawlspace.frontier.backoff import BackoffPolicy
from crawlspace.frontier.outage import (
    Outage,
    OutagePolicy,
    answered,
    down,
    failed_fetch,
    read_outage,
)

POLICY = OutagePolicy(max_attempts=3, max_outage_seconds=600.0)
BACKOFF = BackoffPolicy(retry_seconds=2.0, max_seconds=3600.0)


def test_the_first_unanswered_request_is_the_urls_and_begins_the_outage() -> None:
    end = failed_fetch(POLICY, "connect_error", 1, None, 100.0)
    assert (end.state, end.reason, end.charged) == ("queued", "connect_error", True)
    assert read_outage(end.note) == Outage(100.0)
    last = failed_fetch(POLICY, "connect_error", 3, None, 100.0)
    assert (last.state, last.charged) == ("failed", True), "its own last attempt"


def test_later_ones_are_the_hosts_and_never_fail_a_url() -> None:
    outage = Outage(100.0)
    for attempt in (1, 2, 3, 7):
        end = failed_fetch(POLICY, "connect_timeout", attempt, outage, 150.0)
        assert (end.state, end.charged, end.note) == ("queued", False, None)


def test_an_outage_of_35_seconds_gets_a_few_probes_and_loses_nothing() -> None:
    """The issue's host: every connection reset for 35 s. Probes follow the host's backoff; the
    URLs queued on it keep their attempts; the first probe after it answers again is soon."""
    now, streak, outage = 0.0, 0, None
    probes, charged = [], 0
    while True:
        if now >= 35.0:  # it answers again
            break
        probes.append(now)
        end = failed_fetch(POLICY, "connect_error", 1, outage, now)
        assert end.state == "queued"
        charged += end.charged
        outage = read_outage(end.note) if end.note is not None else outage
        wait = BACKOFF.on_failure(0, streak, rand=0.5)
        streak, now = wait.failures, now + wait.wait
    assert probes == [0.0, 2.0, 6.0, 14.0, 30.0]
    assert charged == 1
    assert now - 35.0 < 60.0, "the next request within a minute of its return"
    assert answered(outage) == "", "an answer ends it"
    assert answered(None) is None


def test_an_answer_that_broke_off_is_the_urls_and_ends_the_outage() -> None:
    end = failed_fetch(POLICY, "protocol_error", 2, Outage(100.0), 150.0)
    assert (end.state, end.charged, end.note) == ("queued", True, "")
    end = failed_fetch(POLICY, "read_timeout", 3, None, 150.0)
    assert (end.state, end.charged, end.note) == ("failed", True, None)


def test_an_outage_past_the_limit_gives_the_host_up_for_as_long_again() -> None:
    end = failed_fetch(POLICY, "connect_error", 1, Outage(100.0), 700.0)
    assert (end.state, end.reason, end.charged, end.given_up) == ("failed", "host_down", True, True)
    given_up = read_outage(end.note)
    assert given_up == Outage(100.0, 700.0)
    assert down(POLICY, given_up, 700.0)
    assert down(POLICY, given_up, 1299.0)
    assert not down(POLICY, given_up, 1300.0), "then the next lease probes it again"
    assert not down(POLICY, Outage(100.0), 5000.0), "not given up: probed, never failed unsent"
    assert not down(POLICY, None, 5000.0)
    # Probed again and still unanswered: given up again from then on.
    again = failed_fetch(POLICY, "connect_error", 1, given_up, 1300.0)
    assert (again.reason, read_outage(again.note)) == ("host_down", Outage(100.0, 1300.0))


def test_notes_read_back() -> None:
    assert read_outage(None) is None
    assert read_outage("") is None
    assert read_outage("12.5") == Outage(12.5)
    assert read_outage("12.5 99.0") == Outage(12.5, 99.0)

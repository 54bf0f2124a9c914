"""A host that stops answering is backed off as a host, and its URLs are not charged for it. Pure.

A request is *unanswered* when the server never began an answer: the connection was refused or
reset before a response line, the connect timed out, or the name did not resolve. One such
request may be the URL's own problem; two in a row are the host's. So:

* the first unanswered request after an answer is charged to its URL, as any failed attempt
  (``max_attempts`` ends it), and begins the host's outage;
* every further one while the outage lasts is the host's: the URL goes back to its queue with
  its attempt given back, and the host waits one backoff step (frontier/backoff.py: growing
  from ``retry_delay``), so a host that is down gets one probe per step, not one per URL;
* any answer (a 5xx included: the server is up) ends the outage;
* an outage that has lasted ``max_outage_seconds`` gives the host up: the probe's URL fails as
  ``host_down``, and for as long again the host's other queued URLs fail the same way without a
  request (:func:`down`), so a finite crawl ends instead of probing a dead host forever. The
  next lease after that probes it again.

Failures after an answer began (a reset mid-body, a read timeout) are the URL's: the server is
up. They are charged as any failed attempt, and end an outage as an answer does.

The outage's state is one host note (``OUTAGE_NOTE``), written with the completion like every
host note, so the host's next lease on any worker reads it: ``""`` or absent when the host
answered its last request, ``"SINCE"`` during an outage, ``"SINCE GIVEN_UP_AT"`` once it was
given up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from crawlspace.lifecycle import HOST_DOWN

__all__ = [
    "OUTAGE_NOTE",
    "UNANSWERED_REASONS",
    "FailedFetch",
    "Outage",
    "OutagePolicy",
    "answered",
    "down",
    "failed_fetch",
    "read_outage",
]

OUTAGE_NOTE: Final = "unanswered_since"
# FetchError reasons (errors.py) of a request the server never began to answer.
UNANSWERED_REASONS: Final = frozenset({"connect_error", "connect_timeout", "dns_error"})


@dataclass(frozen=True, slots=True)
class OutagePolicy:
    max_attempts: int = 3
    max_outage_seconds: float = 600.0


@dataclass(frozen=True, slots=True)
class Outage:
    """A host's current run of unanswered requests: when it began, and when it was given up
    (None: not yet)."""

    since: float
    given_up_at: float | None = None


@dataclass(frozen=True, slots=True)
class FailedFetch:
    """How a failed request ends its lease: the URL's next state and reason, whether the
    attempt counts against ``max_attempts``, the host's new outage note (None: unchanged), and
    whether the host was given up: then its next lease comes after the politeness gap alone,
    not after a backoff step, so its queued URLs fail at once (:func:`down`)."""

    state: str
    reason: str
    charged: bool
    note: str | None
    given_up: bool = False


def read_outage(note: str | None) -> Outage | None:
    """The host's outage from its note (None: it answered its last request)."""
    if not note:
        return None
    since, _, given_up = note.partition(" ")
    return Outage(float(since), float(given_up) if given_up else None)


def _note(outage: Outage) -> str:
    if outage.given_up_at is None:
        return repr(outage.since)
    return f"{outage.since!r} {outage.given_up_at!r}"


def failed_fetch(
    policy: OutagePolicy, reason: str, attempt: int, outage: Outage | None, now: float
) -> FailedFetch:
    """How a request of attempt ``attempt`` that failed at ``now`` for ``reason`` (a FetchError
    reason) ends, during ``outage`` (None: the host answered its previous request)."""
    if reason not in UNANSWERED_REASONS:  # an answer began: the server is up, the URL failed
        state = "queued" if attempt < policy.max_attempts else "failed"
        return FailedFetch(state, reason, True, answered(outage))
    if outage is None:  # maybe the URL's own failure: charged; the host's outage begins
        state = "queued" if attempt < policy.max_attempts else "failed"
        return FailedFetch(state, reason, True, _note(Outage(now)))
    if now - outage.since >= policy.max_outage_seconds:
        return FailedFetch("failed", HOST_DOWN, True, _note(Outage(outage.since, now)), True)
    return FailedFetch("queued", reason, False, None)


def answered(outage: Outage | None) -> str | None:
    """The host's outage note after any answer: emptied if it had one (a note is never
    deleted, only emptied, so every engine writes it the same way), else unchanged (None)."""
    return "" if outage is not None else None


def down(policy: OutagePolicy, outage: Outage | None, now: float) -> bool:
    """Whether the host's queued URLs fail as ``host_down`` without a request: it was given up
    less than ``max_outage_seconds`` ago."""
    if outage is None or outage.given_up_at is None:
        return False
    return now < outage.given_up_at + policy.max_outage_seconds

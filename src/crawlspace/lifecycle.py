"""The URL lifecycle as one table (in the manner of h11's ``_state.py``).

Every frontier backend moves URLs through these states and checks each move here, so a bug that
would, say, complete a URL that was never leased fails loudly instead of corrupting the crawl.
"""

from __future__ import annotations

from enum import StrEnum


class UrlState(StrEnum):
    QUEUED = "queued"
    LEASED = "leased"
    FETCHED = "fetched"
    REDIRECTED = "redirected"
    EXCLUDED = "excluded"
    FAILED = "failed"
    # A revisit answered 304 (RFC 9110 §15.4.5): the stored copy is current, no body was stored.
    NOT_MODIFIED = "not_modified"


# A URL enters as queued (or excluded, when a budget or rule rejects it at admission).
# leased -> queued is a retry, a release at shutdown, or an expired lease.
TRANSITIONS: dict[UrlState, frozenset[UrlState]] = {
    UrlState.QUEUED: frozenset({UrlState.LEASED, UrlState.EXCLUDED}),
    UrlState.LEASED: frozenset(
        {
            UrlState.QUEUED,
            UrlState.FETCHED,
            UrlState.REDIRECTED,
            UrlState.EXCLUDED,
            UrlState.FAILED,
            UrlState.NOT_MODIFIED,
        }
    ),
    # Terminal for the visit. Only the revisit scheduler reopens a visit (REVISITS below): a new
    # visit is a new version, so a completion can never move a finished URL back to the queue.
    UrlState.FETCHED: frozenset(),
    UrlState.NOT_MODIFIED: frozenset(),
    UrlState.REDIRECTED: frozenset(),
    UrlState.EXCLUDED: frozenset(),
    UrlState.FAILED: frozenset(),
}

TERMINAL_STATES: frozenset[UrlState] = frozenset(s for s, nxt in TRANSITIONS.items() if not nxt)

# The same table keyed by plain strings: check_transition runs on every lease and completion, and
# a dict lookup is several times cheaper than constructing the enum from a string.
_ALLOWED: dict[str, frozenset[str]] = {
    old.value: frozenset(new.value for new in nxt) for old, nxt in TRANSITIONS.items()
}


# The one way out of a terminal state: a due revisit (store/sqlite/revisit.py promote_due) queues
# the URL again with its version bumped first. Tombstones (fetched, reason "gone") and failed
# URLs (retries exhausted: servers and networks do recover) are revisited too, rarely;
# redirected and excluded URLs never are (the target, or the rule, is what gets revisited).
REVISITS: dict[UrlState, frozenset[UrlState]] = {
    UrlState.FETCHED: frozenset({UrlState.QUEUED}),
    UrlState.NOT_MODIFIED: frozenset({UrlState.QUEUED}),
    UrlState.FAILED: frozenset({UrlState.QUEUED}),
}
REVISITABLE: tuple[str, ...] = tuple(s.value for s in REVISITS)


# The one way out of an exclusion: a URL excluded by its host's robots.txt that a refetched
# robots.txt allows is queued again as a new visit, version bumped (crawl/leases.py asks, each
# store applies it to URLs still excluded for a robots reason only).
REEVALUATIONS: dict[UrlState, frozenset[UrlState]] = {
    UrlState.EXCLUDED: frozenset({UrlState.QUEUED})
}


class IllegalTransition(ValueError):
    """A URL was asked to move between two states the lifecycle table does not connect."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(f"illegal URL state transition: {old!r} -> {new!r}")
        self.old = old
        self.new = new


def check_transition(old: str, new: str) -> None:
    """Raise IllegalTransition unless ``old -> new`` is in the table (unknown names are illegal)."""
    allowed = _ALLOWED.get(old)
    if allowed is None or new not in allowed:
        raise IllegalTransition(old, new)


def check_revisit(old: str) -> None:
    """Raise IllegalTransition unless a URL in state ``old`` may be queued again for a revisit."""
    if old not in REVISITABLE:
        raise IllegalTransition(old, UrlState.QUEUED.value)


def check_reevaluation(old: str) -> None:
    """Raise IllegalTransition unless a robots re-evaluation may queue a URL in state ``old``."""
    if old not in _REEVALUABLE:
        raise IllegalTransition(old, UrlState.QUEUED.value)


_REEVALUABLE = frozenset(s.value for s in REEVALUATIONS)

# The exclusions a host's next robots.txt re-evaluates (RFC 9309 §2.4: rules change, and a
# crawler re-reads them): those its robots.txt decided (its rules, or its being unreachable), and
# those the address guard made (errors.py BlockedAddressError), of its robots.txt or of a page:
# addresses move, and a crawl reconfigured to allow a network lifts them at once
# (Frontier.lift_exclusion).
ROBOTS_EXCLUDED = "robots"
ROBOTS_UNAVAILABLE = "robots_unavailable"
BLOCKED_ADDRESS = "blocked_address"
ROBOTS_EXCLUSIONS = frozenset({ROBOTS_EXCLUDED, ROBOTS_UNAVAILABLE, BLOCKED_ADDRESS})

# Why a URL failed without a request of its own: its host stopped answering for longer than
# max_outage_seconds (frontier/outage.py). Revisited as a failure (revisit_failed_interval).
HOST_DOWN = "host_down"

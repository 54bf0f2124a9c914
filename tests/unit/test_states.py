from __future__ import annotations

import itertools

import pytest

from crawlspace.lifecycle import (
    TERMINAL_STATES,
    TRANSITIONS,
    IllegalTransition,
    UrlState,
    check_revisit,
    check_transition,
)

LEGAL = [
    ("queued", "leased"),
    ("queued", "excluded"),
    ("leased", "queued"),
    ("leased", "fetched"),
    ("leased", "redirected"),
    ("leased", "excluded"),
    ("leased", "failed"),
    ("leased", "not_modified"),
]


@pytest.mark.parametrize(("old", "new"), LEGAL)
def test_legal_transitions_pass(old: str, new: str) -> None:
    check_transition(old, new)
    check_transition(UrlState(old), UrlState(new))


def test_every_other_pair_is_illegal_and_named() -> None:
    states = [s.value for s in UrlState]
    illegal = [p for p in itertools.product(states, states) if p not in LEGAL]
    assert len(illegal) == len(states) ** 2 - len(LEGAL)
    for old, new in illegal:
        with pytest.raises(IllegalTransition) as info:
            check_transition(old, new)
        assert repr(old) in str(info.value)
        assert repr(new) in str(info.value)
        assert (info.value.old, info.value.new) == (old, new)


def test_illegal_transition_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="'fetched' -> 'queued'"):
        check_transition("fetched", "queued")


@pytest.mark.parametrize(("old", "new"), [("queued", "bogus"), ("bogus", "queued"), ("", "")])
def test_unknown_states_are_illegal(old: str, new: str) -> None:
    with pytest.raises(IllegalTransition, match="illegal URL state transition"):
        check_transition(old, new)


def test_terminal_states() -> None:
    assert {
        UrlState.FETCHED,
        UrlState.REDIRECTED,
        UrlState.EXCLUDED,
        UrlState.FAILED,
        UrlState.NOT_MODIFIED,
    } == TERMINAL_STATES
    assert set(TRANSITIONS) == set(UrlState)
    assert all(TRANSITIONS[s] == frozenset() for s in TERMINAL_STATES)


def test_states_compare_as_strings() -> None:
    assert isinstance(UrlState.QUEUED, str)
    assert {"queued": 1}[UrlState.QUEUED] == 1  # backends may store and look up plain strings
    assert str(UrlState.LEASED) == "leased"


def test_only_revisits_reopen_a_finished_visit() -> None:
    check_revisit("fetched")
    check_revisit("not_modified")
    check_revisit("failed")
    for old in ("queued", "leased", "redirected", "excluded", "bogus"):
        with pytest.raises(IllegalTransition, match="-> 'queued'"):
            check_revisit(old)

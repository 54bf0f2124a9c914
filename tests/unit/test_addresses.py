"""The per-address token rule on a virtual clock (limits.py)."""

from __future__ import annotations

import pytest

from crawlspace.limits import BUSY_RETRY, AddressPolicy
from crawlspace.store.memory import addresses
from crawlspace.store.memory.addresses import AddressTokens


def test_busy_retries_shortly_and_a_gap_retries_at_its_end() -> None:
    policy = AddressPolicy(max_in_flight=1, min_gap=0.0)
    assert policy.retry_at(10.0, float("-inf"), busy=True) == 10.0 + BUSY_RETRY
    assert policy.retry_at(10.0, 30.0, busy=True) == 30.0  # busy, and the gap ends later
    assert policy.retry_at(10.0, 12.0, busy=False) == 12.0


def test_tokens_count_holders_and_the_gap_follows_the_last_end() -> None:
    tokens = AddressTokens(AddressPolicy(max_in_flight=2, min_gap=1.0))
    assert tokens.take("a", "L1", 0.0, 60.0) is None
    assert tokens.take("a", "L2", 0.0, 60.0) is None
    assert tokens.in_flight("a") == 2
    assert tokens.take("a", "L3", 0.0, 60.0) == pytest.approx(BUSY_RETRY)
    tokens.give("a", "L2", 5.0)
    tokens.give("a", "L1", 4.0)  # an earlier end never shortens the gap
    assert tokens.take("a", "L3", 5.5, 60.0) == 6.0
    assert tokens.take("a", "L3", 6.0, 60.0) is None


def test_idle_addresses_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(addresses, "_SWEEP_EVERY", 10)
    tokens = AddressTokens(AddressPolicy(max_in_flight=1, min_gap=0.5))
    for i in range(100):
        assert tokens.take(f"10.0.0.{i}", f"L{i}", float(i), float(i) + 60.0) is None
        tokens.give(f"10.0.0.{i}", f"L{i}", float(i))
    assert len(tokens._addresses) <= 10  # memory does not grow with the addresses seen
    assert tokens.take("10.0.0.99", "L", 99.2, 200.0) == 99.5  # a live gap is kept

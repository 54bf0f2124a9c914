"""Host allowances (frontier/allowance.py): the slowdown a discovery window's wasted share gives."""

from __future__ import annotations

import pytest

from crawlspace.bands import REVISIT_BAND
from crawlspace.frontier.allowance import AllowancePolicy
from crawlspace.frontier.budgets import DiscoveryWindow
from crawlspace.frontier.priority import url_priority

ORDINARY = url_priority(2)  # a page two links deep
SEED = url_priority(0)


def waste(share: float | None) -> DiscoveryWindow:
    return DiscoveryWindow(last_waste=share)


@pytest.mark.parametrize(
    ("share", "slowdown"), [(None, 1.0), (0.0, 1.0), (0.5, 2.0), (0.75, 4.0), (1.0, 4.0)]
)
def test_a_hosts_wasted_share_slows_it_within_the_cap(share: float | None, slowdown: float) -> None:
    assert AllowancePolicy(4.0).slowdown(waste(share), ORDINARY) == pytest.approx(slowdown)


def test_important_pages_and_a_switched_off_policy_are_never_slowed() -> None:
    policy = AllowancePolicy(4.0)
    assert policy.slowdown(waste(0.9), SEED) == 1.0
    assert policy.slowdown(waste(0.9), SEED - REVISIT_BAND) == 1.0  # a seed's revisit
    assert policy.slowdown(waste(0.9), ORDINARY - REVISIT_BAND) == 4.0
    assert policy.slowdown(waste(0.9), None) == 4.0
    assert AllowancePolicy(1.0).slowdown(waste(0.9), ORDINARY) == 1.0

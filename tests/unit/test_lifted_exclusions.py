"""Which exclusions a reconfigured crawl lifts (crawl/settings.py lifted_exclusions): pure."""

from __future__ import annotations

from crawlspace.crawl.settings import SettingChange, lifted_exclusions
from crawlspace.lifecycle import BLOCKED_ADDRESS


def test_a_network_opened_lifts_the_address_guards_refusals() -> None:
    opened = SettingChange("allow_nets", (), ("127.0.0.0/8",))
    assert lifted_exclusions([opened]) == {BLOCKED_ADDRESS}
    widened = SettingChange("allow_nets", ("10.0.0.0/8",), ("10.0.0.0/8", "127.0.0.0/8"))
    assert lifted_exclusions([SettingChange("min_delay", 1.0, 2.0), widened]) == {BLOCKED_ADDRESS}


def test_a_network_closed_or_another_setting_lifts_nothing() -> None:
    closed = SettingChange("allow_nets", ("10.0.0.0/8", "127.0.0.0/8"), ("127.0.0.0/8",))
    assert lifted_exclusions([closed]) == frozenset()
    assert lifted_exclusions([SettingChange("scope", "host", "domain")]) == frozenset()
    assert lifted_exclusions([]) == frozenset()

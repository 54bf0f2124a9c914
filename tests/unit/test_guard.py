"""AddressGuard decisions. Pure: nothing here opens a socket, least of all to the public IPs."""

from __future__ import annotations

import pytest

from crawlspace.address_guard import AddressGuard


@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link_local"),
        ("100.100.100.200", "metadata"),
        ("::1", "loopback"),
        ("[::1]", "loopback"),
        ("fe80::1", "link_local"),
        ("[fe80::1]", "link_local"),
        ("fe80::1%eth0", "link_local"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("fd00:ec2::254", "metadata"),
        ("fd12:3456::1", "private"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "metadata"),
        ("::10.0.0.1", "private"),  # IPv4-compatible
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("2002:a00:1::1", "private"),  # 6to4 of 10.0.0.1
        ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"),  # Teredo client 10.0.0.1
        ("100.64.0.1", "private"),
        ("100.127.255.254", "private"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.1", "reserved"),
        ("198.18.0.1", "reserved"),
        ("2001:db8::1", "reserved"),
        ("100::1", "reserved"),
        ("4000::1", "reserved"),  # outside 2000::/3 global unicast
        ("not-an-ip", "not_global"),
        ("", "not_global"),
    ],
)
def test_refuses_non_global(ip: str, reason: str) -> None:
    assert AddressGuard(()).check(ip) == reason


@pytest.mark.parametrize(
    "ip",
    [
        "93.184.216.34",
        "2606:4700::1",
        "[2606:4700::1]",
        "8.8.8.8",
        "::ffff:93.184.216.34",
        "2002:5db8:d822::1",  # 6to4 of a public address
        "100.128.0.1",  # just past CGNAT
        "172.32.0.1",  # just past 172.16/12
    ],
)
def test_allows_global(ip: str) -> None:
    assert AddressGuard(()).check(ip) is None


def test_allow_nets_opt_in() -> None:
    guard = AddressGuard(["127.0.0.0/8", "::1/128", "10.1.0.0/16"])
    assert guard.check("127.0.0.1") is None
    assert guard.check("127.3.2.1") is None
    assert guard.check("::1") is None
    assert guard.check("10.1.2.3") is None
    assert guard.check("::ffff:127.0.0.1") is None  # judged by the embedded address
    assert guard.check("10.2.0.1") == "private"
    assert guard.check("192.168.0.1") == "private"
    assert guard.check("169.254.169.254") == "metadata"
    assert guard.allows("127.0.0.1")
    assert guard.allow_nets == ("127.0.0.0/8", "::1/128", "10.1.0.0/16")


def test_allow_nets_non_strict_cidr() -> None:
    # Host bits set, as users type them: treated as the enclosing network.
    assert AddressGuard(["192.168.1.7/24"]).check("192.168.1.200") is None


def test_metadata_can_be_opted_in_explicitly() -> None:
    assert AddressGuard(["169.254.169.254/32"]).check("169.254.169.254") is None


def test_cached_answers_are_stable() -> None:
    guard = AddressGuard(())
    first = [guard.check("10.0.0.1") for _ in range(3)]
    assert first == ["private"] * 3
    assert guard.check("93.184.216.34") is None

"""Ready-made URL filters for ``Crawler(filters=[...])``: each maps a normalized URL to ``None``
(keep) or a short reason slug (drop, counted under that reason)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from crawlspace.discovery.links import UrlFilter
from crawlspace.urls import host_of


def domain_filter(domains: Iterable[str], *, reason: str = "filter_domain") -> UrlFilter:
    """Keep URLs whose host is one of ``domains`` or a subdomain of one."""
    suffixes = tuple(d.lower().lstrip(".") for d in domains)

    def check(url: str) -> str | None:
        host = host_of(url)
        if any(host == d or host.endswith("." + d) for d in suffixes):
            return None
        return reason

    return check


def prefix_filter(prefixes: Iterable[str], *, reason: str = "filter_prefix") -> UrlFilter:
    """Keep URLs that start with one of ``prefixes`` (compare against normalized URLs)."""
    kept = tuple(prefixes)
    return lambda url: None if url.startswith(kept) else reason


def regex_filter(pattern: str, *, exclude: bool = True, reason: str = "filter_regex") -> UrlFilter:
    """Drop URLs matching ``pattern`` (or, with ``exclude=False``, keep only those)."""
    compiled = re.compile(pattern)

    def check(url: str) -> str | None:
        matched = compiled.search(url) is not None
        return reason if matched == exclude else None

    return check

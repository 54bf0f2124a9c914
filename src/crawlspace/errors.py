"""The exception tree. Every error raised to a user is a CrawlspaceError with a helpful message."""

from __future__ import annotations


class CrawlspaceError(Exception):
    """Base class of every error crawlspace raises on purpose."""


class ConfigError(CrawlspaceError):
    """A setting, flag or config file value is invalid; the message names it and says what to do."""


class OutputDirError(CrawlspaceError):
    """The output directory cannot be used (locked by another crawl, read-only, not a directory)."""


class StoreError(CrawlspaceError):
    """The metadata store is unusable (corrupt, wrong schema version, disk full)."""


class StoreIOError(StoreError):
    """An engine could not read or write (a full or failing disk, a Redis that stayed
    unreachable past its retries). Each engine maps its own errors to this one, so the crawl
    handles every engine's alike; committed state is intact and the same command resumes once
    the cause is fixed."""


class ParseBudgetError(CrawlspaceError):
    """A page's parse used up its CPU budget in a parse worker (``parse_cpu_seconds``): a
    hostile or pathological page. The page is kept as fetched, without its text or links."""

    reason = "parse_budget"


class ParseMemoryError(ParseBudgetError):
    """A page's parse needed more memory than a parse worker may use (``parse_memory_mb``);
    the worker is replaced."""

    reason = "parse_memory"


class ParseCrashedError(ParseBudgetError):
    """The parse worker process died while it parsed the page (a crash, or killed for its
    memory); it is replaced, and the page is kept as fetched without its text or links."""

    reason = "parse_crashed"


class FetchError(CrawlspaceError):
    """A fetch failed before a complete HTTP response arrived. ``reason`` is a short stable slug."""

    reason = "fetch_error"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class BlockedAddressError(FetchError):
    """The target resolved to an address the safety policy refuses (private, loopback, metadata)."""

    reason = "blocked_address"


class DnsError(FetchError):
    reason = "dns_error"


class ConnectError(FetchError):
    reason = "connect_error"


class FetchTimeoutError(FetchError):
    reason = "timeout"


class ProtocolError(FetchError):
    """The peer spoke broken HTTP, reset the connection mid-body, or sent an undecodable body."""

    reason = "protocol_error"

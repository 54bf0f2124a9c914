"""What a run of the crawl says when it ends (`Crawler.run`, the CLI's summary)."""

from __future__ import annotations

from dataclasses import dataclass, field

from crawlspace.crawl.leases import LeaseTally

__all__ = ["CrawlSummary"]


@dataclass
class CrawlSummary:
    stop_reason: str
    pages: int = 0
    robots_fetches: int = 0
    errors: int = 0
    elapsed: float = 0.0
    out_dir: str = ""
    error: str | None = None
    # This run's bytes, visits not sent because their lease would have expired mid-fetch, and
    # leases given back because their server's address was busy.
    counts: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of_run(
        cls, stop_reason: str, tally: LeaseTally, elapsed: float, out_dir: str
    ) -> CrawlSummary:
        """The summary of a run whose leases came to ``tally``."""
        return cls(
            stop_reason=stop_reason,
            error=tally.fatal_error,
            pages=tally.pages_done,
            robots_fetches=tally.robots_done,
            errors=tally.errors,
            elapsed=elapsed,
            out_dir=out_dir,
            counts={
                "bytes": tally.bytes_done,
                "leases_too_late": tally.leases_too_late,
                "address_waits": tally.address_waits,
            },
        )

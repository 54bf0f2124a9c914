"""The operator's views of a crawl: a live dashboard (`crawlspace serve`) and an HTML report."""

from __future__ import annotations

from pathlib import Path

from crawlspace.dashboard.data import snapshot
from crawlspace.dashboard.page import report_page


def write_report(out_dir: Path | str, out_file: Path | str) -> Path:
    """`crawlspace report DIR --out FILE`: one self-contained HTML file (no network requests)."""
    path = Path(out_file)
    path.write_text(report_page(snapshot(out_dir)), encoding="utf-8")
    return path


__all__ = ["snapshot", "write_report"]

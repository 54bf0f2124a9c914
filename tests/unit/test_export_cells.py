"""Exports carry the sites' own text (a canonical href, an ETag, a Content-Type): a spreadsheet
must not run it as a formula, and a terminal must not act on its escape sequences."""

from __future__ import annotations

import csv
import io
import json

from crawlspace.ops.export import write_records

HOSTILE = {
    "canonical": '=HYPERLINK("http://evil.example/?x","click")',
    "etag": "@SUM(1+1)*cmd|' /C calc'!A0",
    "content_type": "-2+3+cmd|' /C calc'!A0",
    "title": "\x1b]0;PWNED\x07\x1b[2Jred\x9b",
    "status": 200,
    "plain": "text/html",
}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_csv_cells_never_start_a_formula() -> None:
    out = io.StringIO()
    assert write_records([HOSTILE], "csv", out) == 1
    (row,) = csv.DictReader(io.StringIO(out.getvalue()))
    assert row["canonical"] == "'" + HOSTILE["canonical"]
    assert row["etag"] == "'" + HOSTILE["etag"]
    assert row["content_type"] == "'" + HOSTILE["content_type"]
    assert row["plain"] == "text/html"
    assert row["status"] == "200"
    assert row["title"] == HOSTILE["title"]  # a file keeps the text as it was


def test_a_terminal_gets_no_control_characters() -> None:
    shown = {}
    for fmt in ("csv", "jsonl"):
        out = Terminal()
        write_records([HOSTILE], fmt, out)
        shown[fmt] = out.getvalue()
        assert not any(0x00 <= ord(c) < 0x20 and c not in "\r\n" for c in shown[fmt]), fmt
        assert not any(0x7F <= ord(c) <= 0x9F for c in shown[fmt]), fmt
    # JSON Lines stays exact: escaped, not changed.
    assert shown["jsonl"].isascii()
    assert json.loads(shown["jsonl"])["title"] == HOSTILE["title"]

"""The dashboard's one HTML page, either linking its bundled assets (served) or inlining them
(a self-contained report that makes no network request)."""

from __future__ import annotations

import html
import json
from importlib.resources import files
from typing import Any

# Bundled, never fetched from a CDN: the page works offline. uPlot 1.6.32 (MIT, see
# static/uPlot.LICENSE), from the npm registry.
SCRIPTS = ("uPlot.iife.min.js", "dashboard.js")
STYLES = ("uPlot.min.css", "dashboard.css")
ASSETS = frozenset((*SCRIPTS, *STYLES))


def asset(name: str) -> str:
    if name not in ASSETS:
        raise KeyError(name)
    return files("crawlspace.dashboard").joinpath("static", name).read_text(encoding="utf-8")


def _template() -> str:
    return files("crawlspace.dashboard").joinpath("static", "page.html").read_text(encoding="utf-8")


def served_page(token: str | None = None) -> str:
    """The page the dashboard serves; ``token`` (when it steers a crawl) goes in a meta tag the
    page's script sends back with each command."""
    head = "".join(f'<link rel="stylesheet" href="static/{n}">' for n in STYLES)
    if token is not None:
        head += f'<meta name="crawlspace-token" content="{html.escape(token)}">'
    scripts = "".join(f'<script src="static/{n}"></script>' for n in SCRIPTS)
    return _template().replace("<!--HEAD-->", head).replace("<!--SCRIPTS-->", scripts)


def _inline_script(text: str) -> str:
    # "</script" inside a script would end it early (HTML §13.2.6.4.4 script data state).
    return "<script>" + text.replace("</script", "<\\/script") + "</script>"


def report_page(snapshot: dict[str, Any]) -> str:
    """A standalone page with the snapshot embedded as JSON."""
    head = "".join(f"<style>{asset(n)}</style>" for n in STYLES)
    data = json.dumps(snapshot, ensure_ascii=False).replace("<", "\\u003c")
    scripts = _inline_script(f"window.CRAWLSPACE_SNAPSHOT = {data};") + "".join(
        _inline_script(asset(n)) for n in SCRIPTS
    )
    return _template().replace("<!--HEAD-->", head).replace("<!--SCRIPTS-->", scripts)

"""The frontier priority of a URL (lower is leased first within its host). Pure.

``priority = 10 * depth + round(10 * (1 - p))``, where ``p`` is the URL's sitemap ``<priority>``
(0.0 to 1.0) or the protocol's default 0.5 when the URL has none (every plain link). So:

* breadth-first order is kept: a shallower URL is never behind a deeper one (the sitemap term
  spans 0..10, a depth step is 10; a tie goes to the URL discovered first);
* within one depth, a page its site ranks higher in its sitemap is fetched earlier, and a plain
  link ranks like a sitemap URL of default priority. sitemaps.org says priority is relative within
  one site only, which is exactly the scope of a per-host queue.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SITEMAP_PRIORITY", "url_priority"]

DEFAULT_SITEMAP_PRIORITY = 0.5  # sitemaps.org: "The default priority of a page is 0.5."
DEPTH_WEIGHT = 10


def url_priority(depth: int, sitemap_priority: float | None = None) -> int:
    p = DEFAULT_SITEMAP_PRIORITY if sitemap_priority is None else sitemap_priority
    p = min(max(p, 0.0), 1.0)
    return DEPTH_WEIGHT * depth + round(DEPTH_WEIGHT * (1.0 - p))

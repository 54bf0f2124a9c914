"""Policy normalization: crawler choices applied after the safe RFC 3986 normalization (pure).

Unlike ``crawlspace.urls`` (which only merges spellings every server must treat alike), these
rules can merge URLs a site treats differently, so each is a documented, switchable setting:

- ``strip_params`` (default: tracking and session identifiers). Names match case-insensitively;
  a trailing ``*`` matches a prefix (``utm_*``). Session names that appear as path parameters
  (``/a;jsessionid=0A1B?x=1``, the Servlet URL-rewriting form) are stripped there too.
- ``sort_query_hosts`` (default: none). Query parameters are sorted by name (stable, so repeated
  names keep their relative order) only on these hosts: order has meaning on some sites.
  ``example.com`` matches that host only, ``.example.com`` the domain and every subdomain.
- ``fold_index_html`` (off): ``/dir/index.html`` and ``/dir/index.htm`` become ``/dir/``.
- ``fold_trailing_slash`` (off): ``/dir/`` becomes ``/dir`` (never the root ``/``).

Input must already be the output of ``crawlspace.urls.normalize``; output is a fixed point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from crawlspace.urls import host_of

__all__ = ["DEFAULT_STRIP_PARAMS", "UrlPolicy"]

DEFAULT_STRIP_PARAMS: Final[tuple[str, ...]] = (
    "utm_*",  # Google Analytics campaign parameters
    "fbclid",  # Facebook click id
    "gclid",  # Google Ads click id
    "dclid",
    "msclkid",  # Microsoft Ads click id
    "mc_eid",  # Mailchimp
    "_hsenc",  # HubSpot
    "sessionid",
    "phpsessid",  # PHP session.use_trans_sid
    "jsessionid",  # Servlet URL rewriting (also as ';jsessionid=' path parameter)
    "sid",
)
_INDEX_FILES: Final = ("/index.html", "/index.htm")


@dataclass(frozen=True, slots=True)
class UrlPolicy:
    strip_params: tuple[str, ...] = DEFAULT_STRIP_PARAMS
    sort_query_hosts: tuple[str, ...] = ()
    fold_index_html: bool = False
    fold_trailing_slash: bool = False
    _exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _path_markers: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _query_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _sort_exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _sort_suffixes: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [n.lower() for n in self.strip_params if n]
        exact = frozenset(n for n in names if not n.endswith("*"))
        prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
        hosts = [h.lower() for h in self.sort_query_hosts if h]
        set_ = object.__setattr__  # frozen dataclass: derived lookup tables are set once here
        set_(self, "_exact", exact)
        set_(self, "_prefixes", prefixes)
        set_(self, "_path_markers", tuple(f";{n}=" for n in sorted(exact)))
        # One regex search tells whether a query holds any parameter to strip, so a query with
        # nothing to strip costs about as much as a str.find (the common case).
        alternatives = [re.escape(n) for n in sorted(exact)]
        alternatives += [re.escape(n) + "[^&=]*" for n in prefixes]
        pattern = f"(?:^|&)(?:{'|'.join(alternatives)})(?:=|&|$)"
        set_(self, "_query_re", re.compile(pattern, re.IGNORECASE) if alternatives else None)
        set_(self, "_sort_exact", frozenset(h for h in hosts if not h.startswith(".")))
        set_(self, "_sort_suffixes", tuple(h for h in hosts if h.startswith(".")))

    def _strip_name(self, name: str) -> bool:
        low = name.lower()
        return low in self._exact or (bool(self._prefixes) and low.startswith(self._prefixes))

    def _sorts(self, url: str) -> bool:
        if not (self._sort_exact or self._sort_suffixes):
            return False
        host = host_of(url)
        return host in self._sort_exact or ("." + host).endswith(self._sort_suffixes)

    def apply(self, url: str) -> str:
        """Apply the policy to a safely normalized http(s) URL."""
        q = url.find("?")
        path_end = len(url) if q == -1 else q
        # The common case (no query, no ';', no folding) costs two str.find calls.
        if self._path_markers and url.find(";", 0, path_end) != -1:
            url, path_end = self._strip_path_params(url, path_end)
        if q != -1:
            query = url[path_end + 1 :]
            strip = self._query_re is not None and self._query_re.search(query) is not None
            if strip or self._sort_exact or self._sort_suffixes:
                url = url[:path_end] + self._query(query, url)
        if self.fold_index_html or self.fold_trailing_slash:
            url = self._fold(url)
        return url

    def _strip_path_params(self, url: str, end: int) -> tuple[str, int]:
        path = url[:end]
        low = path.lower()
        for marker in self._path_markers:
            at = low.find(marker)
            while at != -1:
                # The parameter value runs to the next ';' or '/' (RFC 3986 §3.3 path params).
                stop = len(path)
                for sep in (";", "/"):
                    s = path.find(sep, at + 1)
                    if s != -1:
                        stop = min(stop, s)
                path = path[:at] + path[stop:]
                low = low[:at] + low[stop:]
                at = low.find(marker, at)
        return path + url[end:], len(path)

    def _query(self, query: str, url: str) -> str:
        pairs = query.split("&")
        kept = [p for p in pairs if not self._strip_name(p.partition("=")[0])]
        changed = len(kept) != len(pairs)
        if len(kept) > 1 and self._sorts(url):
            kept.sort(key=lambda p: p.partition("=")[0])
            changed = True
        if not changed:
            return "?" + query
        kept = [p for p in kept if p]  # "a=1&&b=2": empty pairs left by stripping go too
        return "?" + "&".join(kept) if kept else ""

    def _fold(self, url: str) -> str:
        q = url.find("?")
        end = len(url) if q == -1 else q
        path_start = url.find("/", url.find("://") + 3)
        path = url[path_start:end]
        previous = ""
        # Repeat to a fixed point ("/index.html/index.html"); each round shortens the path.
        while path != previous:
            previous = path
            if self.fold_trailing_slash:
                path = path.rstrip("/") or "/"
            if self.fold_index_html:
                for name in _INDEX_FILES:
                    if path.endswith(name):
                        path = path[: -len(name) + 1]
                        break
        return url[:path_start] + path + url[end:]

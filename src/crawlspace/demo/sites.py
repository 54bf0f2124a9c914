"""What a web farm's sites answer: responses, sites (exact routes and a fallback), and the
helpers that build the usual ones (an HTML page, robots.txt, a sitemap, a site of pages).
Served by ``WebFarm`` (webfarm.py)."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

__all__ = [
    "NOT_FOUND",
    "Response",
    "RouteFn",
    "Site",
    "html",
    "html_site",
    "normalize_lookup_path",
    "robots_txt",
    "sitemap_xml",
]

_HTML = "text/html; charset=utf-8"


@dataclass(frozen=True)
class Response:
    """What a site answers. `delay` seconds are slept before responding (a slow host).

    With `compress`, the body is sent gzip-encoded when the client accepts gzip
    (RFC 9110 §12.5.3), as a real server would; otherwise it goes out as identity.
    """

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0
    compress: bool = False


RouteFn = Callable[[str], Response | None]
"""Maps a raw path-with-query to a response, or None for "not mine" (then 404)."""


def html(body: str, status: int = 200, *, delay: float = 0.0, compress: bool = False) -> Response:
    return Response(status, {"Content-Type": _HTML}, body.encode(), delay, compress)


NOT_FOUND = html("<html><body><h1>404 Not Found</h1></body></html>", 404)


def normalize_lookup_path(path_qs: str) -> str:
    """The path a real server would resolve: no query, %-decoded, dot-segments removed.

    RFC 3986 §6.2.2: percent-decoding unreserved characters and removing dot-segments
    do not change which resource is meant, so /%61bout and /About/../about are /about.
    """
    # Not urlsplit: it would read "//a/b" as a network location.
    path = unquote(path_qs.split("?", 1)[0].split("#", 1)[0]) or "/"
    trailing = path.endswith("/") and path != "/"
    resolved = posixpath.normpath(path)
    # normpath keeps a leading "//" (POSIX quirk); a URL path never means that here.
    resolved = "/" + resolved.lstrip("/")
    return resolved + "/" if trailing and resolved != "/" else resolved


class Site:
    """A named host: a dict of exact paths and/or a routing function, default 404.

    Lookup order: exact path-with-query in `routes`, then the normalized path in
    `routes`, then `fallback(path_qs)`, then 404.
    """

    def __init__(
        self,
        name: str,
        routes: Mapping[str, Response] | None = None,
        fallback: RouteFn | None = None,
    ) -> None:
        self.name = name
        self.routes: dict[str, Response] = dict(routes or {})
        self.fallback = fallback

    def respond(self, path_qs: str) -> Response:
        exact = self.routes.get(path_qs)
        if exact is not None:
            return exact
        found = self.routes.get(normalize_lookup_path(path_qs))
        if found is not None:
            return found
        if self.fallback is not None:
            made = self.fallback(path_qs)
            if made is not None:
                return made
        return NOT_FOUND


def robots_txt(text: str) -> Response:
    return Response(200, {"Content-Type": "text/plain; charset=utf-8"}, text.encode())


def sitemap_xml(base_url: str, paths: Iterable[str]) -> Response:
    """A sitemaps.org urlset of absolute URLs under `base_url`."""
    locs = "".join(f"  <url><loc>{base_url.rstrip('/')}{p}</loc></url>\n" for p in paths)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{locs}</urlset>\n"
    )
    return Response(200, {"Content-Type": "application/xml"}, body.encode())


def html_site(
    name: str,
    pages: Mapping[str, str],
    *,
    robots: str | None = None,
    sitemap: tuple[str, Sequence[str]] | None = None,
    extra: Mapping[str, Response] | None = None,
    fallback: RouteFn | None = None,
) -> Site:
    """A site from path -> HTML text; no `robots` means /robots.txt is a 404.

    `sitemap` is (base_url, paths) and is served at /sitemap.xml.
    """
    routes: dict[str, Response] = {path: html(text) for path, text in pages.items()}
    if robots is not None:
        routes["/robots.txt"] = robots_txt(robots)
    if sitemap is not None:
        routes["/sitemap.xml"] = sitemap_xml(*sitemap)
    routes.update(extra or {})
    return Site(name, routes, fallback)

"""A local web where crawler traps live beside real sites of the same URL shapes.

- ``news``: a blog of dated posts (``/2024/05/12/slug.html``) with monthly archives, next to an
  endless calendar (``/calendar/2029/11/18``: previous and next day, month and year, forever).
- ``shop``: a catalog paginated over 40 pages (``/products?category=shoes&page=N``) with finite
  colour filters and a page per product, next to faceted navigation whose links add, change and
  shuffle parameters without end (``/shop?size=m&color=green&page=3``).
- ``docs``: a deep documentation tree (``/docs/guide/a/b/c.html``), next to a loop of relative
  links that any path answers (``/loop/b/a/b/b/a/``), whose segments never repeat often enough
  for the path-repeat rule.

Real pages carry their own text; trap pages are one template with a date, a path or a few
parameters filled in, as real traps are. ``real_paths`` lists every real page for coverage.
"""

from __future__ import annotations

import hashlib
import random
from datetime import date, timedelta

from crawlspace.demo.webfarm import Response, Site, html

__all__ = ["TRAP_PREFIXES", "build_sites", "real_paths"]

NO_ROBOTS = html("", 404)
WORDS = [
    "river",
    "stone",
    "garden",
    "winter",
    "lantern",
    "copper",
    "meadow",
    "harbor",
    "violin",
    "orchard",
    "signal",
    "ledger",
    "thunder",
    "ribbon",
    "canyon",
    "marble",
    "pepper",
    "falcon",
    "compass",
    "velvet",
    "timber",
    "glacier",
    "saddle",
    "prism",
    "quarry",
    "beacon",
    "willow",
    "hammer",
    "crystal",
    "meadowlark",
    "tundra",
    "saffron",
    "cobalt",
    "ember",
    "fjord",
    "mosaic",
    "nectar",
    "obsidian",
    "pylon",
    "quiver",
    "rampart",
    "sextant",
    "tapestry",
    "umber",
    "vessel",
    "wharf",
    "yarrow",
    "zephyr",
]
POSTS = 240
PRODUCTS = 200
PER_PAGE = 5
COLORS = ("red", "blue", "black")
SECTIONS = (
    ("guide", "api", "howto"),
    ("install", "configure", "deploy"),
    ("linux", "macos"),
    ("basics", "advanced"),
)
TRAP_PREFIXES = {"news": "/calendar/", "shop": "/shop", "docs": "/loop/"}


def _prose(seed: str, words: int = 60) -> str:
    """Text of its own for a real page: words drawn by a generator seeded with the page."""
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _page(title: str, body: str, links: list[str], labels: list[str] | None = None) -> Response:
    """An HTML page; each link's text is its label (its last path segment by default)."""
    names = labels or [href.rstrip("/").rsplit("/", 1)[-1] for href in links]
    nav = "".join(f'<li><a href="{h}">{n}</a></li>' for h, n in zip(links, names, strict=True))
    return html(
        f"<html><head><title>{title}</title></head><body><h1>{title}</h1>"
        f"<p>{body}</p><ul>{nav}</ul><footer>About us · Contact · Privacy</footer></body></html>"
    )


# -- news: a blog beside a calendar ----------------------------------------------------------


def _posts() -> list[tuple[date, str]]:
    start = date(2023, 1, 3)
    rng = random.Random(7)
    return [
        (start + timedelta(days=3 * i), "-".join(rng.sample(WORDS, 3)) + f"-{i}")
        for i in range(POSTS)
    ]


def _post_path(day: date, slug: str) -> str:
    return f"/{day.year}/{day.month:02d}/{day.day:02d}/{slug}.html"


def _news_routes() -> dict[str, Response]:
    posts = _posts()
    months: dict[str, list[str]] = {}
    routes: dict[str, Response] = {"/robots.txt": NO_ROBOTS}
    for i, (day, slug) in enumerate(posts):
        path = _post_path(day, slug)
        archive = f"/{day.year}/{day.month:02d}/"
        months.setdefault(archive, []).append(path)
        neighbours = [_post_path(*posts[j]) for j in (i - 1, i + 1) if 0 <= j < len(posts)]
        routes[path] = _page(slug, _prose(path), [archive, *neighbours])
    for archive, paths in months.items():
        titles = [p.rsplit("/", 1)[-1].removesuffix(".html").replace("-", " ") for p in paths]
        routes[archive] = _page(f"Archive {archive}", _prose(archive, 20), paths, titles)
    routes["/"] = _page("News", "Latest news.", [*months, "/calendar/2029/11/18"])
    return routes


def _calendar(path_qs: str) -> Response | None:
    parts = path_qs.strip("/").split("/")
    if (
        parts[0] != "calendar"
        or not 2 <= len(parts) <= 4
        or not all(p.isdigit() for p in parts[1:])
    ):
        return None
    year, month, day = (int(p) for p in [*parts[1:], "1", "1"][:3])
    try:
        when = date(year, month, day)
    except ValueError:
        return html("no such day", 404)
    days = (when - timedelta(days=1), when + timedelta(days=1))
    links = [f"/calendar/{d.year}/{d.month:02d}/{d.day:02d}" for d in days]
    labels = ["Previous day", "Next day"]
    for m, label in ((month - 1, "Previous month"), (month + 1, "Next month")):
        if 1 <= m <= 12:
            links.append(f"/calendar/{year}/{m:02d}")
            labels.append(label)
    links += [f"/calendar/{year - 1}", f"/calendar/{year + 1}"]
    labels += ["Previous year", "Next year"]
    title = f"Calendar {when:%A %d %B %Y}"
    return _page(title, "No events are scheduled for this day. Check back later.", links, labels)


# -- shop: a catalog beside faceted navigation -------------------------------------------------


def _listing(query: str, items: list[int], page: int, pages: int) -> Response:
    links = [f"/product/{i}.html" for i in items]
    numbers = [p for p in range(1, pages + 1) if p != page]
    links += [f"/products?{query}&page={p}" for p in numbers]
    names = " ".join(
        f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} model {i}" for i in items
    )
    labels = [f"{WORDS[i % len(WORDS)]} model {i}" for i in items] + [str(p) for p in numbers]
    return _page(f"Products {query} page {page}", names, links, labels)


def _shop_routes() -> dict[str, Response]:
    routes: dict[str, Response] = {"/robots.txt": NO_ROBOTS}
    pages = PRODUCTS // PER_PAGE  # 40
    for page in range(1, pages + 1):
        items = list(range((page - 1) * PER_PAGE, page * PER_PAGE))
        routes[f"/products?category=shoes&page={page}"] = _listing(
            "category=shoes", items, page, pages
        )
    for color in COLORS:
        items = [i for i in range(PRODUCTS) if COLORS[i % len(COLORS)] == color][:15]
        query = f"category=shoes&color={color}"
        for page in range(1, 4):
            routes[f"/products?{query}&page={page}"] = _listing(
                query, items[(page - 1) * PER_PAGE : page * PER_PAGE], page, 3
            )
    for i in range(PRODUCTS):
        routes[f"/product/{i}.html"] = _page(f"Product {i}", _prose(f"product {i}", 40), [])
    filters = [f"/products?category=shoes&color={c}&page=1" for c in COLORS]
    routes["/"] = _page(
        "Shop", "Welcome.", ["/products?category=shoes&page=1", *filters, "/shop?page=1"]
    )
    return routes


FACETS = {
    "color": ["red", "green", "blue", "white"],
    "size": ["s", "m", "l", "xl"],
    "sort": ["price", "name", "new"],
}


def _facets(path_qs: str) -> Response | None:
    path, _, query = path_qs.partition("?")
    if path != "/shop":
        return None
    params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
    rng = random.Random(query)
    page = int(params.get("page", "1")) if params.get("page", "1").isdigit() else 1
    links, labels = [], []
    for name, values in FACETS.items():
        for value in values:
            changed = {**params, name: value}
            names = list(changed)
            rng.shuffle(names)  # parameters in shuffled order, as some sites write them
            links.append("/shop?" + "&".join(f"{n}={changed[n]}" for n in names))
            labels.append(value)
    for number, label in ((page - 1, "previous page"), (page + 1, "next page")):
        changed = {**params, "page": str(number)}
        links.append("/shop?" + "&".join(f"{n}={v}" for n, v in changed.items()))
        labels.append(label)
    shown = ", ".join(f"{n} {v}" for n, v in sorted(params.items()))
    return _page("Shop", f"No products match {shown}. Try other filters.", links, labels)


# -- docs: a documentation tree beside a loop of relative links -----------------------------------


def _docs_routes() -> dict[str, Response]:
    routes: dict[str, Response] = {"/robots.txt": NO_ROBOTS}

    def node(path: str, depth: int) -> None:
        # Sections named as documentation names them, so no segment repeats down a path.
        names = SECTIONS[depth - 1] if depth <= len(SECTIONS) else ()
        children = [f"{path}{name}/" for name in names]
        routes[path] = _page(f"Docs {path}", _prose(path, 50), children)
        for child in children:
            node(child, depth + 1)

    node("/docs/", 1)
    routes["/"] = _page("Docs", "Documentation.", ["/docs/", "/loop/"])
    return routes


def _loop(path_qs: str) -> Response | None:
    if not path_qs.startswith("/loop/") or "?" in path_qs:
        return None
    return _page("Loop", "This page links to itself under other names.", ["a/", "b/"])


def build_sites() -> dict[str, Site]:
    return {
        "news": Site("news", _news_routes(), _calendar),
        "shop": Site("shop", _shop_routes(), _facets),
        "docs": Site("docs", _docs_routes(), _loop),
    }


def real_paths(sites: dict[str, Site]) -> dict[str, set[str]]:
    """Every real page of each site (its fixed routes, robots.txt aside)."""
    return {name: {p for p in site.routes if p != "/robots.txt"} for name, site in sites.items()}

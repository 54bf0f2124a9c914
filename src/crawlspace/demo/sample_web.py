"""The bundled sample web that `crawlspace demo` crawls: four hosts, ~60 pages.

Served by `WebFarm` on 127.0.0.1 ports and crawled under ``*.demo.test`` names mapped
with --resolve, so every absolute link is built from `base_urls` (the final prefixes,
e.g. "http://www.demo.test:43123"). Each host exercises some crawler duty; `FEATURES`
names the paths involved so tests and the demo report can point at them. Everything is
deterministic: no clocks, no randomness, no str hash().
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence

from crawlspace.demo.sample_prose import PROSE
from crawlspace.demo.webfarm import Response, Site, WebFarm, html, html_site

__all__ = [
    "FEATURES",
    "HOST_TO_SITE",
    "SAMPLE_HOSTS",
    "SEED_PATHS",
    "SITE_NAMES",
    "base_urls_for",
    "build_sample_web",
    "resolve_map",
    "sample_farm",
    "seed_urls",
]

SITE_NAMES = ("www", "blog", "shop", "docs")
SAMPLE_HOSTS = ("www.demo.test", "blog.demo.test", "shop.demo.test", "docs.demo.test")
HOST_TO_SITE: dict[str, str] = dict(zip(SAMPLE_HOSTS, SITE_NAMES, strict=True))
SEED_PATHS: dict[str, tuple[str, ...]] = {"www": ("/",)}
BLOG_CRAWL_DELAY = 1  # seconds; an integer because that is what most parsers accept

# (site, path) of each deliberate feature, for assertions and the demo's narration.
FEATURES: dict[str, tuple[str, str]] = {
    "disallowed": ("www", "/private/secret.html"),
    "allowed_in_disallowed": ("www", "/private/public-note.html"),
    "redirect_from": ("www", "/old-page"),
    "redirect_to": ("www", "/new-page"),
    "broken_link": ("www", "/missing-page"),
    "url_variants_of": ("www", "/about"),
    "trap": ("www", "/calendar/2026/12"),
    "crawl_delay": ("blog", "/robots.txt"),
    "nofollow_page": ("blog", "/comment-policy"),
    "nofollow_target": ("blog", "/comments/spam-1.html"),
    "no_robots": ("shop", "/robots.txt"),
    "noindex": ("shop", "/internal-preview.html"),
    "sitemap": ("docs", "/sitemap.xml"),
    "orphan": ("docs", "/legacy/v1-migration.html"),
    "gzip": ("docs", "/guide/reference"),
    "disallowed_search": ("docs", "/search?q=politeness"),
}

Link = tuple[str, str] | tuple[str, str, str]  # (href, text) or (href, text, rel)


def _prose(site: str, key: str, count: int = 5) -> list[str]:
    """A per-page shuffle keyed by a stable checksum, so pages differ for text hashing."""
    ranked = sorted(PROSE[site], key=lambda s: zlib.crc32(f"{key}|{s}".encode()))
    return ranked[:count]


def _rel(link: Link) -> str:
    return f' rel="{link[2]}"' if len(link) == 3 else ""


def _page(title: str, paras: Sequence[str], links: Sequence[Link], head: str = "") -> str:
    items = "\n".join(f'<li><a href="{link[0]}"{_rel(link)}>{link[1]}</a></li>' for link in links)
    body = "\n".join(f"<p>{p}</p>" for p in paras)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title>{head}</head>\n<body><h1>{title}</h1>\n{body}\n"
        f"<ul>\n{items}\n</ul></body></html>\n"
    )


def _links(spec: str, bases: Mapping[str, str]) -> list[Link]:
    """Parse "href text; href text @rel" ({www}, {blog}... expand to base URLs)."""
    out: list[Link] = []
    for item in filter(None, (part.strip() for part in spec.split(";"))):
        href, _, rest = item.format_map(bases).partition(" ")
        text, _, rel = rest.partition(" @")
        out.append((href, text, rel) if rel else (href, text))
    return out


# Per site: (path, title, first paragraph, links). PROSE (sample_prose.py) fills each page.
_Table = tuple[tuple[str, str, str, str], ...]
_WWW: _Table = (
    (
        "/",
        "Harborlight Cooperative",
        "Welcome to Harborlight, a cooperative for web archiving.",
        "/about About us; /about?utm_source=homepage About us (tracked); "
        "/about?ref=home About us (referral, a distinct URL: an exact duplicate); "
        "/About/../about About us (dotted); /%61bout About us (encoded); "
        "{www}/about#team Our team; "
        "/news News; /careers Careers; /contact Contact; /old-page Our old page; "
        "/missing-page A page that no longer exists; /private/secret.html Members only; "
        "/private/public-note.html A public note; /calendar/2026/12 Events calendar; "
        "{blog}/ Our blog; {shop}/ Our shop; {docs}/ Documentation",
    ),
    (
        "/about",
        "About Harborlight",
        "Founded by three archivists and a network engineer.",
        "/team The team; / Home; {blog}/archive Blog archive",
    ),
    (
        "/team",
        "Our team",
        "Twelve members, two apprentices, one cat.",
        "/about About; /careers Join us",
    ),
    (
        "/contact",
        "Contact",
        "Write to us, or call in on a Thursday evening.",
        "mailto:hello@demo.test Email us; javascript:void(0) Open chat; /privacy Privacy",
    ),
    (
        "/news",
        "News",
        "What the cooperative has been up to this year.",
        "/news/launch Launch; /news/partners New partners; / Home",
    ),
    (
        "/news/launch",
        "We launched",
        "Our archive service opened to all members.",
        "/news News; {blog}/posts/why-polite.html Why polite?",
    ),
    (
        "/news/partners",
        "New partners",
        "Two county libraries joined this spring.",
        "/news News; {shop}/category/books Books from partners",
    ),
    (
        "/careers",
        "Careers",
        "We hire slowly and train thoroughly.",
        "/careers/engineer Crawler engineer; /careers/designer Designer",
    ),
    (
        "/careers/engineer",
        "Crawler engineer",
        "Help us fetch less, better.",
        "/careers All roles; {docs}/guide/politeness Read our guide",
    ),
    ("/careers/designer", "Designer", "Make archives pleasant to browse.", "/careers All roles"),
    ("/new-page", "The new page", "This page replaced the old one last year.", "/ Home"),
    ("/privacy", "Privacy", "We keep server logs for seven days.", "/contact Contact"),
    ("/private/secret.html", "Members only", "Robots rules ask crawlers to stay out.", "/ Home"),
    ("/private/public-note.html", "A public note", "An Allow rule opens this one.", "/ Home"),
)
_POSTS = (
    ("why-polite", "Why polite crawling matters", "politeness"),
    ("frontier-notes", "Notes on a Mercator frontier", "configuration"),
    ("robots-edge-cases", "Robots.txt edge cases", "robots"),
    ("dedup-urls", "Deduplicating URLs", "getting-started"),
    ("sitemaps", "Sitemaps as hints", "robots"),
    ("traps", "Calendars and other traps", "politeness"),
    ("compression", "Compression on the wire", "reference"),
    ("warc-first", "Write the WARC first", "configuration"),
    ("redirects", "Following redirects", "getting-started"),
    ("diagrams", "A season of diagrams", "reference"),
)
_ALL_POSTS = "; ".join(f"/posts/{slug}.html {title}" for slug, title, _ in _POSTS)
_BLOG: _Table = (
    (
        "/",
        "The Harborlight blog",
        "Field notes from people who crawl for a living.",
        f"{_ALL_POSTS.split('; /posts/diagrams')[0]}; /archive Archive; "
        "/comment-policy Comment policy; {www}/ Harborlight home",
    ),
    ("/archive", "Archive", "Every post so far.", _ALL_POSTS),
    (
        "/tags/python",
        "Posts tagged python",
        "Posts about Python.",
        "; ".join(_ALL_POSTS.split("; ")[0::2]),
    ),
    (
        "/tags/crawling",
        "Posts tagged crawling",
        "Posts about crawling.",
        "; ".join(_ALL_POSTS.split("; ")[1::2]),
    ),
    (
        "/comment-policy",
        "Comment policy",
        "Links left by commenters get rel=nofollow.",
        "/comments/spam-1.html cheap watches @nofollow; "
        "/comments/spam-2.html miracle diet @nofollow ugc; / Blog home",
    ),
    ("/comments/spam-1.html", "Spam", "Only a nofollow link leads here.", ""),
    ("/comments/spam-2.html", "More spam", "Only a nofollow ugc link leads here.", ""),
    *(
        (
            f"/posts/{slug}.html",
            title,
            f"Post number {i + 1}: {title}.",
            f"/archive Archive; /posts/{_POSTS[(i + 1) % len(_POSTS)][0]}.html Next post; "
            f"{{docs}}/guide/{guide} Related documentation; "
            f"/tags/{('python', 'crawling')[i % 2]} Tag",
        )
        for i, (slug, title, guide) in enumerate(_POSTS)
    ),
)
_PRODUCTS = (
    ("harbor-lamp", "Harbor desk lamp", "lamps"),
    ("tide-lamp", "Tide floor lamp", "lamps"),
    ("beacon-lamp", "Beacon wall lamp", "lamps"),
    ("ember-lamp", "Ember reading lamp", "lamps"),
    ("field-guide", "A field guide to archives", "books"),
    ("link-rot", "Link rot, a history", "books"),
    ("slow-web", "The slow web", "books"),
    ("paper-maps", "Paper maps", "books"),
)
_SHOP: _Table = (
    (
        "/",
        "Harborlight shop",
        "Lamps and books made by the cooperative.",
        "/category/lamps Lamps; /category/books Books; /shipping Shipping; "
        "/internal-preview.html Preview; {www}/about About the makers",
    ),
    ("/shipping", "Shipping", "How parcels reach you.", "/ Shop home"),
    (
        "/internal-preview.html",
        "Internal preview",
        "Not for search engines.",
        "/product/prototype-lamp.html Prototype lamp",
    ),
    (
        "/product/prototype-lamp.html",
        "Prototype lamp",
        "Only the preview links here.",
        "/ Shop home",
    ),
    *(
        (
            f"/category/{cat}",
            f"Our {cat}",
            f"Everything in {cat}.",
            "; ".join(f"/product/{s}.html {t}" for s, t, c in _PRODUCTS if c == cat),
        )
        for cat in ("lamps", "books")
    ),
    *(
        (
            f"/product/{slug}.html",
            title,
            f"{title}, from our {cat} range.",
            f"/category/{cat} More {cat}; /shipping Shipping; / Shop home",
        )
        for slug, title, cat in _PRODUCTS
    ),
)
_GUIDES = ("getting-started", "configuration", "politeness", "robots", "reference")
_APIS = ("frontier", "fetch", "store")
_DOCS: _Table = (
    (
        "/",
        "Crawler documentation",
        "Start with the guide, then browse the API.",
        "; ".join(f"/guide/{g} {g}" for g in _GUIDES)
        + "; /faq FAQ; /changelog Changelog; /search?q=politeness Search; {www}/ Harborlight home",
    ),
    (
        "/faq",
        "FAQ",
        "Questions people actually asked.",
        "/ Docs; {shop}/category/books Further reading",
    ),
    ("/changelog", "Changelog", "What changed, newest first.", "/ Docs"),
    ("/search", "Search", "Results for your query.", "/ Docs"),
    (
        "/legacy/v1-migration.html",
        "Migrating from v1",
        "Nothing links here; only the sitemap knows this page.",
        "/ Docs",
    ),
    *(
        (
            f"/guide/{g}",
            f"Guide: {g.replace('-', ' ')}",
            f"This chapter covers {g}.",
            f"/guide/{_GUIDES[(i + 1) % 5]} Next chapter; /api/{_APIS[i % 3]} API; / Docs",
        )
        for i, g in enumerate(_GUIDES)
    ),
    *(
        (
            f"/api/{a}",
            f"API: {a}",
            f"Reference for the {a} module.",
            "/guide/reference Full reference; {blog}/posts/frontier-notes.html Background reading",
        )
        for a in _APIS
    ),
)
_HEADS = {
    ("www", "/about"): '<link rel="canonical" href="{www}/about">',
    ("shop", "/internal-preview.html"): '<meta name="robots" content="noindex">',
}


def _pages(site: str, table: _Table, bases: Mapping[str, str]) -> dict[str, str]:
    return {
        path: _page(
            title,
            [intro, *_prose(site, path)],
            _links(links, bases),
            _HEADS.get((site, path), "").format_map(bases),
        )
        for path, title, intro, links in table
    }


_CALENDAR = re.compile(r"^/calendar/(\d{4})/(\d{2})$")
_MONTHS = "January February March April May June July August September October November December"


def _calendar(path_qs: str) -> Response | None:
    """The trap: any /calendar/YYYY/MM links to the next month, forever (to year 9999)."""
    match = _CALENDAR.match(path_qs.split("?", maxsplit=1)[0])
    if match is None or not 1 <= int(match[2]) <= 12:
        return None
    year, month = int(match[1]), int(match[2])
    nyear, nmonth = (year + 1, 1) if month == 12 else (year, month + 1)
    name = f"{_MONTHS.split()[month - 1]} {year}"
    links: list[Link] = [("/", "Home")]
    if nyear <= 9999:
        links.insert(0, (f"/calendar/{nyear:04d}/{nmonth:02d}", "Next month"))
    paras = [f"No events in {name} yet.", *_prose("www", path_qs)]
    return html(_page(f"Events in {name}", paras, links))


def build_sample_web(base_urls: Mapping[str, str]) -> dict[str, Site]:
    """The four sites, keyed "www", "blog", "shop", "docs"; links use `base_urls`."""
    missing = set(SITE_NAMES) - set(base_urls)
    if missing:
        raise ValueError(f"build_sample_web needs base URLs for sites {sorted(missing)}")
    b = {name: url.rstrip("/") for name, url in base_urls.items()}
    redirect = Response(301, {"Location": f"{b['www']}/new-page"}, b"")
    docs = _pages("docs", _DOCS, b)
    return {
        "www": html_site(
            "www",
            _pages("www", _WWW, b),
            robots="User-agent: *\nAllow: /private/public-note.html\nDisallow: /private/\n",
            extra={"/old-page": redirect},
            fallback=_calendar,
        ),
        "blog": html_site(
            "blog",
            _pages("blog", _BLOG, b),
            robots=f"User-agent: *\nCrawl-delay: {BLOG_CRAWL_DELAY}\nDisallow:\n",
        ),
        # No robots.txt: a 404, which RFC 9309 §2.3.1.3 reads as "everything allowed".
        "shop": html_site("shop", _pages("shop", _SHOP, b)),
        "docs": html_site(
            "docs",
            docs,
            robots=f"User-agent: *\nDisallow: /search\n\nSitemap: {b['docs']}/sitemap.xml\n",
            sitemap=(b["docs"], ["/", *(f"/guide/{g}" for g in _GUIDES), FEATURES["orphan"][1]]),
            # Sent gzip-encoded to clients that accept it.
            extra={"/guide/reference": html(docs.pop("/guide/reference"), compress=True)},
        ),
    }


def base_urls_for(ports: Mapping[str, int]) -> dict[str, str]:
    """Site name -> "http://<name>.demo.test:<port>", the prefix the demo crawls under."""
    return {name: f"http://{host}:{ports[name]}" for host, name in HOST_TO_SITE.items()}


def sample_farm() -> WebFarm:
    """A not-yet-started WebFarm serving the sample web under its *.demo.test names."""
    return WebFarm.deferred(SITE_NAMES, lambda ports: build_sample_web(base_urls_for(ports)))


def resolve_map(farm: WebFarm) -> dict[str, tuple[str, int]]:
    """Hostname -> (address, port) for --resolve, e.g. "www.demo.test" -> ("127.0.0.1", p)."""
    return {host: ("127.0.0.1", farm.port(name)) for host, name in HOST_TO_SITE.items()}


def seed_urls(base_urls: Mapping[str, str]) -> list[str]:
    return [base_urls[site].rstrip("/") + p for site, paths in SEED_PATHS.items() for p in paths]

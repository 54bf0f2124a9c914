"""The sample web's prose: ten sentences per site, from which each page takes a stable
selection (sample_web.py ``_prose``), so no two pages' texts hash alike by accident."""

from __future__ import annotations

__all__ = ["PROSE"]

PROSE: dict[str, tuple[str, ...]] = {
    "www": (
        "Harborlight is a small cooperative that builds archival tools for public libraries.",
        "Our members work from four cities and meet in person twice a year on the coast.",
        "We believe the open web deserves careful preservation, one polite request at a time.",
        "Every project we ship is reviewed by a librarian before it reaches a reading room.",
        "Funding comes from library consortia, small grants and the occasional workshop fee.",
        "The cooperative publishes its budgets every quarter so members can question them.",
        "Visitors often ask why the office smells of old paper; the answer is the map drawer.",
        "We answer email slowly but thoroughly, and we never sell the addresses we receive.",
        "Apprentices spend their first month restoring broken links in a municipal archive.",
        "Our newsletter goes out whenever there is something worth saying, rarely more often.",
    ),
    "blog": (
        "Crawling is mostly waiting: for sockets, for robots files and for the politeness timer.",
        "A frontier that forgets which hosts it has touched will eventually annoy somebody.",
        "We measured our fetcher against a slow host and learned to respect its bandwidth.",
        "Duplicate pages hide behind tracking parameters, capital letters and stray dot segments.",
        "Sitemaps are hints, not promises, yet they often reveal pages nobody links anymore.",
        "The calendar on our main site taught us that a depth budget is not optional.",
        "Compression saves bytes on the wire but the parser must see the decoded document.",
        "Write the archive file first and the index second, so a crash loses nothing stored.",
        "Redirect chains should be followed a bounded number of times and then reported.",
        "Readers asked for more diagrams, so this season every post carries at least one.",
    ),
    "shop": (
        "Each lamp is assembled by hand from brass, linen and a reclaimed glass shade.",
        "Orders placed before noon leave our workshop the same afternoon by bicycle courier.",
        "Books in our catalogue are printed on acid free paper and sewn rather than glued.",
        "Returns are accepted for thirty days, and we repair anything we sold, for free.",
        "The shop runs on solar power during summer and on the co-op wind share in winter.",
        "Gift wrapping uses offcuts from the bindery, so no two parcels look exactly alike.",
        "Prices include shipping within the region and a small donation to the library fund.",
        "Stock is limited because every batch is made by the same three people in the back.",
        "Customers may collect orders from the reading room on Thursday evenings.",
        "We answer product questions by letter if you prefer paper to a screen.",
    ),
    "docs": (
        "Configuration is one typed object built from defaults, a TOML file and flags.",
        "The frontier keeps one queue per host and releases a host only after its delay.",
        "Robots rules are fetched once per host and cached for a day, as RFC 9309 suggests.",
        "Every fetched response is written to a WARC record before its links are parsed.",
        "Normalization removes fragments, default ports and dot segments before dedup.",
        "A trap budget limits how deep the crawler follows links from any single seed.",
        "Errors are grouped by host so one broken server cannot hide behind healthy ones.",
        "The store interface offers per host atomic operations for every supported backend.",
        "Examples in this guide run against the bundled sample web on your own machine.",
        "When in doubt, crawl less: a missed page can be fetched tomorrow, a ban cannot wait.",
    ),
}

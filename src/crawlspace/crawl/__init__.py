"""The crawl loop: lease -> visit (robots.txt or page) -> archive -> parse -> commit.

``crawler.py`` wires the stages and dispatches leases; ``visit.py`` runs one lease; ``stages.py``
holds the worker pools; ``commit.py`` groups completions into one transaction; ``budget.py``
keeps the crawl-wide page and byte budgets; ``settings.py`` is what a crawl remembers of its
settings; ``worker.py`` runs the same crawler on a shared frontier. Nothing is imported here:
a parse worker process imports ``crawlspace.parse`` only, never the crawler.
"""

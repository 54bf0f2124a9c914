"""The crawl loop: lease -> visit (robots.txt or page) -> archive -> parse -> commit.

``crawler.py`` wires the stages and dispatches leases; ``visit.py`` runs one lease; ``stages.py``
holds the worker pools; ``commit.py`` groups completions into one transaction; ``budget.py``
keeps the crawl-wide page and byte budgets; ``settings.py`` is what a crawl remembers of its
settings; ``worker.py`` runs the same crawler on a shared frontier; ``parse_jobs.py`` is what a
parse worker process runs. Nothing is imported here: a parse worker imports ``parse_jobs.py``,
the parse stage and discovery only, never the crawler.
"""

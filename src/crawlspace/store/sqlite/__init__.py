"""The embedded engine: one SQLite file (WAL) holds the frontier and the crawl's metadata.

``store.py`` is the Store; the other modules are its parts (schema, enqueue, lease, front
bands, revisit, dedup, traps, priority, rows, checkpoint) and ``readonly.py`` the read-only
connections the operator views use. Nothing is imported here, so a view need not load the store.
"""

"""What an operator reads of a crawl: stats, exports and live progress (read-only views)."""

"""Content and URL deduplication cores (pure): the seen-set Bloom accelerator, simhash and the
near-duplicate block index."""

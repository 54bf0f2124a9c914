"""The archive: WARC files that standard tools read, written and recovered after a crash."""

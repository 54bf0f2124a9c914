"""The rendering tier: pages that need JavaScript, in a headless browser (issue #33)."""

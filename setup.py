"""The one compiled helper (src/crawlspace/dedup/_shingles.c); everything else is pyproject.toml.

Optional: where no C compiler is found the build goes on without it, and dedup/simhash.py computes
the same fingerprints in Python (slower: benchmarks/README.md, "Near the limit").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "crawlspace.dedup._shingles",
            ["src/crawlspace/dedup/_shingles.c"],
            optional=True,
            extra_compile_args=["-O3"],
        )
    ]
)

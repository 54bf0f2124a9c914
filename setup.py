"""The compiled helpers; everything else is pyproject.toml.

Each is optional: where no C compiler is found the build goes on without it, and its Python twin
computes the same answers (slower: benchmarks/README.md, "Near the limit"):
dedup/_shingles.c for dedup/simhash.py's fingerprints, parse/_nesting.c for parse/html.py's
nesting scan, parse/_text.c for its whitespace collapse.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "crawlspace.dedup._shingles",
            ["src/crawlspace/dedup/_shingles.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
        Extension(
            "crawlspace.parse._nesting",
            ["src/crawlspace/parse/_nesting.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
        Extension(
            "crawlspace.parse._text",
            ["src/crawlspace/parse/_text.c"],
            optional=True,
            extra_compile_args=["-O3"],
        ),
    ]
)

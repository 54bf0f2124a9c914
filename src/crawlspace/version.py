"""The package's version, in a module of its own so that any layer may name it without importing
the package's public face (``__init__.py`` names the crawler)."""

__version__ = "0.1.0"

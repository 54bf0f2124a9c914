"""Fast pickling for the frozen slots dataclasses that cross to and from the parse workers.

Python 3.11 pickles a ``slots=True`` dataclass with ``_dataclass_getstate`` and
``_dataclass_setstate``, which call ``dataclasses.fields()`` for every object and set each
field in Python: a page's ~100 link candidates cost ~0.3 ms each way on the crawl loop
(benchmarks/README.md, "Near the limit"). ``by_fields`` gives a class a ``__reduce__`` that
packs its fields with one C ``attrgetter`` and rebuilds the object through its constructor,
~3x faster each way. Every field must be an ``__init__`` parameter. The most numerous of them,
a page's ``UrlCandidate`` and ``LinkRecord`` objects, went further: they are tuples, rebuilt
by ``tuple.__new__`` with no constructor at all (records.py).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["by_fields"]


def by_fields(cls: type[T]) -> type[T]:
    """Decorate a dataclass (outermost, after ``@dataclass``) to pickle as its fields."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not all(f.init for f in fields):
        raise TypeError(f"{cls.__name__}: every field must be an __init__ parameter")
    names = [f.name for f in fields]
    values: Callable[[Any], tuple[Any, ...]]
    if len(names) == 1:
        single = operator.attrgetter(names[0])
        values = lambda obj: (single(obj),)  # noqa: E731 -- attrgetter of one name is no tuple
    else:
        values = operator.attrgetter(*names)

    def __reduce__(self: Any) -> tuple[type[T], tuple[Any, ...]]:
        return cls, values(self)

    cls.__reduce__ = __reduce__  # type: ignore[method-assign]
    return cls

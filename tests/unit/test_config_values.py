"""CrawlConfig from Python: the values a user would write are taken, the wrong ones refused with
one clear line (the same checks as a TOML file's and the flags')."""

from __future__ import annotations

import pytest

from crawlspace import CrawlConfig
from crawlspace.errors import ConfigError


def test_a_list_is_taken_where_a_tuple_is_kept() -> None:
    config = CrawlConfig(allow_nets=["127.0.0.0/8"], exclude=["/private/"])  # type: ignore[arg-type]
    assert config.allow_nets == ("127.0.0.0/8",)
    assert config.exclude == ("/private/",)
    assert hash(config) == hash(CrawlConfig(allow_nets=("127.0.0.0/8",), exclude=("/private/",)))
    with pytest.raises(ConfigError, match=r"allow_nets must be a list of strings \(got \(5,\)\)"):
        CrawlConfig(allow_nets=[5])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("max_pages", 0),
        ("max_pages", -5),
        ("max_bytes", -1),
        ("duration", 0.0),
        ("max_pages_per_host", 0),
        ("max_pages_per_host_per_day", -1),
    ],
)
def test_a_limit_of_zero_or_less_is_refused(setting: str, value: float) -> None:
    with pytest.raises(ConfigError, match=f"{setting} must be > 0, or left out for no limit"):
        CrawlConfig(**{setting: value})
    CrawlConfig(**{setting: None})  # left out: no limit

"""The bundled Grafana dashboard (docs/grafana-dashboard.json) shows every metric a crawl
process exports, asks only for metrics and labels that exist, and imports with a Prometheus
data source chosen at import time."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from crawlspace.telemetry.metrics import CrawlMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json"
_SAMPLE_SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")


def exported() -> dict[str, set[str]]:
    """Each metric family the crawl exports, with the labels its samples carry."""
    families: dict[str, set[str]] = {}
    metrics = CrawlMetrics()
    # One sample of each labelled family, so the registry lists its labels.
    metrics.fetches.labels("2xx", "0").inc()
    metrics.duration.observe(0.1)
    metrics.completions.labels("fetched").inc()
    metrics.retries.labels("timeout").inc()
    metrics.failures.labels("timeout").inc()
    metrics.rejections.labels("robots").inc()
    metrics.robots.labels("allow_all").set(1)
    metrics.renders.labels("rendered").inc()
    metrics.renders_skipped.labels("crawl_pages").inc()
    for family in metrics.registry.collect():
        labels = families.setdefault(family.name, set())
        for sample in family.samples:
            labels.update(sample.labels)
    return families


def family_of(name: str, families: dict[str, set[str]]) -> str:
    if name in families:
        return name
    for suffix in _SAMPLE_SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in families:
            return name.removesuffix(suffix)
    raise AssertionError(f"the dashboard asks for {name}, which no crawl exports")


def targets(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [target for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_exported_metric_is_on_the_dashboard_and_nothing_else() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    families = exported()
    shown = set()
    for target in targets(dashboard):
        expr = target["expr"]
        names = re.findall(r"\bcrawlspace_[a-z_]+", expr)
        assert names, expr
        for name in names:
            family = family_of(name, families)
            shown.add(family)
            for grouping in re.findall(r"by \(([a-z_, ]+)\)", expr):
                for label in (part.strip() for part in grouping.split(",")):
                    assert label in families[family] | {"le"}, (label, expr)
    assert shown == set(families)


def test_the_dashboard_imports_with_a_chosen_prometheus() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    (source,) = dashboard["__inputs"]
    assert (source["type"], source["pluginId"]) == ("datasource", "prometheus")
    uid = "${" + source["name"] + "}"
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": uid}, panel["title"]
        refs = [target["refId"] for target in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]

"""Operator telemetry: the sampled time series in crawl.db and the Prometheus endpoint."""

from crawlspace.telemetry.sampler import Telemetry

__all__ = ["Telemetry"]

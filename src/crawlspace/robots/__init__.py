"""robots.txt: parsing and matching (RFC 9309) and the fetch-side policy."""

from crawlspace.robots.parser import RobotsTxt
from crawlspace.robots.policy import RobotsPolicy, after_redirects, classify_status
from crawlspace.urls import robots_url

__all__ = ["RobotsPolicy", "RobotsTxt", "after_redirects", "classify_status", "robots_url"]

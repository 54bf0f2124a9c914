"""The layers of pyproject.toml's import contracts hold, and a bad import breaks them.

The contracts are checked on a copy of the package, so a deliberate bad import can be added to
it: one per contract, each must fail the check and name its contract.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")

pytestmark = pytest.mark.skipif(not Path(LINT).exists(), reason="import-linter not installed")


def _check(src: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [LINT, str(ROOT / "pyproject.toml"), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
        cwd=src,
        timeout=120,
        check=False,
    )


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "src" / "crawlspace",
        tmp_path / "crawlspace",
        ignore=shutil.ignore_patterns("__pycache__", "static", "site"),
    )
    return tmp_path


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + "\n" + line + "\n")


def test_every_part_of_the_package_stands_in_a_layer() -> None:
    """A new module or package must be placed in the layers, or it would dodge them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    placed = {name.strip() for layer in layers for name in re.split(r"[|:]", layer)}
    package = ROOT / "src" / "crawlspace"
    parts = {
        f"crawlspace.{path.stem}"
        for path in package.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    assert parts - placed == set()


def test_the_package_keeps_its_contracts(package_copy: Path) -> None:
    done = _check(package_copy)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "contract"),
    [
        (
            "frontier/aopic.py",
            "import sqlite3  # noqa",
            "Policy is pure: crawlspace.frontier does no I/O",
        ),
        (
            "store/sqlite/lease.py",
            "from crawlspace.frontier import revisit  # noqa",
            "Engines apply plans: no store module imports the policy in crawlspace.frontier",
        ),
        (
            "fetch/transport.py",
            "from crawlspace.crawl import leases  # noqa",
            "The loop stands above its stages, the stages above the base",
        ),
        (
            "lifecycle.py",
            "from crawlspace.store import base  # noqa",
            "The loop stands above its stages, the stages above the base",
        ),
        (
            "ops/stats.py",
            "from crawlspace.ops import report  # noqa",
            "No circles between the modules of a package",
        ),
    ],
)
def test_a_bad_import_breaks_its_contract(
    package_copy: Path, module: str, bad_import: str, contract: str
) -> None:
    _append(package_copy / "crawlspace" / module, bad_import)
    done = _check(package_copy)
    assert done.returncode != 0
    assert f"{contract} BROKEN" in done.stdout, done.stdout

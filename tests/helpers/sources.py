"""A copy of what a build of kubetrio reads, for tests that build it: a build writes build/ and
*.egg-info beside the sources, which must not race another build of the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The project's metadata and src/ (its links copied as the folders they name); everything else
# of the checkout stays out.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "src")


def copy_sources(destination: Path) -> Path:
    destination.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, destination / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, destination / name)
    return destination

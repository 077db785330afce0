"""MkDocs hooks for the documentation site: the API reference finds the code, and the pages
that restate code (the emulator's gaps) are filled from it at build time, so they never drift.

* griffe (mkdocstrings' loader) finds packages by folder name, but the checkout maps the
  ``kubetrio.*`` namespace onto top-level folders (``runtime/`` is ``kubetrio.runtime``); the
  build gets a throw-away tree of links laid out as the wheel installs it.
* ``<!-- emulator-gaps -->`` in a page becomes ``kubetrio.emulator.gaps.table()``.
* The dashboard picture ``config/dashboards/render.py`` draws is served from where it is made.
* The tutorial's fences carry what its test needs (``file=PATH``, ``sh test``,
  ``sh background``); readers see the file name as the block's title and no test words.
"""

from __future__ import annotations

import atexit
import re
import shutil
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
GAPS_MARKER = "<!-- emulator-gaps -->"
FILE_FENCE = re.compile(r"^```(\w+) file=(\S+)$", re.MULTILINE)
TEST_FENCE = re.compile(r"^```sh (?:test|background)$", re.MULTILINE)
# Files of the checkout the pages show, by their address in the site.
SHOWN = {"images/machines.png": ROOT / "config" / "dashboards" / "machines.png"}


def installed_layout() -> Path:
    """A temporary folder holding ``kubetrio/<part>`` links to the checkout's folders."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    top = Path(tempfile.mkdtemp(prefix="kubetrio-docs-"))
    atexit.register(shutil.rmtree, top, ignore_errors=True)
    namespace = top / "kubetrio"
    namespace.mkdir()
    for package, folder in mapping.items():
        (namespace / package.removeprefix("kubetrio.")).symlink_to(ROOT / folder)
    return top


@event_priority(100)  # before mkdocstrings reads its handlers' settings
def on_config(config: Any) -> Any:
    """Point mkdocstrings' Python handler at the installed layout."""
    handlers = config.plugins["mkdocstrings"].config["handlers"]
    handlers.setdefault("python", {})["paths"] = [str(installed_layout())]
    return config


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Fill the emulator's gaps table in from its one source; title the tutorial's files."""
    markdown = FILE_FENCE.sub(r'```\1 title="\2"', markdown)
    markdown = TEST_FENCE.sub("```sh", markdown)
    if GAPS_MARKER not in markdown:
        return markdown
    from kubetrio.emulator.gaps import table

    return markdown.replace(GAPS_MARKER, table())


def on_files(files: Files, config: Any) -> Files:
    """Add the pictures kept beside the code that makes them."""
    for address, source in SHOWN.items():
        files.append(File.generated(config, address, abs_src_path=str(source)))
    return files

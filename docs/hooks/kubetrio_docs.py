"""MkDocs hooks for the documentation site: the API reference finds the code, and the pages
that restate code (the emulator's gaps) are filled from it at build time, so they never drift.

* griffe (mkdocstrings' loader) finds packages by folder name: it reads ``src/``, whose
  ``kubetrio/<part>`` links lay the top-level folders out as the wheel installs them.
* ``<!-- emulator-gaps -->`` in a page becomes ``kubetrio.emulator.gaps.table()``.
* The dashboard picture ``config/dashboards/render.py`` draws is served from where it is made.
* The tutorial's fences carry what its test needs (``file=PATH``, ``sh test``,
  ``sh background``); readers see the file name as the block's title and no test words.
"""

from __future__ import annotations

import re
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


@event_priority(100)  # before mkdocstrings reads its handlers' settings
def on_config(config: Any) -> Any:
    """Point mkdocstrings' Python handler at the installed layout (src/kubetrio's links)."""
    handlers = config.plugins["mkdocstrings"].config["handlers"]
    handlers.setdefault("python", {})["paths"] = [str(ROOT / "src")]
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

"""docs/tutorial.md as data: its fenced blocks, and the reader's project they make."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TUTORIAL = Path(__file__).parents[2] / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    lang: str
    info: str
    body: str

    @property
    def file(self) -> str | None:
        match = re.search(r"\bfile=(\S+)", self.info)
        return match.group(1) if match else None

    @property
    def mode(self) -> str:
        return self.info.strip() if self.lang == "sh" else ""


def tutorial_blocks() -> list[Block]:
    return [Block(m[1], m[2], m[3]) for m in BLOCK.finditer(TUTORIAL.read_text())]


def write_project(project: Path) -> Path:
    """The reader's folder after step 0's set-up, with every file the tutorial shows."""
    (project / "greeter").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "greeter" / "__init__.py").touch()
    for block in tutorial_blocks():
        if block.file:
            (project / block.file).write_text(block.body)
    return project

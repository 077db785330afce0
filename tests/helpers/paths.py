"""Files of the repository the tests read as users read them (the README's examples are run as
printed)."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"

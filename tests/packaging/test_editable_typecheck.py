"""``pip install -e`` of kubetrio is visible to type checkers: mypy, run on a user's file in a
project whose virtualenv holds nothing but kubetrio's editable install, finds the package and
its types (an editable install by an import hook alone would leave it import-not-found)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_FILE = """\
from kubetrio.api.core import ConfigMap
from kubetrio.runtime import ObjectKey, Result


def keys(config_map: ConfigMap) -> list[str]:
    return sorted(config_map.data)


async def reconcile(key: ObjectKey) -> Result:
    return Result()


wrong: list[str] = keys(ObjectKey("default", "x"))
"""


@pytest.mark.process
@pytest.mark.slow
def test_mypy_sees_kubetrio_through_an_editable_install(tmp_path: Path) -> None:
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    # This interpreter's pip installs into the new environment (no index needed: --no-deps).
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "-e", str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (tmp_path / "app.py").write_text(USER_FILE)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", str(python), "app.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    # One error, and it is the one kubetrio's types make: the rest of the file checks.
    assert done.stdout.splitlines() == [
        'app.py:13: error: Argument 1 to "keys" has incompatible type "ObjectKey"; '
        'expected "ConfigMap"  [arg-type]',
        "Found 1 error in 1 file (checked 1 source file)",
    ], done.stdout + done.stderr

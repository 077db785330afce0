"""The layout promises of DESIGN §2: one kubetrio namespace over the top-level folders."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cmd_folder_never_shadows_the_standard_library() -> None:
    assert not (ROOT / "cmd" / "__init__.py").exists()
    # Run from the repository root, where a package named ``cmd`` would win over the stdlib's.
    result = subprocess.run(
        [sys.executable, "-c", "import pdb, cmd; print(cmd.__file__)"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert not result.stdout.strip().startswith(str(ROOT))


def test_every_package_folder_is_mapped_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    folders = config["package-dir"]
    expected = {"kubetrio.cmd"}
    for package, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            expected.add(".".join([package, *relative.parts]))
    assert listed == expected


def test_console_script_reports_version_and_help() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "kubetrio.cmd.main", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.startswith("kubetrio ")
    usage = subprocess.run(
        [sys.executable, "-m", "kubetrio.cmd.main", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "usage: kubetrio" in usage.stdout

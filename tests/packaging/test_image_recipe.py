"""The image recipe of docs/how-to/deploying.md, step by step, without an image builder: kubetrio's
wheel installed as its image installs it (``.ci/install-wheel`` into a root-owned virtualenv), the
user's package added to that virtualenv by root as the recipe's ``USER 0`` step does, and then,
as the recipe's user 65532, ``kubetrio`` finds the user's controller and prints its kit — while
that user could not have installed into the virtualenv itself."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers.sources import copy_sources
from tests.helpers.tutorial import write_project

ROOT = Path(__file__).resolve().parents[2]
DEPLOYING = ROOT / "docs" / "how-to" / "deploying.md"
NOBODY = ("setpriv", "--reuid", "65532", "--regid", "65532", "--clear-groups")

pytestmark = [pytest.mark.process, pytest.mark.slow]


def recipe() -> str:
    (dockerfile,) = re.findall(r"^```dockerfile\n(.*?)^```$", DEPLOYING.read_text(), re.M | re.S)
    return str(dockerfile)


def test_the_recipe_installs_as_root_and_runs_as_65532() -> None:
    lines = [line.strip() for line in recipe().splitlines()]
    assert lines.index("USER 0") < lines.index("USER 65532:65532")
    assert "PIP_NO_CACHE_DIR=1 pip install --no-index --find-links /wheels greeter" in lines
    assert 'ENTRYPOINT ["kubetrio"]' in lines


@pytest.fixture
def world() -> Iterator[Path]:
    """A folder the unprivileged user can reach (pytest's own are root's alone)."""
    top = Path(tempfile.mkdtemp(prefix="kubetrio-recipe-"))
    top.chmod(0o755)
    yield top
    shutil.rmtree(top)


def run(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    command = [str(a) for a in args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def test_the_user_package_joins_kubetrio_in_its_virtualenv(world: Path) -> None:
    wheels = world / "wheels"
    built = run(
        sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels,
        copy_sources(world / "kubetrio"), write_project(world / "greeter-project"),
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    venv = world / "opt" / "kubetrio"
    # kubetrio's image: the wheel and its dependencies, as the Dockerfile's final stage.
    image = run(ROOT / ".ci" / "install-wheel", wheels, venv)
    assert image.returncode == 0, image.stdout + image.stderr

    env = {
        "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
        "HOME": str(world),
        "PIP_NO_CACHE_DIR": "1",
    }
    refused = run(
        *NOBODY, "pip", "install", "--no-index", "--find-links", wheels, "greeter", env=env
    )
    assert refused.returncode != 0 and "Permission denied" in refused.stderr, refused.stderr
    added = run("pip", "install", "-q", "--no-index", "--find-links", wheels, "greeter", env=env)
    assert added.returncode == 0, added.stderr

    kit = run(*NOBODY, "kubetrio", "manifests", "--controllers", "greeter", env=env, cwd=world)
    assert kit.returncode == 0, kit.stderr
    crds = [d["metadata"]["name"] for d in yaml.safe_load_all(kit.stdout) if d and d["kind"] ==
            "CustomResourceDefinition"]  # fmt: skip
    assert crds == ["greetings.example.com"]

"""docs/tutorial.md, followed to the letter in an empty folder.

Every ```` ```lang file=PATH ```` block is written to PATH, the package is installed, and the
shell blocks run in the order the reader meets them: ```` ```sh test ```` blocks in the
foreground (they must succeed), ```` ```sh background ```` blocks as long-running processes
(the emulator, the manager), stopped at the end. The plain ```` ```sh ```` set-up block is the
one thing not run verbatim: ``pip install -e '.[test]'`` into a new virtualenv would need the
package index, so the package is installed with pip into a folder on ``PYTHONPATH`` of this
virtualenv instead — the same files, entry point included, found the same way.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.kube import find_kubectl

TUTORIAL = Path(__file__).parents[2] / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
STEP_TIMEOUT = 180
# Built in pip's isolated build environment, as the reader's `pip install -e` builds it.
PIP_INSTALL = (sys.executable, "-m", "pip", "install", "-q", "--no-deps")
RUFF_CHECK = ("check", "--isolated", "--select", "E,F,I,B,UP", "--line-length", "100")


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


def test_the_tutorial_blocks_are_what_the_test_expects() -> None:
    """A block whose marker is misspelt would silently not run."""
    blocks = tutorial_blocks()
    files = [b.file for b in blocks if b.file]
    assert files == [
        "pyproject.toml",
        "greeter/api.py",
        "greeter/controller.py",
        "tests/test_greeter.py",
        "greeting.yaml",
    ]
    modes = [b.mode for b in blocks if b.lang == "sh"]
    assert set(modes) == {"", "test", "background"}
    assert modes.count("") == 1  # the set-up block, the one not run verbatim


def _environment(tmp: Path, site: Path) -> dict[str, str]:
    kubectl = find_kubectl()
    assert kubectl, "kubectl 1.33 is needed (beside the kubectl on PATH, or $KUBECTL)"
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").symlink_to(kubectl)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KUBE"))}
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env["PATH"]])
    env["PYTHONPATH"] = str(site)
    if "KUBEBUILDER_ASSETS" in os.environ:  # the tutorial's test on a real API server
        env["KUBEBUILDER_ASSETS"] = os.environ["KUBEBUILDER_ASSETS"]
    # The tutorial's `kubetrio run` binds the default :8080/:8081; tests run side by side.
    env["KUBETRIO_METRICS_BIND_ADDRESS"] = "127.0.0.1:0"
    env["KUBETRIO_HEALTH_PROBE_BIND_ADDRESS"] = "127.0.0.1:0"
    return env


def _run(script: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-ec", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert done.returncode == 0, f"{script}\nexit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def _start(script: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["bash", "-ec", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: stopped with everything it started
    )


def _wait_for_line(process: subprocess.Popen[str], prefix: str) -> str:
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # ends when the process does
        seen.append(line)
        if line.startswith(prefix):
            return line
    raise AssertionError(f"never printed {prefix!r}:\n{''.join(seen)}")


def _stop(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    return out


@pytest.mark.kubectl
@pytest.mark.process
@pytest.mark.slow
def test_the_tutorial_works_as_written(tmp_path: Path) -> None:
    project = tmp_path / "greeter-project"
    (project / "greeter").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "greeter" / "__init__.py").touch()
    blocks = tutorial_blocks()
    for block in blocks:
        if block.file:
            (project / block.file).write_text(block.body)
    site = tmp_path / "site"
    subprocess.run(
        [*PIP_INSTALL, "--target", str(site), str(project)],
        check=True,
        capture_output=True,
        timeout=STEP_TIMEOUT,
    )
    env = _environment(tmp_path, site)

    outputs: list[str] = []
    background: list[subprocess.Popen[str]] = []
    try:
        for block in blocks:
            if block.mode == "test":
                outputs.append(_run(block.body, project, env))
            elif block.mode == "background":
                process = _start(block.body, project, env)
                background.append(process)
                if "kubetrio emulator" in block.body:
                    _wait_for_line(process, "kubeconfig=")
                    _check_the_manager_refuses_to_start_without_the_crd(project, env)
    finally:
        logs = [_stop(p) for p in background]

    _generate, tests, _crd, session, rbac = outputs
    assert (project / "config/crd/example.com_greetings.yaml").exists()
    # Four tests, the last on both servers; its real half needs the control plane's binaries.
    done = "5 passed" if "KUBEBUILDER_ASSETS" in os.environ else "4 passed, 1 skipped"
    assert re.search(rf"\b{done}\b", tests), tests
    assert re.search(r"^NAME\s+STYLE\s+MESSAGE\b", session, re.MULTILINE), session
    assert "Hi, World! Hi, World! Hi, World!" in session
    assert "Rendered" in session and "Farewell" in session, session
    assert "greetings" in rbac and "example.com" in rbac, rbac
    manager_log = logs[1]
    assert background[1].returncode == 0, manager_log  # SIGTERM: a graceful stop


def _check_the_manager_refuses_to_start_without_the_crd(project: Path, env: dict[str, str]) -> None:
    """The tutorial promises one line naming the missing kind, before the CRD is installed."""
    done = subprocess.run(
        ["kubetrio", "run", "--controllers", "greeter", "--kubeconfig", "kubeconfig"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert done.returncode == 1, done.stderr
    assert "greetings.example.com" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.process
@pytest.mark.parametrize(
    "block", [b for b in tutorial_blocks() if b.lang == "python"], ids=lambda b: b.file
)
def test_the_tutorial_python_is_ruff_clean(block: Block, tmp_path: Path) -> None:
    """What readers copy should pass the linter this project holds itself to, laid out as in
    the reader's folder (``greeter`` first-party, kubetrio third-party)."""
    (tmp_path / "greeter").mkdir()
    (tmp_path / "greeter" / "__init__.py").touch()
    (tmp_path / "tests").mkdir()
    for each in tutorial_blocks():
        if each.file:
            (tmp_path / each.file).write_text(each.body)
    assert block.file
    ruff = Path(sys.executable).parent / "ruff"
    done = subprocess.run(
        [str(ruff), *RUFF_CHECK, "--config", "src = ['.']", block.file],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout

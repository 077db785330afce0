"""docs/tutorial.md, followed to the letter in an empty folder.

Every ```` ```lang file=PATH ```` block is written to PATH and the shell blocks run in the order
the reader meets them: ```` ```sh test ```` blocks in the foreground (they must succeed),
```` ```sh background ```` blocks as long-running processes (the emulator, the manager), stopped
at the end. The set-up is run too: ``KUBETRIO`` names a copy of the checkout's sources, the
tutorial builds kubetrio's wheel there, installs it into a new virtualenv of the reader's
project (dependencies from the package index pip is configured with) and then the project,
editable; every later block runs with that virtualenv first on ``PATH``, as an activated one, and
this interpreter's own folder off it. Only the plain ```` ```sh ```` block making the folders is
not run: the test makes them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.kube import find_kubectl
from tests.helpers.sources import copy_sources
from tests.helpers.tutorial import Block, tutorial_blocks, write_project

STEP_TIMEOUT = 300
RUFF_CHECK = ("check", "--isolated", "--select", "E,F,I,B,UP", "--line-length", "100")


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
    assert modes.count("") == 1  # the folders, the one block not run verbatim
    (setup,) = [b for b in blocks if "pip install" in b.body]
    assert setup.mode == "test" and "$KUBETRIO" in setup.body


def _environment(tmp: Path, kubetrio: Path, venv: Path | None) -> dict[str, str]:
    """The reader's shell: kubectl on PATH, and once the set-up made it, the project's
    virtualenv first; this interpreter's folder is on PATH only for the set-up's build."""
    kubectl = find_kubectl()
    assert kubectl, "kubectl 1.33 is needed (beside the kubectl on PATH, or $KUBECTL)"
    bin_dir = tmp / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        (bin_dir / "kubectl").symlink_to(kubectl)
    ours = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KUBE", "VIRTUAL"))}
    path = [p for p in env["PATH"].split(os.pathsep) if p != ours]
    first = [str(venv / "bin")] if venv is not None else [ours]
    env["PATH"] = os.pathsep.join([*first, str(bin_dir), *path])
    env.pop("PYTHONPATH", None)
    env["KUBETRIO"] = str(kubetrio)
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
    started = time.monotonic()
    project = write_project(tmp_path / "greeter-project")
    kubetrio = copy_sources(tmp_path / "kubetrio")
    env = _environment(tmp_path, kubetrio, None)

    outputs: list[str] = []
    background: list[subprocess.Popen[str]] = []
    try:
        for block in tutorial_blocks():
            if block.mode == "test":
                outputs.append(_run(block.body, project, env))
                if "pip install" in block.body:
                    installed = time.monotonic()
                    env = _environment(tmp_path, kubetrio, project / ".venv")
            elif block.mode == "background":
                process = _start(block.body, project, env)
                background.append(process)
                if "kubetrio emulator" in block.body:
                    _wait_for_line(process, "kubeconfig=")
                    _check_the_manager_refuses_to_start_without_the_crd(project, env)
    finally:
        logs = [_stop(p) for p in background]

    _setup, _generate, tests, _crd, session, rbac, kit = outputs
    # Installed from the wheel, not from this checkout.
    wheels = list((project / "dist").glob("kubetrio-*-py3-none-any.whl"))
    assert len(wheels) == 1, wheels
    found = _run("python -c 'import kubetrio.runtime as r; print(r.__file__)'", project, env)
    assert found.startswith(str(project / ".venv" / "lib")), found
    assert (project / "config/crd/example.com_greetings.yaml").exists()
    # Four tests, the last on both servers; its real half needs the control plane's binaries.
    done = "5 passed" if "KUBEBUILDER_ASSETS" in os.environ else "4 passed, 1 skipped"
    assert re.search(rf"\b{done}\b", tests), tests
    assert re.search(r"^NAME\s+STYLE\s+MESSAGE\b", session, re.MULTILINE), session
    assert "Hi, World! Hi, World! Hi, World!" in session
    assert "Rendered" in session and "Farewell" in session, session
    assert "greetings" in rbac and "example.com" in rbac, rbac
    assert kit.startswith("ok: "), kit
    deployed = [d for d in yaml.safe_load_all((project / "greeter-kit.yaml").read_text()) if d]
    (deployment,) = [d for d in deployed if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/greeter:0.1.0"
    assert container["args"][-1] == "--controllers=greeter"
    manager_log = logs[1]
    assert background[1].returncode == 0, manager_log  # SIGTERM: a graceful stop
    print(
        f"\ntutorial: set-up (wheel built, venv made, both installed) "
        f"{installed - started:.1f} s, the rest {time.monotonic() - installed:.1f} s",
        file=sys.stderr,
    )


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

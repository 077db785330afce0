"""The layout's promises: one kubetrio namespace over the top-level folders, and a wheel that
ships what the commands read."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubetrio.cmd.kustomize import render
from tests.helpers.sources import copy_sources

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.process
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
    """src/kubetrio links each top-level folder; every folder with an __init__.py under one is
    a listed package."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"": "src"}
    namespace = ROOT / "src" / "kubetrio"
    expected = {"kubetrio", "kubetrio.cmd"}
    for link in namespace.iterdir():
        assert link.is_symlink() and link.resolve() == ROOT / link.name, link
        for init in link.resolve().rglob("__init__.py"):
            relative = init.parent.relative_to(link.resolve())
            expected.add(".".join(["kubetrio", link.name, *relative.parts]))
    assert set(config["packages"]) == expected


@pytest.mark.process
@pytest.mark.slow
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


# --- the wheel ------------------------------------------------------------------------------

# What must ship as package data, since the commands read it from the installed package: the
# CRDs, the kustomize kit, the dashboards, the Prometheus rules and the example config.
SHIPPED = {
    "kubetrio/config/crd/kustomization.yaml",
    "kubetrio/config/crd/machine.sapcloud.io_machines.yaml",
    "kubetrio/config/crd/machine.sapcloud.io_machineclasses.yaml",
    "kubetrio/config/crd/machine.sapcloud.io_machinesets.yaml",
    "kubetrio/config/crd/machine.sapcloud.io_machinedeployments.yaml",
    "kubetrio/config/dashboards/framework.json",
    "kubetrio/config/dashboards/machines.json",
    "kubetrio/config/dashboards/storage.json",
    "kubetrio/config/prometheus/rules.yaml",
    "kubetrio/config/prometheus/scrape.yaml",
    "kubetrio/config/prometheus/monitor.yaml",
    "kubetrio/config/prometheus/kustomization.yaml",
    "kubetrio/config/default/kustomization.yaml",
    "kubetrio/config/default/metrics_service.yaml",
    "kubetrio/config/with-webhooks/kustomization.yaml",
    "kubetrio/config/with-webhooks/manager_webhook_patch.yaml",
    "kubetrio/config/webhook/manifests.yaml",
    "kubetrio/config/certmanager/certificate.yaml",
    "kubetrio/config/manager/kustomization.yaml",
    "kubetrio/config/manager/manager.yaml",
    "kubetrio/config/kubetrio.example.yaml",
    *(
        f"kubetrio/config/rbac/{name}.yaml"
        for name in (
            "kustomization",
            "service_account",
            "role",
            "role_binding",
            "leader_election_role",
            "leader_election_role_binding",
            "metrics_auth_role",
            "metrics_auth_role_binding",
            "metrics_reader_role",
        )
    ),
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built by pip as CI builds it, from a copy of the sources (a build writes
    build/ and *.egg-info beside them, which must not race another build of the checkout)."""
    base = tmp_path_factory.mktemp("wheel")
    source = copy_sources(base / "src")
    out = base / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("kubetrio-*.whl")
    return built


@pytest.mark.process
@pytest.mark.slow
def test_the_wheel_ships_the_crds_dashboards_rules_and_kit(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert names >= SHIPPED, sorted(SHIPPED - names)
    # Only what is meant to ship: no tests, no dashboard scripts, no checkout leftovers.
    assert not [n for n in names if n.startswith(("tests/", "kubetrio/tests/"))]
    assert "kubetrio/config/dashboards/generate.py" not in names
    # The testing kit's pytest plugin, registered for every session where kubetrio is installed.
    assert "kubetrio/testing/plugin.py" in names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[pytest11]\nkubetrio = kubetrio.testing.plugin" in text
    # Every package is typed for its users' type checkers, and the licence travels along.
    for link in (ROOT / "src" / "kubetrio").iterdir():
        if link.name != "config":  # data only
            assert f"kubetrio/{link.name}/py.typed" in names, link.name
    assert [n for n in names if n.endswith(".dist-info/licenses/LICENSE")], "no LICENSE"


@pytest.mark.process
@pytest.mark.slow
def test_the_installed_wheel_reads_its_assets_outside_the_checkout(
    wheel: Path, tmp_path: Path
) -> None:
    """The wheel unpacked as an installer would, run with no site (so the editable install
    of the checkout cannot answer) from a folder that is not the checkout: ``kubetrio crds``
    and ``kubetrio manifests`` print what the source tree's kit renders."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    dependencies = [p for p in sys.path if p.endswith("site-packages")]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(site), *dependencies]),
    }
    where = tmp_path / "elsewhere"
    where.mkdir()

    def kubetrio(*args: str) -> list[Any]:
        result = subprocess.run(
            [sys.executable, "-S", "-m", "kubetrio.cmd.main", *args],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return list(yaml.safe_load_all(result.stdout))

    locate = "import kubetrio.cmd.assets as a; print(a.config_root())"
    found = subprocess.run(
        [sys.executable, "-S", "-c", locate], cwd=where, env=env, capture_output=True, text=True
    )
    assert found.stdout.strip().startswith(str(site)), found.stdout + found.stderr
    crds = kubetrio("crds")
    assert [d["metadata"]["name"] for d in crds] == [
        "machineclasses.machine.sapcloud.io",
        "machinedeployments.machine.sapcloud.io",
        "machines.machine.sapcloud.io",
        "machinesets.machine.sapcloud.io",
    ]
    kit = kubetrio("manifests")
    assert kit == render(ROOT / "config", "default")
    assert {d["kind"] for d in kit} >= {"Deployment", "ServiceMonitor", "ClusterRole"}
    # The overlay with the webhooks, its JSON patch read from the wheel too.
    assert kubetrio("manifests", "--webhooks") == render(ROOT / "config", "with-webhooks")


# --- the image --------------------------------------------------------------------------------


def test_the_image_installs_as_ci_does_and_runs_as_the_deployment_expects() -> None:
    """Images cannot be built here, so the Dockerfile's install is the script CI runs in a fresh
    virtualenv, and what the Deployment assumes of the image (its command, a numeric non-root
    user for runAsNonRoot) is what the Dockerfile says."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert dockerfile.count("FROM python:3.12-slim") == 2  # multi-stage, slim
    assert "source=.ci/install-wheel" in dockerfile
    assert "install-wheel /wheels /opt/kubetrio" in dockerfile
    assert '.ci/install-wheel "$wheel_dir"' in (ROOT / ".ci" / "run").read_text()
    user = next(line.split()[1] for line in dockerfile.splitlines() if line.startswith("USER "))
    assert all(part.isdigit() and part != "0" for part in user.split(":"))
    assert 'ENTRYPOINT ["kubetrio"]' in dockerfile and 'CMD ["run"]' in dockerfile

    manager = next(
        doc
        for doc in yaml.safe_load_all((ROOT / "config" / "manager" / "manager.yaml").read_text())
        if doc["kind"] == "Deployment"
    )
    (container,) = manager["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["kubetrio", "run"]
    assert container["image"] == "kubetrio:latest"
    assert manager["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    # The read-only root filesystem leaves /tmp to an emptyDir.
    assert {"mountPath": "/tmp", "name": "tmp"} in container["volumeMounts"]
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert "!.ci/install-wheel" in ignored and ".venv" in ignored

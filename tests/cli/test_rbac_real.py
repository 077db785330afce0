"""The shipped RBAC on a real kube-apiserver, from its own audit log: ``kubetrio run`` as the
kit's ServiceAccount (a token from the TokenRequest API, never the admin's) with the roles of
``config/rbac`` (what ``kubetrio manifests`` ships), running the controllers that need no
cloud (machineset, machinedeployment, safety), leader election and secure metrics, through a
MachineDeployment's scale-up, scale-down and deletion. No request may be refused; every
(verb, group, resource/subresource) used must be declared by the roles ``kubetrio rbac`` makes
for those controllers; what those roles grant and the run never used is printed (a grant unused
here may still be needed on a path this scenario does not take: evidence, not a verdict).
"""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import trio
import yaml

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineSet
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.gen.rbac import PolicyRule, role_rules
from kubetrio.testing.controlplane import ControlPlane
from kubetrio.testing.kubectl import Kubectl, find_kubectl, kubectl_env
from kubetrio.testing.plugin import CONTROL_PLANE_CONTROLLERS, control_plane_assets
from tests.helpers.machines import class_secret_doc, machine_class_doc
from tests.helpers.rbac_scenario import (
    NAMESPACE,
    REPO,
    SA_USER,
    SERVICE_ACCOUNT,
    deployment,
    manager_process,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
    pytest.mark.kubectl,
    pytest.mark.process,
    pytest.mark.slow,
]

CONTROLLERS = ("machineset", "machinedeployment", "safety")
WITHIN = 60.0  # a bound on each step, only so a broken run fails instead of hanging
Atom = tuple[str, str, str]  # (apiGroup, resource[/subresource] or URL, verb)


@pytest.fixture
def plane() -> Iterator[ControlPlane]:
    # The garbage collector deletes what the deployment owned, as in a cluster.
    with ControlPlane(
        audit=True, controllers=CONTROL_PLANE_CONTROLLERS, assets=control_plane_assets()
    ) as plane:
        yield plane


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def sa_kubeconfig(path: Path, plane: ControlPlane, token: str) -> Path:
    """The admin's kubeconfig with the ServiceAccount's token in place of the admin's."""
    doc: dict[str, Any] = plane.kubeconfig()
    doc["users"][0]["user"] = {"token": token}
    path.write_text(yaml.safe_dump(doc))
    return path


def atom_of(event: dict[str, Any]) -> Atom:
    ref = event.get("objectRef") or {}
    if not ref.get("resource"):
        return ("", event["requestURI"].split("?")[0], event["verb"])
    resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return (ref.get("apiGroup", ""), resource, event["verb"])


# kube-apiserver's RBAC authorizer says which binding and role allowed a request.
ALLOWED_BY = re.compile(r'RBAC: allowed by \w+ "[^"]+" of (ClusterRole|Role) "([^"]+)"')
# What every authenticated user may do by the server's default bindings (discovery, /version).
BUILT_IN = frozenset({"system:discovery", "system:public-info-viewer", "system:basic-user"})


@dataclass
class Usage:
    """The ServiceAccount's requests as the real server's audit log recorded them."""

    requests: int = 0
    refused: list[dict[str, Any]] = field(default_factory=list)
    by_role: dict[str, set[Atom]] = field(default_factory=dict)  # role name -> atoms it allowed


def read_usage(audit: Path) -> Usage:
    found = Usage()
    for line in audit.read_text().splitlines():
        event = json.loads(line)
        if event.get("user", {}).get("username") != SA_USER:
            continue
        if event["stage"] == "ResponseStarted":
            continue  # a watch is logged when it starts and again when it ends
        found.requests += 1
        annotations = event.get("annotations", {})
        reason = ALLOWED_BY.search(annotations.get("authorization.k8s.io/reason", ""))
        code = event.get("responseStatus", {}).get("code")
        if annotations.get("authorization.k8s.io/decision") != "allow" or code == 403:
            found.refused.append(event)
        else:
            assert reason is not None, event
            found.by_role.setdefault(reason.group(2), set()).add(atom_of(event))
    return found


def shipped(name: str) -> list[PolicyRule]:
    """The rules of a role file in config/rbac."""
    return role_rules(yaml.safe_load((REPO / "config" / "rbac" / name).read_text()))


def granted(rules: list[PolicyRule]) -> set[Atom]:
    return {atom for r in rules for atom in r.atoms()}


async def declared_roles() -> tuple[list[PolicyRule], list[PolicyRule]]:
    """The ClusterRole and leader-election Role ``kubetrio rbac`` makes for CONTROLLERS."""
    printed = await trio.run_process(
        [sys.executable, "-m", "kubetrio.cmd.main", "rbac", "--controllers", ",".join(CONTROLLERS)],
        capture_stdout=True,
    )
    cluster_role, role = yaml.safe_load_all(printed.stdout)
    return role_rules(cluster_role), role_rules(role)


class Objects:
    """An informer of one kind, waking the test on every change, adds and deletes included."""

    def __init__(self, client: Client, kind: type[Any]) -> None:
        self.informer: Informer[Any] = Informer(client, kind, namespace="default")
        self._changed = trio.Event()
        self.informer.add_handler(
            EventHandler(
                on_add=lambda *_: self._wake(),
                on_update=lambda *_: self._wake(),
                on_delete=lambda *_: self._wake(),
            )
        )

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def count(self) -> int:
        return len(self.informer.store.keys())

    async def until(self, condition: Callable[[], bool], what: str) -> None:
        try:
            with trio.fail_after(WITHIN):
                while not condition():
                    await self._changed.wait()
        except trio.TooSlowError:
            raise AssertionError(f"never happened: {what}") from None


async def scrape(port: int, token: str) -> requests.Response:
    url = f"https://127.0.0.1:{port}/metrics"
    return await trio.to_thread.run_sync(
        lambda: requests.get(
            url, headers={"Authorization": f"Bearer {token}"}, verify=False, timeout=10
        )
    )


async def test_the_shipped_roles_allow_every_request_on_a_real_server(
    plane: ControlPlane, tmp_path: Path
) -> None:
    binary = find_kubectl()
    assert binary is not None, "kubectl is not installed"
    kubectl = Kubectl(binary, kubectl_env(plane.kubeconfig_path, tmp_path))
    await kubectl.run("apply", "-k", str(REPO / "config" / "crd"))
    await kubectl.run("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")
    await kubectl.run("create", "namespace", NAMESPACE)
    await kubectl.run("apply", "-k", str(REPO / "config" / "rbac"))
    token = (await kubectl.out("create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE)).strip()
    kubeconfig = sa_kubeconfig(tmp_path / "sa.kubeconfig", plane, token)
    # A scraper bound to the shipped metrics-reader role, as Prometheus would be.
    await kubectl.run("create", "serviceaccount", "prometheus", "-n", NAMESPACE)
    await kubectl.run(
        "create", "clusterrolebinding", "prometheus-metrics",
        "--clusterrole", "kubetrio-metrics-reader",
        "--serviceaccount", f"{NAMESPACE}:prometheus",
    )  # fmt: skip
    prometheus = (await kubectl.out("create", "token", "prometheus", "-n", NAMESPACE)).strip()

    admin = Client.from_kubeconfig(str(plane.kubeconfig_path))
    machines, sets = Objects(admin, Machine), Objects(admin, MachineSet)
    port = free_port()
    log = tmp_path / "manager.log"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(machines.informer.run)
        nursery.start_soon(sets.informer.run)
        async with manager_process(
            kubeconfig,
            log,
            "--controllers", ",".join(CONTROLLERS),
            "--leader-elect", "--leader-election-namespace", NAMESPACE,
            "--metrics-secure", "--metrics-bind-address", f"127.0.0.1:{port}",
        ):  # fmt: skip
            await kubectl.apply([class_secret_doc(), machine_class_doc(), deployment(2)])
            await machines.until(lambda: machines.count() == 2, "two machines made")
            await kubectl.run("scale", "machinedeployment", "pool", "--replicas=1", "-n", "default")
            await machines.until(lambda: machines.count() == 1, "scaled down to one")
            scraped = await scrape(port, prometheus)
            assert scraped.status_code == 200, scraped.text
            assert "controller_runtime_reconcile_total" in scraped.text
            await kubectl.run("delete", "machinedeployment", "pool", "-n", "default")
            await sets.until(lambda: sets.count() == 0, "the machine sets gone")
            await machines.until(lambda: machines.count() == 0, "the machines gone")
        nursery.cancel_scope.cancel()

    found = read_usage(plane.audit_log_path)
    used = set().union(*found.by_role.values())
    ours = set().union(*(atoms for role, atoms in found.by_role.items() if role not in BUILT_IN))
    cluster, election = await declared_roles()
    declared = granted(cluster) | granted(election)
    metrics_auth = granted(shipped("metrics_auth_role.yaml"))
    every_grant = (
        granted(shipped("role.yaml")) | granted(shipped("leader_election_role.yaml")) | metrics_auth
    )
    print(
        f"\n{found.requests} requests by {SA_USER}, {len(found.refused)} refused; allowed by "
        + ", ".join(f"{role}: {len(atoms)} atoms" for role, atoms in sorted(found.by_role.items()))
        + f"\nused: {sorted(used)}"
        + f"\ndeclared for {','.join(CONTROLLERS)} but unused: {sorted(declared - used)}"
        + f"\nshipped but unused in this run: {sorted(every_grant - used)}",
        file=sys.stderr,
    )
    assert found.requests > 30
    assert [(e["verb"], e["requestURI"], e["responseStatus"]) for e in found.refused] == []
    assert set(found.by_role) - BUILT_IN == {
        "kubetrio-manager-role",
        "kubetrio-leader-election-role",
        "kubetrio-metrics-auth-role",
    }
    assert ours - declared - metrics_auth == set(), "used but not declared for its controllers"
    assert found.by_role["kubetrio-metrics-auth-role"] == metrics_auth  # reviews by the manager

"""What the embedded demo puts into the cluster: a sim MachineClass with its user-data Secret, the
Machines of one "deployment" (label ``name=demo``), and a workload that makes a scale-down
interesting — a StatefulSet whose pods hold volumes (so the drain moves data), a Deployment and a
PodDisruptionBudget the drain has to respect.

Manifests are plain dicts built by pure functions (so tests can check them without a cluster),
and everything is written with create-if-missing, so a rerun on a kept ``--embedded-dir`` state
neither fails nor duplicates anything.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kubetrio.api.registry import KindInfo, lookup
from kubetrio.runtime.client import Client, object_path
from kubetrio.runtime.errors import ApiError

NAMESPACE = "default"
DEPLOYMENT = "demo"  # the machines' ``name`` label: MCM's MachineDeployment grouping
CLASS_NAME = "demo-sim"
SECRET_NAME = "demo-sim-userdata"
STATEFULSET = "db"
WEB = "web"
PDB_NAME = "web-budget"
STORAGE_CLASS = "sim-csi"
# Seconds a VM takes to boot: long enough that Pending is visible, short enough for a quick demo.
BOOT_SECONDS = 2.0
# The kubelet simulation terminates a pod in 0.1 x its grace period: 5 s gives a visible but
# short termination during the drain.
GRACE_SECONDS = 5

# A placeholder cloud-init: the machine controller substitutes a fresh bootstrap token for the
# marker. Nothing here is a secret, and the demo never prints it anyway.
USER_DATA = "#cloud-config\n# kubeadm join --token <<BOOTSTRAP_TOKEN>> (simulated)\n"


def machine_names(count: int) -> list[str]:
    return [f"{DEPLOYMENT}-{index}" for index in range(1, count + 1)]


def scale_down_names(names: Sequence[str]) -> list[str]:
    """The newest half (rounded down) goes: at least one machine always stays to take the pods."""
    return list(names[len(names) - len(names) // 2 :])


def class_secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"userData": base64.b64encode(USER_DATA.encode()).decode()},
    }


def machine_class(boot_seconds: float = BOOT_SECONDS) -> dict[str, Any]:
    return {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "MachineClass",
        "metadata": {"name": CLASS_NAME, "namespace": NAMESPACE},
        "provider": "sim",
        "providerSpec": {"region": "sim-1", "bootSeconds": boot_seconds},
        "secretRef": {"name": SECRET_NAME, "namespace": NAMESPACE},
    }


def machine(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"name": DEPLOYMENT}},
        "spec": {
            "class": {"kind": "MachineClass", "name": CLASS_NAME},
            "nodeTemplate": {"metadata": {"labels": {"pool": DEPLOYMENT}}},
        },
    }


def _pod_template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "terminationGracePeriodSeconds": GRACE_SECONDS,
            "containers": [{"name": app, "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def statefulset(replicas: int) -> dict[str, Any]:
    """Parallel pod management: all pods start at once instead of one ordinal at a time."""
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": STATEFULSET, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "serviceName": STATEFULSET,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": STATEFULSET}},
            "template": _pod_template(STATEFULSET),
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "storageClassName": STORAGE_CLASS,
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            ],
        },
    }


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": WEB, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": WEB}},
            "template": _pod_template(WEB),
        },
    }


def pdb() -> dict[str, Any]:
    """One web pod must stay up. It never blocks the demo's drains for long (the web pods on the
    draining machines are fewer than the replicas), since a blocked eviction is retried only
    every 20 s, as MCM does."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": PDB_NAME, "namespace": NAMESPACE},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": WEB}}},
    }


def workload_replicas(machines: int) -> dict[str, int]:
    """Pods per app: one of each per machine, so every machine that goes has pods to drain."""
    return {STATEFULSET: machines, WEB: machines}


async def create_if_missing(client: Client, document: Mapping[str, Any]) -> bool:
    """POST ``document``; True when created, False when it already existed (409)."""
    info = lookup(document["apiVersion"], document["kind"])
    namespace = document["metadata"].get("namespace")
    try:
        await client.request(
            "POST", object_path(info, namespace), body=msgspec.json.encode(document)
        )
    except ApiError as error:
        if error.status == 409:
            return False
        raise
    return True


async def seed_machines(client: Client, count: int, boot_seconds: float = BOOT_SECONDS) -> None:
    for document in (class_secret(), machine_class(boot_seconds)):
        await create_if_missing(client, document)
    for name in machine_names(count):
        await create_if_missing(client, machine(name))


async def seed_workloads(client: Client, machines: int) -> None:
    replicas = workload_replicas(machines)
    for document in (statefulset(replicas[STATEFULSET]), deployment(replicas[WEB]), pdb()):
        await create_if_missing(client, document)


async def delete_machines(client: Client, names: Sequence[str]) -> None:
    """What a MachineSet scale-down does to the machines it picked: delete them; the machine
    controller's finalizer turns that into the drain and deletion flow."""
    info: KindInfo = lookup("machine.sapcloud.io/v1alpha1", "Machine")
    for name in names:
        await client.delete(info, name, NAMESPACE, missing_ok=True)

"""What the embedded demo puts into the cluster and changes there, as a user would: two
MachineClasses with their Secret (the sim ones here, the aws ones in ``clouds``), a
MachineDeployment (``demo``) of the first class, its scale and its class; and a workload that
makes a scale-down interesting — a StatefulSet whose pods hold volumes (so the drain moves data),
a Deployment and a PodDisruptionBudget the drain has to respect. It also breaks one VM at the
simulated cloud, which is the cloud's doing, not a user's.

Manifests are plain dicts built by pure functions (so tests can check them without a cluster),
and everything is written with create-if-missing, so a rerun on a kept ``--embedded-dir`` state
neither fails nor duplicates anything.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import msgspec

from kubetrio.api.machine import PRESERVE_ANNOTATION
from kubetrio.api.registry import lookup
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client, object_path

NAMESPACE = "default"
DEPLOYMENT = "demo"  # the MachineDeployment, and its machines' ``name`` label (MCM's grouping)
CLASS_NAME = "demo-sim"
NEW_CLASS_NAME = "demo-sim-v2"  # what the rolling update moves the deployment to
# What the in-place update moves it to: as a new OS image would, under a new class name, on the
# same VMs (the simulated cloud has no images; the class's name is what changes the template).
IN_PLACE_CLASS_NAME = "demo-sim-v3"
SECRET_NAME = "demo-sim-userdata"
STATEFULSET = "db"
WEB = "web"
PDB_NAME = "web-budget"
STORAGE_CLASS = "sim-csi"
# Seconds a VM takes to boot: long enough that Pending is visible, short enough for a quick demo.
BOOT_SECONDS = 2.0
# The template's ``machineConfiguration.healthTimeout``: how long the broken VM's machine stays
# Unknown before it is Failed and replaced (MCM's default of 10 minutes would not fit the demo).
HEALTH_TIMEOUT = "5s"
# The rolling update's bounds: half the machines again at a time and never fewer available than
# asked for, so the workload keeps its capacity (percentages keep this sensible for any size:
# the surge rounds up, so one machine at least).
MAX_SURGE = "50%"
MAX_UNAVAILABLE = 0
# The in-place update takes half the machines out of service at a time and adds none: the VMs
# are updated where they run, so there is nothing to surge with.
IN_PLACE_MAX_UNAVAILABLE = "50%"
# The kubelet simulation terminates a pod in 0.1 x its grace period: 5 s gives a visible but
# short termination during the drain.
GRACE_SECONDS = 5
MACHINE_API = "machine.sapcloud.io/v1alpha1"

# A placeholder cloud-init: the machine controller substitutes a fresh bootstrap token for the
# marker. Nothing here is a secret, and the demo never prints it anyway.
USER_DATA = "#cloud-config\n# kubeadm join --token <<BOOTSTRAP_TOKEN>> (simulated)\n"


def initial_replicas(machines: int) -> int:
    """The deployment starts at half its size, so scaling up is part of the story."""
    return max(1, machines // 2)


def final_replicas(machines: int) -> int:
    """The scale-down removes half (rounded down): one machine always stays to take the pods."""
    return machines - machines // 2


def class_secret() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"userData": base64.b64encode(USER_DATA.encode()).decode()},
    }


def machine_class(
    name: str = CLASS_NAME,
    boot_seconds: float = BOOT_SECONDS,
    instance_type: str = "sim.standard",
) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineClass",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "provider": "sim",
        "providerSpec": {
            "region": "sim-1",
            "bootSeconds": boot_seconds,
            "instanceType": instance_type,
        },
        "secretRef": {"name": SECRET_NAME, "namespace": NAMESPACE},
    }


def machine_classes(boot_seconds: float = BOOT_SECONDS) -> list[dict[str, Any]]:
    """The class the deployment starts with, the bigger one it is rolled to, and the one it is
    updated to in place."""
    return [
        machine_class(CLASS_NAME, boot_seconds, "sim.standard"),
        machine_class(NEW_CLASS_NAME, boot_seconds, "sim.large"),
        machine_class(IN_PLACE_CLASS_NAME, boot_seconds, "sim.large"),
    ]


def machine_deployment(replicas: int, class_name: str = CLASS_NAME) -> dict[str, Any]:
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineDeployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"name": DEPLOYMENT}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": MAX_SURGE, "maxUnavailable": MAX_UNAVAILABLE},
            },
            "template": {
                "metadata": {"labels": {"name": DEPLOYMENT}},
                "spec": {
                    "class": {"kind": "MachineClass", "name": class_name},
                    "nodeTemplate": {"metadata": {"labels": {"pool": DEPLOYMENT}}},
                    "machineConfiguration": {"healthTimeout": HEALTH_TIMEOUT},
                },
            },
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


async def seed_deployment(
    client: Client, replicas: int, classes: list[dict[str, Any]], class_name: str
) -> None:
    """``classes`` (the class Secret and MachineClasses), then the deployment of
    ``class_name``."""
    for document in classes:
        await create_if_missing(client, document)
    await create_if_missing(client, machine_deployment(replicas, class_name))


async def seed_workloads(client: Client, machines: int) -> None:
    replicas = workload_replicas(machines)
    for document in (statefulset(replicas[STATEFULSET]), deployment(replicas[WEB]), pdb()):
        await create_if_missing(client, document)


async def _patch_deployment(client: Client, patch: Mapping[str, Any], subresource: str) -> None:
    info = lookup(MACHINE_API, "MachineDeployment")
    await client.request(
        "PATCH",
        object_path(info, NAMESPACE, DEPLOYMENT, subresource),
        body=msgspec.json.encode(patch),
        content_type="application/merge-patch+json",
    )


async def scale(client: Client, replicas: int) -> None:
    """What ``kubectl scale machinedeployment/demo`` does: a patch of the scale subresource."""
    await _patch_deployment(client, {"spec": {"replicas": replicas}}, "scale")


async def change_class(client: Client, class_name: str) -> None:
    """A new MachineClass in the template: the deployment controller rolls every machine."""
    patch = {"spec": {"template": {"spec": {"class": {"name": class_name}}}}}
    await _patch_deployment(client, patch, "")


def in_place_patch(class_name: str) -> dict[str, Any]:
    """The deployment's strategy switched to MCM's ``InPlaceUpdate`` (Auto: the deployment
    controller selects the nodes) and its class changed in the same write, as a user moving a
    pool to a new OS image in place would."""
    return {
        "spec": {
            "strategy": {
                "type": "InPlaceUpdate",
                "rollingUpdate": None,
                "inPlaceUpdate": {
                    "orchestrationType": "Auto",
                    "maxSurge": 0,
                    "maxUnavailable": IN_PLACE_MAX_UNAVAILABLE,
                },
            },
            "template": {"spec": {"class": {"name": class_name}}},
        }
    }


async def update_in_place(client: Client, class_name: str) -> None:
    await _patch_deployment(client, in_place_patch(class_name), "")


async def preserve_node(client: Client, node: str, value: str) -> None:
    """What ``kubectl annotate node N node.machine.sapcloud.io/preserve=VALUE`` does: a user
    asking MCM to keep (``when-failed``) or stop keeping (``false``) the node's machine."""
    info = lookup("v1", "Node")
    patch = {"metadata": {"annotations": {PRESERVE_ANNOTATION: value}}}
    await client.request(
        "PATCH",
        object_path(info, None, node),
        body=msgspec.json.encode(patch),
        content_type="application/merge-patch+json",
    )

"""The machine CRDs in config/crd apply with kubectl and serve Machines and MachineClasses that
the typed client reads back, with the status subresource kept apart from the spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrio.api.machine import Machine, MachineClass
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from tests.helpers.kube import Kubectl

pytestmark = pytest.mark.kubectl

CRD_DIR = Path(__file__).resolve().parents[3] / "config" / "crd"

MACHINE_CLASS = {
    "apiVersion": "machine.sapcloud.io/v1alpha1",
    "kind": "MachineClass",
    "metadata": {"name": "small", "namespace": "default"},
    "provider": "sim",
    "providerSpec": {"region": "eu-1", "bootSeconds": 20, "failNext": {"create": {"count": 1}}},
    "secretRef": {"name": "cloud", "namespace": "default"},
}

MACHINE = {
    "apiVersion": "machine.sapcloud.io/v1alpha1",
    "kind": "Machine",
    "metadata": {"name": "small-1", "namespace": "default", "labels": {"name": "pool-a"}},
    "spec": {
        "class": {"kind": "MachineClass", "name": "small"},
        "nodeTemplate": {"metadata": {"labels": {"pool": "a"}}},
        "machineConfiguration": {"drainTimeout": "30m", "nodeConditions": "ReadonlyFilesystem"},
    },
}


async def test_crds_apply_and_serve_typed_objects(emu: Emulator, kubectl: Kubectl) -> None:
    out = await kubectl.out("apply", "-k", str(CRD_DIR))
    assert "machines.machine.sapcloud.io created" in out
    assert "machineclasses.machine.sapcloud.io created" in out
    await kubectl.apply([MACHINE_CLASS, MACHINE])

    client = Client.from_url(emu.url, token=emu.token)
    cls = await client.get(MachineClass, "small", namespace="default")
    assert cls.provider == "sim"
    assert cls.provider_spec["failNext"] == {"create": {"count": 1}}
    assert cls.secret_ref is not None and cls.secret_ref.name == "cloud"

    machine = await client.get(Machine, "small-1", namespace="default")
    assert machine.spec.class_.name == "small"
    config = machine.spec.machine_configuration
    assert config is not None and config.drain_timeout == "30m"

    # The status subresource: a status patch changes only status, a main patch never status.
    patched = await client.patch(
        Machine,
        "small-1",
        {
            "status": {"currentStatus": {"phase": "Pending", "timeoutActive": True}},
            "spec": {"providerID": "ignored"},
        },
        namespace="default",
        subresource="status",
    )
    assert patched.phase == "Pending"
    assert patched.spec.provider_id == ""
    patched = await client.patch(
        Machine,
        "small-1",
        {"spec": {"providerID": "sim://eu-1/1"}, "status": {"currentStatus": {"phase": "X"}}},
        namespace="default",
    )
    assert patched.spec.provider_id == "sim://eu-1/1"
    assert patched.phase == "Pending"

    table = await kubectl.out("get", "mach", "-n", "default")
    assert "STATUS" in table and "Pending" in table
    assert "small" in await kubectl.out("get", "machcls", "-n", "default")

"""The embedded demo's manifests: which machines go, and objects the emulator and the machine
controller take as they are (checked against the typed views and the CRD files)."""

from __future__ import annotations

import base64

import msgspec

from kubetrio.api.machine import Machine, MachineClass
from kubetrio.cmd import demo_seed as seed
from kubetrio.cmd.embedded import load_crds


def test_the_newest_half_goes_and_one_always_stays() -> None:
    assert seed.machine_names(4) == ["demo-1", "demo-2", "demo-3", "demo-4"]
    assert seed.scale_down_names(seed.machine_names(4)) == ["demo-3", "demo-4"]
    assert seed.scale_down_names(seed.machine_names(3)) == ["demo-3"]
    assert seed.scale_down_names(seed.machine_names(2)) == ["demo-2"]
    assert seed.scale_down_names(seed.machine_names(1)) == []


def test_machines_and_class_read_back_as_the_controller_sees_them() -> None:
    cls = msgspec.convert(seed.machine_class(boot_seconds=2), MachineClass)
    assert cls.provider == "sim" and cls.provider_spec["bootSeconds"] == 2
    assert cls.secret_ref is not None and cls.secret_ref.name == seed.SECRET_NAME
    m = msgspec.convert(seed.machine("demo-1"), Machine)
    assert m.spec.class_.name == seed.CLASS_NAME and m.spec.class_.kind == "MachineClass"
    assert m.metadata.labels == {"name": "demo"}
    secret = seed.class_secret()
    assert "<<BOOTSTRAP_TOKEN>>" in base64.b64decode(secret["data"]["userData"]).decode()


def test_workload_spreads_over_the_machines_with_volumes_and_a_budget() -> None:
    assert seed.workload_replicas(4) == {"db": 4, "web": 4}
    sts = seed.statefulset(4)
    assert sts["spec"]["podManagementPolicy"] == "Parallel"
    claim = sts["spec"]["volumeClaimTemplates"][0]["spec"]
    assert claim["storageClassName"] == "sim-csi"
    budget = seed.pdb()["spec"]
    # Never zero evictions allowed (that would block the drain until its timeout).
    assert budget["minAvailable"] < seed.workload_replicas(2)["web"]


def test_crd_files_define_every_machine_kind() -> None:
    names = {crd["metadata"]["name"] for crd in load_crds()}
    assert names == {
        "machines.machine.sapcloud.io",
        "machineclasses.machine.sapcloud.io",
        "machinesets.machine.sapcloud.io",
        "machinedeployments.machine.sapcloud.io",
    }

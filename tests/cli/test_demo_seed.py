"""The embedded demo's manifests: the deployment's sizes, and objects the emulator and the
controllers take as they are (checked against the typed views and the CRD files)."""

from __future__ import annotations

import base64

import msgspec

from kubetrio.api.machine import MachineClass, parse_duration
from kubetrio.api.machineset import MachineDeployment
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.demo import seed


def test_the_deployment_starts_at_half_and_one_machine_always_stays() -> None:
    assert [(seed.initial_replicas(n), seed.final_replicas(n)) for n in (1, 2, 3, 4, 6)] == [
        (1, 1),
        (1, 1),
        (1, 2),
        (2, 2),
        (3, 3),
    ]


def test_deployment_and_classes_read_back_as_the_controllers_see_them() -> None:
    old, new, in_place = (msgspec.convert(doc, MachineClass) for doc in seed.machine_classes(2))
    assert (old.name, new.name) == (seed.CLASS_NAME, seed.NEW_CLASS_NAME)
    assert in_place.name == seed.IN_PLACE_CLASS_NAME
    assert old.provider == new.provider == "sim" and old.provider_spec["bootSeconds"] == 2
    assert old.provider_spec["instanceType"] != new.provider_spec["instanceType"]
    assert old.secret_ref is not None and old.secret_ref.name == seed.SECRET_NAME
    d = msgspec.convert(seed.machine_deployment(3), MachineDeployment)
    assert d.spec.replicas == 3 and d.name == seed.DEPLOYMENT
    assert d.spec.strategy.type == "RollingUpdate"
    assert d.spec.strategy.rolling_update is not None
    assert d.spec.strategy.rolling_update.max_surge == "50%"
    assert d.spec.strategy.rolling_update.max_unavailable == 0
    assert d.spec.selector is not None and d.spec.selector.match_labels == {"name": "demo"}
    assert d.spec.template.metadata.labels == {"name": "demo"}
    template = d.spec.template.spec
    assert template.class_.name == seed.CLASS_NAME and template.class_.kind == "MachineClass"
    assert template.machine_configuration is not None
    timeout = template.machine_configuration.health_timeout
    assert timeout is not None and parse_duration(timeout) == 5.0
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
    names = {crd["metadata"]["name"] for crd in crd_documents()}
    assert names == {
        "machines.machine.sapcloud.io",
        "machineclasses.machine.sapcloud.io",
        "machinesets.machine.sapcloud.io",
        "machinedeployments.machine.sapcloud.io",
    }

"""Our own kinds behind the manager's webhooks, end to end: ``kubectl apply`` against the
emulator, which calls the webhooks of the generated configuration (``kubetrio webhooks
manifest``, turned into url form for a manager running in the test) over TLS. The embedded
demo through the webhooks (``kubetrio run --embedded --webhooks``) is
tests/cli/test_demo.py's run on the simulated cloud."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from kubetrio.cmd.config import DEFAULT_CONTROLLERS, ManagerConfig
from kubetrio.cmd.webhooks import documents
from kubetrio.controllers.machine.setup import setup as machine_setup
from kubetrio.controllers.machinedeployment.setup import setup as deployment_setup
from kubetrio.controllers.machineset.setup import setup as set_setup
from kubetrio.emulator import Emulator
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.util.inflight import request_in_flight
from kubetrio.runtime.webhook.manifest import as_url
from kubetrio.testing import run_manager
from tests.helpers.kube import Kubectl
from tests.helpers.machines import MACHINE_API, install_crds, machine_class_doc, machine_doc

pytestmark = pytest.mark.slow

MACHINE_HOOK = "vmachine-v1alpha1.machine.sapcloud.io"


async def kubectl_run(
    kubectl: Kubectl, *args: str, docs: list[dict[str, Any]] | None = None
) -> Any:
    import yaml

    stdin = yaml.safe_dump_all(docs).encode() if docs is not None else None
    with request_in_flight():
        return await kubectl.run(*args, check=False, stdin=stdin)


@asynccontextmanager
async def webhook_manager(emu: Emulator, idle_timeout: float = 120.0) -> AsyncIterator[Manager]:
    """The three machine controllers with ``--webhooks``, on a free port."""
    install_crds(emu)
    config = ManagerConfig(webhooks=True)

    def idle(manager: Manager, config: Any) -> None:
        manager.webhooks.idle_timeout = idle_timeout

    async with run_manager(
        emu,
        machine_setup,
        set_setup,
        deployment_setup,
        idle,
        config=config,
        webhook_bind_address="127.0.0.1:0",
    ) as manager:
        yield manager


def configurations(manager: Manager, failure_policy: str = "Fail") -> list[dict[str, Any]]:
    ca = manager.webhooks.ca_pem
    assert ca is not None
    base = f"https://127.0.0.1:{manager.bound_ports['webhook']}"
    docs = [as_url(doc, base, ca) for doc in documents(list(DEFAULT_CONTROLLERS), "x")]
    for doc in docs:
        for hook in doc["webhooks"]:
            hook["failurePolicy"] = failure_policy
    return docs


def deployment_doc(name: str, **spec: Any) -> dict[str, Any]:
    labels = {"pool": name}
    return {
        "apiVersion": MACHINE_API,
        "kind": "MachineDeployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"class": {"kind": "MachineClass", "name": "small"}},
            },
            **spec,
        },
    }


@pytest.mark.kubectl
async def test_bad_objects_are_refused_at_the_door_and_defaults_are_set(
    emu: Emulator, kubectl: Kubectl
) -> None:
    async with webhook_manager(emu) as manager:
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=configurations(manager))
        assert p.returncode == 0, p.stderr
        bad = machine_doc("bad", machineConfiguration={"drainTimeout": "5x"})
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[bad])
        assert p.returncode == 1
        assert (
            f'admission webhook "{MACHINE_HOOK}" denied the request: Machine.machine.sapcloud.io '
            '"bad" is invalid: spec.machineConfiguration.drainTimeout: invalid duration "5x"'
        ) in p.stderr.decode()
        assert p.stderr.decode().startswith("The request is invalid: ")  # 422, as kube's own

        unknown = {**machine_class_doc("odd"), "provider": "gcp"}
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[unknown])
        assert p.returncode == 1
        assert 'provider: no machine driver for "gcp" (known: AWS, aws, sim)' in p.stderr.decode()

        mismatched = deployment_doc("md-bad")
        mismatched["spec"]["selector"] = {"matchLabels": {"pool": "other"}}
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[mismatched])
        assert p.returncode == 1
        assert (
            "spec.selector.matchLabels: is not matching with spec.template.metadata.labels"
        ) in p.stderr.decode()

        negative = deployment_doc("md-neg", replicas=-1)
        negative["kind"] = "MachineSet"
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[negative])
        assert p.returncode == 1
        assert "spec.replicas: Required value: Replicas has to be a whole number" in (
            p.stderr.decode()
        )

        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[deployment_doc("md")])
        assert p.returncode == 0, p.stderr
        with request_in_flight():
            stored = await kubectl.json("get", "machinedeployment", "md")
        assert stored["spec"]["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1},
        }
        # A chosen value is kept, only the missing one is filled in.
        explicit = deployment_doc(
            "md2", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%"}}
        )
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[explicit])
        assert p.returncode == 0, p.stderr
        with request_in_flight():
            stored = await kubectl.json("get", "machinedeployment", "md2")
        assert stored["spec"]["strategy"]["rollingUpdate"] == {
            "maxSurge": "50%",
            "maxUnavailable": 1,
        }
        good = machine_doc("good", machineConfiguration={"drainTimeout": "5m"})
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[good])
        assert p.returncode == 0, p.stderr


@pytest.mark.kubectl
async def test_failure_policy_when_the_manager_is_down(emu: Emulator, kubectl: Kubectl) -> None:
    async with webhook_manager(emu) as manager:
        fail = configurations(manager, "Fail")
        ignore = configurations(manager, "Ignore")
    # The manager is gone: nothing answers at its port any more.
    p = await kubectl_run(kubectl, "apply", "-f", "-", docs=fail)
    assert p.returncode == 0, p.stderr
    p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[machine_doc("m1")])
    assert p.returncode == 1
    assert f'failed calling webhook "{MACHINE_HOOK}"' in p.stderr.decode()
    p = await kubectl_run(kubectl, "apply", "-f", "-", docs=ignore)
    assert p.returncode == 0, p.stderr
    p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[machine_doc("m1")])
    assert p.returncode == 0, p.stderr


@pytest.mark.kubectl
@pytest.mark.slow
async def test_the_emulator_keeps_its_connection_to_the_webhook(
    emu: Emulator, kubectl: Kubectl
) -> None:
    """As kube-apiserver: one TLS connection for many reviews; when the webhook server closes
    it while idle, the next call opens a new one instead of failing."""
    async with webhook_manager(emu, idle_timeout=1.0) as manager:
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=configurations(manager))
        assert p.returncode == 0, p.stderr
        connections = emu.api.admission.connections
        for i in range(3):
            p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[machine_doc(f"m{i}")])
            assert p.returncode == 0, p.stderr
        assert connections.opened == 1
        # Simulated time past the server's idle timeout: it closes the kept connection.
        await trio.sleep(manager.webhooks.idle_timeout + 1)
        p = await kubectl_run(kubectl, "apply", "-f", "-", docs=[machine_doc("m3")])
        assert p.returncode == 0, p.stderr
        assert connections.opened == 2
        reviews = manager.registry.get_sample_value(
            "controller_runtime_webhook_requests_total",
            {"webhook": "/validate-machine-sapcloud-io-v1alpha1-machine", "code": "200"},
        )
        assert reviews == 4

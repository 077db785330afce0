"""The framework's own behaviour, proven on the emulator and on a real kube-apiserver in the
same run (``api_server`` runs each test on both): when the two disagree, the real one is right
and the emulator is fixed or its gaps table says why."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import msgspec
import pytest
import requests
import trio
import yaml

from kubetrio.api.core import ConfigMap, Namespace, Pod
from kubetrio.api.machine import Machine
from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.webhooks import documents as webhook_documents
from kubetrio.controllers.machine.setup import setup as machine_setup
from kubetrio.runtime import ApiError, Client, Manager
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.metrics.secure import SecureServing
from kubetrio.runtime.util.inflight import request_in_flight
from kubetrio.runtime.webhook.manifest import as_url
from kubetrio.testing import eventually, install_crds, run_manager, wait_for, wait_gone
from kubetrio.testing.servers import ApiServer
from tests.helpers.readme import readme_controller

ROOT = Path(__file__).resolve().parents[2]


async def test_the_readme_controller_labels_scheduled_pods(
    api_server: ApiServer, tmp_path: Path
) -> None:
    example = readme_controller(tmp_path)
    client = api_server.client()
    async with run_manager(api_server, example.setup) as manager:
        labelled = trio.Event()

        def check(_: Pod, new: Pod) -> None:
            if new.metadata.labels.get(example.LABEL) == "node-7":
                labelled.set()

        manager.cache.informer(Pod).add_handler(EventHandler(on_update=check))
        pod = {
            "metadata": {"name": "p"},
            "spec": {"nodeName": "node-7", "containers": [{"name": "c", "image": "i"}]},
        }
        await client.create(Pod, pod, namespace=api_server.namespace)
        with trio.fail_after(30):
            await labelled.wait()


def _cache_configmaps(manager: Manager, _config: object) -> None:
    manager.cache.informer(ConfigMap)


async def test_an_informer_sees_creates_updates_and_deletes(api_server: ApiServer) -> None:
    client, namespace = api_server.client(), api_server.namespace
    async with run_manager(api_server, _cache_configmaps) as manager:
        await client.create(
            ConfigMap, {"metadata": {"name": "c"}, "data": {"a": "1"}}, namespace=namespace
        )
        await wait_for(manager, ConfigMap, "c", namespace, condition=lambda c: c.data == {"a": "1"})
        await client.patch(ConfigMap, "c", {"data": {"a": "2"}}, namespace=namespace)
        await wait_for(manager, ConfigMap, "c", namespace, condition=lambda c: c.data == {"a": "2"})
        await client.delete(ConfigMap, "c", namespace=namespace)
        await wait_gone(manager, ConfigMap, "c", namespace)


async def test_the_shipped_crds_are_served_and_typed_objects_round_trip(
    api_server: ApiServer,
) -> None:
    client, namespace = api_server.client(), api_server.namespace
    await install_crds(client, *crd_documents())
    machine = {
        "metadata": {"name": "m", "labels": {"pool": "a"}},
        "spec": {"class": {"kind": "MachineClass", "name": "small"}, "providerID": "sim:///m"},
    }
    created = await client.create(Machine, machine, namespace=namespace)
    read = await client.get(Machine, "m", namespace=namespace)
    assert read == created
    assert read.spec.provider_id == "sim:///m" and read.metadata.labels == {"pool": "a"}


def _machine_webhooks(manager: Manager, namespace: str) -> list[dict[str, Any]]:
    """The generated webhook configurations in url form for this manager, limited to the
    test's namespace (a real server is shared by the tests of a process) and named after it."""
    ca = manager.webhooks.ca_pem
    assert ca is not None
    base = f"https://127.0.0.1:{manager.bound_ports['webhook']}"
    docs = [as_url(doc, base, ca) for doc in webhook_documents(["machine"], "x")]
    for doc in docs:
        doc["metadata"]["name"] += f"-{namespace}"
        for hook in doc["webhooks"]:
            hook["namespaceSelector"] = {"matchLabels": {"kubetrio.io/test": namespace}}
    return docs


async def test_the_server_calls_the_managers_webhooks(api_server: ApiServer) -> None:
    """The API server itself sends the AdmissionReviews over TLS to the manager's webhook
    server, trusting the caBundle: a refusal reaches the client as the server words it."""
    client, namespace = api_server.client(), api_server.namespace
    await install_crds(client, *crd_documents())
    await client.patch(
        Namespace, namespace, {"metadata": {"labels": {"kubetrio.io/test": namespace}}}
    )
    async with run_manager(
        api_server,
        machine_setup,
        config=ManagerConfig(webhooks=True),
        webhook_bind_address="127.0.0.1:0",
    ) as manager:
        configurations = _machine_webhooks(manager, namespace)
        for doc in configurations:
            plural = doc["kind"].lower() + "s"
            path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
            await client.request("POST", path, body=msgspec.json.encode(doc))
        try:
            bad = {
                "metadata": {"name": "bad"},
                "spec": {
                    "class": {"kind": "MachineClass", "name": "small"},
                    "machineConfiguration": {"drainTimeout": "5x"},
                },
            }

            async def in_effect() -> bool:
                """kube-apiserver reads webhook configurations from its own cache, a moment
                behind their create: until then a request is admitted without a call."""
                try:
                    await client.create(Machine, bad, namespace=namespace, dry_run=True)
                except ApiError as error:
                    return error.status == 422
                return False

            await eventually(in_effect, timeout=30, interval=0.2)
            with pytest.raises(ApiError) as refused:
                await client.create(Machine, bad, namespace=namespace)
            assert refused.value.status == 422
            assert refused.value.message == (
                'admission webhook "vmachine-v1alpha1.machine.sapcloud.io" denied the request: '
                'Machine.machine.sapcloud.io "bad" is invalid: '
                'spec.machineConfiguration.drainTimeout: invalid duration "5x"'
            )
            good = {
                "metadata": {"name": "good"},
                "spec": bad["spec"] | {"machineConfiguration": {}},
            }
            await client.create(Machine, good, namespace=namespace)
        finally:
            for doc in configurations:
                plural = doc["kind"].lower() + "s"
                path = f"/apis/admissionregistration.k8s.io/v1/{plural}/{doc['metadata']['name']}"
                await client.request("DELETE", path)


async def _post(client: Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = msgspec.json.decode(
        await client.request("POST", path, body=msgspec.json.encode(body))
    )
    return answer


async def _service_account_token(client: Client, namespace: str, name: str) -> str:
    """A ServiceAccount and a token for it from the TokenRequest API, as a pod would get."""
    accounts = f"/api/v1/namespaces/{namespace}/serviceaccounts"
    await _post(
        client, accounts, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}
    )
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    issued = await _post(client, f"{accounts}/{name}/token", request)
    return str(issued["status"]["token"])


async def _scrape(manager: Manager, bearer: str) -> tuple[int, str]:
    url = f"https://127.0.0.1:{manager.bound_ports['metrics']}/metrics"
    with request_in_flight():
        response = await trio.to_thread.run_sync(
            lambda: requests.get(
                url, headers={"Authorization": f"Bearer {bearer}"}, verify=False, timeout=30
            )
        )
    return response.status_code, response.text


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
async def test_secure_metrics_ask_the_server_who_may_read_them(api_server: ApiServer) -> None:
    """``/metrics`` over TLS: the server authenticates the bearer token (TokenReview) and
    authorizes get on /metrics (SubjectAccessReview); the shipped reader role is what grants
    it."""
    client, namespace = api_server.client(), api_server.namespace
    reader = await _service_account_token(client, namespace, "prometheus")
    other = await _service_account_token(client, namespace, "nobody")
    role = yaml.safe_load((ROOT / "config" / "rbac" / "metrics_reader_role.yaml").read_text())
    role["metadata"]["name"] += f"-{namespace}"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": role["metadata"]["name"]},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role["metadata"]["name"],
        },
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": namespace}],
    }
    await _post(client, f"{rbac}/clusterroles", role)
    await _post(client, f"{rbac}/clusterrolebindings", binding)
    try:

        def secure(manager: Manager, _config: object) -> None:
            # A client's TLS handshake in a worker thread is not a request the clock sees.
            manager.http.idle_timeout = math.inf

        async with run_manager(
            api_server,
            secure,
            metrics_bind_address="127.0.0.1:0",
            metrics_secure=SecureServing(),
        ) as manager:
            status, text = await _scrape(manager, reader)
            assert status == 200, text
            assert "process_cpu_seconds_total" in text
            status, text = await _scrape(manager, other)
            assert (status, text) == (
                403,
                f"Authorization denied for user system:serviceaccount:{namespace}:nobody\n",
            )
            assert (await _scrape(manager, "garbage"))[0] == 401
    finally:
        name = role["metadata"]["name"]
        await client.request("DELETE", f"{rbac}/clusterrolebindings/{name}")
        await client.request("DELETE", f"{rbac}/clusterroles/{name}")

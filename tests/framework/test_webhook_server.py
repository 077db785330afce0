"""The manager's webhook server, called over TLS exactly as kube-apiserver calls it: an
``AdmissionReview`` or ``ConversionReview`` POSTed as JSON to the registered path, the server's
certificate verified against the CA the test trusts. The reviews are built by hand here; the
emulator calling webhooks itself is tested with it.
"""

from __future__ import annotations

import base64
import functools
import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar

import jsonpatch
import msgspec
import pytest
import requests
import trio
import trio.testing
import trustme

from kubetrio.api.machine import Machine
from kubetrio.api.meta import KubeObject
from kubetrio.api.registry import KindInfo
from kubetrio.emulator import Emulator
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.metrics.secure import SecureServing
from kubetrio.runtime.metrics.server import ListenError
from kubetrio.runtime.util.inflight import waiting_on_simulated_time
from kubetrio.runtime.webhook import AdmissionRequest, Denied
from tests.helpers.kube import blocking

MUTATE = "/mutate-machine-sapcloud-io-v1alpha1-machine"
VALIDATE = "/validate-machine-sapcloud-io-v1alpha1-machine"


def webhook_manager(emu: Emulator, **kw: Any) -> Manager:
    manager = Manager(
        Client.from_url(emu.url, token=emu.token, registry=None),
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        **{"webhook_bind_address": "127.0.0.1:0", **kw},
    )
    return manager


@asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[Manager]:
    async with trio.open_nursery() as nursery:
        await nursery.start(functools.partial(manager.run, handle_signals=False))
        yield manager
        manager.stop()


def trusted_ca(manager: Manager, tmp_path: Path) -> str:
    ca_pem = manager.webhooks.ca_pem
    assert ca_pem is not None
    path = tmp_path / "ca.pem"
    path.write_bytes(ca_pem)
    return str(path)


async def post(
    manager: Manager,
    path: str,
    body: Any,
    verify: str,
    *,
    content_type: str = "application/json",
    method: str = "POST",
) -> requests.Response:
    url = f"https://127.0.0.1:{manager.bound_ports['webhook']}{path}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": content_type}
    return await blocking(
        lambda: requests.request(method, url, data=data, headers=headers, verify=verify, timeout=30)
    )


def machine(name: str = "m1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "machine.sapcloud.io/v1alpha1",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": "default", "uid": "u-1"},
        # A field no typed view of ours knows: it must survive every patch.
        "spec": {"class": {"kind": "MachineClass", "name": "small"}, "futureField": {"a": [1]}},
        **({"spec": {**spec}} if spec else {}),
    }


def review(
    operation: str,
    obj: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
    *,
    dry_run: bool = False,
    uid: str = "7a3c0b7e-review",
) -> dict[str, Any]:
    """An AdmissionReview as kube-apiserver sends it for a Machine."""
    gvk = {"group": "machine.sapcloud.io", "version": "v1alpha1", "kind": "Machine"}
    gvr = {"group": "machine.sapcloud.io", "version": "v1alpha1", "resource": "machines"}
    name = (obj or old or {}).get("metadata", {}).get("name", "")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": name,
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters"]},
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
        },
    }


def answer(response: requests.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    result: dict[str, Any] = body["response"]
    return result


async def default_machine(obj: Machine, request: AdmissionRequest) -> Machine:
    obj.metadata.labels = {**obj.metadata.labels, "defaulted": "yes"}
    if not obj.spec.provider_id:
        obj.spec.provider_id = f"sim:///{obj.metadata.name}"
    return obj


class Recorder:
    """A validator that records its calls, warns on create and rejects names starting bad-."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, bool]] = []

    async def validate_create(self, obj: Machine, request: AdmissionRequest) -> list[str]:
        self.calls.append(("create", obj.name, request.dry_run))
        if obj.name.startswith("bad-"):
            raise Denied(
                f"metadata.name: Invalid value: {obj.name!r}: reserved",
                code=422,
                warnings=["metadata.name: bad- names are reserved for tests"],
            )
        return ["spec.providerID: set by the controller, not by you"]

    async def validate_update(
        self, old: Machine, new: Machine, request: AdmissionRequest
    ) -> list[str] | None:
        self.calls.append(("update", f"{old.spec.provider_id}->{new.spec.provider_id}", False))
        if old.spec.provider_id and old.spec.provider_id != new.spec.provider_id:
            raise Denied("spec.providerID: field is immutable")
        return None

    async def validate_delete(self, obj: Machine, request: AdmissionRequest) -> None:
        self.calls.append(("delete", obj.name, request.dry_run))


async def test_defaulter_answers_a_json_patch_keeping_unknown_fields(
    emu: Emulator, tmp_path: Path
) -> None:
    manager = webhook_manager(emu)
    seen: list[bool] = []

    async def default(obj: Machine, request: AdmissionRequest) -> Machine:
        seen.append(request.dry_run)
        return await default_machine(obj, request)

    assert manager.webhook(Machine).defaulter(default) is not None
    async with running(manager):
        ca = trusted_ca(manager, tmp_path)
        raw = machine()
        result = answer(await post(manager, MUTATE, review("CREATE", raw), ca))
        assert result["uid"] == "7a3c0b7e-review"
        assert result["allowed"] is True
        assert result["patchType"] == "JSONPatch"
        operations = json.loads(base64.b64decode(result["patch"]))
        patched = jsonpatch.apply_patch(raw, operations)
        assert patched["metadata"]["labels"] == {"defaulted": "yes"}
        assert patched["spec"]["providerID"] == "sim:///m1"
        assert patched["spec"]["futureField"] == {"a": [1]}  # unknown to the view: kept
        assert all(op["op"] != "remove" for op in operations), operations

        # Already defaulted: nothing to patch, so no patch at all.
        result = answer(await post(manager, MUTATE, review("UPDATE", patched, raw), ca))
        assert result["allowed"] is True and "patch" not in result and "patchType" not in result

        # Dry-run is passed on to the handler.
        answer(await post(manager, MUTATE, review("CREATE", raw, dry_run=True), ca))
        assert seen == [False, False, True]


async def test_validator_allows_warns_and_denies(emu: Emulator, tmp_path: Path) -> None:
    manager = webhook_manager(emu)
    validator = Recorder()
    manager.webhook(Machine).validator(validator)
    async with running(manager):
        ca = trusted_ca(manager, tmp_path)
        result = answer(await post(manager, VALIDATE, review("CREATE", machine()), ca))
        assert result["allowed"] is True
        assert result["warnings"] == ["spec.providerID: set by the controller, not by you"]

        result = answer(await post(manager, VALIDATE, review("CREATE", machine("bad-1")), ca))
        assert result["allowed"] is False
        assert result["status"] == {
            "status": "Failure",
            "message": "metadata.name: Invalid value: 'bad-1': reserved",
            "reason": "Invalid",
            "code": 422,
        }
        assert result["warnings"] == ["metadata.name: bad- names are reserved for tests"]

        old = machine(providerID="sim:///a", **{"class": {"name": "small"}})
        new = machine(providerID="sim:///b", **{"class": {"name": "small"}})
        result = answer(await post(manager, VALIDATE, review("UPDATE", new, old), ca))
        assert result["allowed"] is False
        assert result["status"]["code"] == 403
        assert result["status"]["reason"] == "Forbidden"
        assert result["status"]["message"] == "spec.providerID: field is immutable"

        # DELETE carries the object as oldObject; a dry run says so.
        result = answer(
            await post(manager, VALIDATE, review("DELETE", None, machine(), dry_run=True), ca)
        )
        assert result["allowed"] is True and "warnings" not in result
        assert validator.calls == [
            ("create", "m1", False),
            ("create", "bad-1", False),
            ("update", "sim:///a->sim:///b", False),
            ("delete", "m1", True),
        ]


async def test_bad_objects_crashes_and_timeouts_get_answers(
    emu: Emulator,
    tmp_path: Path,
    mock_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """On the MockClock: the 10 s limit passes in no time, and the hour never comes."""
    manager = webhook_manager(emu)
    slow = trio.Event()

    class Flaky:
        async def validate_create(self, obj: Machine, request: AdmissionRequest) -> None:
            if obj.name == "crash":
                raise RuntimeError("cloud quota lookup failed")
            if obj.name == "slow":
                slow.set()
                with waiting_on_simulated_time():  # the clock may jump to the server's limit
                    await trio.sleep(3600)  # far past it (MockClock)

        async def validate_update(self, old: Machine, new: Machine, r: AdmissionRequest) -> None:
            return None

        async def validate_delete(self, obj: Machine, request: AdmissionRequest) -> None:
            return None

    manager.webhook(Machine).validator(Flaky())
    async with running(manager):
        ca = trusted_ca(manager, tmp_path)
        result = answer(await post(manager, VALIDATE, review("CREATE", machine("crash")), ca))
        assert result["allowed"] is False
        assert result["status"] == {"code": 500, "message": "cloud quota lookup failed"}
        [crash] = [r for r in caplog.records if r.name == "kubetrio.webhook" and r.exc_info]
        assert crash.exc_info is not None and crash.exc_info[0] is RuntimeError  # traceback

        start = trio.current_time()
        result = answer(await post(manager, VALIDATE, review("CREATE", machine("slow")), ca))
        assert slow.is_set()
        assert result["allowed"] is False
        assert result["status"]["code"] == 504
        assert "did not answer within 10s" in result["status"]["message"]
        assert 10 <= trio.current_time() - start < 3600

        # A field of the wrong type: answered 400 naming it, not a crash.
        bad = machine()
        bad["spec"]["providerID"] = 5
        result = answer(await post(manager, VALIDATE, review("CREATE", bad), ca))
        assert result["status"]["code"] == 400
        assert "$.spec.providerID" in result["status"]["message"]

        # The server is still serving.
        result = answer(await post(manager, VALIDATE, review("CREATE", machine()), ca))
        assert result["allowed"] is True


async def test_malformed_requests_are_refused(emu: Emulator, tmp_path: Path) -> None:
    manager = webhook_manager(emu)
    manager.webhook(Machine).validator(Recorder())
    async with running(manager):
        ca = trusted_ca(manager, tmp_path)
        response = await post(manager, VALIDATE, b"{not json", ca)
        assert response.status_code == 400
        assert response.json()["response"]["allowed"] is False
        assert response.json()["response"]["status"]["code"] == 400

        response = await post(manager, VALIDATE, {"apiVersion": "admission.k8s.io/v1"}, ca)
        assert response.status_code == 400
        assert "request: required" in response.json()["response"]["status"]["message"]

        v1beta1 = {**review("CREATE", machine()), "apiVersion": "admission.k8s.io/v1beta1"}
        response = await post(manager, VALIDATE, v1beta1, ca)
        assert response.status_code == 400
        assert "admission.k8s.io/v1" in response.json()["response"]["status"]["message"]

        response = await post(manager, VALIDATE, review("CREATE"), ca, content_type="text/plain")
        assert response.status_code == 400
        assert "expected application/json" in response.text

        response = await post(manager, VALIDATE, b"", ca, method="GET")
        assert response.status_code == 405
        response = await post(manager, MUTATE, review("CREATE", machine()), ca)
        assert response.status_code == 404  # no defaulter registered


GREETING_V1 = "example.com/v1"
GREETING_V2 = "example.com/v2"


class GreetingV1(KubeObject, kw_only=True):
    """A custom kind served in v1 and v2; the converter is registered through it."""

    KIND: ClassVar[KindInfo] = KindInfo(GREETING_V1, "Greeting", "greetings", True)


def convert_greeting(obj: dict[str, Any], to_api_version: str) -> dict[str, Any]:
    spec = obj.get("spec", {})
    if to_api_version == GREETING_V2:
        new_spec = {k: v for k, v in spec.items() if k != "message"}
        new_spec["text"] = {"value": spec.get("message", "")}
    else:
        new_spec = {k: v for k, v in spec.items() if k != "text"}
        new_spec["message"] = spec.get("text", {}).get("value", "")
    if new_spec.get("refuse"):
        raise ValueError("spec.refuse: cannot be converted")
    return {**obj, "apiVersion": to_api_version, "spec": new_spec}


def conversion_review(desired: str, *objects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "c-1", "desiredAPIVersion": desired, "objects": list(objects)},
    }


def greeting(version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"x": "y"}}
    return {"apiVersion": version, "kind": "Greeting", "metadata": meta, "spec": spec}


async def test_conversion_both_ways(emu: Emulator, tmp_path: Path) -> None:
    manager = webhook_manager(emu)
    manager.webhook(GreetingV1).converter(convert_greeting)
    async with running(manager):
        ca = trusted_ca(manager, tmp_path)
        v1 = greeting(GREETING_V1, "hello", {"message": "hi", "extra": 1})
        response = await post(manager, "/convert", conversion_review(GREETING_V2, v1), ca)
        assert response.status_code == 200
        body = response.json()
        assert body["apiVersion"] == "apiextensions.k8s.io/v1"
        assert body["kind"] == "ConversionReview"
        converted = body["response"]
        assert converted["uid"] == "c-1"
        assert converted["result"] == {"status": "Success"}
        [v2] = converted["convertedObjects"]
        assert v2 == greeting(GREETING_V2, "hello", {"extra": 1, "text": {"value": "hi"}})

        response = await post(manager, "/convert", conversion_review(GREETING_V1, v2), ca)
        assert response.json()["response"]["convertedObjects"] == [v1]  # round trip

        refused = greeting(GREETING_V1, "no", {"refuse": True})
        response = await post(manager, "/convert", conversion_review(GREETING_V2, v1, refused), ca)
        result = response.json()["response"]
        assert result["result"] == {
            "status": "Failure",
            "message": "spec.refuse: cannot be converted",
        }
        assert "convertedObjects" not in result

        other = {**v1, "kind": "Farewell"}
        response = await post(manager, "/convert", conversion_review(GREETING_V2, other), ca)
        assert "no converter for Farewell" in response.json()["response"]["result"]["message"]

        response = await post(manager, "/convert", b"[]", ca)
        assert response.status_code == 400


async def get_plain(url: str) -> requests.Response:
    return await blocking(lambda: requests.get(url, timeout=30))


async def test_readyz_waits_for_the_webhook_server(emu: Emulator, tmp_path: Path) -> None:
    manager = webhook_manager(emu)
    manager.webhook(Machine).defaulter(default_machine)
    async with trio.open_nursery() as nursery:
        # The manager's probe endpoint served before the manager runs: the webhook server
        # is not listening yet, and /readyz says so.
        probes = await nursery.start(manager.http.serve, "127.0.0.1:0", {"readyz"})
        base = f"http://127.0.0.1:{probes.port}"
        response = await get_plain(f"{base}/readyz/webhook")
        assert response.status_code == 500
        assert "webhook server is not listening yet" in response.text
        async with running(manager):
            assert (await get_plain(f"{base}/readyz/webhook")).status_code == 200
            verbose = await get_plain(
                f"http://127.0.0.1:{manager.bound_ports['probes']}/readyz?verbose"
            )
            assert "[+]webhook ok" in verbose.text
        nursery.cancel_scope.cancel()


async def test_without_webhooks_or_with_bind_0_nothing_listens(emu: Emulator) -> None:
    manager = webhook_manager(emu)
    async with running(manager):
        assert "webhook" not in manager.bound_ports
        assert "webhook" not in manager.http.readyz.names()
    assert (
        manager.registry.get_sample_value(
            "controller_runtime_webhook_requests_in_flight", {"webhook": MUTATE}
        )
        is None
    )

    manager = webhook_manager(emu, webhook_bind_address="0")
    manager.webhook(Machine).defaulter(default_machine)
    async with running(manager):
        assert "webhook" not in manager.bound_ports
        assert manager.http.readyz.run_one("webhook") is None  # off on purpose: ready


async def test_metrics(emu: Emulator, tmp_path: Path) -> None:
    manager = webhook_manager(emu)
    manager.webhook(Machine).defaulter(default_machine).validator(Recorder())
    async with running(manager):
        ca = trusted_ca(manager, tmp_path)
        for _ in range(3):
            answer(await post(manager, MUTATE, review("CREATE", machine()), ca))
        answer(await post(manager, VALIDATE, review("CREATE", machine("bad-x")), ca))
        assert (await post(manager, VALIDATE, b"{", ca)).status_code == 400
        url = f"http://127.0.0.1:{manager.bound_ports['metrics']}/metrics"
        text = (await get_plain(url)).text

    def value(name: str, **labels: str) -> float | None:
        return manager.registry.get_sample_value(name, labels)

    assert value("controller_runtime_webhook_requests_total", webhook=MUTATE, code="200") == 3
    assert value("controller_runtime_webhook_requests_total", webhook=VALIDATE, code="200") == 1
    assert value("controller_runtime_webhook_requests_total", webhook=VALIDATE, code="400") == 1
    assert value("controller_runtime_webhook_latency_seconds_count", webhook=MUTATE) == 3
    assert value("controller_runtime_webhook_requests_in_flight", webhook=MUTATE) == 0
    assert 'controller_runtime_webhook_requests_total{code="200",webhook="' + MUTATE in text


def write_pair(ca: trustme.CA, folder: Path) -> None:
    cert = ca.issue_cert("127.0.0.1", "localhost")
    staging = folder.parent / "staging"
    staging.mkdir(exist_ok=True)
    (staging / "tls.crt").write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    cert.private_key_pem.write_to_path(str(staging / "tls.key"))
    for name in ("tls.crt", "tls.key"):  # a rename over the old file, as a careful writer does
        shutil.move(staging / name, folder / name)


async def test_certificates_from_files_are_reloaded(
    emu: Emulator, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    certs = tmp_path / "serving-certs"
    certs.mkdir()
    first, second = trustme.CA(), trustme.CA()
    write_pair(first, certs)
    # Secure metrics from the same files: both watchers count into the one registry.
    manager = webhook_manager(
        emu, webhook_cert_path=certs, metrics_secure=SecureServing(cert_dir=certs)
    )
    manager.webhook(Machine).defaulter(default_machine)
    first_pem, second_pem = tmp_path / "first.pem", tmp_path / "second.pem"
    first.cert_pem.write_to_path(str(first_pem))
    second.cert_pem.write_to_path(str(second_pem))
    async with running(manager):
        assert manager.webhooks.ca_pem is None  # files, not self-signed
        answer(await post(manager, MUTATE, review("CREATE", machine()), str(first_pem)))
        watcher = manager.webhooks.watcher
        assert watcher is not None
        changed = watcher.changed
        write_pair(second, certs)
        await changed.wait()  # a file event or the poll, whichever comes first
        answer(await post(manager, MUTATE, review("CREATE", machine()), str(second_pem)))
        with pytest.raises(requests.exceptions.SSLError):
            await post(manager, MUTATE, review("CREATE", machine()), str(first_pem))
    reads = manager.registry.get_sample_value("certwatcher_read_certificate_total")
    assert reads is not None and reads >= 3  # metrics and webhook at start, then the reload


def test_review_wire_names() -> None:
    """The names kube-apiserver reads back (camelCase, Go's base64 for the patch)."""
    from kubetrio.runtime.webhook.review import AdmissionResponse, ConversionRequest

    encoded = msgspec.json.decode(
        msgspec.json.encode(
            AdmissionResponse(uid="u", allowed=True, patch=b"[]", patch_type="JSONPatch")
        )
    )
    assert encoded == {"uid": "u", "allowed": True, "patch": "W10=", "patchType": "JSONPatch"}
    request = msgspec.json.decode(b'{"uid":"u","desiredAPIVersion":"a/v2"}', type=ConversionRequest)
    assert request.desired_api_version == "a/v2"


async def test_a_taken_webhook_port_ends_run_with_one_error(emu: Emulator) -> None:
    taken = trio.socket.socket()
    await taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    manager = webhook_manager(emu, webhook_bind_address=f"127.0.0.1:{port}")
    manager.webhook(Machine).defaulter(default_machine)
    with taken, pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{port} for webhooks"):
        await manager.run(handle_signals=False)

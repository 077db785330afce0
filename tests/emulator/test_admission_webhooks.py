"""The emulator calls admission webhooks as kube-apiserver does: real TLS to a webhook served in
the test's trio run, kubectl as the client that prints what a user sees."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
import trustme

from kubetrio.emulator import Emulator, EmulatorOptions
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.util.inflight import request_in_flight, waiting_on_simulated_time
from kubetrio.sim import serve_world
from tests.helpers.kube import Kubectl, kubectl_of
from tests.helpers.webhook_server import HeldClient, WebhookServer, patch_of, serve_webhook

V = "admissionregistration.k8s.io/v1"
CM_RULE = {
    "operations": ["*"],
    "apiGroups": [""],
    "apiVersions": ["v1"],
    "resources": ["configmaps"],
}


@pytest.fixture
def client(emu: Emulator) -> EmuClient:
    """Requests that hold the mock clock (see HeldClient)."""
    return HeldClient(emu.url, emu.token)


def hook(name: str, client_config: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": client_config,
        "rules": [CM_RULE],
        **extra,
    }


def configuration(kind: str, name: str, *hooks: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": V, "kind": kind, "metadata": {"name": name}, "webhooks": list(hooks)}


def cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


async def run(kubectl: Kubectl, *args: str, docs: list[dict[str, Any]] | None = None) -> Any:
    """kubectl, holding the mock clock as our own clients do while a request is out."""
    import yaml

    stdin = yaml.safe_dump_all(docs).encode() if docs is not None else None
    with request_in_flight():
        return await kubectl.run(*args, check=False, stdin=stdin)


async def get_json(kubectl: Kubectl, *args: str) -> Any:
    with request_in_flight():
        return await kubectl.json("get", *args)


async def allow(request: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True}


@pytest.mark.slow
@pytest.mark.kubectl
async def test_a_denial_reaches_kubectl_with_the_webhooks_message(
    emu: Emulator, kubectl: Kubectl, mock_clock: trio.testing.MockClock
) -> None:
    async def no_red(request: dict[str, Any]) -> dict[str, Any]:
        labels = (request["object"] or request["oldObject"])["metadata"].get("labels") or {}
        if labels.get("color") == "red":
            return {
                "allowed": False,
                "status": {"code": 403, "reason": "Forbidden", "message": "red is not allowed"},
                "warnings": ["red is loud"],
            }
        return {"allowed": True, "warnings": ["colors are checked"]}

    async with serve_webhook(no_red) as server:
        conf = configuration(
            "ValidatingWebhookConfiguration",
            "no-red",
            hook("no-red.example.com", server.config("/validate")),
        )
        assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
        p = await run(kubectl, "apply", "-f", "-", docs=[cm("red", color="red")])
        assert p.returncode == 1
        assert (
            'Error from server (Forbidden): error when creating "STDIN": admission webhook '
            '"no-red.example.com" denied the request: red is not allowed'
        ) in p.stderr.decode()
        assert "Warning: red is loud" in p.stderr.decode()  # sent with the refusal too
        p = await run(kubectl, "apply", "-f", "-", docs=[cm("blue", color="blue")])
        assert p.returncode == 0, p.stderr
        assert "Warning: colors are checked" in p.stderr.decode()
        request = server.reviews[-1]["request"]
        assert server.reviews[-1]["apiVersion"] == "admission.k8s.io/v1"
        assert request["operation"] == "CREATE" and request["namespace"] == "default"
        assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
        assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
        assert request["userInfo"]["username"] == "kubernetes-admin"
        assert "system:masters" in request["userInfo"]["groups"]
        assert request["name"] == "blue" and request["oldObject"] is None
        assert request["dryRun"] is False
        # an update sends the old object too; a delete only the old one
        p = await run(kubectl, "label", "cm", "blue", "shade=dark")
        assert p.returncode == 0, p.stderr
        update = server.reviews[-1]["request"]
        assert update["operation"] == "UPDATE"
        assert update["oldObject"]["metadata"]["labels"] == {"color": "blue"}
        assert update["object"]["metadata"]["labels"]["shade"] == "dark"
        assert (await run(kubectl, "delete", "cm", "blue")).returncode == 0
        delete = server.reviews[-1]["request"]
        assert delete["operation"] == "DELETE" and delete["object"] is None
        assert delete["oldObject"]["metadata"]["name"] == "blue"


@pytest.mark.slow
@pytest.mark.kubectl
async def test_mutations_are_applied_in_order_and_reinvoked_if_needed(
    emu: Emulator, kubectl: Kubectl, mock_clock: trio.testing.MockClock
) -> None:
    async def first(request: dict[str, Any]) -> dict[str, Any]:
        labels = request["object"]["metadata"].get("labels") or {}
        if "second" in labels and "first-saw-second" not in labels:
            return patch_of(
                [{"op": "add", "path": "/metadata/labels/first-saw-second", "value": "yes"}]
            )
        return patch_of([{"op": "add", "path": "/metadata/labels/first", "value": "1"}])

    async def second(request: dict[str, Any]) -> dict[str, Any]:
        return {
            **patch_of([{"op": "add", "path": "/metadata/labels/second", "value": "2"}]),
            "warnings": ["second was here"],
        }

    async with serve_webhook(first) as one, serve_webhook(second) as two:
        confs = [
            configuration(
                "MutatingWebhookConfiguration",
                "a",
                hook("first.example.com", one.config(), reinvocationPolicy="IfNeeded"),
            ),
            configuration(
                "MutatingWebhookConfiguration", "b", hook("second.example.com", two.config())
            ),
        ]
        assert (await run(kubectl, "apply", "-f", "-", docs=confs)).returncode == 0
        p = await run(kubectl, "apply", "-f", "-", docs=[cm("m", own="x")])
        assert p.returncode == 0, p.stderr
        assert "Warning: second was here" in p.stderr.decode()
        got = await get_json(kubectl, "cm", "m")
        assert got["metadata"]["labels"] == {
            "own": "x",
            "first": "1",
            "second": "2",
            "first-saw-second": "yes",
        }
        assert len(one.reviews) == 2 and len(two.reviews) == 1  # reinvoked once
        stored = await get_json(kubectl, "mutatingwebhookconfiguration", "a")
        defaulted = stored["webhooks"][0]
        assert defaulted["failurePolicy"] == "Fail" and defaulted["matchPolicy"] == "Equivalent"
        assert defaulted["timeoutSeconds"] == 10 and defaulted["objectSelector"] == {}
        assert defaulted["namespaceSelector"] == {} and defaulted["rules"][0]["scope"] == "*"


@pytest.mark.slow
@pytest.mark.kubectl
async def test_a_webhook_that_is_down_fails_or_is_ignored_by_its_policy(
    emu: Emulator, kubectl: Kubectl, mock_clock: trio.testing.MockClock
) -> None:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()  # nothing listens there now
    down = {"url": f"https://127.0.0.1:{port}/v"}
    conf = configuration("ValidatingWebhookConfiguration", "down", hook("down.example.com", down))
    assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
    p = await run(kubectl, "create", "cm", "refused")
    assert p.returncode == 1
    assert (
        "Internal error occurred: failed calling webhook "
        f'"down.example.com": failed to call webhook: Post "https://127.0.0.1:{port}/v?'
        f'timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    ) in p.stderr.decode()
    conf["webhooks"][0]["failurePolicy"] = "Ignore"
    assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
    p = await run(kubectl, "create", "cm", "ignored")
    assert p.returncode == 0, p.stderr
    # and the configuration itself is never sent to webhooks: it can always be removed
    conf["webhooks"][0]["failurePolicy"] = "Fail"
    assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
    assert (await run(kubectl, "delete", "validatingwebhookconfiguration", "down")).returncode == 0


async def test_timeout_seconds_is_honoured_on_the_mock_clock(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async def hang(request: dict[str, Any]) -> dict[str, Any]:
        with waiting_on_simulated_time():  # this server answers by sleeping on the clock
            await trio.sleep(3600)
        return {"allowed": True}

    async with serve_webhook(hang) as server:
        conf = configuration(
            "ValidatingWebhookConfiguration",
            "slow",
            hook("slow.example.com", server.config(), timeoutSeconds=7),
        )
        path = f"/apis/{V}/validatingwebhookconfigurations"
        assert (await client.request("POST", path, conf)).status == 201
        start = trio.current_time()
        r = await client.request("POST", "/api/v1/namespaces/default/configmaps", cm("s"))
        waited = trio.current_time() - start
        assert r.status == 500, r.body
        assert r.json()["message"].endswith('?timeout=7s": context deadline exceeded')
        assert 7 <= waited < 60


@pytest.mark.slow
@pytest.mark.kubectl
async def test_namespace_and_object_selectors_choose_what_is_sent(
    emu: Emulator, kubectl: Kubectl, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_webhook(allow) as server:
        conf = configuration(
            "ValidatingWebhookConfiguration",
            "selective",
            hook(
                "selective.example.com",
                server.config(),
                namespaceSelector={"matchLabels": {"env": "prod"}},
                objectSelector={"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
            ),
        )
        ns = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {"env": n}}}
            for n in ("prod", "dev")
        ]
        assert (await run(kubectl, "apply", "-f", "-", docs=[conf, *ns])).returncode == 0
        for namespace, name, labels in [
            ("prod", "a", {}),
            ("dev", "b", {}),
            ("prod", "c", {"skip": "please"}),
        ]:
            p = await run(kubectl, "apply", "-n", namespace, "-f", "-", docs=[cm(name, **labels)])
            assert p.returncode == 0, p.stderr
        assert [r["request"]["name"] for r in server.reviews] == ["a"]


@pytest.mark.kubectl
async def test_server_side_dry_run_says_so_and_stores_nothing(
    emu: Emulator, kubectl: Kubectl, mock_clock: trio.testing.MockClock
) -> None:
    async def label(request: dict[str, Any]) -> dict[str, Any]:
        return patch_of([{"op": "add", "path": "/metadata/labels/seen", "value": "y"}])

    async with serve_webhook(label) as server:
        conf = configuration(
            "MutatingWebhookConfiguration",
            "dry",
            hook("dry.example.com", server.config(), sideEffects="NoneOnDryRun"),
        )
        assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
        p = await run(kubectl, "apply", "--dry-run=server", "-o", "json", "-f", "-", docs=[cm("d")])
        assert p.returncode == 0, p.stderr
        assert '"seen": "y"' in p.stdout.decode()
        assert server.reviews[-1]["request"]["dryRun"] is True
        assert (await run(kubectl, "get", "cm", "d")).returncode == 1


@pytest.mark.kubectl
async def test_a_wrong_ca_bundle_fails_as_kube_words_it(
    emu: Emulator, kubectl: Kubectl, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_webhook(allow) as server:
        other = WebhookServer(server.url, "", allow)
        wrong = copy.deepcopy(server.config())
        wrong["caBundle"] = __import__("base64").b64encode(trustme.CA().cert_pem.bytes()).decode()
        del other
        conf = configuration(
            "ValidatingWebhookConfiguration", "tls", hook("tls.example.com", wrong)
        )
        assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
        p = await run(kubectl, "create", "cm", "x")
        assert p.returncode == 1
        assert (
            f'failed calling webhook "tls.example.com": failed to call webhook: Post '
            f'"{server.url}/?timeout=10s": tls: failed to verify certificate: x509: '
            "certificate signed by unknown authority"
        ) in p.stderr.decode()
        assert server.reviews == []


@pytest.mark.kubectl
@pytest.mark.slow
async def test_bad_configurations_are_refused_naming_the_field(
    emu: Emulator, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    bad = hook(
        "bad.example.com",
        {"url": "http://127.0.0.1:1/", "caBundle": "bm90IHBlbQ=="},
        admissionReviewVersions=["v1beta1"],
        timeoutSeconds=31,
    )
    del bad["sideEffects"]
    for version in ("1.27", "1.33"):
        kubectl = kubectl_of(version, emu, tmp_path / version)
        p = await run(
            kubectl,
            "apply",
            "-f",
            "-",
            docs=[configuration("ValidatingWebhookConfiguration", "bad", bad)],
        )
        err = p.stderr.decode()
        assert p.returncode == 1 and "is invalid" in err, err
        for text in (
            "webhooks[0].admissionReviewVersions: Required value",
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[0].timeoutSeconds: Invalid value: 31",
            "webhooks[0].clientConfig.url: Invalid value: \"http://127.0.0.1:1/\": 'https' is "
            "the only allowed URL scheme",
            "webhooks[0].clientConfig.caBundle: Invalid value: must be PEM-encoded certificates",
        ):
            assert text in err, (text, err)
        good = configuration(
            "ValidatingWebhookConfiguration",
            "good",
            hook(
                "good.example.com",
                {"url": "https://127.0.0.1:1/"},
                rules=[{**CM_RULE, "resources": ["secrets"]}],
            ),
        )
        assert (await run(kubectl, "apply", "-f", "-", docs=[good])).returncode == 0
        p = await run(kubectl, "get", "validatingwebhookconfigurations")
        assert p.returncode == 0, p.stderr
        header, row = (line.split() for line in p.stdout.decode().splitlines()[:2])
        assert header == ["NAME", "WEBHOOKS", "AGE"] and row[:2] == ["good", "1"]
        assert (
            await run(kubectl, "delete", "validatingwebhookconfiguration", "good")
        ).returncode == 0


async def test_audit_annotations_reach_the_audit_event(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    async def annotate(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True, "auditAnnotations": {"checked": "colors"}}

    audit = tmp_path / "audit.log"
    async with (
        serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu,
        serve_webhook(annotate) as server,
    ):
        client = HeldClient(emu.url, emu.token)
        conf = configuration(
            "ValidatingWebhookConfiguration", "audit", hook("audit.example.com", server.config())
        )
        path = f"/apis/{V}/validatingwebhookconfigurations"
        assert (await client.request("POST", path, conf)).status == 201
        r = await client.request("POST", "/api/v1/namespaces/default/configmaps", cm("a"))
        assert r.status == 201, r.body
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    created = [e for e in events if e["verb"] == "create" and "configmaps" in e["requestURI"]]
    assert created[0]["annotations"]["audit.example.com/checked"] == "colors"


async def test_subresource_rules_and_namespaces_selected_by_their_own_labels(
    emu: Emulator, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async with serve_webhook(allow) as server:
        rule = {
            "operations": ["*"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["namespaces/status"],
        }
        conf = configuration(
            "ValidatingWebhookConfiguration",
            "ns-status",
            hook(
                "ns-status.example.com",
                server.config(),
                rules=[rule],
                namespaceSelector={"matchLabels": {"env": "prod"}},
            ),
        )
        assert (
            await client.request("POST", f"/apis/{V}/validatingwebhookconfigurations", conf)
        ).status == 201
        for name in ("prod", "dev"):
            ns = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {"env": name}},
            }
            assert (await client.request("POST", "/api/v1/namespaces", ns)).status == 201
        assert server.reviews == []  # a create of the namespace is not namespaces/status
        for name in ("prod", "dev"):
            current = (await client.get(f"/api/v1/namespaces/{name}")).json()
            r = await client.request("PUT", f"/api/v1/namespaces/{name}/status", current)
            assert r.status == 200, r.body
        assert [r["request"]["name"] for r in server.reviews] == ["prod"]
        request = server.reviews[0]["request"]
        assert request["subResource"] == "status" and request["operation"] == "UPDATE"
        assert request["namespace"] == "prod"  # a namespace's URL names it, as in kube


@pytest.mark.slow
@pytest.mark.kubectl
async def test_delete_collection_admits_each_object_and_generated_names_are_kept(
    emu: Emulator, kubectl: Kubectl, client: EmuClient, mock_clock: trio.testing.MockClock
) -> None:
    async def keep_precious(request: dict[str, Any]) -> dict[str, Any]:
        obj = request["object"] or request["oldObject"]
        if request["operation"] == "DELETE" and obj["metadata"]["name"] == "precious":
            return {"allowed": False, "status": {"message": "keep it"}}
        return {"allowed": True}

    async with serve_webhook(keep_precious) as server:
        conf = configuration(
            "ValidatingWebhookConfiguration", "keep", hook("keep.example.com", server.config())
        )
        assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
        generated = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g-"}}
        p = await run(kubectl, "create", "-f", "-", "-o", "name", docs=[generated])
        assert p.returncode == 0, p.stderr
        name = p.stdout.decode().strip().removeprefix("configmap/")
        assert server.reviews[-1]["request"]["object"]["metadata"]["name"] == name
        for n in ("a-first", "precious"):
            assert (await run(kubectl, "create", "cm", n)).returncode == 0
        before = len(server.reviews)
        # a deletecollection (kubectl delete --all deletes one by one)
        r = await client.request("DELETE", "/api/v1/namespaces/default/configmaps")
        assert r.status == 400, r.body
        assert r.json()["message"] == (
            'admission webhook "keep.example.com" denied the request: keep it'
        )
        deletes = [r["request"] for r in server.reviews[before:]]
        assert all(d["operation"] == "DELETE" for d in deletes)
        assert "precious" in [d["name"] for d in deletes]
        assert (await run(kubectl, "get", "cm", "precious")).returncode == 0


@pytest.mark.kubectl
@pytest.mark.slow
@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({"allowed": True, "warnings": "careful"}, "response.warnings"),
        ({"allowed": True, "auditAnnotations": ["a"]}, "response.auditAnnotations"),
        ({"allowed": True, "patchType": "JSONPatch", "patch": 5}, "response.patch"),
        ({"allowed": True, "patchType": "JSONPatch", "patch": "bm90IGpzb24="}, "patch"),
        ({"allowed": "yes"}, "response.allowed"),
    ],
)
async def test_a_malformed_webhook_response_is_refused_naming_the_field(
    emu: Emulator,
    kubectl: Kubectl,
    mock_clock: trio.testing.MockClock,
    answer: dict[str, Any],
    field: str,
) -> None:
    """A webhook's answer of the wrong shape fails that request (as kube's decoding of the
    AdmissionReview does), naming the field; the emulator carries on serving others."""

    async def malformed(request: dict[str, Any]) -> dict[str, Any]:
        return answer

    async with serve_webhook(malformed) as server:
        conf = configuration(
            "MutatingWebhookConfiguration", "bad", hook("bad.example.com", server.config("/m"))
        )
        assert (await run(kubectl, "apply", "-f", "-", docs=[conf])).returncode == 0
        p = await run(kubectl, "create", "cm", "refused")
        assert p.returncode == 1
        stderr = p.stderr.decode()
        assert 'Internal error occurred: failed calling webhook "bad.example.com"' in stderr
        assert field in stderr, stderr
        assert (await run(kubectl, "delete", "mutatingwebhookconfiguration", "bad")).returncode == 0
        p = await run(kubectl, "create", "cm", "served")
        assert p.returncode == 0, p.stderr

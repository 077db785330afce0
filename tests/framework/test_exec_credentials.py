"""Exec credential plugins against the emulator: run once and cached until the credential's
expirationTimestamp, run again (once) after a 401 and the request retried, every bad output one
line naming the field. The plugin is a real process (tests/helpers/exec_plugin.py) that counts its
runs; the emulator expires ServiceAccount tokens on the test's MockClock, which the client's
credential cache follows too."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.cache.informer import EventHandler, Informer
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.client.typed import CREDENTIALS_UNAVAILABLE, Client
from kubetrio.runtime.util.clock import now
from tests.helpers.credentials import (
    V1,
    V1BETA1,
    admin_account,
    exec_user,
    fresh_token,
    plugin_runs,
    revoke,
    write_kubeconfig,
)
from tests.helpers.kube import Kubectl, configmap

NAMESPACES = "/api/v1/namespaces"


def rfc3339(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def plugin_client(
    emu: Emulator,
    admin: EmuClient,
    tmp_path: Path,
    api_version: str = V1,
    registry: CollectorRegistry | None = None,
    **extra: object,
) -> tuple[Client, Path]:
    state = tmp_path / "plugin"
    state.mkdir()
    await admin_account(admin, "bot")
    (state / "token").write_text(await fresh_token(admin, "bot"))
    path = write_kubeconfig(
        tmp_path / "kubeconfig", emu.url, exec_user(state, api_version, **extra)
    )
    return Client.from_kubeconfig(str(path), registry=registry), state


def plugin_calls(registry: CollectorRegistry, code: str, status: str) -> float | None:
    labels = {"code": code, "call_status": status}
    return registry.get_sample_value("rest_client_exec_plugin_call_total", labels)


@pytest.mark.process
@pytest.mark.parametrize("api_version", [V1, V1BETA1])
async def test_the_plugin_runs_once_for_many_requests(
    emu: Emulator,
    client: EmuClient,
    tmp_path: Path,
    mock_clock: trio.testing.MockClock,
    api_version: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    registry = CollectorRegistry()
    kube, state = await plugin_client(emu, client, tmp_path, api_version, registry)
    async with trio.open_nursery() as nursery:
        for _ in range(12):
            nursery.start_soon(kube.request, "GET", NAMESPACES)
    for _ in range(5):
        await kube.request("GET", NAMESPACES)
    await trio.sleep(3000)  # no expirationTimestamp: good until refused (token: 1 h)
    await kube.request("GET", NAMESPACES)
    assert plugin_runs(state) == 1
    assert plugin_calls(registry, "0", "no_error") == 1  # client-go's metric
    call = json.loads((state / "calls").read_text())
    # What client-go hands a plugin, and the kubeconfig's env on top of ours.
    assert call["info"] == {
        "kind": "ExecCredential",
        "apiVersion": api_version,
        "spec": {"interactive": False},
    }
    assert call["greeting"] == "hello"
    assert "exec plugin: handing out a credential" in capfd.readouterr().err  # stderr passes


@pytest.mark.process
async def test_the_plugin_runs_again_once_its_credential_expired(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    kube, state = await plugin_client(emu, client, tmp_path)
    (state / "expiry").write_text(rfc3339(now() + dt.timedelta(minutes=10)))
    await kube.request("GET", NAMESPACES)
    await trio.sleep(9 * 60)
    await kube.request("GET", NAMESPACES)
    assert plugin_runs(state) == 1  # still valid: cached
    await trio.sleep(62)
    await kube.request("GET", NAMESPACES)
    assert plugin_runs(state) == 2  # expired: run again, before sending anything


@pytest.mark.process
async def test_a_refused_credential_runs_the_plugin_once_and_the_requests_succeed(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """The token expires at the emulator (10 minutes, its shortest) while the plugin said
    nothing of expiry: the 401 is what tells. Eight requests refused together start the plugin
    once, and each is sent again with the new token."""
    kube, state = await plugin_client(emu, client, tmp_path)
    (state / "token").write_text(await fresh_token(client, "bot", seconds=600))
    await kube.request("GET", NAMESPACES)
    await trio.sleep(601)
    (state / "token").write_text(await fresh_token(client, "bot"))
    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(kube.request, "GET", NAMESPACES)
    assert plugin_runs(state) == 2
    # Revoked at the server (the account made anew) works the same way.
    await revoke(client, "bot")
    (state / "token").write_text(await fresh_token(client, "bot"))
    await kube.request("GET", NAMESPACES)
    assert plugin_runs(state) == 3


@pytest.mark.process
async def test_a_plugin_that_hands_out_a_refused_token_fails_the_request_with_401(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    kube, state = await plugin_client(emu, client, tmp_path)
    (state / "token").write_text("not-a-token")
    with pytest.raises(ApiError) as refused:
        await kube.request("GET", NAMESPACES)
    assert refused.value.status == 401
    # Ran for the request, and once more for its 401: the same token came back, so no retry.
    assert plugin_runs(state) == 2


@pytest.mark.process
@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("{", "exec plugin output: not JSON"),
        ('{"apiVersion": "%s", "kind": "Pod", "status": {"token": "t"}}', "kind: want"),
        (
            '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",'
            ' "status": {"token": "t"}}',
            "apiVersion: the plugin is configured to use client.authentication.k8s.io/v1, "
            "it returned 'client.authentication.k8s.io/v1beta1'",
        ),
        ('{"apiVersion": "%s", "kind": "ExecCredential"}', "status: missing"),
        (
            '{"apiVersion": "%s", "kind": "ExecCredential", "status": {"token": "t",'
            ' "expirationTimestamp": "tomorrow"}}',
            "status.expirationTimestamp: not an RFC 3339 time: 'tomorrow'",
        ),
        (
            '{"apiVersion": "%s", "kind": "ExecCredential", "status": {}}',
            "status: has neither token nor clientCertificateData",
        ),
        (
            '{"apiVersion": "%s", "kind": "ExecCredential", "status": {"clientKeyData": "k"}}',
            "status.clientCertificateData: missing",
        ),
    ],
)
async def test_bad_plugin_output_is_one_line_naming_the_field(
    emu: Emulator,
    client: EmuClient,
    tmp_path: Path,
    mock_clock: trio.testing.MockClock,
    output: str,
    message: str,
) -> None:
    kube, state = await plugin_client(emu, client, tmp_path)
    (state / "output").write_text(output.replace("%s", V1))
    with pytest.raises(ApiError) as failed:
        await kube.request("GET", NAMESPACES)
    assert failed.value.status == 0
    assert failed.value.reason == CREDENTIALS_UNAVAILABLE
    assert message in str(failed.value)
    assert "\n" not in str(failed.value)
    # Fixed plugin, next request fine: a failure is not cached.
    (state / "output").unlink()
    await kube.request("GET", NAMESPACES)


@pytest.mark.process
async def test_a_failing_or_missing_plugin_is_one_line(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    registry = CollectorRegistry()
    kube, state = await plugin_client(emu, client, tmp_path, registry=registry)
    (state / "exit").write_text("3")
    with pytest.raises(ApiError) as failed:
        await kube.request("GET", NAMESPACES)
    assert str(failed.value).endswith("failed with exit code 3 (GET /api/v1/namespaces)")
    assert plugin_calls(registry, "3", "plugin_execution_error") == 1
    hint = "Install it:\n  pip install cloud-login\nthen log in."
    user = {"exec": {"apiVersion": V1, "command": "no-such-login", "interactiveMode": "Never"}}
    user["exec"]["installHint"] = hint
    path = write_kubeconfig(tmp_path / "missing", emu.url, user)
    with pytest.raises(ApiError) as missing:
        await Client.from_kubeconfig(str(path), registry=registry).request("GET", NAMESPACES)
    assert plugin_calls(registry, "1", "plugin_not_found_error") == 1
    assert str(missing.value) == (
        "getting credentials: exec plugin: executable no-such-login not found; "
        "Install it: pip install cloud-login then log in. (GET /api/v1/namespaces)"
    )


@pytest.mark.parametrize(
    ("stanza", "message"),
    [
        ({"apiVersion": V1, "command": "x"}, "users[me].exec.interactiveMode: required"),
        (
            {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"},
            "users[me].exec.apiVersion: 'client.authentication.k8s.io/v1alpha1' is not supported",
        ),
        ({"apiVersion": V1BETA1}, "users[me].exec.command: required"),
        (
            {"apiVersion": V1BETA1, "command": "x", "interactiveMode": "Sometimes"},
            "users[me].exec.interactiveMode: 'Sometimes' is not one of",
        ),
        ({"apiVersion": V1BETA1, "command": "x", "env": [{"value": "v"}]}, "env[0].name"),
    ],
)
def test_a_bad_exec_stanza_is_a_kubeconfig_error(
    tmp_path: Path, stanza: dict[str, object], message: str
) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1", {"exec": stanza})
    with pytest.raises(KubeconfigError) as bad:
        Client.from_kubeconfig(str(path))
    assert str(bad.value).startswith(f"kubeconfig {path}: ")
    assert message in str(bad.value)


@pytest.mark.process
async def test_interactive_mode_never_and_cluster_info_reach_the_plugin(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(emu.tls.ca_pem)
    state = tmp_path / "plugin"
    state.mkdir()
    await admin_account(client, "bot")
    (state / "token").write_text(await fresh_token(client, "bot"))
    user = exec_user(state, V1BETA1, provideClusterInfo=True, interactiveMode="Never")
    path = write_kubeconfig(
        tmp_path / "kubeconfig", emu.https_url, user, **{"certificate-authority": str(ca)}
    )
    await Client.from_kubeconfig(str(path)).request("GET", NAMESPACES)
    spec = json.loads((state / "calls").read_text())["info"]["spec"]
    assert spec["interactive"] is False
    assert spec["cluster"]["server"] == emu.https_url
    assert spec["cluster"]["certificate-authority-data"]


@pytest.mark.kubectl
@pytest.mark.process
async def test_kubectl_runs_the_same_plugin_with_the_same_input(
    emu: Emulator,
    client: EmuClient,
    tmp_path: Path,
    kubectl: Kubectl,
) -> None:
    """client-go itself is the judge of what a plugin is handed and may answer."""
    ca = tmp_path / "ca.crt"
    ca.write_bytes(emu.tls.ca_pem)
    state = tmp_path / "plugin"
    state.mkdir()
    await admin_account(client, "bot")
    (state / "token").write_text(await fresh_token(client, "bot"))
    path = write_kubeconfig(
        tmp_path / "kubeconfig",
        emu.https_url,
        exec_user(state),
        **{"certificate-authority": str(ca)},
    )
    kubectl.env["KUBECONFIG"] = str(path)
    out = await kubectl.out("get", "namespace", "default", "-o", "name")
    assert out.strip() == "namespace/default"
    await Client.from_kubeconfig(str(path)).request("GET", NAMESPACES)
    theirs, ours = [json.loads(line) for line in (state / "calls").read_text().splitlines()]
    assert ours == theirs


@pytest.mark.slow
@pytest.mark.process
async def test_an_informer_watches_on_across_its_token_expiring(
    emu: Emulator,
    client: EmuClient,
    tmp_path: Path,
    mock_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Watches are renewed every 5-10 minutes; the first one after the token expired is
    refused, the plugin runs again and the watch is sent again at once: no failed watch, no
    backoff, and nothing missed."""
    kube, state = await plugin_client(emu, client, tmp_path)
    (state / "token").write_text(await fresh_token(client, "bot", seconds=600))
    informer = Informer(kube, ConfigMap, namespace="default")
    seen = trio.Event()
    informer.add_handler(
        EventHandler(on_add=lambda obj, _: seen.set() if obj.metadata.name == "late" else None)
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(informer.run)
        await informer.wait_for_sync()
        (state / "token").write_text(await fresh_token(client, "bot"))
        await trio.sleep(1500)
        emu.create({**configmap("late"), "metadata": {"name": "late", "namespace": "default"}})
        with trio.fail_after(60):
            await seen.wait()
        nursery.cancel_scope.cancel()
    assert plugin_runs(state) == 2
    assert not [r for r in caplog.records if "failed" in r.getMessage()]

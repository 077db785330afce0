"""The emulator's audit log (kube-apiserver's ``--audit-log-path`` at level Metadata): one
``audit.k8s.io/v1`` Event line per request, naming user, User-Agent, verb, object and answer;
a client's Audit-ID kept and echoed. Our client's User-Agent names its component, and a fenced
write carries the instant of its last fence check."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from prometheus_client import CollectorRegistry

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import EmulatorOptions
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import FENCED_AUDIT_ID_PREFIX, Client
from kubetrio.runtime.leaderelection.fence import Fence, NotLeader
from kubetrio.sim import serve_world
from tests.helpers.kube import Kubectl, kubectl_env


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {}}


@pytest.mark.slow
@pytest.mark.kubectl
async def test_every_request_is_one_event_naming_who_what_and_the_answer(
    tmp_path: Path, kubectl_binary: str
) -> None:
    audit = tmp_path / "audit.log"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        client = Client.from_url(emu.url, token=emu.token, component="manager-a")
        await client.create(ConfigMap, config_map("one"), namespace="default")
        await client.patch(ConfigMap, "one", {"data": {"k": "v"}}, namespace="default")
        await client.list(ConfigMap, namespace="default")
        assert await client.get_or_none(ConfigMap, "missing", namespace="default") is None
        await client.delete(ConfigMap, "one", namespace="default")
        raw = EmuClient(emu.url, emu.token)
        reply = await raw.get("/api/v1/namespaces", headers={"Audit-ID": "chosen-by-client-1"})
        assert reply.status == 200 and reply.headers["audit-id"] == "chosen-by-client-1"
        assert (await EmuClient(emu.url, "wrong").get("/api/v1/pods")).status == 401
        reply = await raw.get("/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1")
        assert reply.status == 200
        kubectl = Kubectl(kubectl_binary, kubectl_env(emu, tmp_path))
        await kubectl.run("get", "configmap", "-n", "default")
    seen = events(audit)
    for event in seen:
        assert event["kind"] == "Event" and event["apiVersion"] == "audit.k8s.io/v1"
        assert event["level"] == "Metadata" and event["stage"] == "ResponseComplete"
        assert event["auditID"] and event["sourceIPs"] == ["127.0.0.1"]
        assert event["requestReceivedTimestamp"] <= event["stageTimestamp"]
    ours = [e for e in seen if e["userAgent"].endswith(" manager-a")]
    assert ours[0]["userAgent"].startswith("kubetrio/v")
    summary = [
        (e["verb"], e["objectRef"].get("name", ""), e["responseStatus"]["code"]) for e in ours
    ]
    assert summary == [
        ("create", "one", 201),
        ("patch", "one", 200),
        ("list", "", 200),
        ("get", "missing", 404),
        ("delete", "one", 200),
    ]
    assert ours[0]["objectRef"] == {
        "namespace": "default",
        "resource": "configmaps",
        "name": "one",
        "apiVersion": "v1",
    }
    assert ours[0]["user"]["username"] == "kubernetes-admin"
    assert ours[3]["responseStatus"]["reason"] == "NotFound"
    chosen = next(e for e in seen if e["auditID"] == "chosen-by-client-1")
    assert chosen["verb"] == "list" and chosen["objectRef"]["resource"] == "namespaces"
    refused = next(e for e in seen if e["responseStatus"]["code"] == 401)
    assert refused["user"] == {} and refused["objectRef"]["resource"] == "pods"
    watch = next(e for e in seen if e["verb"] == "watch")
    assert watch["objectRef"] == {
        "namespace": "default",
        "resource": "configmaps",
        "apiVersion": "v1",
    }
    by_kubectl = [e for e in seen if e["userAgent"].startswith("kubectl")]
    assert by_kubectl and by_kubectl[-1]["verb"] == "list"


async def test_a_fenced_write_carries_its_check_instant_and_a_refused_one_never_leaves(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.log"
    held = True
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        registry = CollectorRegistry()
        client = Client.from_url(emu.url, token=emu.token, component="leader", registry=registry)
        # Only the worker thread's check can fail: the request got past the trio-side one.
        fenced = client.fenced(Fence(lambda: True, lambda now: held))
        before = time.monotonic()
        await fenced.create(ConfigMap, config_map("fenced"), namespace="default")
        after = time.monotonic()
        held = False
        with pytest.raises(NotLeader):
            await fenced.patch(ConfigMap, "fenced", {"data": {"k": "v"}}, namespace="default")
        await fenced.get(ConfigMap, "fenced", namespace="default")  # reads need no lease
        assert emu.counters.get("patch", "configmaps") == 0
        sent = {
            (s.labels["method"], s.labels["code"]): s.value
            for family in registry.collect()
            if family.name == "rest_client_requests"
            for s in family.samples
            if s.name == "rest_client_requests_total"
        }
        assert sent == {("POST", "201"): 1.0, ("GET", "200"): 1.0}, "the refusal is no request"
    writes = [e for e in events(audit) if e["verb"] != "get"]
    assert [e["verb"] for e in writes] == ["create"]
    audit_id = writes[0]["auditID"]
    assert audit_id.startswith(FENCED_AUDIT_ID_PREFIX)
    checked = int(audit_id.removeprefix(FENCED_AUDIT_ID_PREFIX).split("-")[0]) / 1e9
    assert before <= checked <= after
    plain = [e for e in events(audit) if e["verb"] == "get"]
    assert not plain[0]["auditID"].startswith(FENCED_AUDIT_ID_PREFIX)


@pytest.mark.process
@pytest.mark.slow
async def test_the_emulator_command_writes_the_audit_log(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    argv = [sys.executable, "-m", "kubetrio.cmd.main", "emulator", "--port", "0"]
    bad = await trio.run_process(
        [*argv, "--audit-log-path", str(tmp_path / "missing" / "audit.log")],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.decode().strip().splitlines() == [
        f"kubetrio: --audit-log-path {tmp_path}/missing/audit.log: No such file or directory"
    ]
    proc = await trio.lowlevel.open_process(
        [
            *argv,
            "--token",
            "t0k",
            "--kubeconfig-out",
            str(tmp_path / "kc"),
            "--audit-log-path",
            str(audit),
        ],
        stdout=-1,
    )
    assert proc.stdout is not None
    buf = b""
    with trio.fail_after(20):
        while b"kubeconfig=" not in buf:
            data = await proc.stdout.receive_some(4096)
            assert data, buf
            buf += data
    url = buf.decode().split("url=")[1].split()[0]
    try:
        assert (await EmuClient(url, "t0k").get("/api/v1/namespaces/default")).status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            assert await proc.wait() == 0
    [event] = events(audit)
    assert event["verb"] == "get" and event["objectRef"]["name"] == "default"
    assert event["objectRef"]["resource"] == "namespaces"

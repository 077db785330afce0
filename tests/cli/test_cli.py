"""``kubetrio emulator`` as a standalone process: kubeconfig out, state across restarts, clean
exit on SIGTERM / SIGINT."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio
import yaml

from kubetrio.emulator.testclient import EmuClient
from tests.helpers.emulator_process import _start, admin_token

pytestmark = [pytest.mark.process, pytest.mark.slow]


async def test_standalone_state_and_signals(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    proc, url = await _start(tmp_path, "--state", str(state), "--token", "t0k")
    config = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    # The kubeconfig names the same port over TLS: kubectl sends tokens only over https.
    assert config["clusters"][0]["cluster"]["server"] == url.replace("http://", "https://")
    assert config["clusters"][0]["cluster"]["certificate-authority-data"]
    assert config["users"][0]["user"] == {"token": "t0k"}
    client = EmuClient(url, token="t0k")
    assert (await EmuClient(url, token="wrong").get("/api/v1/namespaces")).status == 401
    # No token at all is system:anonymous, which RBAC lets do nothing here.
    assert (await EmuClient(url).get("/api/v1/namespaces")).status == 403
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kept"},
        "data": {"k": "v"},
    }
    created = (await client.request("POST", "/api/v1/namespaces/default/configmaps", body)).json()
    proc.send_signal(signal.SIGTERM)
    with trio.fail_after(20):
        assert await proc.wait() == 0
    proc, url = await _start(tmp_path, "--state", str(state), "--token", "t0k")
    try:
        client = EmuClient(url, token="t0k")
        r = await client.get("/api/v1/namespaces/default/configmaps/kept")
        assert r.json()["data"] == {"k": "v"}
        body["metadata"] = {"name": "next"}
        r = await client.request("POST", "/api/v1/namespaces/default/configmaps", body)
        assert int(r.json()["metadata"]["resourceVersion"]) > int(
            created["metadata"]["resourceVersion"]
        )
    finally:
        proc.send_signal(signal.SIGINT)
        with trio.fail_after(20):
            assert await proc.wait() == 0


async def test_authorization_mode_always_allow(tmp_path: Path) -> None:
    for flags, anonymous_status in (((), 403), (("--no-rbac",), 200)):
        proc, url = await _start(tmp_path, *flags)
        try:
            assert (await EmuClient(url).get("/api/v1/nodes")).status == anonymous_status
            # Authentication stays on either way.
            assert (await EmuClient(url, "forged").get("/api/v1/nodes")).status == 401
            admin = EmuClient(url, admin_token(tmp_path))
            assert (await admin.get("/api/v1/nodes")).status == 200
        finally:
            proc.send_signal(signal.SIGTERM)
            with trio.fail_after(20):
                assert await proc.wait() == 0

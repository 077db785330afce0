"""The kit's RBAC carries a starting manager: with the CRDs and config/rbac applied by kubectl,
``kubetrio run`` with only the shipped ServiceAccount's token (as the Deployment runs it, with
leader election in kubetrio-system) syncs every built-in controller's caches, takes the Lease
and stops cleanly, and the API server's audit log shows no request of that account denied.

This keeps the kit deployable on its own; it does not show the roles minimal (that takes a
whole machine lifecycle using every rule)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
import yaml

from kubetrio.runtime.emulator import EmulatorOptions, serve_emulator

from .conftest import Kubectl, find_kubectl, kubectl_env

KIT = Path(__file__).resolve().parents[2] / "config"
NS = "kubetrio-system"
ACCOUNT = f"system:serviceaccount:{NS}:kubetrio-controller-manager"


async def test_the_manager_starts_under_the_shipped_service_account(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    binary = find_kubectl()
    assert binary is not None, "kubectl 1.33 is needed"
    async with serve_emulator(options=EmulatorOptions(audit_log_path=audit)) as emu:
        kubectl = Kubectl(binary, kubectl_env(emu, tmp_path))
        await kubectl.run("create", "namespace", NS)
        await kubectl.run("apply", "-k", str(KIT / "crd"))
        await kubectl.run("apply", "-k", str(KIT / "rbac"))
        token = await kubectl.out("create", "token", "kubetrio-controller-manager", "-n", NS)
        kubeconfig = yaml.safe_load(emu.kubeconfig_path.read_text())
        kubeconfig["users"][0]["user"] = {"token": token.strip()}
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig))

        output = await run_until_leading_then_stop(
            [
                sys.executable,
                "-m",
                "kubetrio.cmd.main",
                "run",
                "--kubeconfig",
                str(path),
                # The Deployment's election flags; its fixed ports would collide here.
                "--leader-elect",
                f"--leader-election-namespace={NS}",
                "--metrics-bind-address",
                "127.0.0.1:0",
                "--health-probe-bind-address",
                "0",
            ]
        )
        lease = await kubectl.json("get", "lease", "kubetrio-leader", "-n", NS)
        # Taken, then released on the way out (an empty holder, as client-go releases).
        assert lease["spec"]["acquireTime"] and lease["spec"]["holderIdentity"] == ""

    assert "forbidden" not in output.lower(), output
    requests = [event(line) for line in audit.read_text().splitlines()]
    mine = [e for e in requests if e["user"]["username"] == ACCOUNT]
    assert len(mine) > 10  # lists, watches, the lease
    denied = [e for e in mine if e["responseStatus"]["code"] == 403]
    assert denied == [], denied[:3]
    resources = {(e["objectRef"].get("apiGroup", ""), e["objectRef"]["resource"]) for e in mine}
    assert ("coordination.k8s.io", "leases") in resources
    assert ("machine.sapcloud.io", "machines") in resources


def event(line: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(line)
    parsed.setdefault("objectRef", {"resource": ""})
    return parsed


async def run_until_leading_then_stop(argv: list[str]) -> str:
    """Run the manager until every controller's workers started (it leads: controllers start
    only then), SIGTERM it, and return its output once it exited 0."""
    output = b""
    with trio.fail_after(90):
        process = await trio.lowlevel.open_process(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                output += chunk
                if output.count(b"starting workers") >= 4 or b"Traceback" in output:
                    break
            process.send_signal(signal.SIGTERM)
            async for chunk in process.stdout:
                output += chunk
            await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 0, output.decode()
    return output.decode()

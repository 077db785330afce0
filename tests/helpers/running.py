"""``kubetrio run`` as a process, driven by what it prints: started (its workers run, so it
leads and listens for signals), then whatever the test checks, then a signal, then its whole
output once it exited 0. Waiting on its output, never on time."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from tests.helpers.kube import Kubectl

# The kit's namespace and the manager's ServiceAccount (config/rbac).
NS = "kubetrio-system"
ACCOUNT = f"system:serviceaccount:{NS}:kubetrio-controller-manager"


async def install_shipped(kubectl: Kubectl, kit: str) -> str:
    """The kit's namespace, CRDs and RBAC applied from ``kit`` (config/); the manager's
    ServiceAccount token, as ``kubectl create token`` gives it."""
    await kubectl.run("create", "namespace", NS)
    await kubectl.run("apply", "-k", f"{kit}/crd")
    await kubectl.run("apply", "-k", f"{kit}/rbac")
    return (await kubectl.out("create", "token", "kubetrio-controller-manager", "-n", NS)).strip()


async def run_until_started(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    workers: int = 1,
    stop: signal.Signals = signal.SIGTERM,
    while_running: Callable[[bytes], Awaitable[None]] | None = None,
) -> str:
    """Start ``argv``; once ``workers`` controllers print "starting workers", await
    ``while_running(output so far)``, send ``stop``; the output, asserting exit code 0."""
    output = b""
    with trio.fail_after(90):
        process = await trio.lowlevel.open_process(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
        )
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                output += chunk
                if output.count(b"starting workers") >= workers or b"Traceback" in output:
                    break
            if while_running is not None:
                await while_running(output)
            process.send_signal(stop)
            async for chunk in process.stdout:
                output += chunk
            await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 0, output.decode()
    return output.decode()


def audit_event(line: str) -> dict[str, Any]:
    """One audit log line; requests without an object (discovery) get an empty objectRef."""
    parsed: dict[str, Any] = json.loads(line)
    parsed.setdefault("objectRef", {"resource": ""})
    return parsed

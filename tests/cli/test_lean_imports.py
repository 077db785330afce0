"""``kubetrio run`` holds only what its run uses: a module, once imported, stays in the process,
and the manager's memory at rest (``tests/bench/memory.py``) is mostly its imports. The heavy
parts of the package that a plain manager never calls — the emulator (CEL, protobuf, JWT), the
simulation, the demo, boto3, X.509 certificate making, rich, rapidfuzz, pykube-ng's OAuth
providers — must not be loaded by a manager running every built-in controller against a
cluster. The process itself writes down, as it exits, what it holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kubetrio.sim import serve_world
from tests.helpers.kube import Kubectl, find_kubectl, kubectl_env
from tests.helpers.running import run_until_started

KIT = Path(__file__).resolve().parents[2] / "config"
pytestmark = [pytest.mark.kubectl, pytest.mark.process]

# Loaded only by what needs them: the emulator and simulation commands, the embedded demo, an
# AWS MachineClass, --metrics-secure or webhooks, a machine's status description compared.
NEVER_LOADED = (
    "kubetrio.emulator",
    "kubetrio.sim",
    "kubetrio.cmd.demo.scenario",
    "boto3",
    "cryptography.x509",
    "rich",
    "rapidfuzz",
    "requests_oauthlib",
    "jsonpath_ng",
    "celpy",
    "jwt",
    "google.protobuf",
)
# The controllers whose workers start (the storage ones need a storage backend).
STARTED = 6


# kubetrio's CLI, writing the modules it holds to argv[1] when it exits.
RECORDING = (
    "import atexit, json, sys; record = sys.argv.pop(1); "
    "atexit.register(lambda: open(record, 'w').write(json.dumps("
    "[name for name, module in sys.modules.items() if module is not None]))); "
    "from kubetrio.cmd.main import main; sys.exit(main())"
)


async def test_a_manager_with_every_builtin_controller_imports_none_of_the_heavy_parts(
    tmp_path,
) -> None:
    record = tmp_path / "modules.json"
    binary = find_kubectl()
    assert binary is not None, "kubectl 1.33 is needed"
    async with serve_world() as emu:
        kubectl = Kubectl(binary, kubectl_env(emu, tmp_path))
        await kubectl.run("apply", "-k", str(KIT / "crd"))
        argv = [
            *(sys.executable, "-c", RECORDING, str(record), "run"),
            *("--kubeconfig", str(emu.kubeconfig_path)),
            *("--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "0"),
        ]
        output = await run_until_started(argv, workers=STARTED)
    modules = set(json.loads(record.read_text()))
    assert "kubetrio.controllers.machine.setup" in modules, output[-2000:]
    loaded = sorted(
        name
        for name in NEVER_LOADED
        if name in modules or any(module.startswith(f"{name}.") for module in modules)
    )
    assert loaded == [], f"kubetrio run imported {loaded}"

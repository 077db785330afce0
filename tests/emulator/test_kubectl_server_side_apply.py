"""``kubectl apply --server-side`` against the emulator: a second field manager meets kube's
conflict (kubectl prints it with its advice), ``--force-conflicts`` takes the field over, and
``--show-managed-fields`` shows who owns what."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.kube import Kubectl

pytestmark = pytest.mark.kubectl


def configmap(value: str) -> bytes:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k"}, "data": {"a": value}}
    return yaml.safe_dump(doc).encode()


async def test_server_side_apply_conflicts_and_force(kubectl: Kubectl) -> None:
    first = await kubectl.run("apply", "--server-side", "-f", "-", stdin=configmap("1"))
    assert b"serverside-applied" in first.stdout
    args = ("apply", "--server-side", "--field-manager=other", "-f", "-")
    refused = await kubectl.run(*args, stdin=configmap("2"), check=False)
    assert refused.returncode != 0
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl": .data.a' in refused.stderr.decode()
    )
    await kubectl.run(*args, "--force-conflicts", stdin=configmap("2"))
    shown = await kubectl.run("get", "cm", "k", "--show-managed-fields", "-o", "yaml")
    cm = yaml.safe_load(shown.stdout)
    assert cm["data"] == {"a": "2"}
    assert [
        (e["manager"], e["operation"], e["fieldsV1"]) for e in cm["metadata"]["managedFields"]
    ] == [("other", "Apply", {"f:data": {"f:a": {}}})]

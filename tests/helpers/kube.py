"""Helpers for the tests against the emulator over HTTP, whatever their subject (the fixtures
``emu``, ``client``, ``kube`` and ``kubectl`` are in ``tests/conftest.py``).

``kubectl_of`` runs any other kubectl release; ``blocking``/``pykube_api`` run pykube-ng in worker
threads; ``configmap`` and ``pod`` build plain objects.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pykube
import pytest
import trio

from kubetrio.emulator import Emulator
from kubetrio.runtime.util.inflight import request_in_flight
from kubetrio.testing.kubectl import Kubectl, find_kubectl
from kubetrio.testing.kubectl import kubectl_env as kit_kubectl_env
from kubetrio.testing.plugin import IO_AUTOJUMP

__all__ = ["IO_AUTOJUMP", "Kubectl", "find_kubectl"]  # re-exported: tests import them from here

T = TypeVar("T")


async def blocking(fn: Callable[[], T], *, hold_clock: bool = True) -> T:
    """Run a blocking call (pykube-ng) in a worker thread; a request in flight, so it holds the
    mock clock as our client's requests do (but a watch, which waits on time: ``hold_clock``
    False)."""
    with request_in_flight() if hold_clock else contextlib.nullcontext():
        return await trio.to_thread.run_sync(fn)


def pykube_api(emu: Emulator) -> pykube.HTTPClient:
    """A pykube-ng client from the emulator's kubeconfig."""
    return pykube.HTTPClient(pykube.KubeConfig.from_file(str(emu.kubeconfig_path)), timeout=(5, 30))


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    """A ConfigMap with no namespace (the request path gives it), ``labels`` and ``data``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data,
    }


def kubectl_env(emu: Emulator, home: Path) -> dict[str, str]:
    """kubectl's environment: the emulator's kubeconfig, and a HOME and cache of its own."""
    return kit_kubectl_env(emu.kubeconfig_path, home)


def kubectl_of(version: str, emu: Emulator, home: Path) -> Kubectl:
    """kubectl ``version`` (e.g. "1.27"): ``kubectl.<version>`` beside the real kubectl (the one
    on PATH is a gcloud dispatcher), with the ``kubectl`` fixture's environment; the test is
    skipped when that binary is missing."""
    which = shutil.which("kubectl")
    binary = Path(os.path.realpath(which)).parent / f"kubectl.{version}" if which else None
    if binary is None or not binary.exists():
        missing = f"kubectl.{version} not installed beside the kubectl on PATH"
        if os.environ.get("KUBETRIO_CI") == "1":
            pytest.fail(missing)  # CI installs every version it tests: never skip there
        pytest.skip(missing)
    return Kubectl(str(binary), kubectl_env(emu, home))


def pod(name: str, node: str = "", **labels: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": spec,
    }

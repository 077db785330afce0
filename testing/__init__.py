"""Testing your controllers: the kit kubetrio's own suite runs on.

Installing kubetrio registers a pytest plugin (``kubetrio.testing.plugin``, entry point
``pytest11``), so a test file gets these fixtures with no conftest:

* ``emulator`` — an API server double served over real HTTP inside the test's own trio run
  (``@pytest.mark.kubetrio(simulated_cluster=True)`` adds a scheduler, kubelets, controllers);
* ``mock_clock`` — the trio ``MockClock`` that run uses: a 1-hour timeout costs no wall time,
  and a client request in flight holds the clock (``kubetrio.testing.clockhold``) so time never
  jumps while an answer is on its way;
* ``kube_client`` — a ``kubetrio.runtime.client.typed.Client`` on the emulator, as admin;
* ``kubectl`` — the real kubectl against the emulator (``$KUBECTL`` or the one on PATH).

And helpers: ``install_crds`` (from files, dicts or declared kinds; returns once served),
``run_manager`` (your controllers on a manager, caches synced, crashes fail the test),
``wait_for``/``wait_gone``/``eventually`` (woken by the informers' changes, never polling),
``tcp_link`` (a connection to the server the test can cut: a network partition on demand).

A test of a controller that owns a ConfigMap per Greeting::

    from kubetrio.testing import install_crds, run_manager, wait_for

    async def test_greeting_gets_its_configmap(emulator, kube_client):
        await install_crds(kube_client, "config/crd/greetings.yaml")
        async with run_manager(emulator, greetings.setup) as manager:
            await kube_client.create(Greeting, greeting("hello"), namespace="default")
            cm = await wait_for(manager, ConfigMap, "hello", condition=lambda c: c.data)
            assert cm.data == {"text": "hello"}

Time is the mock clock's: waits of 60 s cost nothing, so give timeouts generously.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubetrio.testing.crds import install_crds
    from kubetrio.testing.kubectl import Kubectl, find_kubectl
    from kubetrio.testing.link import tcp_link
    from kubetrio.testing.manager import run_manager
    from kubetrio.testing.waiting import eventually, wait_for, wait_gone

# Imported on first use: the pytest plugin lives in this package, and a session that uses
# none of the kit must not pay for importing the manager and the emulator.
_EXPORTS = {
    "Kubectl": "kubectl",
    "eventually": "waiting",
    "find_kubectl": "kubectl",
    "install_crds": "crds",
    "run_manager": "manager",
    "tcp_link": "link",
    "wait_for": "waiting",
    "wait_gone": "waiting",
}

__all__ = [
    "Kubectl",
    "eventually",
    "find_kubectl",
    "install_crds",
    "run_manager",
    "tcp_link",
    "wait_for",
    "wait_gone",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

"""The real kube-apiserver the cross-server benchmarks run beside the emulator.

Why: a figure measured only against the emulator says how kubetrio does against kubetrio's own
double. ``informer.py``, ``reconcile.py`` and ``drain.py`` therefore run the same work against a
real control plane too (``kubetrio.testing.controlplane.ControlPlane``: etcd, kube-apiserver and
kube-controller-manager's ``disruption`` controller, from ``KUBEBUILDER_ASSETS``) in the same
run, and print both figures side by side. There is no kubelet, scheduler, or ServiceAccount,
namespace or garbage collector controller: each benchmark does itself what it needs of those.

One control plane serves them all: ``all.py`` starts it once and names its kubeconfig in
``KUBETRIO_BENCH_REAL_KUBECONFIG`` (starting one costs seconds that CI's budget is short of);
a benchmark run alone starts its own. Each leaves behind nothing the next one lists.

Without the binaries the real half is left out with a note, except under CI (``CI`` or
``KUBETRIO_CI`` set), where the benchmark fails naming what is missing: CI must measure both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kubetrio.testing.controlplane import ControlPlane, ControlPlaneUnavailable, find_assets
from kubetrio.testing.plugin import in_ci

SHARED = "KUBETRIO_BENCH_REAL_KUBECONFIG"
CONTROLLERS = ("disruption",)
# Admission plugins that would refuse the benchmarks' pods as written: ServiceAccount (no
# controller makes the ServiceAccounts they name) and Priority (the informer's pods carry a
# priority without a PriorityClass, as the emulator's data set does).
APISERVER_FLAGS = ("--disable-admission-plugins=ServiceAccount,Priority",)


def available() -> dict[str, Path] | None:
    """The control plane's binaries; None (with a note) when they are missing outside CI;
    ``SystemExit`` naming them under CI. Call it first thing, so CI fails before the work."""
    try:
        return find_assets()
    except ControlPlaneUnavailable as error:
        if in_ci():
            raise SystemExit(f"{error}; CI measures the real server too") from None
        print(f"real server: not measured ({error})", flush=True)
        return None


@contextmanager
def real_server() -> Iterator[Path | None]:
    """The kubeconfig of a running real control plane: the shared one, else one started here
    and stopped on exit; None when ``available`` says there is none."""
    shared = os.environ.get(SHARED)
    if shared:
        yield Path(shared)
        return
    assets = available()
    if assets is None:
        yield None
        return
    with ControlPlane(
        controllers=CONTROLLERS, apiserver_flags=APISERVER_FLAGS, assets=assets
    ) as plane:
        yield plane.kubeconfig_path

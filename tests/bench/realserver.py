"""The real kube-apiserver the cross-server benchmarks run beside the emulator.

Why: a figure measured only against the emulator says how kubetrio does against kubetrio's own
double. ``informer.py``, ``reconcile.py`` and ``drain.py`` therefore run the same work against a
real control plane too (``kubetrio.testing.controlplane.ControlPlane``: etcd and kube-apiserver,
plus the kube-controller-manager controllers a benchmark names, from ``KUBEBUILDER_ASSETS``) in
the same run, and print both figures side by side.

Without the binaries the real half is left out with a note, except under CI (``CI`` or
``KUBETRIO_CI`` set), where the benchmark fails naming what is missing: CI must measure both.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kubetrio.testing.controlplane import ControlPlane, ControlPlaneUnavailable, find_assets
from kubetrio.testing.plugin import in_ci


@contextmanager
def real_server(
    controllers: Sequence[str] = (), apiserver_flags: Sequence[str] = ()
) -> Iterator[ControlPlane | None]:
    """A started control plane, stopped on exit; None (with a note) when its binaries are
    missing outside CI; ``SystemExit`` naming them under CI."""
    try:
        assets = find_assets()
    except ControlPlaneUnavailable as error:
        if in_ci():
            raise SystemExit(f"{error}; CI measures the real server too") from None
        print(f"real server: not measured ({error})", flush=True)
        yield None
        return
    with ControlPlane(
        controllers=controllers, apiserver_flags=apiserver_flags, assets=assets
    ) as plane:
        yield plane

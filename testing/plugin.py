"""The pytest plugin behind ``kubetrio.testing`` (entry point ``pytest11``: ``kubetrio``).

Installing ``kubetrio[testing]`` (kubetrio with pytest and pytest-trio) is enough; no conftest
needed::

    import pytest
    from kubetrio.testing import wait_for

    @pytest.mark.kubetrio(simulated_cluster=True)  # optional: scheduler, kubelets, ...
    async def test_pod_runs(emulator, kube_client):
        ...

A test that takes ``emulator`` or ``kube_client`` runs under pytest-trio on ``mock_clock`` even
when it does not name that fixture, and is marked as a trio test even without ``trio_mode``.
The marker also takes ``simulated_cluster=ClusterSimulation(...)`` for tuned delays. A session
that uses none of these fixtures is untouched: nothing is autouse and the emulator is imported
only when a test asks for it. The one thing installed for the whole session is the hook that
holds a MockClock while a kubetrio client request is in flight (``kubetrio.testing.clockhold``),
which does nothing in a run on any other clock.

``api_server`` runs a test twice, on the emulator and on a real control plane (etcd and
kube-apiserver from ``KUBEBUILDER_ASSETS``, started once per test process: ``control_plane``);
``real_server`` runs it on the real one only. Without the binaries those runs are skipped with a
message saying how to get them, except under CI (``CI`` or ``KUBETRIO_CI`` set), where they
fail: a tier that silently never runs proves nothing.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from kubetrio.runtime.util.inflight import add_hook, remove_hook
from kubetrio.testing.clockhold import hold_mock_clock

if TYPE_CHECKING:
    from kubetrio.emulator import Emulator
    from kubetrio.runtime.client.typed import Client
    from kubetrio.testing.controlplane import ControlPlane
    from kubetrio.testing.kubectl import Kubectl
    from kubetrio.testing.servers import ApiServer

# How long every task must sit idle before the mock clock jumps. Real I/O is in flight (HTTP to the
# emulator, worker threads); a request in flight holds the clock (testing/clockhold.py), and
# this threshold covers what the hold cannot see, such as a response being parsed.
IO_AUTOJUMP = 0.05

# The fixtures that put a test on the kit's clock when the test takes them by name (a test that
# reaches the emulator only through a fixture of its own keeps whatever clock it names).
KIT_FIXTURES = frozenset({"emulator", "kube_client", "api_server", "real_server"})
# The kube-controller-manager controllers a shared control plane runs: what makes namespaces
# and owned objects go away, and what gives ServiceAccounts their tokens.
CONTROL_PLANE_CONTROLLERS = (
    "garbagecollector",
    "namespace",
    "serviceaccount",
    "serviceaccount-token",
)


def in_ci() -> bool:
    """Whether this run is CI's, where nothing may be skipped for want of a tool."""
    return any(
        os.environ.get(name, "").lower() not in ("", "0", "false", "no")
        for name in ("CI", "KUBETRIO_CI")
    )


def pytest_configure(config: pytest.Config) -> None:
    add_hook(hold_mock_clock)
    config.addinivalue_line(
        "markers",
        "kubetrio(simulated_cluster=False): options of the kubetrio emulator fixture; "
        "simulated_cluster=True (or a ClusterSimulation) runs the simulated cluster",
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    remove_hook(hold_mock_clock)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """pytest-trio defines a ``mock_clock`` too (without autojump), and which plugin loads last
    is up to the installer: parse ours again, after every plugin, so ours wins."""
    manager = session._fixturemanager
    try:
        manager.parsefactories(holder=sys.modules[__name__], node=session)
    except TypeError:  # pytest < 8.1 spells it positionally
        manager.parsefactories(sys.modules[__name__], "")


def _run_on_mock_clock(
    item: pytest.Item, fn: Callable[[], Any], *, clock: trio.abc.Clock | None = None, **kw: Any
) -> Any:
    """pytest-trio's runner, with the test's ``mock_clock`` when the test names no clock."""
    if clock is None:
        clock = item.funcargs.get("mock_clock")  # type: ignore[attr-defined]
    return trio.run(fn, clock=clock, **kw)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or KIT_FIXTURES.isdisjoint(info.argnames):
            continue
        if inspect.iscoroutinefunction(getattr(item, "obj", None)):
            # First, so it wins over trio_mode's own mark (pytest-trio takes the first ``run``).
            item.add_marker(pytest.mark.trio(run=partial(_run_on_mock_clock, item)), append=False)


@pytest.fixture
def mock_clock() -> trio.testing.MockClock:
    """Autojump once idle: simulated time is free, real I/O still gets its turn."""
    return trio.testing.MockClock(autojump_threshold=IO_AUTOJUMP)


@pytest.fixture
async def emulator(
    request: pytest.FixtureRequest, mock_clock: trio.testing.MockClock
) -> AsyncIterator[Emulator]:
    """An emulator served over HTTP inside the test's trio run (on ``mock_clock``)."""
    from kubetrio.sim import serve_world
    from kubetrio.sim.cluster.options import ClusterSimulation

    marker = request.node.get_closest_marker("kubetrio")
    simulated = marker.kwargs.get("simulated_cluster", False) if marker else False
    simulate = ClusterSimulation() if simulated is True else (simulated or None)
    async with serve_world(simulate=simulate) as emu:
        yield emu


@pytest.fixture
def kube_client(emulator: Emulator) -> Client:
    """Our typed async client on the emulator, as admin."""
    from kubetrio.runtime.client.typed import Client

    return Client.from_url(emulator.url, token=emulator.token)


@pytest.fixture
def kubectl(emulator: Emulator, tmp_path: Path) -> Kubectl:
    """kubectl on the emulator; fails (never skips) when kubectl is not installed."""
    from kubetrio.testing.kubectl import MISSING, Kubectl, find_kubectl, kubectl_env

    binary = find_kubectl()
    if binary is None:
        pytest.fail(MISSING)
    return Kubectl(binary, kubectl_env(emulator.kubeconfig_path, tmp_path))


def control_plane_assets() -> dict[str, Path]:
    """The control plane's binaries, for a test that starts one of its own (``ControlPlane(
    assets=control_plane_assets(), ...)``): the test is skipped without ``KUBEBUILDER_ASSETS``
    outside CI, and fails in CI."""
    from kubetrio.testing.controlplane import ControlPlaneUnavailable, find_assets

    try:
        return find_assets()
    except ControlPlaneUnavailable as missing:
        if in_ci():
            pytest.fail(f"{missing}; CI must run the real-server tests")
        pytest.skip(str(missing))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """A real control plane for this test process (every test on it uses a namespace of its
    own); skipped without ``KUBEBUILDER_ASSETS`` outside CI, a failure in CI."""
    from kubetrio.testing.controlplane import ControlPlane

    assets = control_plane_assets()
    with ControlPlane(controllers=CONTROL_PLANE_CONTROLLERS, assets=assets) as plane:
        yield plane


@pytest.fixture(params=["emulator", "real"])
def _real_plane(request: pytest.FixtureRequest) -> ControlPlane | None:
    """The control plane for the "real" run of an ``api_server`` test; None for the emulator's
    (so a session without the binaries still runs the emulator's half)."""
    if request.param == "real":
        plane: ControlPlane = request.getfixturevalue("control_plane")
        return plane
    return None


@pytest.fixture
async def api_server(
    request: pytest.FixtureRequest,
    _real_plane: ControlPlane | None,
    mock_clock: trio.testing.MockClock,
) -> AsyncIterator[ApiServer]:
    """The emulator, then a real control plane: the same test on both."""
    from kubetrio.sim import serve_world
    from kubetrio.sim.cluster.options import ClusterSimulation
    from kubetrio.testing.servers import ApiServer, on_control_plane

    marker = request.node.get_closest_marker("kubetrio")
    simulated = marker.kwargs.get("simulated_cluster", False) if marker else False
    simulate = ClusterSimulation() if simulated is True else (simulated or None)
    if _real_plane is not None:
        from kubetrio.sim.world import simulated_world

        async with on_control_plane(_real_plane) as server:
            if simulate is None:
                yield server
                return
            async with simulated_world(server.client(qps=0), simulate=simulate):
                yield server
        return
    # As on the real server, the simulated world acts through the API only.
    async with serve_world(simulate=simulate) as emu:
        yield ApiServer("emulator", emu.kubeconfig_path, "default", emulator=emu)


@pytest.fixture
async def real_server(
    control_plane: ControlPlane, mock_clock: trio.testing.MockClock
) -> AsyncIterator[ApiServer]:
    """The real control plane only, with a namespace of this test's own."""
    from kubetrio.testing.servers import on_control_plane

    async with on_control_plane(control_plane) as server:
        yield server

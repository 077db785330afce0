"""Fixtures for every test folder: the collector's state restored, and the emulator fixtures
the tests against the emulator over HTTP share (whatever their subject).

The testing kit (``kubetrio.testing``'s pytest plugin) provides ``mock_clock``, ``emulator``
(here also ``emu``) and ``kube_client``; ``kube`` and ``kubectl`` are the kit's, on ``emu``;
``client`` is a raw async HTTP client on it. Defined here rather than in a helpers module: a
conftest's fixtures take precedence over the kit's, which a plugin's would not (``kubectl``
must follow a test module's own ``emu``, e.g. a simulated cluster).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.testing.kubectl import MISSING, Kubectl, find_kubectl
from tests.helpers.kube import kubectl_env


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--bench",
        action="store_true",
        help="also run the tests marked bench (tests/bench/mcm_suites.py passes it)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``bench`` are left out unless ``--bench`` is given: heavier scenarios that
    a benchmark-style run times on both servers, kept out of CI's budget.

    Runs on the kit's real control plane (``api_server``'s "real" run, ``real_server``, the
    conformance corpus's ``control_plane``) use etcd and kube-apiserver child processes: marked
    ``process`` here, as a test's own marks cannot single out one run of a fixture's
    parameters.

    Then the files with a ``slow`` test go first (each file kept whole and in order, so its
    module fixtures are set up once): pytest-xdist hands tests out in this order, and a
    half-minute test started last would leave the other processes idle at the end."""
    if not config.getoption("--bench"):
        benched = [item for item in items if item.get_closest_marker("bench")]
        if benched:
            config.hook.pytest_deselected(items=benched)
            items[:] = [item for item in items if not item.get_closest_marker("bench")]
    for item in items:
        callspec = getattr(item, "callspec", None)
        real = callspec is not None and callspec.params.get("_real_plane") == "real"
        uses = set(getattr(item, "fixturenames", ()))
        if real or uses & {"real_server", "control_plane"}:
            item.add_marker(pytest.mark.process)
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: otherwise as collected


@pytest.fixture
def restore_gc() -> Iterator[None]:
    """Thresholds and the frozen set are process-wide: later tests in this worker get them back."""
    threshold = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.fixture
def emu(emulator: Emulator) -> Emulator:
    """The kit's ``emulator`` under the name the suite grew up with."""
    return emulator


@pytest.fixture
def client(emu: Emulator) -> EmuClient:
    return EmuClient(emu.url, emu.token)


# ``kube`` and ``kubectl`` follow ``emu``, which a test file may override (a simulated cluster).


@pytest.fixture
def kube(emu: Emulator) -> Client:
    """Our typed async client, from the emulator's kubeconfig (admin, as ``kube_client``)."""
    return Client.from_kubeconfig(str(emu.kubeconfig_path))


@pytest.fixture
def kubectl(kubectl_binary: str, emu: Emulator, tmp_path: Path) -> Kubectl:
    """As the kit's ``kubectl``."""
    return Kubectl(kubectl_binary, kubectl_env(emu, tmp_path))


@pytest.fixture(scope="session")
def kubectl_binary() -> str:
    binary = find_kubectl()
    if binary is None:
        pytest.fail(MISSING)
    return binary

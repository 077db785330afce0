"""Machine drivers found as plug-ins: the built-in ones (``sim``, ``aws``) and a package's
``kubetrio.drivers`` entry point load the same way; one whose dependencies are missing is left
out, a broken one is refused by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from kubetrio.controllers.machine.driver.plugins import (
    BUILTIN,
    DriverPluginError,
    driver_targets,
    load_drivers,
)
from kubetrio.emulator import Emulator
from tests.helpers.machines import install_crds, machine_manager


async def test_the_default_drivers_are_the_plugins(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    install_crds(emu)
    async with machine_manager(emu) as h:
        assert set(h.ctx.drivers) == {"sim", "aws", "AWS"}
        # A plug-in whose module is missing is skipped; a broken one is named.
        missing = {"gone": "kubetrio_provider_gone:register"}
        assert list(load_drivers(h.manager, missing)) == []
        with pytest.raises(DriverPluginError, match=r"'odd': .*:BUILTIN is not callable"):
            load_drivers(h.manager, {"odd": "kubetrio.controllers.machine.driver.plugins:BUILTIN"})


@pytest.fixture
def plugin_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A package declaring a ``kubetrio.drivers`` entry point, as an installed one would."""
    info = tmp_path / "kubetrio_provider_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kubetrio-provider-demo\n")
    (info / "entry_points.txt").write_text("[kubetrio.drivers]\ndemo = demo_provider:register\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield


def test_an_entry_point_adds_a_driver(plugin_on_path: None) -> None:
    targets = driver_targets()
    assert targets["demo"] == "demo_provider:register"
    assert {k: targets[k] for k in BUILTIN} == dict(BUILTIN)

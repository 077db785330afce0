"""The simulated world restates the wire facts it shares with the controllers (it is their peer
across HTTP, never their importer): these tests hold the two spellings together."""

from __future__ import annotations

from kubetrio.controllers.machine.driver import sim as sim_driver
from kubetrio.controllers.machine.driver.codes import Code
from kubetrio.controllers.storage import backend, errors
from kubetrio.sim.cloud import CODE_HTTP_STATUS, VERSION
from kubetrio.sim.storage import service


def test_the_simulated_cloud_fails_with_every_machine_error_code_and_no_other() -> None:
    assert set(CODE_HTTP_STATUS) == {code.name for code in Code if code is not Code.OK}


def test_the_simulated_storage_service_refuses_with_storageos_reasons() -> None:
    assert service.IN_USE_REASON == errors.IN_USE_REASON
    assert service.LOCKED_REASON == errors.LOCKED_REASON
    assert service.DEFAULT_CSI_DRIVER == backend.DEFAULT_CSI_DRIVER


def test_the_sim_driver_calls_the_version_of_the_api_the_cloud_serves() -> None:
    assert sim_driver.API_VERSION == VERSION

"""The kit as an installed plugin: a fresh project, no conftest, no trio_mode, just tests."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.process, pytest.mark.slow]

pytest_plugins = ["pytester"]

# Each test first checks that the kit's clock is a mock one: its simulated hours then cost no
# wall time, and a real clock fails at once instead of sleeping for an hour.
USER_TESTS = """
import trio
import trio.testing
from kubetrio.api.core import ConfigMap
from kubetrio.testing import run_manager, wait_for


def watch(manager, config):
    manager.cache.informer(ConfigMap)


async def test_created_configmap_reaches_the_cache(emulator, kube_client):
    assert isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock)
    body = {"metadata": {"name": "hi", "namespace": "default"}, "data": {"a": "b"}}
    async with run_manager(emulator, watch) as manager:
        await kube_client.create(ConfigMap, body)
        cm = await wait_for(manager, ConfigMap, "hi", condition=lambda c: c.data, timeout=3600)
        assert cm.data == {"a": "b"}
        await trio.sleep(3600)  # an hour of simulated time


async def test_an_hour_timeout_costs_nothing(emulator, kube_client):
    assert isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock)
    async with run_manager(emulator, watch) as manager:
        try:
            await wait_for(manager, ConfigMap, "never", timeout=3600)
        except AssertionError as error:
            assert "timed out after 3600s" in str(error)
        else:
            raise AssertionError("wait_for returned for an object that never existed")
"""


def test_a_user_project_gets_the_fixtures_from_the_entry_point(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_session_without_the_kit_does_not_import_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain="""
import sys

def test_plain():
    assert "kubetrio.emulator" not in sys.modules
    assert "kubetrio.runtime.manager.manager" not in sys.modules
"""
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_kubectl_missing_fails_with_how_to_fix_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_kubectl="""
async def test_uses_kubectl(emulator, kubectl):
    await kubectl.run("version", "--client")
"""
    )
    monkeypatch.setenv("KUBECTL", str(pytester.path / "no-such-kubectl"))
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)  # pytest-trio sets fixtures up inside the test run
    result.stdout.fnmatch_lines(["*kubectl not found: install kubectl*or set $KUBECTL*"])

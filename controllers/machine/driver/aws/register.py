"""Registering the ``aws`` driver with a manager's drivers."""

from __future__ import annotations

from functools import cache
from importlib.util import find_spec
from typing import TYPE_CHECKING

from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics, provider_metrics
from kubetrio.runtime.manager.manager import Manager

if TYPE_CHECKING:
    from kubetrio.controllers.machine.driver.aws.driver import AwsDriver

# boto3 itself is imported when a class first names the provider, but the plug-in is left out
# at once, as an import error, when it is not installed.
if find_spec("boto3") is None:
    raise ModuleNotFoundError("No module named 'boto3'", name="boto3")

# kubetrio's name, and the one MCM's AWS MachineClasses carry, so they work unchanged.
PROVIDERS = ("aws", "AWS")


def register_aws(
    registry: DriverRegistry,
    endpoint_url: str | None = None,
    metrics: ProviderMetrics | None = None,
) -> AwsDriver:
    """Register one ``aws`` driver under both names; ``endpoint_url`` points it at an EC2 other
    than AWS's (boto3 also honours ``AWS_ENDPOINT_URL_EC2`` when it is None)."""
    driver = _build(endpoint_url, metrics)
    for name in PROVIDERS:
        registry.register(name, driver)
    return driver


def register_for_manager(registry: DriverRegistry, manager: Manager) -> None:
    """The ``aws`` plug-in: AWS's EC2 endpoints, or the one ``AWS_ENDPOINT_URL_EC2`` names (an
    EC2 double, a VPC endpoint), as boto3 resolves them. boto3 is imported when a class first
    names the provider."""
    metrics = provider_metrics(manager.registry)
    shared = cache(lambda: _build(None, metrics))
    for name in PROVIDERS:
        registry.register_lazy(name, shared)


def _build(endpoint_url: str | None, metrics: ProviderMetrics | None) -> AwsDriver:
    from kubetrio.controllers.machine.driver.aws.clients import Clients
    from kubetrio.controllers.machine.driver.aws.driver import AwsDriver

    return AwsDriver(Clients(endpoint_url=endpoint_url, metrics=metrics))

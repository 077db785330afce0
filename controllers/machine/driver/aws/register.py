"""Registering the ``aws`` driver with a manager's drivers."""

from __future__ import annotations

from kubetrio.controllers.machine.driver.aws.clients import Clients
from kubetrio.controllers.machine.driver.aws.driver import AwsDriver
from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics, provider_metrics
from kubetrio.runtime.manager.manager import Manager

# kubetrio's name, and the one MCM's AWS MachineClasses carry, so they work unchanged.
PROVIDERS = ("aws", "AWS")


def register_aws(
    registry: DriverRegistry,
    endpoint_url: str | None = None,
    metrics: ProviderMetrics | None = None,
) -> AwsDriver:
    """Register one ``aws`` driver under both names; ``endpoint_url`` points it at an EC2 other
    than AWS's (boto3 also honours ``AWS_ENDPOINT_URL_EC2`` when it is None)."""
    driver = AwsDriver(Clients(endpoint_url=endpoint_url, metrics=metrics))
    for name in PROVIDERS:
        registry.register(name, driver)
    return driver


def register_for_manager(registry: DriverRegistry, manager: Manager) -> None:
    """The ``aws`` plug-in: AWS's EC2 endpoints, or the one ``AWS_ENDPOINT_URL_EC2`` names (an
    EC2 double, a VPC endpoint), as boto3 resolves them."""
    register_aws(registry, metrics=provider_metrics(manager.registry))

"""Registering the ``aws`` driver with a manager's drivers."""

from __future__ import annotations

from kubetrio.controllers.machine.driver.aws.clients import Clients
from kubetrio.controllers.machine.driver.aws.driver import AwsDriver
from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics

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

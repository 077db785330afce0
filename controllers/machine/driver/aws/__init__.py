"""The ``aws`` machine driver: MCM's provider-aws semantics on boto3 (``pip install
kubetrio[aws]``)."""

from kubetrio.controllers.machine.driver.aws.clients import Clients
from kubetrio.controllers.machine.driver.aws.driver import (
    AwsDriver,
    decode_provider_id,
    encode_provider_id,
)
from kubetrio.controllers.machine.driver.aws.register import PROVIDERS, register_aws

__all__ = [
    "PROVIDERS",
    "AwsDriver",
    "Clients",
    "decode_provider_id",
    "encode_provider_id",
    "register_aws",
]

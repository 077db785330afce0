"""EC2's error codes mapped to MCM's, as provider-aws maps them (``pkg/aws/errors``).

provider-aws is deliberate about few codes: a failed create is ``ResourceExhausted`` when EC2
says capacity or a quota ran out (so the machine controller waits before retrying and a
MachineDeployment can prefer another zone's class), and ``Internal`` otherwise — throttling,
authorization and network failures included; a terminate of an instance EC2 no longer knows is
``NotFound`` (the machine is gone). Every other call's failure is ``Internal``.
"""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError

from kubetrio.controllers.machine.driver.codes import Code

INSTANCE_NOT_FOUND = "InvalidInstanceID.NotFound"

# EC2 codes that mean "no capacity or quota for this request now".
EXHAUSTED = frozenset(
    {
        "InsufficientCapacity",
        "InsufficientAddressCapacity",
        "InsufficientInstanceCapacity",
        "InsufficientVolumeCapacity",
        "InstanceLimitExceeded",
        "VcpuLimitExceeded",
        "VolumeLimitExceeded",
        "MaxIOPSLimitExceeded",
        "RouteLimitExceeded",
        "Unsupported",
    }
)

# What a boto3 call raises: EC2 answered an error, or no answer came.
AwsError = (ClientError, BotoCoreError)


def error_code(error: Exception) -> str:
    """EC2's error code of a failed request; "" when EC2 never answered (a network failure)."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    return ""


def create_code(error: Exception) -> Code:
    """``GetMCMErrorCodeForCreateMachine``."""
    return Code.ResourceExhausted if error_code(error) in EXHAUSTED else Code.Internal


def terminate_code(error: Exception) -> Code:
    """``GetMCMErrorCodeForTerminateInstances``."""
    return Code.NotFound if error_code(error) == INSTANCE_NOT_FOUND else Code.Internal


def is_instance_not_found(error: Exception) -> bool:
    return error_code(error) == INSTANCE_NOT_FOUND


def message(error: Exception) -> str:
    """The error as the AWS SDK prints it (no credentials are in it: botocore never puts them
    in an error's text)."""
    return str(error)

"""moto's EC2 server for the ``aws`` driver's tests: one per test process, shared by every
module (moto keeps its accounts in process-wide state, so a second server would see the
first one's)."""

from tests.helpers.ec2 import fault_proxy, moto_ec2

__all__ = ["fault_proxy", "moto_ec2"]

"""An EC2 beside the simulated cluster: moto's EC2 server (a widely used double of the EC2 API
that boto3 talks to over HTTP, unchanged) on a loopback port, the account it starts with, and
the kubelets of its instances, which register and report each running instance's Node.

boto3 and moto are optional (``pip install 'kubetrio[aws]' 'moto[server]'``): they are imported
only when an EC2 is asked for, so the rest of the simulated world works without them.
"""

from __future__ import annotations

from kubetrio.sim.ec2.account import (
    KEYS,
    PROFILE,
    REGION,
    Ec2Account,
    cluster_instances,
    describe_account,
    ec2_client,
)
from kubetrio.sim.ec2.kubelets import Ec2Kubelets, ec2_kubelets, emulator_client
from kubetrio.sim.ec2.server import missing_packages, moto_server

__all__ = [
    "KEYS",
    "PROFILE",
    "REGION",
    "Ec2Account",
    "Ec2Kubelets",
    "cluster_instances",
    "describe_account",
    "ec2_client",
    "ec2_kubelets",
    "emulator_client",
    "missing_packages",
    "moto_server",
]

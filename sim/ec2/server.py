"""moto's EC2 (and IAM) server on a free loopback port, in a thread of this process."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec

from kubetrio.sim.ec2.account import create_profile

# What an EC2 double needs: the distribution to install for each missing module.
PACKAGES = {"boto3": "kubetrio[aws]", "moto": "moto[server]", "flask": "moto[server]"}


def missing_packages() -> list[str]:
    """The distributions to install before an EC2 double can run (empty: none)."""
    missing = {dist for module, dist in PACKAGES.items() if find_spec(module) is None}
    return sorted(missing)


def _hold_released_addresses() -> None:
    """EC2 does not give a terminated instance's private address to the very next instance;
    moto does, and the new instance's Node name (its private DNS name) is then that of a Node
    its old machine's deletion has not removed yet, a VM MCM rightly fails ("VM using old node
    obj"). moto's subnets here forget a released address instead of putting it back first in
    line: a demo or test replaces machines in a subnet of thousands of addresses."""
    from moto.ec2.models.subnets import Subnet

    def release(subnet: Subnet, ip: str) -> None:
        subnet._subnet_ips.pop(ip, None)

    Subnet.del_subnet_ip = release  # type: ignore[method-assign,assignment]


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's server, serving until the block ends; its URL, with the instance profile created."""
    from moto.server import ThreadedMotoServer

    _hold_released_addresses()
    # Its request log is werkzeug's: one line per request would drown the emulator's log.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        create_profile(url)
        yield url
    finally:
        server.stop()

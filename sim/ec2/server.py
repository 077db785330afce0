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


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's server, serving until the block ends; its URL, with the instance profile created."""
    from moto.server import ThreadedMotoServer

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

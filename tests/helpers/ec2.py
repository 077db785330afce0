"""An EC2 for tests: moto's server as a separate HTTP endpoint (boto3 talks to it unchanged),
the account it starts with (default VPC, subnet, security group, AMIs) plus an instance profile
(``kubetrio.sim.ec2``, which also plays its instances' kubelets), and a fault proxy in front of
it for what the double cannot script (EC2 error codes, 5xx, latency).

One server per test process: its AMI catalogue takes seconds to load, so tests share it and
keep apart by their own cluster tag rather than by resetting it.
"""

from __future__ import annotations

import threading
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest

from kubetrio.sim.ec2 import (
    KEYS,
    PROFILE,
    REGION,
    cluster_instances,
    describe_account,
    ec2_client,
    moto_server,
)

__all__ = ["KEYS", "FaultProxy", "MotoEc2", "new_cluster"]

SECRET = {
    "providerAccessKeyId": b"AKIAKUBETRIOTEST",
    "providerSecretAccessKey": b"test-secret",
    "userData": b"#!/bin/sh\nkubeadm join --token <<BOOTSTRAP_TOKEN>>\n",
}


@dataclass
class MotoEc2:
    url: str
    ami: str
    other_ami: str
    subnet: str
    security_group: str
    zone: str
    region: str = REGION

    def client(self, url: str | None = None) -> Any:
        """A blocking boto3 EC2 client, for the test's own look at the account."""
        return ec2_client(url or self.url, self.region)

    def provider_spec(self, cluster: str, **overrides: Any) -> dict[str, Any]:
        """A valid provider-aws spec for this account, tagged for ``cluster``."""
        spec: dict[str, Any] = {
            "ami": self.ami,
            "region": self.region,
            "machineType": "m5.large",
            "iam": {"name": PROFILE},
            "keyName": "",
            "networkInterfaces": [
                {"subnetID": self.subnet, "securityGroupIDs": [self.security_group]}
            ],
            "blockDevices": [{"ebs": {"volumeSize": 50, "volumeType": "gp3", "encrypted": True}}],
            "tags": {f"kubernetes.io/cluster/{cluster}": "1", "kubernetes.io/role/node": "1"},
        }
        spec.update(overrides)
        return spec

    def instances(self, cluster: str) -> list[dict[str, Any]]:
        """The cluster's instances in every state."""
        return cluster_instances(self.client(), cluster)


def new_cluster() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def moto_ec2() -> Iterator[MotoEc2]:
    with moto_server() as url:
        account = describe_account(url)
        yield MotoEc2(
            url=url,
            ami=account.ami,
            other_ami=account.other_ami,
            subnet=account.subnet,
            security_group=account.security_group,
            zone=account.zone,
        )


@dataclass
class Fault:
    status: int
    code: str
    message: str = "scripted by the test"


@dataclass
class FaultProxy:
    """Forwards every request to moto, except that an EC2 action with faults queued answers
    the next one instead, as EC2 answers errors (XML, ``Response/Errors/Error``)."""

    upstream: str
    faults: dict[str, list[Fault]] = field(default_factory=dict)
    actions: list[str] = field(default_factory=list)  # every action seen, in order
    url: str = ""
    # Seconds (real time) an action's answer is held back: a slow or hanging EC2.
    latency: dict[str, float] = field(default_factory=dict)
    released: threading.Event = field(default_factory=threading.Event)

    def fail(self, action: str, code: str, status: int = 400, times: int = 1) -> None:
        self.faults.setdefault(action, []).extend(Fault(status, code) for _ in range(times))


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            action = parse_qs(body.decode()).get("Action", [""])[0]
            proxy.actions.append(action)
            if action in proxy.latency:
                proxy.released.wait(proxy.latency[action])
            queued = proxy.faults.get(action)
            if queued:
                fault = queued.pop(0)
                self._answer(
                    fault.status,
                    (
                        '<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error>'
                        f"<Code>{fault.code}</Code><Message>{fault.message}</Message>"
                        "</Error></Errors><RequestID>fault</RequestID></Response>"
                    ).encode(),
                )
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            forwarded = urllib.request.Request(
                proxy.upstream + self.path, data=body, headers=headers, method="POST"
            )
            try:
                with urllib.request.urlopen(forwarded) as answer:
                    self._answer(answer.status, answer.read())
            except urllib.error.HTTPError as error:
                self._answer(error.code, error.read())

        def _answer(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/xml")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@pytest.fixture
def fault_proxy(moto_ec2: MotoEc2) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream=moto_ec2.url)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(proxy))
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield proxy
    proxy.released.set()
    server.shutdown()
    server.server_close()

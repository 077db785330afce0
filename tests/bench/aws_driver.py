"""The ``aws`` driver against moto's EC2 server: EC2 requests and driver time per machine
lifecycle.

moto runs as its own process (``moto_server``), so this process's CPU time is the driver's
alone: boto3's request signing, serialisation and XML parsing in the worker threads, plus the
trio side. Each of N machines (default 50) goes through the calls the machine controller makes
for one lifecycle — status (NotFound), create, initialize, status, delete — one after another
on the real clock, and once at the end of the run ``list_machines`` (the orphan sweep, one per
class per period). The first call of a run also loads boto3's EC2 model and builds the client:
it is reported apart (``client_setup_s``) and left out of the per-call figures.

    .venv/bin/python tests/bench/aws_driver.py --machines 50

prints one ``RESULT {json}`` line: requests per lifecycle by EC2 operation, wall milliseconds
per create and delete (mean and p95), and driver CPU milliseconds per driver call.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this folder would come first on sys.path and its queue.py shadow the stdlib's.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import json
import socket
import statistics
import subprocess
import time
import urllib.request
from collections import Counter
from typing import Any

import boto3
import msgspec
import trio
from prometheus_client import CollectorRegistry

from kubetrio.api.machine import Machine, MachineClass
from kubetrio.controllers.machine.driver import Code, MachineError
from kubetrio.controllers.machine.driver.aws.clients import Clients
from kubetrio.controllers.machine.driver.aws.driver import AwsDriver
from kubetrio.controllers.machine.provider_metrics import ProviderMetrics

REGION = "eu-west-1"
KEYS = {"aws_access_key_id": "AKIABENCH", "aws_secret_access_key": "bench"}
SECRET = {
    "providerAccessKeyId": b"AKIABENCH",
    "providerSecretAccessKey": b"bench",
    "userData": b"#!/bin/sh\n",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    moto = Path(sys.executable).with_name("moto_server")
    child = subprocess.Popen(
        [str(moto), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1)
            return child, url
        except OSError:
            time.sleep(0.05)
    child.kill()
    raise SystemExit("moto_server did not start")


def machine_class(url: str) -> MachineClass:
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=url, **KEYS)
    boto3.client("iam", region_name=REGION, endpoint_url=url, **KEYS).create_instance_profile(
        InstanceProfileName="bench"
    )
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    group = ec2.describe_security_groups()["SecurityGroups"][0]["GroupId"]
    ami = next(
        i["ImageId"]
        for i in ec2.describe_images(Owners=["amazon"])["Images"]
        if i.get("RootDeviceName")
    )
    spec = {
        "ami": ami,
        "region": REGION,
        "machineType": "m5.large",
        "iam": {"name": "bench"},
        "networkInterfaces": [{"subnetID": subnet, "securityGroupIDs": [group]}],
        "blockDevices": [{"ebs": {"volumeSize": 50, "volumeType": "gp3"}}],
        "tags": {"kubernetes.io/cluster/bench": "1", "kubernetes.io/role/node": "1"},
    }
    return msgspec.convert(
        {
            "metadata": {"name": "bench", "namespace": "default"},
            "provider": "aws",
            "providerSpec": spec,
        },
        MachineClass,
    )


def machine(name: str, provider_id: str = "") -> Machine:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"providerID": provider_id} if provider_id else {},
        },
        Machine,
    )


def requests(metrics: ProviderMetrics) -> Counter[str]:
    return Counter(
        {
            s.labels["service"]: int(s.value)
            for s in metrics.requests.collect()[0].samples
            if s.name.endswith("_total")
        }
    )


async def bench(url: str, machines: int) -> dict[str, Any]:
    cls = machine_class(url)
    metrics = ProviderMetrics(CollectorRegistry())
    driver = AwsDriver(Clients(endpoint_url=url, metrics=metrics))
    started = time.perf_counter()
    await driver.list_machines(cls, SECRET)  # client set-up: the EC2 model loads once
    setup_s = time.perf_counter() - started
    before = requests(metrics)
    creates, deletes = [], []
    calls = 0
    cpu = time.process_time()
    for n in range(machines):
        name = f"m-{n}"
        try:
            await driver.get_machine_status(machine(name), cls, SECRET)
        except MachineError as error:
            assert error.code is Code.NotFound
        t = time.perf_counter()
        created = await driver.create_machine(machine(name), cls, SECRET)
        creates.append(time.perf_counter() - t)
        await driver.initialize_machine(machine(name, created.provider_id), cls, SECRET)
        await driver.get_machine_status(machine(name, created.provider_id), cls, SECRET)
        t = time.perf_counter()
        await driver.delete_machine(machine(name, created.provider_id), cls, SECRET)
        deletes.append(time.perf_counter() - t)
        calls += 5
    cpu_s = time.process_time() - cpu
    per_lifecycle = {
        op: round(count / machines, 2) for op, count in (requests(metrics) - before).items()
    }
    t = time.perf_counter()
    await driver.list_machines(cls, SECRET)
    list_ms = (time.perf_counter() - t) * 1000

    def ms(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        return {
            "mean": round(statistics.mean(values) * 1000, 1),
            "p95": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 1),
        }

    return {
        "machines": machines,
        "client_setup_s": round(setup_s, 2),
        "requests_per_lifecycle": per_lifecycle,
        "requests_per_lifecycle_total": round(sum(per_lifecycle.values()), 2),
        "create_ms": ms(creates),
        "delete_ms": ms(deletes),
        "list_ms": round(list_ms, 1),
        "driver_cpu_ms_per_call": round(cpu_s * 1000 / calls, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--machines", type=int, default=50)
    args = parser.parse_args()
    child, url = start_moto()
    try:
        result = trio.run(bench, url, args.machines)
    finally:
        child.terminate()
        child.wait()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

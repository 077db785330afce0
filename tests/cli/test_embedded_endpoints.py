"""``kubetrio run --embedded`` without bind addresses: metrics and probes on free local ports
(never controller-runtime's fixed :8080/:8081, where a second demo or a real manager would
collide), printed once bound; with ``--metrics-secure`` the metrics answer over HTTPS to the
embedded cluster's admin token."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import requests
import trio
import yaml

pytestmark = [
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
    pytest.mark.process,
    pytest.mark.slow,
]


def embedded(tmp_path: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "kubetrio.cmd.main", "run", "--embedded",
        "--embedded-dir", str(tmp_path / "cluster"),
        "--controllers", "example",
        *extra,
    ]  # fmt: skip


Check = Callable[[str, str, str], Awaitable[None]]


async def while_running(command: list[str], check: Check) -> None:
    """Run ``command`` until it printed the metrics and probes URLs, ``check`` them with the
    kubeconfig's token, then stop it with SIGINT: it must exit 0."""
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            lambda task_status: trio.run_process(  # noqa: ASYNC105
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                check=False,
                task_status=task_status,
            )
        )
        assert process.stdout is not None
        output = ""
        with trio.fail_after(60):
            async for chunk in process.stdout:
                output += chunk.decode()
                if "\nprobes: " in output and output.endswith("\n"):
                    break
        metrics = re.search(r"^metrics: (\S+)", output, re.M)
        probes = re.search(r"^probes: (\S+)", output, re.M)
        kubeconfig = re.search(r"^kubeconfig: (\S+)", output, re.M)
        assert metrics and probes and kubeconfig, output
        text = await trio.Path(kubeconfig[1]).read_text()
        token = yaml.safe_load(text)["users"][0]["user"]["token"]
        try:
            await answering(metrics[1], probes[1], token)
            await check(metrics[1], probes[1], token)
        finally:
            process.send_signal(signal.SIGINT)
            with trio.fail_after(30):
                assert await process.wait() == 0


async def answering(metrics: str, probes: str, token: str) -> None:
    """Both answer, on ports the kernel picked on the loopback address."""
    for url in (metrics, probes):
        assert url.split("://")[1].startswith("127.0.0.1:"), url
        port = int(url.split(":")[2].split("/")[0])
        assert port not in (8080, 8081, 8443), url
    scrape = await get(metrics, token)
    assert scrape.status_code == 200 and "process_cpu_seconds_total" in scrape.text
    assert (await get(probes)).status_code == 200


async def get(url: str, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return await trio.to_thread.run_sync(
        lambda: requests.get(url, headers=headers, verify=False, timeout=10)
    )


async def test_free_ports_are_printed(tmp_path: Path) -> None:
    async def plain(metrics: str, probes: str, token: str) -> None:
        assert metrics.startswith("http://") and metrics.endswith("/metrics")
        assert (await get(metrics)).status_code == 200  # plain metrics need no token

    await while_running(embedded(tmp_path), plain)


async def test_secure_metrics_in_the_embedded_demo(tmp_path: Path) -> None:
    async def secure(metrics: str, probes: str, token: str) -> None:
        assert metrics.startswith("https://")
        assert (await get(metrics)).status_code == 401

    await while_running(embedded(tmp_path, "--metrics-secure"), secure)

"""A manager's HTTP endpoints read as Prometheus and probes read them, and a ConfigMap to
reconcile: what the manager tests and the metrics tests of other subjects share."""

from __future__ import annotations

import requests
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.runtime.manager.manager import Manager
from tests.helpers.kube import blocking


def config_map(name: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": data,
    }


async def scrape(
    manager: Manager, path: str = "/metrics"
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await http_get(manager, path)
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


async def http_get(manager: Manager, path: str) -> requests.Response:
    port = (
        manager.bound_ports.get("probes" if "z" in path else "metrics")
        or manager.bound_ports["metrics"]
    )
    # Held like our client's requests: a scrape in a worker thread looks idle to trio, and the
    # mock clock must not jump past the test's deadlines while the manager answers it.
    return await blocking(lambda: requests.get(f"http://127.0.0.1:{port}{path}", timeout=10))

"""What ``--metrics-secure`` costs a scrape: latency of ``GET /metrics`` plain vs secure.

One emulator and two managers in this process (no controllers, the default process
registry): one plain, one with ``--metrics-secure`` and its self-signed certificate. A
ServiceAccount bound to the shipped ``kubetrio-metrics-reader`` role scrapes with ``requests``
from a worker thread; each figure is the median (and p90) of ``--scrapes`` timed requests:

* ``plain``: HTTP, one keep-alive connection (as Prometheus scrapes);
* ``secure_cached``: HTTPS on one keep-alive connection, token and access answers cached
  (every scrape but the first within the minute);
* ``secure_uncached``: the same with both caches emptied before each scrape, so each one makes
  a TokenReview and a SubjectAccessReview (the first scrape of each minute);
* ``secure_new_connection``: cached answers, but a new TLS connection per scrape (a scraper
  that does not keep connections alive pays the handshake every time).

The emulator answering the reviews runs in the same process and trio run, as in the e2e
tests; against a real API server the uncached figure adds two network round trips.

    python tests/bench/secure_metrics.py [--scrapes 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/secure_metrics.py``: keep this folder from shadowing stdlib
# modules, and reach the shared helpers as ``tests.helpers``.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import argparse
import json
import statistics
import time
import warnings
from typing import Any

import requests
import trio
import yaml

from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.metrics.secure import SecureServing
from kubetrio.sim import serve_world
from tests.helpers.rbac import bind, ok, sa_subject, service_account, token

READER_ROLE = Path(__file__).resolve().parents[2] / "config" / "rbac" / "metrics_reader_role.yaml"


def timed(session: requests.Session, url: str, bearer: str | None, n: int) -> list[float]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    out = []
    for _ in range(n):
        started = time.perf_counter()
        response = session.get(url, headers=headers, verify=False, timeout=10)
        out.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
    return out


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 2),
        "p90_ms": round(ordered[int(len(ordered) * 0.9)] * 1000, 2),
    }


async def main(scrapes: int) -> dict[str, Any]:
    async with serve_world() as emu:
        admin = EmuClient(emu.url, emu.token)
        await service_account(admin, "prometheus")
        role = yaml.safe_load(READER_ROLE.read_text())
        await ok(admin.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role))
        await bind(
            admin, "prometheus", "ClusterRole", "kubetrio-metrics-reader",
            [sa_subject("prometheus")], ns=None,
        )  # fmt: skip
        bearer = await token(admin, "prometheus")
        client = Client.from_url(emu.url, token=emu.token, registry=None)
        plain = Manager(client, metrics_bind_address="127.0.0.1:0", health_probe_bind_address="0")
        secure = Manager(
            client,
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="0",
            metrics_secure=SecureServing(),
        )
        assert secure.secure_metrics is not None
        authorizer = secure.secure_metrics.authorizer
        figures: dict[str, list[float]] = {}
        async with trio.open_nursery() as nursery:
            await nursery.start(plain.run)
            await nursery.start(secure.run)
            plain_url = f"http://127.0.0.1:{plain.bound_ports['metrics']}/metrics"
            secure_url = f"https://127.0.0.1:{secure.bound_ports['metrics']}/metrics"
            session = requests.Session()

            def run(url: str, n: int, auth: str | None) -> list[float]:
                return timed(session, url, auth, n)

            await trio.to_thread.run_sync(run, plain_url, 5, None)  # warm up both
            await trio.to_thread.run_sync(run, secure_url, 5, bearer)
            figures["plain"] = await trio.to_thread.run_sync(run, plain_url, scrapes, None)
            figures["secure_cached"] = await trio.to_thread.run_sync(
                run, secure_url, scrapes, bearer
            )
            uncached = []
            for _ in range(scrapes):
                authorizer._tokens.clear()
                authorizer._access.clear()
                uncached += await trio.to_thread.run_sync(run, secure_url, 1, bearer)
            figures["secure_uncached"] = uncached

            def fresh(n: int) -> list[float]:
                out: list[float] = []
                for _ in range(n):
                    with requests.Session() as one:
                        out += timed(one, secure_url, bearer, 1)
                return out

            figures["secure_new_connection"] = await trio.to_thread.run_sync(fresh, scrapes)
            session.close()
            plain.stop()
            secure.stop()
        reviews = (
            emu.counters.get("create", "tokenreviews"),
            emu.counters.get("create", "subjectaccessreviews"),
        )
    result: dict[str, Any] = {name: summary(s) for name, s in figures.items()}
    result["scrapes"] = scrapes
    result["token_reviews"], result["access_reviews"] = reviews
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=200)
    options = parser.parse_args()
    warnings.filterwarnings("ignore", message="Unverified HTTPS request")
    outcome = trio.run(main, options.scrapes)
    for name in ("plain", "secure_cached", "secure_uncached", "secure_new_connection"):
        print(f"{name}: median {outcome[name]['median_ms']} ms, p90 {outcome[name]['p90_ms']} ms")
    print("RESULT " + json.dumps(outcome), flush=True)

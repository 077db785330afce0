"""Emulator throughput, measured with real clients in threads against a child process.

(a) LIST of N pods (~4 KB each) over keep-alive connections, requests/s (and the same LIST
    with a label selector that matches every pod, which skips the emulator's body cache);
(b) the identical response bytes served by a plain ``http.server.ThreadingHTTPServer`` in
    another child process: the baseline (the ratio a/b is what to compare across machines);
(c) watch fan-out: W watchers follow a namespace while writers make E changes; events
    delivered per second (W x E / time from the first write until every watcher has all).
Last line: ``RESULT {json}``; ``--quick`` shrinks the sizes.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/emulator.py``: keep this folder from shadowing stdlib modules.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]

import argparse
import http.client
import http.server
import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

NS = "bench"


def make_replicaset(k: int) -> dict[str, Any]:
    """The owner of every 50th pod: without it the garbage collector takes the pods away."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"app-{k}-7d9f8c6b5", "namespace": NS},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": f"app-{k}"}},
            "template": {
                "metadata": {"labels": {"app": f"app-{k}"}},
                "spec": {"containers": [{"name": "main", "image": "app"}]},
            },
        },
    }


def make_pod(i: int, owner_uids: list[str]) -> dict[str, Any]:
    """A pod of about 4 KB, shaped like a real scheduled workload pod."""
    env = [{"name": f"VAR_{k}", "value": f"value-{i}-{k}-" + "x" * 24} for k in range(24)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{i:05d}",
            "namespace": NS,
            "labels": {"app": f"app-{i % 50}", "tier": "backend", "shard": str(i % 7)},
            "annotations": {"kubetrio.io/bench": "y" * 1600},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"app-{i % 50}-7d9f8c6b5",
                    "uid": owner_uids[i % 50],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "nodeName": f"node-{i % 100}",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example.com/team/app:1.2.3",
                    "env": env,
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i}"}}],
        },
    }


# The admin's bearer token the benchmark's emulator is started with (RBAC is on).
TOKEN = "kubetrio-bench"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Conn:
    """One keep-alive HTTP/1.1 connection (http.client), as a client library keeps them."""

    def __init__(self, port: int) -> None:
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(
        self, method: str, path: str, body: Any = None, ctype: str = "application/json"
    ) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", **AUTH}
        if data is not None:
            headers["Content-Type"] = ctype
        self.c.request(method, path, body=data, headers=headers)
        resp = self.c.getresponse()
        out = resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: {resp.status} {out[:200]!r}")
        return out


def start_emulator() -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubetrio.cmd.main", "emulator", "--port", "0", "--token", TOKEN],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    # It announces the services it serves beside (cloud-endpoint=...) before its own url=.
    line = ""
    while " url=" not in line:
        line = proc.stdout.readline().decode()
        assert line, "the emulator exited before announcing its URL"
    url = line.split(" url=", 1)[1].split()[0]
    port = int(url.rsplit(":", 1)[1])
    return proc, port


def parallel(threads: int, fn: Callable[[int], int]) -> int:
    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(fn, range(threads)))


def seed(port: int, pods: int) -> float:
    Conn(port).call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    conn = Conn(port)
    owner_uids = [
        json.loads(
            conn.call("POST", f"/apis/apps/v1/namespaces/{NS}/replicasets", make_replicaset(k))
        )["metadata"]["uid"]
        for k in range(50)
    ]
    start = time.perf_counter()

    def worker(k: int) -> int:
        c = Conn(port)
        for i in range(k, pods, 4):
            c.call("POST", f"/api/v1/namespaces/{NS}/pods", make_pod(i, owner_uids))
        return 0

    parallel(4, worker)
    return pods / (time.perf_counter() - start)


def measure_list(port: int, path: str, seconds: float, threads: int = 2) -> tuple[float, int]:
    deadline = time.perf_counter() + seconds
    sizes: list[int] = []

    def worker(_: int) -> int:
        c = Conn(port)
        n = 0
        while time.perf_counter() < deadline:
            sizes.append(len(c.call("GET", path)))
            n += 1
        return n

    start = time.perf_counter()
    n = parallel(threads, worker)
    return n / (time.perf_counter() - start), max(sizes)


def plain_server_main(body_file: str) -> None:
    """Child-process mode: serve ``body_file`` for every GET, keep-alive, like the emulator."""
    body = Path(body_file).read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


def measure_watch(port: int, watchers: int, events: int) -> float:
    c = Conn(port)
    rv = json.loads(c.call("GET", f"/api/v1/namespaces/{NS}/configmaps?limit=1"))["metadata"][
        "resourceVersion"
    ]
    ready = threading.Barrier(watchers + 1)
    finished: list[float] = []

    def watch(_: int) -> int:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request(
            "GET",
            f"/api/v1/namespaces/{NS}/configmaps?watch=true&resourceVersion={rv}",
            headers=AUTH,
        )
        resp = conn.getresponse()
        ready.wait()
        seen = 0
        while seen < events:
            line = resp.readline()
            if not line:
                raise RuntimeError("watch ended early")
            seen += 1
        finished.append(time.perf_counter())
        conn.close()
        return seen

    def write(k: int) -> int:
        w = Conn(port)
        for i in range(k, events, 4):
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i:05d}", "labels": {"bench": "watch"}},
                "data": {"payload": "z" * 600, "index": str(i)},
            }
            w.call("POST", f"/api/v1/namespaces/{NS}/configmaps", body)
        return 0

    with ThreadPoolExecutor(watchers + 4) as pool:
        futures = [pool.submit(watch, k) for k in range(watchers)]
        ready.wait()
        start = time.perf_counter()
        writes = [pool.submit(write, k) for k in range(4)]
        for f in writes:
            f.result()
        total = sum(f.result() for f in futures)
    return total / (max(finished) - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--plain-server", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_server:
        plain_server_main(args.plain_server)
        return
    pods, events, watchers, seconds = (
        (2000, 1000, 20, 2.0) if args.quick else (10_000, 5000, 20, 6.0)
    )
    emu, port = start_emulator()
    plain: subprocess.Popen[bytes] | None = None
    try:
        create_rate = seed(port, pods)
        path = f"/api/v1/namespaces/{NS}/pods"
        body = Conn(port).call("GET", path)
        assert len(json.loads(body)["items"]) == pods
        list_rate, size = measure_list(port, path, seconds)
        # A selector bypasses the per-resource body cache: objects filtered and joined per call.
        selected_rate, selected_size = measure_list(
            port, path + "?labelSelector=tier%3Dbackend", seconds / 2
        )
        assert selected_size == size
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            f.write(body)
            f.flush()
            plain = subprocess.Popen(
                [sys.executable, __file__, "--plain-server", f.name], stdout=subprocess.PIPE
            )
            assert plain.stdout is not None
            plain_port = int(plain.stdout.readline().split()[1])
            plain_rate, plain_size = measure_list(plain_port, path, seconds)
        assert plain_size == size
        events_rate = measure_watch(port, watchers, events)
    finally:
        for p in (emu, plain):
            if p is not None:
                p.terminate()
                p.wait(timeout=10)
    print(f"pods={pods} list_bytes={size} creates_per_s={create_rate:.0f}")
    print(f"list_per_s={list_rate:.2f} plain_list_per_s={plain_rate:.2f}")
    print(f"list_with_selector_per_s={selected_rate:.2f} (uncached path)")
    print(f"watchers={watchers} events={events} watch_events_per_s={events_rate:.0f}")
    print(f"ratio list_per_s/plain_list_per_s = {list_rate / plain_rate:.2f}")
    result = {
        "list_per_s": round(list_rate, 2),
        "plain_list_per_s": round(plain_rate, 2),
        "watch_events_per_s": round(events_rate),
        "list_with_selector_per_s": round(selected_rate, 2),
        "creates_per_s": round(create_rate),
        "pods": pods,
        "list_bytes": size,
        "watchers": watchers,
        "events": events,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()

"""Informer initial sync: kubetrio against pykube-ng, a plain-dict cache, the official client and
controller-runtime.

Servers: the emulator for every variant; then kubetrio and the plain-dict cache on the emulator
and on a real kube-apiserver side by side ("Both servers" below); controller-runtime's caches
on that real server.

What is compared. N realistic pods (~4 KB of JSON each) are written straight into an emulator
state file. For **every measurement a fresh emulator** is started from that file (a child
process, so the measuring process sees only the client side) and warmed by one identical
paged LIST, so no variant inherits a cached list body or a warm server another did not have.
Every variant then makes **the same requests**: ``GET /api/v1/pods?limit=500&resourceVersion=0``
followed by ``continue`` pages (client-go's reflector's initial LIST, which kubetrio's informer
now issues too), and keeps every pod in memory, keyed by ``namespace/name``, the way a cache
would:

* ``kt``: ``Informer(Client.from_kubeconfig(...), Pod, streaming_lists=False)`` until
  ``wait_for_sync()`` returns: typed msgspec structs in a ``Store`` (the default client: its
  20 qps / burst 30 rate limit applies to the 100 pages at 50k pods, so about 3.5 s of this is
  waiting on the limiter). ``streaming_lists=False`` keeps it to the same requests as the
  others; the informer's default, a streaming list, is ``kt_stream`` in "Both servers";
* ``kt_unthrottled``: the same with ``Client(qps=0)`` (no client rate limit, like the others);
* ``dict``: pykube-ng's ``api.get`` + ``requests``' JSON, each item kept as the one ``dict``
  JSON decoding made: the minimum a Python cache of whole objects can hold;
* ``pykube``: the same dicts wrapped in ``pykube.Pod`` objects, sharing the dict rather than
  keeping pykube-ng's deepcopy of it (a read-only cache never diffs for an update);
* ``k8s_client``: ``CoreV1Api.list_pod_for_all_namespaces(limit=500)`` (``ApiClient.deserialize``
  per page), V1Pods kept in a dict.

How memory is measured, both ways, each variant in its **own child process** (so RSS is not
shared with another variant's garbage): **RSS growth** (``VmRSS`` after the sync and a
``gc.collect()``, minus ``VmRSS`` after imports and client construction) and the sync's **peak**
(``VmHWM``, reset through ``/proc/self/clear_refs`` just before the sync) in the timing runs;
**tracemalloc** current (still allocated, cache alive) and peak in a separate run per variant
(tracemalloc slows allocation-heavy code several-fold, so it never times anything). Timing
rounds are interleaved (``--repeat``) and reported as medians; a ``kt`` breakdown (HTTP only,
decode only, store only) follows.

**Both servers**, the emulator and a real kube-apiserver (etcd + kube-apiserver from
``KUBEBUILDER_ASSETS``, ``tests/bench/realserver.py``), in the same run: ``--server-pods`` of the
same pods (CI: 1 000) are written to each **through its API** (namespaces, the owning
ReplicaSets, a POST per pod and a ``pods/status`` patch, 16 writers at once; the real server
runs without the ServiceAccount and Priority admission plugins, which would refuse these pods
as written), the first LIST is made once to warm the server (the real one's watch cache), and
then ``kt``, ``kt_stream`` (the informer as it syncs by default: one streaming-list WATCH,
``sendInitialEvents``, no LIST) and ``dict`` run against it, each in its own process as above,
the server staying up between them (plain HTTP to the emulator, TLS to the real server).
Compared side by side: sync time, kt/dict by time and by RSS, kt's KiB per pod by RSS (and
after glibc's ``malloc_trim(0)``, which hands back what the allocator holds free), kt's sync
peak against its steady RSS, and the same for ``kt_stream``. The real server's objects are
larger on the wire (``managedFields``, defaulted fields), which kt drops as it decodes and
``dict`` keeps. **What the real server does to the peak**: it answers
``LIST ?limit=500&resourceVersion=0`` from its watch cache **unpaged**, the whole list in one
response, so the informer holds the whole body while it decodes (the emulator now answers so
too); the peak above steady (MiB) shows what that costs (the printed response counts say how
each server answered). ``kt_stream`` holds no body.

**Every run** is printed as it ends (sync seconds, sync CPU per pod, steady KiB per pod, peak
over steady), since a median hides the run that misses, with what the sync cost **the server**:
its process's CPU (user+system) and RSS peak above what it held before (sampled every 5 ms)
over the variant's whole process run (its start included, the server idle meanwhile), read
from ``/proc`` of the process listening on the kubeconfig's port; the medians of these
for ``kt_stream`` and ``kt`` (a streaming list against a LIST served from the watch cache) are
in the side-by-side table. From ``TARGET_PODS`` (10 000) pods on, every ``kt_stream`` run on
each server must meet the targets (steady RSS ≤ 2 KiB per pod, sync peak ≤ 1.25 times steady),
or the benchmark exits non-zero naming the runs; below that (CI's 1 000) the process's fixed
cost is too large a share of the figure to hold it to them.

**controller-runtime**, on the real server only (``crbaseline.py``): ``crbench informer
--cache full|strip|metadata`` (controller-runtime v0.24.1's default typed cache; the same with
managedFields stripped by a transform; PartialObjectMetadata) syncs the same pods right after
the kubetrio variants of each round, and is compared with ``kt_stream`` (kubetrio's informer as
it syncs by default): sync seconds, sync CPU per pod (the process's user+system CPU over the
sync), RSS per pod after the sync (crbench's after a GC and ``debug.FreeOSMemory()``, kubetrio's
after ``gc.collect()``) and at the sync's peak (``VmHWM`` reset just before it), both above the
RSS just before the sync; kt_stream / cr per cache.

Why both memory measures: RSS is what the process costs, tracemalloc what Python holds; the
difference between them is what showed that interning a list's strings only after decoding all
of it left holes between the cached objects (``kubetrio.runtime.cache.intern`` now interns each
object as it is decoded), and that ``malloc_trim(0)`` after the sync would win too little to be
worth calling. What it measured, when and on what machine: ``docs/performance.md``.

Example::

    python tests/bench/informer.py --quick              # CI size
    python tests/bench/informer.py                      # 50 000 pods, three rounds

The last line is ``RESULT {json}``. Needs the ``bench`` extra (``kubernetes``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as ``python tests/bench/informer.py``: keep this folder from shadowing stdlib modules.
# Its helpers (realserver.py) still import, from the end of the path.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.append(sys.path.pop(0))

import argparse
import base64
import ctypes
import gc
import hashlib
import http.client
import json
import math
import os
import random
import statistics
import subprocess
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

import crbaseline
import msgspec
import yaml
from realserver import SHARED, available, real_server

PAGE = 500
NAMESPACES = 20
VARIANTS = ("kt", "kt_unthrottled", "dict", "pykube", "k8s_client")
MEMORY_VARIANTS = ("kt", "dict", "pykube", "k8s_client")
KIB = 1024
# The informer's targets on both servers, every run (``kt_stream``): steady RSS per cached pod
# and the sync's peak over it. Asserted from TARGET_PODS pods, where the process's fixed cost
# (buffers, decoders built on first use) is a few per cent of the cache; at CI's 1 000 it is not.
TARGET_KIB_PER_POD = 2.0
TARGET_PEAK = 1.25
TARGET_PODS = 10_000
TOKEN = "kubetrio-bench"  # the admin's bearer token the benchmark's emulator is started with
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# --------------------------------------------------------------------------- the data set


def owner_of(i: int) -> tuple[str, str, str]:
    """Pod ``i``'s namespace, app and pod-template-hash (its ReplicaSet is ``app-hash``)."""
    app = f"svc-{i % 250:03d}"
    return (
        f"team-{i % NAMESPACES:02d}",
        app,
        hashlib.sha1(f"{app}-{i % 3}".encode()).hexdigest()[:10],
    )


def make_pod(i: int, rng: random.Random, rv: int) -> dict[str, Any]:
    """One scheduled, running pod of about 4 KB, shaped like a Deployment's pod."""
    ns, app, template_hash = owner_of(i)
    suffix = "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
    name = f"{app}-{template_hash}-{suffix}"
    uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    # One ReplicaSet per namespace and template (write_state stores them: owners must exist).
    rs_uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{ns}/{app}-{template_hash}"))
    node = f"ip-10-0-{i % 64}-{i % 200}.eu-west-1.compute.internal"
    pod_ip = f"10.{100 + (i >> 16) % 100}.{(i >> 8) & 255}.{i & 255}"
    host_ip = f"10.0.{i % 64}.{i % 200}"
    created = f"2026-11-{1 + i % 20:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}Z"
    started = f"2026-11-{1 + i % 20:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7 + 9) % 60:02d}Z"
    version = f"1.{i % 9}.{i % 31}"
    image = f"registry.example.com/{ns}/{app}:{version}"
    token_vol = f"kube-api-access-{suffix}"
    labels = {
        "app": app,
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/instance": f"{app}-prod",
        "app.kubernetes.io/version": version,
        "app.kubernetes.io/part-of": f"platform-{i % 12}",
        "pod-template-hash": template_hash,
        "tier": ("frontend", "backend", "worker")[i % 3],
    }
    annotations = {
        "kubectl.kubernetes.io/restartedAt": created,
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
        "checksum/config": hashlib.sha256(f"cfg-{i % 97}".encode()).hexdigest(),
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "true" if i % 4 else "false",
    }
    mounts = [
        {"name": "data", "mountPath": "/var/lib/app"},
        {"name": "cache", "mountPath": "/var/cache/app"},
        {
            "name": token_vol,
            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            "readOnly": True,
        },
    ]
    main = {
        "name": "app",
        "image": image,
        "ports": [
            {"name": "http", "containerPort": 8080, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        ],
        "env": [
            {"name": "APP_ENV", "value": "production"},
            {"name": "APP_SHARD", "value": str(i % 16)},
            {"name": "LOG_LEVEL", "value": ("info", "debug", "warn")[i % 3]},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        ],
        "resources": {
            "limits": {"cpu": "1", "memory": f"{256 + (i % 4) * 128}Mi"},
            "requests": {"cpu": f"{100 + (i % 5) * 50}m", "memory": f"{128 + (i % 4) * 64}Mi"},
        },
        "volumeMounts": mounts,
        "imagePullPolicy": "IfNotPresent",
    }
    sidecar = {
        "name": "proxy",
        "image": f"registry.example.com/mesh/proxy:1.2{i % 3}.0",
        "ports": [
            {"name": "proxy", "containerPort": 15001, "protocol": "TCP"},
            {"name": "admin", "containerPort": 15000, "protocol": "TCP"},
        ],
        "env": [
            {"name": "SERVICE_NAME", "value": app},
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        ],
        "resources": {
            "limits": {"cpu": "500m", "memory": "128Mi"},
            "requests": {"cpu": "50m", "memory": "64Mi"},
        },
        "volumeMounts": mounts[2:],
        "imagePullPolicy": "IfNotPresent",
    }

    def status_of(container: dict[str, Any], restarts: int) -> dict[str, Any]:
        return {
            "name": container["name"],
            "state": {"running": {"startedAt": started}},
            "lastState": {},
            "ready": True,
            "restartCount": restarts,
            "image": container["image"],
            "imageID": f"{container['image'].split(':')[0]}@sha256:"
            + hashlib.sha256(container["image"].encode()).hexdigest(),
            "containerID": "containerd://"
            + hashlib.sha256(f"{uid}{restarts}".encode()).hexdigest(),
            "started": True,
        }

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": f"{app}-{template_hash}-",
            "namespace": ns,
            "uid": uid,
            "resourceVersion": str(rv),
            "creationTimestamp": created,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{template_hash}",
                    "uid": rs_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}},
                {"name": "cache", "persistentVolumeClaim": {"claimName": f"cache-{name}"}},
                {
                    "name": token_vol,
                    "projected": {
                        "sources": [
                            {
                                "serviceAccountToken": {
                                    "expirationSeconds": 3607,
                                    "path": "token",
                                }
                            },
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                        "defaultMode": 420,
                    },
                },
            ],
            "containers": [main, sidecar],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30 + (i % 3) * 15,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": app,
            "serviceAccount": app,
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "priority": (i % 3) * 1000,
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastTransitionTime": started}
                for t in (
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "hostIP": host_ip,
            "podIP": pod_ip,
            "startTime": created,
            "containerStatuses": [status_of(main, i % 3), status_of(sidecar, 0)],
            "qosClass": "Burstable",
        },
    }


def write_state(path: Path, pods: int) -> float:
    """An emulator state file (emulator/persistence.py) with the namespaces and
    ``pods`` pods; returns the mean compact JSON size of a pod."""
    rng = random.Random(20261123)
    rv = 1000
    items: list[bytes] = []
    for n in range(NAMESPACES):
        rv += 1
        ns = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": f"team-{n:02d}",
                "uid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "resourceVersion": str(rv),
                "creationTimestamp": "2026-10-01T00:00:00Z",
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        items.append(b'{"resource":"namespaces","object":' + msgspec.json.encode(ns) + b"}")
    pod_bytes = 0
    owners: dict[tuple[str, str], str] = {}
    for i in range(pods):
        rv += 1
        pod = make_pod(i, rng, rv)
        raw = msgspec.json.encode(pod)
        pod_bytes += len(raw)
        items.append(b'{"resource":"pods","object":' + raw + b"}")
        owner = pod["metadata"]["ownerReferences"][0]
        owners[(pod["metadata"]["namespace"], owner["name"])] = owner["uid"]
    for (ns_name, rs_name), rs_uid in sorted(owners.items()):
        rv += 1
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name,
                "namespace": ns_name,
                "uid": rs_uid,
                "resourceVersion": str(rv),
                "creationTimestamp": "2026-10-01T00:00:00Z",
            },
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": rs_name}}},
        }
        items.append(b'{"resource":"replicasets.apps","object":' + msgspec.json.encode(rs) + b"}")
    head = b'{"version":1,"resourceVersion":' + str(rv).encode() + b',"objects":['
    path.write_bytes(head + b",\n".join(items) + b"]}\n")
    return pod_bytes / max(pods, 1)


# --------------------------------------------------------------------------- the emulator


def start_emulator(
    state: Path, kubeconfig: Path, timeout: float = 120.0
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubetrio.cmd.main",
            "emulator",
            "--port",
            "0",
            "--state",
            str(state),
            "--kubeconfig-out",
            str(kubeconfig),
            "--token",
            TOKEN,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"emulator exited with {proc.returncode} before it was ready")
        try:
            url = server_url(kubeconfig)
            host, port = url.removeprefix("http://").rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=5)
            try:
                conn.request("GET", "/version")
                if conn.getresponse().status == 200:
                    plain_http(kubeconfig)
                    return proc
            finally:
                conn.close()
        except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
            pass
        time.sleep(0.1)
    stop_emulator(proc)
    raise RuntimeError(f"emulator not ready within {timeout:.0f}s")


def stop_emulator(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def server_url(kubeconfig: Path) -> str:
    """The plain-HTTP URL of the emulator's port (its kubeconfig names the TLS one)."""
    doc = yaml.safe_load(kubeconfig.read_text())
    return str(doc["clusters"][0]["cluster"]["server"]).replace("https://", "http://", 1)


def plain_http(kubeconfig: Path) -> None:
    """Point the kubeconfig at plain HTTP (with the admin token), as the benchmark measured
    before the emulator spoke TLS: the clients compared here pay no TLS cost."""
    doc = yaml.safe_load(kubeconfig.read_text())
    cluster = doc["clusters"][0]["cluster"]
    cluster["server"] = server_url(kubeconfig)
    cluster.pop("certificate-authority-data", None)
    kubeconfig.write_text(yaml.safe_dump(doc))


def paged_list(url: str) -> tuple[int, int]:
    """Every pod once, in the variants' own pages, over one connection: the same warm-up for
    every fresh emulator (its per-object JSON is then built), and a check of the data set.
    Returns (pods, bytes)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    count = size = 0
    query = f"limit={PAGE}&resourceVersion=0"
    try:
        while True:
            conn.request("GET", f"/api/v1/pods?{query}", headers=AUTH)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"LIST pods: HTTP {resp.status}: {body[:200]!r}")
            page = json.loads(body)
            count += len(page["items"])
            size += len(body)
            token = page["metadata"].get("continue")
            if not token:
                return count, size
            query = f"limit={PAGE}&continue={token}"
    finally:
        conn.close()


# --------------------------------------------------------------------------- both servers

SERVER_VARIANTS = ("kt", "kt_stream", "dict")
# controller-runtime's caches (``crbench informer --cache``), on the real server only.
CR_CACHES = ("full", "strip", "metadata")
WRITERS = 16


def load_via_api(kubeconfig: Path, pods: int) -> float:
    """The data set written to a server through its API, as a cluster's controllers would have
    written it: the namespaces (already there is fine), each pod's ReplicaSet (so the pods'
    owner references name live owners, whatever garbage collector runs), then a POST per pod
    and its status (which a create drops) by a merge patch of ``pods/status``. Seconds taken."""
    import trio

    from kubetrio.api.core import Namespace, Pod
    from kubetrio.runtime.client.errors import ApiError
    from kubetrio.runtime.client.typed import Client

    async def main() -> None:
        client = Client.from_kubeconfig(str(kubeconfig), qps=0)
        for n in range(NAMESPACES):
            try:
                await client.create(Namespace, {"metadata": {"name": f"team-{n:02d}"}})
            except ApiError as error:
                if error.status != 409:
                    raise
        owners: dict[tuple[str, str], str] = {}
        for i in range(pods):
            ns, app, template_hash = owner_of(i)
            name = f"{app}-{template_hash}"
            if (ns, name) not in owners:
                # The pod's ServiceAccount must exist where ServiceAccount admission runs.
                account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": app}}
                try:
                    await client.request(
                        "POST",
                        f"/api/v1/namespaces/{ns}/serviceaccounts",
                        body=json.dumps(account).encode(),
                    )
                except ApiError as error:
                    if error.status != 409:
                        raise
                labels = {"app": app, "pod-template-hash": template_hash}
                rs = {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {
                        "replicas": 0,
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {"containers": [{"name": "app", "image": app}]},
                        },
                    },
                }
                collection = f"/apis/apps/v1/namespaces/{ns}/replicasets"
                try:
                    answer = await client.request("POST", collection, body=json.dumps(rs).encode())
                except ApiError as error:
                    if error.status != 409:
                        raise
                    # A shared server keeps them from an earlier run: its owner is that one.
                    answer = await client.request("GET", f"{collection}/{name}")
                owners[(ns, name)] = json.loads(answer)["metadata"]["uid"]
        rng = random.Random(20261123)
        todo = iter(range(pods))

        async def writer() -> None:
            for i in todo:
                pod = make_pod(i, rng, 0)
                status = pod.pop("status")
                md = pod["metadata"]
                for field in ("uid", "resourceVersion", "creationTimestamp"):
                    del md[field]
                # Priority admission computes it (from a PriorityClass, else 0) and refuses a
                # client's own value, as a kubelet's pods never carry one in the create.
                pod["spec"].pop("priority", None)
                owner = md["ownerReferences"][0]
                owner["uid"] = owners[(md["namespace"], owner["name"])]
                await client.create(Pod, pod)
                await client.patch(
                    Pod,
                    md["name"],
                    {"status": status},
                    namespace=md["namespace"],
                    subresource="status",
                )

        async with trio.open_nursery() as nursery:
            for _ in range(WRITERS):
                nursery.start_soon(writer)

    started = time.perf_counter()
    trio.run(main)
    return time.perf_counter() - started


def clear_pods(kubeconfig: Path) -> None:
    """Delete the data set's pods at once (grace 0: no kubelet would end them), so a shared
    server holds none of them for the next benchmark."""
    import trio

    from kubetrio.runtime.client.typed import Client

    async def main() -> None:
        client = Client.from_kubeconfig(str(kubeconfig), qps=0)
        body = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        for n in range(NAMESPACES):
            path = f"/api/v1/namespaces/team-{n:02d}/pods"
            await client.request("DELETE", path, body=body.encode())

    trio.run(main)


def first_list(kubeconfig: Path) -> tuple[int, int, int]:
    """The informer's first request, ``LIST ?limit=500&resourceVersion=0``, and the pages that
    follow: (pods, bytes, responses). A real server answers it from its watch cache, unpaged;
    the emulator in pages of 500."""
    import ssl
    import urllib.parse
    import urllib.request

    doc = yaml.safe_load(kubeconfig.read_text())
    cluster = doc["clusters"][0]["cluster"]
    ca = cluster.get("certificate-authority-data")
    context = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None
    auth = {"Authorization": f"Bearer {doc['users'][0]['user']['token']}"}
    query = {"limit": str(PAGE), "resourceVersion": "0"}
    count = size = responses = 0
    while True:
        url = f"{cluster['server']}/api/v1/pods?{urllib.parse.urlencode(query)}"
        request = urllib.request.Request(url, headers=auth)
        with urllib.request.urlopen(request, timeout=120, context=context) as response:
            body = response.read()
        page = json.loads(body)
        count, size, responses = count + len(page["items"]), size + len(body), responses + 1
        token = page["metadata"].get("continue")
        if not token:
            return count, size, responses
        query = {"limit": str(PAGE), "continue": token}


class ServerProcess:
    """The API server's own process, found by the port its kubeconfig names (the one process
    listening there), read from ``/proc``: CPU (user+system) and RSS across one sync, the RSS
    sampled every few milliseconds in a thread for its peak (its ``VmHWM`` is not ours to reset).
    What a sync costs the server: a streaming list against a LIST answered from the watch cache."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, kubeconfig: Path) -> None:
        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        self.pid = self._listener(int(url.rsplit(":", 1)[1].rstrip("/")))

    @staticmethod
    def _listener(port: int) -> int | None:
        inodes = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add(f"socket:[{fields[9]}]")
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                for fd in (proc / "fd").iterdir():
                    if os.readlink(fd) in inodes:
                        return int(proc.name)
            except OSError:
                continue
        print(f"no process of ours listens on port {port}: the server's cost is not measured")
        return None

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.TICK  # utime, stime

    def rss(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * KIB
        raise RuntimeError(f"no VmRSS for process {self.pid}")

    def around(self, run: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        """``run(*args)``'s result with the server's CPU seconds and RSS (before, peak, after)."""
        if self.pid is None:
            return run(*args)
        stop = threading.Event()
        peak = [self.rss()]

        def sample() -> None:
            while not stop.wait(0.005):
                peak[0] = max(peak[0], self.rss())

        before, cpu = peak[0], self.cpu_s()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            result = run(*args)
        finally:
            stop.set()
            sampler.join()
        result["server_cpu_s"] = self.cpu_s() - cpu
        result["server_rss_before"], result["server_rss_peak"] = before, peak[0]
        result["server_rss_after"] = self.rss()
        return result


def run_line(variant: str, r: dict[str, Any], n: int) -> str:
    """One run's figures, as printed per run (the medians hide a run that misses)."""
    before = r["rss_before"]
    line = (
        f"{variant:>9}: sync {r['seconds']:6.2f} s, CPU {r['sync_cpu_s'] / n * 1e6:6.1f} µs/pod, "
        f"steady {(r['rss_after'] - before) / n / KIB:6.2f} KiB/pod, "
        f"peak/steady {r['rss_peak'] / r['rss_after']:.3f}"
    )
    if "server_cpu_s" in r:
        line += (
            f"; server CPU {r['server_cpu_s']:5.2f} s, RSS peak +"
            f"{(r['server_rss_peak'] - r['server_rss_before']) / 2**20:5.1f} MiB"
        )
    return line


def server_child(variant: str, kubeconfig: Path, n: int) -> dict[str, Any]:
    """One variant in its own process against a server that stays up (RSS, no tracemalloc)."""
    command = [sys.executable, __file__, "--child", variant, "--kubeconfig", str(kubeconfig)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["pods"] != n:
        raise RuntimeError(f"{variant} cached {result['pods']} pods, expected {n}")
    return result


def on_server(
    server: str, kubeconfig: Path, n: int, repeat: int, crbench: Path | None = None
) -> dict[str, Any]:
    """Load the data set through the server's API, then the ``SERVER_VARIANTS`` (and with
    ``crbench``, controller-runtime's ``CR_CACHES``) against it, each in its own process,
    rounds interleaved."""
    loaded = load_via_api(kubeconfig, n)
    count, size, responses = first_list(kubeconfig)  # the warm-up (a real server's watch cache)
    if count != n:
        raise RuntimeError(f"the {server} serves {count} pods, expected {n}")
    print(
        f"{server}: {n} pods written through the API in {loaded:.1f}s; LIST limit={PAGE}&"
        f"resourceVersion=0 answered in {responses} response(s), {size / n:.0f} B per pod",
        flush=True,
    )
    variants = SERVER_VARIANTS + tuple(f"cr_{c}" for c in CR_CACHES if crbench is not None)
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    process = ServerProcess(kubeconfig)
    for round_ in range(repeat):
        order = variants if round_ % 2 == 0 else variants[::-1]
        for variant in order:
            if crbench is not None and variant.startswith("cr_"):
                cache = variant.removeprefix("cr_")
                run = process.around(crbaseline.informer, crbench, str(kubeconfig), cache, n)
            else:
                run = process.around(server_child, variant, kubeconfig, n)
            runs[variant].append(run)
            print(f"  {server} round {round_ + 1} {run_line(variant, run, n)}", flush=True)
    return {"runs": runs, "responses": responses, "json_bytes_per_pod": size / n}


def both_servers(n: int, repeat: int) -> dict[str, dict[str, Any]]:
    """``on_server`` on a fresh emulator, then on a real control plane (if there is one)."""
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="kubetrio-bench-informer-api-") as tmp:
        state, kubeconfig = Path(tmp) / "state.json", Path(tmp) / "kubeconfig"
        write_state(state, 0)
        emulator = start_emulator(state, kubeconfig)
        try:
            out["emulator"] = on_server("emulator", kubeconfig, n, repeat)
        finally:
            stop_emulator(emulator)
    crbench = crbaseline.binary()
    with real_server() as real:
        if real is not None:
            try:
                out["real"] = on_server("real server", real, n, repeat, crbench)
            finally:
                clear_pods(real)
    return out


# --------------------------------------------------------------------------- the variants
# Each returns (seconds, objects cached); ``Probe`` records memory around the sync.


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


class Probe:
    """Memory around one sync: RSS and its high-water mark, or tracemalloc (never both)."""

    def __init__(self, traced: bool) -> None:
        self.traced = traced
        self.figures: dict[str, float] = {}
        self._cpu = 0.0

    def start(self) -> None:
        gc.collect()
        if self.traced:
            tracemalloc.start()
            return
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        self.figures["rss_before"] = _status_kib("VmRSS") * KIB
        self._cpu = time.process_time()

    def end(self) -> None:
        """Call with the cache alive."""
        if self.traced:
            gc.collect()
            current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            self.figures.update(traced=current, traced_peak=peak)
            return
        self.figures["sync_cpu_s"] = time.process_time() - self._cpu
        peak = _status_kib("VmHWM") * KIB
        gc.collect()
        self.figures.update(rss_after=_status_kib("VmRSS") * KIB, rss_peak=peak)
        # What glibc holds free but has not handed back (holes between live objects).
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        self.figures["rss_trimmed"] = _status_kib("VmRSS") * KIB


def run_kt(
    kubeconfig: Path, probe: Probe, qps: float | None, streaming: bool = False
) -> tuple[float, int]:
    import trio

    from kubetrio.api.core import Pod
    from kubetrio.runtime.cache.informer import Informer
    from kubetrio.runtime.client.typed import Client

    out: list[tuple[float, int]] = []

    async def main() -> None:
        options = {} if qps is None else {"qps": qps}
        client = Client.from_kubeconfig(str(kubeconfig), **options)
        probe.start()
        informer = Informer(client, Pod, streaming_lists=streaming)
        async with trio.open_nursery() as nursery:
            started = time.perf_counter()
            nursery.start_soon(informer.run)
            await informer.wait_for_sync()
            elapsed = time.perf_counter() - started
            probe.end()
            out.append((elapsed, len(informer.store)))
            nursery.cancel_scope.cancel()

    trio.run(main)
    return out[0]


def run_pykube(kubeconfig: Path, probe: Probe, wrap: bool) -> tuple[float, int]:
    """pykube-ng's paged LIST; each item kept as its dict, or in a ``pykube.Pod`` sharing it."""
    import pykube

    class CachedPod(pykube.Pod):  # type: ignore[misc]
        def set_obj(self, obj: dict[str, Any]) -> None:
            self.obj = self._original_obj = obj  # one dict, no deepcopy

    api = pykube.HTTPClient(pykube.KubeConfig.from_file(str(kubeconfig)))
    probe.start()
    cache: dict[str, Any] = {}
    started = time.perf_counter()
    params = {"limit": str(PAGE), "resourceVersion": "0"}
    while True:
        response = api.get(url="pods", version="v1", params=params)
        response.raise_for_status()
        page = response.json()
        for item in page["items"]:
            md = item["metadata"]
            cache[f"{md['namespace']}/{md['name']}"] = CachedPod(api, item) if wrap else item
        token = page["metadata"].get("continue")
        del response, page
        if not token:
            break
        params = {"limit": str(PAGE), "continue": token}
    elapsed = time.perf_counter() - started
    probe.end()
    return elapsed, len(cache)


def run_k8s_client(kubeconfig: Path, probe: Probe) -> tuple[float, int]:
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    core = client.CoreV1Api(client.ApiClient(configuration))
    probe.start()
    cache: dict[str, Any] = {}
    started = time.perf_counter()
    kwargs: dict[str, Any] = {"limit": PAGE, "resource_version": "0"}
    while True:
        # ApiClient.deserialize(response_text, "V1PodList", content_type) inside.
        page = core.list_pod_for_all_namespaces(**kwargs)
        for pod in page.items:
            cache[f"{pod.metadata.namespace}/{pod.metadata.name}"] = pod
        token = page.metadata.var_continue
        del page
        if not token:
            break
        kwargs = {"limit": PAGE, "_continue": token}
    elapsed = time.perf_counter() - started
    probe.end()
    return elapsed, len(cache)


def run_kt_breakdown(kubeconfig: Path) -> dict[str, float]:
    """The informer's work taken apart, each step alone: the paged LIST through the client's
    own transport (emulator + HTTP + reading the body), msgspec decoding of
    those bodies into ``ObjectList[Pod]``, and filling a ``Store``."""
    import trio

    from kubetrio.api.core import Pod
    from kubetrio.api.meta import ObjectList
    from kubetrio.runtime.cache.store import Store, key_of
    from kubetrio.runtime.client.typed import Client

    client = Client.from_kubeconfig(str(kubeconfig), qps=0)

    async def fetch() -> list[bytes]:
        bodies: list[bytes] = []
        params = {"limit": str(PAGE), "resourceVersion": "0"}
        while True:
            body = await client.request("GET", "/api/v1/pods", params=params, read_timeout=60)
            bodies.append(body)
            head = body[:4096].split(b',"items":', 1)[0] + b"}"
            token = json.loads(head)["metadata"].get("continue", "")
            if not token:
                return bodies
            params = {"limit": str(PAGE), "continue": token}

    cpu = time.process_time()
    started = time.perf_counter()
    bodies = trio.run(fetch)
    http_s = time.perf_counter() - started
    http_cpu_s = time.process_time() - cpu
    decoder = client.decoder(ObjectList[Pod])
    started = time.perf_counter()
    items: list[Any] = []
    for body in bodies:
        items.extend(decoder.decode(body).items)
    decode_s = time.perf_counter() - started
    del bodies
    store: Store[Any] = Store()
    started = time.perf_counter()
    for obj in items:
        store.put(key_of(obj), obj)
    store_s = time.perf_counter() - started
    return {
        "http_s": http_s,
        "http_client_cpu_s": http_cpu_s,
        "decode_s": decode_s,
        "store_s": store_s,
        "pods": len(store),
    }


def child_main(args: argparse.Namespace) -> None:
    kubeconfig = Path(args.kubeconfig)
    if args.child == "kt_breakdown":
        print(json.dumps(run_kt_breakdown(kubeconfig)), flush=True)
        return
    probe = Probe(args.memory)
    if args.child == "kt":
        seconds, count = run_kt(kubeconfig, probe, None)
    elif args.child == "kt_unthrottled":
        seconds, count = run_kt(kubeconfig, probe, 0.0)
    elif args.child == "kt_stream":
        seconds, count = run_kt(kubeconfig, probe, None, streaming=True)
    elif args.child in ("dict", "pykube"):
        seconds, count = run_pykube(kubeconfig, probe, args.child == "pykube")
    elif args.child == "k8s_client":
        seconds, count = run_k8s_client(kubeconfig, probe)
    else:
        raise SystemExit(f"unknown variant {args.child!r}")
    print(json.dumps({"seconds": seconds, "pods": count, **probe.figures}), flush=True)


def in_child(variant: str, state: Path, n: int, memory: bool = False) -> dict[str, Any]:
    """One variant in its own process, against its own freshly started and warmed emulator."""
    with tempfile.TemporaryDirectory(prefix="kubetrio-bench-informer-emu-") as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        emulator = start_emulator(state, kubeconfig)
        try:
            count, _ = paged_list(server_url(kubeconfig))
            if count != n:
                raise RuntimeError(f"the emulator serves {count} pods, expected {n}")
            command = [
                sys.executable,
                __file__,
                "--child",
                variant,
                "--kubeconfig",
                str(kubeconfig),
            ]
            if memory:
                command.append("--memory")
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        finally:
            stop_emulator(emulator)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if variant != "kt_breakdown" and result["pods"] != n:
        raise RuntimeError(f"{variant} cached {result['pods']} pods, expected {n}")
    return result


# --------------------------------------------------------------------------- the driver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=None, help="pods to sync (default 50000)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="CI: 2000 pods (unless --pods), one round, no k8s_client and no breakdown",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="interleaved timing rounds, medians reported (default: 3 from 20000 pods, else 1)",
    )
    parser.add_argument(
        "--server-pods",
        type=int,
        default=None,
        help="pods written through the API of both servers (default: --pods; --quick: 1000)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--memory", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return

    n = args.pods or (2000 if args.quick else 50_000)
    if not os.environ.get(SHARED):
        available()  # under CI, fail before the work
    crbaseline.binary()  # likewise
    variants = [v for v in VARIANTS if not (args.quick and v == "k8s_client")]
    memory_variants = [v for v in MEMORY_VARIANTS if v in variants]
    if args.repeat is None:
        args.repeat = 3 if n >= 20_000 else 1
    with tempfile.TemporaryDirectory(prefix="kubetrio-bench-informer-") as tmp:
        state = Path(tmp) / "state.json"
        t0 = time.perf_counter()
        pod_size = write_state(state, n)
        print(f"data: {n} pods, {pod_size:.0f} B of JSON per pod ({time.perf_counter() - t0:.1f}s)")
        runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        for round_ in range(args.repeat):
            order = list(variants) if round_ % 2 == 0 else list(reversed(variants))
            for variant in order:
                runs[variant].append(in_child(variant, state, n))
            print(
                f"round {round_ + 1}: "
                + ", ".join(f"{v} {runs[v][-1]['seconds']:.3f}s" for v in variants),
                flush=True,
            )
        traced = {v: in_child(v, state, n, memory=True) for v in memory_variants}
        breakdown = None if args.quick else in_child("kt_breakdown", state, n)
    server_n = args.server_pods or (1000 if args.quick else n)
    started = time.perf_counter()
    servers = both_servers(server_n, args.repeat)
    both_s = time.perf_counter() - started

    def median(variant: str, figure: str) -> float:
        return statistics.median(r[figure] for r in runs[variant])

    sync = {v: median(v, "seconds") for v in variants}
    rss = {v: (median(v, "rss_after") - median(v, "rss_before")) / n for v in variants}
    mem = {v: traced[v]["traced"] / n for v in memory_variants}
    for v in memory_variants:
        peak, after = median(v, "rss_peak"), median(v, "rss_after")
        t = traced[v]
        print(
            f"memory {v}: RSS growth {rss[v] / KIB:.2f} KiB/pod, tracemalloc "
            f"{mem[v] / KIB:.2f} KiB/pod; sync peak/steady: RSS {peak / after:.3f} "
            f"({peak / 2**20:.0f}/{after / 2**20:.0f} MiB), tracemalloc "
            f"{t['traced_peak'] / t['traced']:.3f}",
            flush=True,
        )
    kt_peak_ratio = median("kt", "rss_peak") / median("kt", "rss_after")
    result = {
        "pods": n,
        "json_bytes_per_pod": round(pod_size),
        "repeat": args.repeat,
        **{f"{v}_sync_s": round(sync[v], 3) for v in variants},
        **{f"{v}_rss_bytes_per_pod": round(rss[v]) for v in memory_variants},
        **{f"{v}_traced_bytes_per_pod": round(mem[v]) for v in memory_variants},
        "kt_peak_over_steady_rss": round(kt_peak_ratio, 3),
        "kt_over_dict_time": round(sync["kt"] / sync["dict"], 3),
        "kt_over_pykube_time": round(sync["kt"] / sync["pykube"], 3),
        "kt_over_dict_rss": round(rss["kt"] / rss["dict"], 3),
        "kt_over_pykube_rss": round(rss["kt"] / rss["pykube"], 3),
    }
    if breakdown is not None:
        print(
            f"kt breakdown (unthrottled, sequential, one thread): LIST over HTTP "
            f"{breakdown['http_s']:.3f}s (client CPU {breakdown['http_client_cpu_s']:.3f}s, "
            f"the rest is the emulator), decode {breakdown['decode_s']:.3f}s, "
            f"store {breakdown['store_s']:.3f}s; informer (qps=0) {sync['kt_unthrottled']:.3f}s, "
            f"default client {sync['kt']:.3f}s"
        )
    official = (
        f", kt/k8s_client time {sync['kt'] / sync['k8s_client']:.3f} and memory by RSS "
        f"{rss['kt'] / rss['k8s_client']:.3f}"
        if "k8s_client" in variants
        else ""
    )
    print(
        f"same requests (limit={PAGE} pages), fresh emulator each: "
        f"kt/dict time {sync['kt'] / sync['dict']:.3f} (qps=0: "
        f"{sync['kt_unthrottled'] / sync['dict']:.3f}), kt/pykube time "
        f"{sync['kt'] / sync['pykube']:.3f}; memory by RSS kt/dict "
        f"{rss['kt'] / rss['dict']:.3f}, kt/pykube {rss['kt'] / rss['pykube']:.3f}{official}; "
        f"kt {rss['kt'] / KIB:.2f} KiB/pod by RSS (target <= 2), {mem['kt'] / KIB:.2f} by "
        f"tracemalloc; kt sync peak/steady RSS {kt_peak_ratio:.3f} (target <= 1.25)"
    )
    side = {server: server_figures(found["runs"], server_n) for server, found in servers.items()}
    for server, found in servers.items():
        result[f"{server}_list_responses"] = found["responses"]
        result[f"{server}_json_bytes_per_pod"] = round(found["json_bytes_per_pod"])
    print(
        f"both servers, the same {server_n} pods written through the API, the same LIST "
        f"(limit={PAGE}&resourceVersion=0), {both_s:.0f} s:"
    )
    result["server_pods"] = server_n
    print(f"  {'':34}" + "".join(f"{server:>10}" for server in side))
    for figure, label in SERVER_FIGURES.items():
        values = [f"{side[server][figure]:10.3f}" for server in side]
        print(f"  {label:<34}{''.join(values)}")
        for server, figures in side.items():
            result[f"{server}_{figure}"] = round(figures[figure], 3)
    if "real" in servers and "cr_full" in servers["real"]["runs"]:
        against_controller_runtime(servers["real"]["runs"], server_n, result)
    print("RESULT " + json.dumps(result))
    if server_n >= TARGET_PODS:
        missed = [
            line
            for server, found in servers.items()
            for line in missed_targets(server, found["runs"]["kt_stream"], server_n)
        ]
        if missed:
            raise SystemExit(
                f"target missed (<= {TARGET_KIB_PER_POD} KiB per pod, peak <= {TARGET_PEAK} "
                f"times steady, every run from {TARGET_PODS} pods):\n" + "\n".join(missed)
            )


CR_FIGURES = {
    "sync_s": "sync (s)",
    "cpu_us_per_pod": "sync CPU µs per pod",
    "kib_per_pod": "RSS KiB per pod after sync",
    "peak_kib_per_pod": "sync peak KiB per pod",
}


def against_controller_runtime(
    runs: dict[str, list[dict[str, Any]]], n: int, result: dict[str, Any]
) -> None:
    """kubetrio's informer (``kt_stream``, its default; ``kt``, a paged LIST) beside
    controller-runtime's caches on the real server: medians per variant, and kt_stream / cr
    per cache into ``result`` (``real_{variant}_{figure}``, ``real_kt_over_cr_{cache}_…``)."""

    def median(variant: str, figure: str) -> float:
        return statistics.median(float(r[figure]) for r in runs[variant])

    table: dict[str, dict[str, float]] = {}
    for variant in ("kt_stream", "kt", *(f"cr_{c}" for c in CR_CACHES)):
        before = median(variant, "rss_before")
        table[variant] = {
            "sync_s": median(variant, "seconds"),
            "cpu_us_per_pod": median(variant, "sync_cpu_s") / n * 1e6,
            "kib_per_pod": (median(variant, "rss_after") - before) / n / KIB,
            "peak_kib_per_pod": (median(variant, "rss_peak") - before) / n / KIB,
        }
        for figure, value in table[variant].items():
            result[f"real_{variant}_{figure}"] = round(value, 4)
    print(f"kubetrio's informer and controller-runtime's caches, real server, {n} pods:")
    print(f"  {'':28}" + "".join(f"{v:>12}" for v in table))
    for figure, label in CR_FIGURES.items():
        print(f"  {label:<28}" + "".join(f"{table[v][figure]:12.3f}" for v in table))
    for cache in CR_CACHES:
        ratios = {f: table["kt_stream"][f] / table[f"cr_{cache}"][f] for f in CR_FIGURES}
        for figure, ratio in ratios.items():
            result[f"real_kt_over_cr_{cache}_{figure}"] = round(ratio, 3)
        print(
            f"  kt_stream / cr {cache}: "
            + ", ".join(f"{CR_FIGURES[f]} {r:.2f}" for f, r in ratios.items())
        )


SERVER_FIGURES = {
    "kt_stream_sync_s": "kt_stream sync (s)",
    "kt_stream_kib_per_pod": "kt_stream KiB per pod by RSS",
    "kt_stream_peak_above_steady_mib": "kt_stream peak above steady (MiB)",
    "kt_stream_over_kt_peak": "sync peak kt_stream / kt (growth)",
    "kt_sync_s": "kt sync (s)",
    "dict_sync_s": "dict sync (s)",
    "kt_over_dict_time": "sync time kt / dict",
    "kt_kib_per_pod": "kt KiB per pod by RSS",
    "kt_over_dict_rss": "memory by RSS kt / dict",
    "kt_peak_over_steady_rss": "kt sync peak / steady RSS",
    "kt_peak_above_steady_mib": "kt sync peak above steady (MiB)",
    "kt_trimmed_kib_per_pod": "kt KiB per pod after malloc_trim",
    "kt_stream_server_cpu_s": "server CPU per kt_stream sync (s)",
    "kt_server_cpu_s": "server CPU per kt sync (s)",
    "kt_stream_server_peak_mib": "server RSS peak, kt_stream (+MiB)",
    "kt_server_peak_mib": "server RSS peak, kt (+MiB)",
}


def server_figures(runs: dict[str, list[dict[str, Any]]], n: int) -> dict[str, float]:
    """The figures compared across servers, from the ``kt`` and ``dict`` runs on one."""

    def median(variant: str, figure: str) -> float:
        return statistics.median(r[figure] for r in runs[variant])

    measured = "server_cpu_s" in runs["kt"][0]  # not for a server on another machine

    def server_cost(variant: str, figure: Callable[[dict[str, Any]], float]) -> float:
        return statistics.median(map(figure, runs[variant])) if measured else math.nan

    def server_peak(r: dict[str, Any]) -> float:
        return (r["server_rss_peak"] - r["server_rss_before"]) / 2**20

    sync = {v: median(v, "seconds") for v in SERVER_VARIANTS}
    rss = {v: median(v, "rss_after") - median(v, "rss_before") for v in SERVER_VARIANTS}
    peak, steady = median("kt", "rss_peak"), median("kt", "rss_after")
    stream_peak, stream_steady = median("kt_stream", "rss_peak"), median("kt_stream", "rss_after")
    return {
        "kt_stream_sync_s": sync["kt_stream"],
        "kt_stream_kib_per_pod": rss["kt_stream"] / n / KIB,
        "kt_stream_peak_above_steady_mib": (stream_peak - stream_steady) / 2**20,
        "kt_stream_over_kt_peak": (stream_peak - median("kt_stream", "rss_before"))
        / (peak - median("kt", "rss_before")),
        "kt_sync_s": sync["kt"],
        "dict_sync_s": sync["dict"],
        "kt_over_dict_time": sync["kt"] / sync["dict"],
        "kt_kib_per_pod": rss["kt"] / n / KIB,
        "kt_over_dict_rss": rss["kt"] / rss["dict"],
        "kt_peak_over_steady_rss": peak / steady,
        "kt_peak_above_steady_mib": (peak - steady) / 2**20,
        "kt_trimmed_kib_per_pod": (median("kt", "rss_trimmed") - median("kt", "rss_before"))
        / n
        / KIB,
        "kt_stream_server_cpu_s": server_cost("kt_stream", lambda r: r["server_cpu_s"]),
        "kt_server_cpu_s": server_cost("kt", lambda r: r["server_cpu_s"]),
        "kt_stream_server_peak_mib": server_cost("kt_stream", server_peak),
        "kt_server_peak_mib": server_cost("kt", server_peak),
    }


def missed_targets(server: str, runs: list[dict[str, Any]], n: int) -> list[str]:
    """The informer's runs (``kt_stream``, its default) that miss a target, each as printed."""
    return [
        f"{server} run {i + 1}: {run_line('kt_stream', r, n)}"
        for i, r in enumerate(runs)
        if (r["rss_after"] - r["rss_before"]) / n > TARGET_KIB_PER_POD * KIB
        or r["rss_peak"] > TARGET_PEAK * r["rss_after"]
    ]


if __name__ == "__main__":
    main()

"""The embedded cluster: the emulator as a child process, so the manager talks HTTP to it
exactly as to a real cluster and holds no simulated state of its own.

It runs the simulated cluster (``kubetrio emulator --simulate``: kubelets, scheduler, volumes,
workload controllers), the simulated cloud the ``sim`` machine driver calls and the storage
service, each of those two on an address of its own that the child announces, and has the
machine CRDs the package ships (``kubetrio crds``) installed before it is handed out, so the
machine controller's informers can start at once.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import msgspec
import trio
import yaml

from kubetrio.cmd.assets import crd_documents
from kubetrio.cmd.config import ManagerConfig
from kubetrio.runtime.client.crds import CrdsNotServed, create_crds
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client

STARTUP_TIMEOUT = 30.0


class EmbeddedClusterError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class EmbeddedCluster:
    url: str
    kubeconfig: Path
    workdir: Path
    cloud_url: str | None = None  # the simulated cloud served beside it
    storage_url: str | None = None  # the simulated storage service's backend URL, if served
    ec2_url: str | None = None  # the EC2 double the emulator serves beside it, if asked for


def with_services(config: ManagerConfig, cluster: EmbeddedCluster) -> ManagerConfig:
    """``config`` pointed at the embedded cluster's simulated cloud and storage service, where
    it names none of its own (the demo then shows the storage nodes too)."""
    machine, storage = config.machine, config.storage
    if machine.sim_cloud_url is None and cluster.cloud_url is not None:
        machine = msgspec.structs.replace(machine, sim_cloud_url=cluster.cloud_url)
    if storage.backend_url is None and cluster.storage_url is not None:
        storage = msgspec.structs.replace(storage, backend_url=cluster.storage_url)
    return msgspec.structs.replace(config, machine=machine, storage=storage)


@asynccontextmanager
async def embedded_cluster(
    workdir: Path, *, simulate: bool = True, ec2_cluster: str | None = None
) -> AsyncIterator[EmbeddedCluster]:
    """Start ``kubetrio emulator`` with its state in ``workdir`` and the machine CRDs
    installed; stop it on exit. With ``ec2_cluster``, it also serves an EC2 double whose
    instances tagged for that cluster become its Nodes."""
    try:
        await trio.Path(workdir).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise EmbeddedClusterError(
            f"--embedded-dir {workdir}: cannot create it ({error.strerror or error}); "
            "choose a directory this user can write"
        ) from None
    kubeconfig = workdir / "kubeconfig"
    command = [
        sys.executable,
        "-m",
        "kubetrio.cmd.main",
        "emulator",
        "--exit-with-parent",
        "--kubeconfig-out",
        str(kubeconfig),
        "--state",
        str(workdir / "state.json"),
        # The storage service's StorageOS timeline (offline after 20-30 s, lock 30 s more) at
        # a tenth, so a deleted machine's storage node is seen going within the demo's minute.
        *(["--simulate", "--storage-timeline-scale", "0.1"] if simulate else []),
        # The instances' kubelets report every second: a stopped one is seen at once.
        *(["--ec2-cluster", ec2_cluster, "--ec2-heartbeat", "1"] if ec2_cluster else []),
    ]
    async with _child(command, workdir / "emulator.log") as announced:
        url = announced["url"]
        client = Client.from_url(url, token=admin_token(kubeconfig))
        await install_crds(client)
        yield EmbeddedCluster(
            url,
            kubeconfig,
            workdir,
            cloud_url=announced.get("cloud-endpoint"),
            storage_url=announced.get("storage-backend"),
            ec2_url=announced.get("ec2-endpoint"),
        )


@asynccontextmanager
async def _child(command: list[str], log_path: Path) -> AsyncIterator[dict[str, str]]:
    """``command`` (a kubetrio subcommand that announces ``key=value`` words) as a child
    process until the block ends; what it announced."""
    log_file = log_path.open("wb")
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            functools.partial(
                trio.run_process,
                command,
                # Our end of its stdin closes when this process dies in any way, SIGKILL
                # included: the child then stops (--exit-with-parent), never orphaned.
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                check=False,
                # Its own session: a Ctrl-C meant for the manager must not stop the cluster
                # under it before the manager has shut down gracefully.
                start_new_session=True,
            )
        )
        try:
            yield await _read_announcement(process, log_path.name)
        finally:
            process.terminate()
            with trio.move_on_after(5) as scope:
                scope.shield = True
                await process.wait()
            if process.returncode is None:
                process.kill()
            log_file.close()


# What a real kube-controller-manager runs for the demo: what every cluster's has (garbage
# collection, namespaces, ServiceAccounts and their tokens) and the workload and disruption
# controllers. The simulation runs the rest (kubelets, scheduler, volumes, node lifecycle).
REAL_CONTROLLERS = (
    "garbagecollector",
    "namespace",
    "serviceaccount",
    "serviceaccount-token",
    "replicaset",
    "deployment",
    "statefulset",
    "daemonset",
    "disruption",
)
SIMULATED_BESIDE_REAL = "*,-replicasets,-deployments,-statefulsets,-daemonsets,-disruption"


@asynccontextmanager
async def real_control_plane_cluster(workdir: Path) -> AsyncIterator[EmbeddedCluster]:
    """A real etcd, kube-apiserver and kube-controller-manager (from ``KUBEBUILDER_ASSETS``)
    in ``workdir``, ``kubetrio simulate`` beside them as a child process, and the machine CRDs
    installed; all stopped on exit."""
    from kubetrio.testing.controlplane import ControlPlane, ControlPlaneUnavailable

    (workdir / "control-plane").mkdir(parents=True, exist_ok=True)
    plane = ControlPlane(controllers=REAL_CONTROLLERS, workdir=workdir / "control-plane")
    try:
        await trio.to_thread.run_sync(plane.start)
    except ControlPlaneUnavailable as error:
        raise EmbeddedClusterError(f"--control-plane real: {error}") from None
    try:
        command = [
            sys.executable,
            "-m",
            "kubetrio.cmd.main",
            "simulate",
            "--kubeconfig",
            str(plane.kubeconfig_path),
            "--storage",
            "--storage-timeline-scale",
            "0.1",
            "--controllers",
            SIMULATED_BESIDE_REAL,
            "--exit-with-parent",
        ]
        async with _child(command, workdir / "simulate.log") as announced:
            client = Client.from_kubeconfig(str(plane.kubeconfig_path))
            await install_crds(client)
            yield EmbeddedCluster(
                plane.url,
                plane.kubeconfig_path,
                workdir,
                cloud_url=announced.get("cloud-endpoint"),
                storage_url=announced.get("storage-backend"),
            )
    finally:
        await trio.to_thread.run_sync(plane.stop)


@contextmanager
def embedded_workdir(given: Path | None) -> Iterator[Path]:
    """``given`` as it is (the user asked to keep the cluster's files there), else a fresh
    temporary folder that is removed however the run ends (done, failed, Ctrl-C): demos run
    again and again, and each would otherwise leave its state and logs behind."""
    workdir = given or Path(tempfile.mkdtemp(prefix="kubetrio-embedded-"))
    # pykube-ng writes a kubeconfig's inline certificates to files in the temporary folder and
    # leaves them there; the embedded cluster's CA is new on every run, so each run would leave
    # one more. They go into the cluster's folder instead, with it.
    outer, tempfile.tempdir = tempfile.tempdir, str(workdir)
    try:
        yield workdir
    finally:
        tempfile.tempdir = outer
        if given is None:
            shutil.rmtree(workdir, ignore_errors=True)


def admin_token(kubeconfig: Path) -> str:
    """The admin's bearer token from the kubeconfig the emulator wrote."""
    doc = yaml.safe_load(kubeconfig.read_text())
    return str(doc["users"][0]["user"]["token"])


async def _read_announcement(process: trio.Process, log_name: str) -> dict[str, str]:
    """What the child announces on stdout up to its last line (the emulator's ``url=``, the
    simulation's ``running``): ``key=value`` words (``url``, and before it the addresses of the
    services it serves beside: ``cloud-endpoint``, ``storage-backend``, ``ec2-endpoint``)."""
    assert process.stdout is not None
    buffer = b""
    with trio.move_on_after(STARTUP_TIMEOUT):
        async for chunk in process.stdout:
            buffer += chunk
            text = buffer.decode(errors="replace")
            if ("url=" in text or "simulate running" in text) and text.endswith("\n"):
                words = (word.partition("=") for word in text.split())
                return {key: value for key, sep, value in words if sep}
    raise EmbeddedClusterError(
        f"the embedded API server did not start within {STARTUP_TIMEOUT:g}s "
        f"(exit code {process.returncode}); see {log_name}"
    )


async def install_crds(client: Client) -> None:
    """Create each CRD unless it is there already (a restart on kept state), and wait until
    the API server serves them all: the manager starts next, and a CRD not yet served would
    look missing to it."""
    try:
        await create_crds(client, crd_documents(), timeout=STARTUP_TIMEOUT)
    except (ApiError, CrdsNotServed) as error:
        raise EmbeddedClusterError(f"installing the machine CRDs: {error}") from error

"""``kubetrio run`` as the shipped Deployment runs it: no ``--kubeconfig``, so the pod's own
ServiceAccount (token, CA and KUBERNETES_SERVICE_HOST/PORT, over TLS), with the Deployment's
leader election and ``--metrics-secure``. The discovery check, the informers, the Lease and
the metrics reviews all go out with the mounted token; no request of that account is denied.

The only liberty: the mount is a temporary folder instead of
/var/run/secrets/kubernetes.io/serviceaccount, and the ports are free ones."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import requests
import trio

from kubetrio.emulator import EmulatorOptions
from kubetrio.sim import serve_world
from tests.helpers.kube import Kubectl, find_kubectl, kubectl_env
from tests.helpers.running import ACCOUNT, NS, audit_event, install_shipped, run_until_started

KIT = Path(__file__).resolve().parents[2] / "config"

# The self-signed serving certificate: what the manager presents is not what is tested here.
pytestmark = [
    pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning"),
    pytest.mark.kubectl,
    pytest.mark.process,
    pytest.mark.slow,
]

# kubetrio's CLI, with the ServiceAccount mount moved to argv[1].
IN_POD = (
    "import sys, kubetrio.runtime.client.incluster as mount; "
    "mount.SERVICE_ACCOUNT_DIR = sys.argv.pop(1); "
    "from kubetrio.cmd.main import main; sys.exit(main())"
)


async def scrape(url: str, token: str) -> int:
    answer = await trio.to_thread.run_sync(
        lambda: requests.get(
            url, headers={"Authorization": f"Bearer {token}"}, verify=False, timeout=10
        )
    )
    return answer.status_code


@pytest.mark.parametrize("two_clusters", [False, True], ids=["one-cluster", "inClusterConfig"])
async def test_the_manager_runs_in_cluster_under_its_mounted_service_account(
    tmp_path: Path, two_clusters: bool
) -> None:
    """The Lease goes to the pod's namespace (the mount's) unless named, as controller-runtime's.
    ``two_clusters``: MCM's ``--control-kubeconfig=inClusterConfig`` with the Nodes in a
    target cluster named by a kubeconfig (here the same API server, as its admin)."""
    audit = tmp_path / "audit.log"
    binary = find_kubectl()
    assert binary is not None, "kubectl 1.33 is needed"
    async with serve_world(options=EmulatorOptions(audit_log_path=audit)) as emu:
        kubectl = Kubectl(binary, kubectl_env(emu, tmp_path))
        token = await install_shipped(kubectl, str(KIT))
        mount = tmp_path / "serviceaccount"
        mount.mkdir()
        (mount / "token").write_text(token)
        (mount / "ca.crt").write_bytes(emu.tls.ca_pem)
        (mount / "namespace").write_text(NS)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),  # no ~/.kube/config, no KUBECONFIG: in-cluster
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(emu.port),
        }
        argv = [
            *(sys.executable, "-c", IN_POD, str(mount), "run"),
            *("--leader-elect", "--metrics-secure"),
            *("--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "0"),
        ]
        if two_clusters:
            # Named as the Deployment names it; the one-cluster run finds it in the mount.
            argv += [f"--leader-election-namespace={NS}"]
            argv += ["--control-kubeconfig=inClusterConfig"]
            argv += ["--target-kubeconfig", str(emu.kubeconfig_path)]

        async def scrape_both(output: bytes) -> None:
            found = re.search(rb'msg="serving https" addresses=\[.127\.0\.0\.1:(\d+)', output)
            assert found is not None, output.decode()
            url = f"https://127.0.0.1:{int(found.group(1))}/metrics"
            assert await scrape(url, emu.token) == 200  # the admin may get /metrics
            assert await scrape(url, token) == 403  # the manager itself may not

        await run_until_started(argv, env=env, workers=4, while_running=scrape_both)
        lease = await kubectl.json("get", "lease", "kubetrio-leader", "-n", NS)
        # Taken, then released on the way out (an empty holder, as client-go releases).
        assert lease["spec"]["acquireTime"] and lease["spec"]["holderIdentity"] == ""

    mine = [
        e
        for e in map(audit_event, audit.read_text().splitlines())
        if e["user"]["username"] == ACCOUNT
    ]
    denied = [e["requestURI"] for e in mine if e["responseStatus"]["code"] == 403]
    assert denied == [], denied[:3]
    uris = {e["requestURI"].split("?")[0] for e in mine}
    assert "/apis/machine.sapcloud.io/v1alpha1" in uris  # the discovery check
    assert "/apis/authentication.k8s.io/v1/tokenreviews" in uris  # the metrics reviews
    assert "/apis/authorization.k8s.io/v1/subjectaccessreviews" in uris
    assert f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/kubetrio-leader" in uris

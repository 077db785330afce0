"""``--metrics-secure`` against the emulator: ``/metrics`` over TLS for readers the API server
authenticates (TokenReview) and authorizes (SubjectAccessReview of get on /metrics), answers
cached as controller-runtime caches them, certificates from files reloaded when they change or
self-signed; the probes stay plain HTTP.

The clock is a MockClock without autojump: cache lifetimes are crossed by explicit jumps, so a
slow scrape on a loaded machine can never let a cached answer expire behind the test's back.
"""

from __future__ import annotations

import functools
import json
import math
import os
import signal
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import requests
import trio
import trio.testing
import trustme
import yaml
from prometheus_client.parser import text_string_to_metric_families

from kubetrio.emulator import Emulator, FaultRule
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.certs.serving import CertificateError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.leaderelection.elector import LeaderElectionOptions
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.metrics.auth import MetricsAuthorizer
from kubetrio.runtime.metrics.secure import SecureServing
from tests.helpers.kube import Kubectl
from tests.helpers.rbac import bind, ok, sa_subject, service_account, token

RBAC_DIR = Path(__file__).resolve().parents[2] / "config" / "rbac"
ADMIN = "kubernetes-admin"
# Most scrapes skip verification (verify=False, as curl -k): what they test is the answer.
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")


@pytest.fixture
def manual_clock() -> trio.testing.MockClock:
    """Time moves only when the test jumps it (pytest-trio runs the test on this clock)."""
    return trio.testing.MockClock()


def shipped(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((RBAC_DIR / name).read_text())
    return doc


async def apply_shipped(admin: EmuClient, name: str) -> None:
    doc = shipped(name)
    plural = {"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings"}
    path = f"/apis/rbac.authorization.k8s.io/v1/{plural[doc['kind']]}"
    await ok(admin.request("POST", path, doc))


async def reader_token(admin: EmuClient) -> str:
    """A ServiceAccount bound to the shipped metrics-reader ClusterRole, as Prometheus is."""
    await service_account(admin, "prometheus")
    await apply_shipped(admin, "metrics_reader_role.yaml")
    await bind(
        admin, "prometheus-metrics", "ClusterRole", "kubetrio-metrics-reader",
        [sa_subject("prometheus")], ns=None,
    )  # fmt: skip
    return await token(admin, "prometheus")


@asynccontextmanager
async def running(manager: Manager) -> AsyncIterator[Manager]:
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        yield manager
        manager.stop()


def secure_manager(client: Client, serving: SecureServing | None = None, **kw: Any) -> Manager:
    manager = Manager(
        client,
        metrics_bind_address="127.0.0.1:0",
        health_probe_bind_address="127.0.0.1:0",
        metrics_secure=serving or SecureServing(),
        **kw,
    )
    # An autojumping clock would otherwise jump to the server's idle timeout while a client
    # thread is busy with its TLS handshake, and hang up on it.
    manager.http.idle_timeout = math.inf
    return manager


def admin_client(emu: Emulator) -> Client:
    return Client.from_url(emu.url, token=emu.token, registry=None)


async def get(url: str, bearer: str | None = None, verify: str | bool = False) -> requests.Response:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer is not None else {}
    return await trio.to_thread.run_sync(
        lambda: requests.get(url, headers=headers, verify=verify, timeout=10)
    )


def metrics_url(manager: Manager, path: str = "/metrics") -> str:
    return f"https://127.0.0.1:{manager.bound_ports['metrics']}{path}"


def reviews(emu: Emulator) -> tuple[int, int]:
    return (
        emu.counters.get("create", "tokenreviews"),
        emu.counters.get("create", "subjectaccessreviews"),
    )


async def served_cert(manager: Manager) -> bytes:
    """The DER certificate the metrics port presents (unverified)."""

    def fetch() -> str:
        return ssl.get_server_certificate(("127.0.0.1", manager.bound_ports["metrics"]))

    return ssl.PEM_cert_to_DER_cert(await trio.to_thread.run_sync(fetch))


@pytest.mark.slow
async def test_allowed_denied_anonymous_and_garbage_tokens(
    emu: Emulator, manual_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    admin = EmuClient(emu.url, emu.token)
    allowed = await reader_token(admin)
    await service_account(admin, "nobody")
    denied = await token(admin, "nobody")
    async with running(secure_manager(admin_client(emu))) as manager:
        assert manager.secure_metrics is not None and manager.secure_metrics.self_signed
        ca = tmp_path / "ca.pem"
        ca.write_bytes(manager.secure_metrics.self_signed.ca_pem or b"")
        # Verified against the self-signed CA: the certificate names 127.0.0.1.
        response = await get(metrics_url(manager), allowed, verify=str(ca))
        assert response.status_code == 200, response.text
        families = {f.name for f in text_string_to_metric_families(response.text)}
        assert "process_cpu_seconds" in families

        response = await get(metrics_url(manager), denied)
        assert (response.status_code, response.text) == (
            403,
            "Authorization denied for user system:serviceaccount:default:nobody\n",
        )
        for header in (None, "garbage", ""):
            response = await get(metrics_url(manager), header)
            assert (response.status_code, response.text) == (401, "Unauthorized\n"), header
        response = await trio.to_thread.run_sync(
            lambda: requests.get(
                metrics_url(manager),
                headers={"Authorization": "Basic dXNlcjpwYXNz"},
                verify=False,
                timeout=10,
            )
        )
        assert response.status_code == 401
        # The verb is the method in lower case, as controller-runtime asks: get is granted,
        # head is not.
        head = await trio.to_thread.run_sync(
            lambda: requests.head(
                metrics_url(manager),
                headers={"Authorization": f"Bearer {allowed}"},
                verify=False,
                timeout=10,
            )
        )
        assert head.status_code == 403
        # Paths other than /metrics are not found, whoever asks: nothing else is served there.
        assert (await get(metrics_url(manager, "/healthz"), allowed)).status_code == 404


async def test_plain_http_fails_on_the_tls_port_and_probes_stay_plain(
    emu: Emulator, manual_clock: trio.testing.MockClock
) -> None:
    async with running(secure_manager(admin_client(emu))) as manager:
        port = manager.bound_ports["metrics"]
        with pytest.raises(requests.ConnectionError):
            await trio.to_thread.run_sync(
                lambda: requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
            )
        probes = manager.bound_ports["probes"]
        assert probes != port
        healthz = await trio.to_thread.run_sync(
            lambda: requests.get(f"http://127.0.0.1:{probes}/readyz", timeout=10)
        )
        assert (healthz.status_code, healthz.text) == (200, "ok")
        # And the TLS port still serves a real client after the garbage.
        assert (await get(metrics_url(manager), emu.token)).status_code == 200


async def test_answers_are_cached_for_controller_runtimes_ttls(
    emu: Emulator, manual_clock: trio.testing.MockClock
) -> None:
    admin = EmuClient(emu.url, emu.token)
    allowed = await reader_token(admin)
    await service_account(admin, "nobody")
    denied = await token(admin, "nobody")
    async with running(secure_manager(admin_client(emu))) as manager:
        url = metrics_url(manager)
        before = reviews(emu)

        def since() -> tuple[int, int]:
            now = reviews(emu)
            return now[0] - before[0], now[1] - before[1]

        assert (await get(url, allowed)).status_code == 200
        assert since() == (1, 1)
        assert (await get(url, allowed)).status_code == 200
        assert since() == (1, 1)  # the second scrape asked nothing
        manual_clock.jump(59)
        assert (await get(url, allowed)).status_code == 200
        assert since() == (1, 1)
        manual_clock.jump(2)  # past the token's minute: a new TokenReview; access still cached
        assert (await get(url, allowed)).status_code == 200
        assert since() == (2, 1)
        manual_clock.jump(240)  # 301 s after the first: the allow answer expired too
        assert (await get(url, allowed)).status_code == 200
        assert since() == (3, 2)

        assert (await get(url, denied)).status_code == 403
        assert since() == (4, 3)
        manual_clock.jump(29)
        assert (await get(url, denied)).status_code == 403
        assert since() == (4, 3)  # denied answers are cached for 30 s
        manual_clock.jump(2)
        assert (await get(url, denied)).status_code == 403
        assert since() == (4, 4)

        # A token the TokenReview rejects without an error is cached as rejected; the
        # emulator says why (status.error), which the apiserver does not cache: asked again.
        assert (await get(url, "garbage")).status_code == 401
        assert (await get(url, "garbage")).status_code == 401
        assert since() == (6, 4)


async def test_a_revoked_permission_is_seen_once_the_allow_answer_expires(
    emu: Emulator, manual_clock: trio.testing.MockClock
) -> None:
    admin = EmuClient(emu.url, emu.token)
    allowed = await reader_token(admin)
    async with running(secure_manager(admin_client(emu))) as manager:
        url = metrics_url(manager)
        assert (await get(url, allowed)).status_code == 200
        path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/prometheus-metrics"
        await ok(admin.request("DELETE", path))
        assert (await get(url, allowed)).status_code == 200  # cached, as controller-runtime
        manual_clock.jump(301)
        assert (await get(url, allowed)).status_code == 403


async def test_the_manager_needs_only_the_shipped_metrics_auth_role(
    emu: Emulator, manual_clock: trio.testing.MockClock
) -> None:
    """The manager's own ServiceAccount, bound to the shipped ClusterRole and nothing else,
    makes both reviews; without the binding, a scrape is a 500, not a leak or a crash."""
    admin = EmuClient(emu.url, emu.token)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubetrio-system"}}
    await ok(admin.request("POST", "/api/v1/namespaces", namespace))
    await service_account(admin, "kubetrio-controller-manager", "kubetrio-system")
    manager_token = await token(admin, "kubetrio-controller-manager", "kubetrio-system")
    allowed = await reader_token(admin)
    as_manager = Client.from_url(emu.url, token=manager_token, registry=None)
    async with running(secure_manager(as_manager)) as manager:
        response = await get(metrics_url(manager), allowed)
        assert (response.status_code, response.text) == (500, "Authentication failed\n")
        await apply_shipped(admin, "metrics_auth_role.yaml")
        await apply_shipped(admin, "metrics_auth_role_binding.yaml")
        assert (await get(metrics_url(manager), allowed)).status_code == 200


async def test_a_replica_that_does_not_lead_still_serves_its_metrics(
    emu: Emulator, manual_clock: trio.testing.MockClock
) -> None:
    """The reviews are POSTs, but they change nothing: a standby replica's fenced client
    would refuse them; they go unfenced, so every replica can be scraped."""
    admin = EmuClient(emu.url, emu.token)
    allowed = await reader_token(admin)
    now = "2030-01-01T00:00:00.000000Z"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "kubetrio-leader"},
        "spec": {
            "holderIdentity": "the-other-one",
            "leaseDurationSeconds": 3600,
            "acquireTime": now,
            "renewTime": now,
        },
    }
    await ok(admin.request("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease))
    options = LeaderElectionOptions(namespace="default", name="kubetrio-leader", identity="me")
    async with running(secure_manager(admin_client(emu), leader_election=options)) as manager:
        assert manager.fence is not None and not manager.fence.holds()  # writes are refused
        assert (await get(metrics_url(manager), allowed)).status_code == 200


def issue(ca: trustme.CA, folder: Path) -> bytes:
    """A serving certificate for 127.0.0.1 from ``ca`` into folder/tls.{crt,key}; its DER."""
    cert = ca.issue_cert("127.0.0.1", "localhost")
    folder.mkdir(exist_ok=True)
    # A new file renamed over the old one, as a careful writer (and the kubelet) replaces it.
    for name, blob in (("tls.key", cert.private_key_pem), ("tls.crt", cert.cert_chain_pems[0])):
        staging = folder / f".{name}.new"
        blob.write_to_path(str(staging))
        staging.replace(folder / name)
    return ssl.PEM_cert_to_DER_cert(cert.cert_chain_pems[0].bytes().decode())


async def wait_for_cert(manager: Manager, der: bytes) -> None:
    secure = manager.secure_metrics
    assert secure is not None and secure.watcher is not None
    while True:
        changed = secure.watcher.changed  # taken before looking: no reload slips between
        if await served_cert(manager) == der:
            return
        await changed.wait()


async def test_certificate_files_are_served_verified_and_polled_for_changes(
    emu: Emulator, manual_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    folder = tmp_path / "certs"
    first_ca, second_ca = trustme.CA(), trustme.CA()
    first = issue(first_ca, folder)
    serving = SecureServing(folder, watch=False)  # the poll alone, on the trio clock
    async with running(secure_manager(admin_client(emu), serving)) as manager:
        assert manager.secure_metrics is not None and manager.secure_metrics.self_signed is None
        ca_file = tmp_path / "ca.pem"
        first_ca.cert_pem.write_to_path(str(ca_file))
        assert (await get(metrics_url(manager), emu.token, verify=str(ca_file))).status_code == 200
        second = issue(second_ca, folder)
        assert await served_cert(manager) == first  # no watch: unchanged until the poll
        manual_clock.jump(10)
        await wait_for_cert(manager, second)
        second_ca.cert_pem.write_to_path(str(ca_file))
        assert (await get(metrics_url(manager), emu.token, verify=str(ca_file))).status_code == 200
        # A broken pair is refused and the last good one stays.
        (folder / "tls.key").write_bytes(b"not a key")
        manual_clock.jump(10)
        await trio.testing.wait_all_tasks_blocked()
        assert await served_cert(manager) == second
        samples = {
            s.name: s.value
            for f in text_string_to_metric_families(
                (await get(metrics_url(manager), emu.token)).text
            )
            for s in f.samples
        }
        assert samples["certwatcher_read_certificate_errors_total"] >= 1
        assert samples["certwatcher_read_certificate_total"] >= 3


async def test_certificate_files_are_watched(
    emu: Emulator, mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    """The file event alone brings the new certificate: the poll is a day away, and a missed
    event would let the autojumping clock reach it, failing the deadline first."""
    folder = tmp_path / "certs"
    first = issue(trustme.CA(), folder)
    serving = SecureServing(folder, poll_interval=86400)
    async with running(secure_manager(admin_client(emu), serving)) as manager:
        assert await served_cert(manager) == first
        second = issue(trustme.CA(), folder)
        assert second != first
        with trio.fail_after(60):
            await wait_for_cert(manager, second)


@pytest.mark.kubectl
@pytest.mark.process
@pytest.mark.slow
async def test_kubetrio_run_metrics_secure_as_a_process(
    emu: Emulator, kubectl: Kubectl, tmp_path: Path
) -> None:
    """``kubetrio run --metrics-secure``, scraped as Prometheus would (a ServiceAccount token
    from ``kubectl create token``, the self-signed certificate not verified, as ``curl -k``)."""
    admin = EmuClient(emu.url, emu.token)
    await reader_token(admin)
    allowed = (await kubectl.out("create", "token", "prometheus")).strip()
    command = [
        sys.executable, "-m", "kubetrio.cmd.main", "run",
        "--kubeconfig", str(emu.kubeconfig_path),
        "--controllers", "example",
        "--metrics-secure",
        "--metrics-bind-address", "127.0.0.1:0",
        "--health-probe-bind-address", "127.0.0.1:0",
        "--log-format", "json",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBETRIO_")}
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            functools.partial(
                trio.run_process, command, stderr=subprocess.PIPE, check=False, env=env
            )
        )
        assert process.stderr is not None
        with trio.fail_after(60):
            ports = await listening_ports(process.stderr)
        url = f"https://127.0.0.1:{ports['https']}/metrics"
        response = await get(url, allowed)
        assert response.status_code == 200, response.text
        assert "controller_runtime_reconcile_total" in response.text
        assert (await get(url, "garbage")).status_code == 401
        assert (await get(url)).status_code == 401
        probe = f"http://127.0.0.1:{ports['http']}/healthz"
        healthz = await trio.to_thread.run_sync(lambda: requests.get(probe, timeout=10))
        assert healthz.status_code == 200
        process.send_signal(signal.SIGTERM)
        with trio.fail_after(60):
            assert await process.wait() == 0


async def listening_ports(stderr: trio.abc.ReceiveStream) -> dict[str, int]:
    """The ports of the manager's "serving https" and "serving http" log lines."""
    ports: dict[str, int] = {}
    buffered = b""
    while len(ports) < 2:
        chunk = await stderr.receive_some()
        assert chunk, f"the manager exited: {buffered.decode(errors='replace')[-3000:]}"
        buffered += chunk
        *lines, rest = buffered.split(b"\n")
        for line in lines:
            if line.startswith(b"{"):
                event = json.loads(line)
                if event.get("msg") in ("serving https", "serving http"):
                    scheme = event["msg"].split()[1]
                    ports[scheme] = int(event["addresses"][0].rsplit(":", 1)[1])
        buffered = rest
    return ports


@pytest.mark.slow
async def test_transient_review_failures_are_retried_on_the_webhook_schedule(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    admin = EmuClient(emu.url, emu.token)
    allowed = await reader_token(admin)
    async with running(secure_manager(admin_client(emu))) as manager:
        url = metrics_url(manager)
        emu.faults.add(FaultRule(verb="create", resource="tokenreviews", status=500, count=2))
        started, before = trio.current_time(), reviews(emu)
        assert (await get(url, allowed)).status_code == 200
        # Two failures, waits of 0.5 s and 0.75 s (each up to 20 % longer), then the answer.
        assert 1.25 <= trio.current_time() - started <= 1.25 * 1.2 + 0.2
        assert reviews(emu)[0] - before[0] == 3

        # Still failing after five attempts: a 500, and nothing cached.
        emu.faults.add(FaultRule(verb="create", resource="subjectaccessreviews", status=504))
        before = reviews(emu)
        response = await get(url, emu.token)
        assert (response.status_code, response.text) == (
            500,
            f"Authorization for user {ADMIN} failed\n",
        )
        assert reviews(emu)[1] - before[1] == 5
        emu.faults.clear()
        assert (await get(url, emu.token)).status_code == 200

        # A refusal is no outage: not retried.
        emu.faults.add(FaultRule(verb="create", resource="tokenreviews", status=403, count=1))
        before = reviews(emu)
        assert (await get(url, "another-token")).status_code == 500
        assert reviews(emu)[0] - before[0] == 1

        # A TokenReview has 10 s in all.
        emu.faults.add(FaultRule(verb="create", resource="tokenreviews", latency=30, count=1))
        started = trio.current_time()
        response = await get(url, "yet-another-token")
        assert (response.status_code, response.text) == (500, "Authentication failed\n")
        assert trio.current_time() - started == pytest.approx(10, abs=0.5)


@pytest.mark.process
@pytest.mark.slow
async def test_unusable_certificate_files_stop_kubetrio_run_with_one_line(
    emu: Emulator, tmp_path: Path
) -> None:
    base = [
        sys.executable, "-m", "kubetrio.cmd.main", "run",
        "--kubeconfig", str(emu.kubeconfig_path),
        "--controllers", "example",
        "--metrics-secure",
        "--metrics-bind-address", "127.0.0.1:0",
        "--health-probe-bind-address", "127.0.0.1:0",
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBETRIO_")}
    missing = tmp_path / "missing"
    mismatched = tmp_path / "mismatched"
    issue(trustme.CA(), mismatched)
    other = trustme.CA().issue_cert("127.0.0.1")
    other.private_key_pem.write_to_path(str(mismatched / "tls.key"))
    for folder, message in (
        (missing, f"cannot read {missing}/tls.crt: No such file or directory"),
        (
            mismatched,
            f"{mismatched}/tls.crt and {mismatched}/tls.key: the key does not belong to the "
            "certificate",
        ),
    ):
        with trio.fail_after(60):
            result = await trio.run_process(
                [*base, "--metrics-cert-path", str(folder)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=env,
            )
        lines = [
            line for line in result.stderr.decode().splitlines() if line.startswith("kubetrio:")
        ]
        assert result.returncode == 1, result.stderr.decode()[-2000:]
        assert lines == [f"kubetrio: {message}"]
        assert "Traceback" not in result.stderr.decode()


async def test_reviews_do_not_wait_behind_the_controllers_rate_limit(
    emu: Emulator, manual_clock: trio.testing.MockClock
) -> None:
    """A manager client allowed one request per 10 s: the reviews of three uncached scrapes
    (six requests) would wait behind that budget on a clock that never moves, and the scrape
    would time out; they take none of it."""
    admin = EmuClient(emu.url, emu.token)
    tokens = []
    for name in ("a", "b", "c"):
        await service_account(admin, name)
        tokens.append(await token(admin, name))
    slow = Client.from_url(emu.url, token=emu.token, registry=None, qps=0.1, burst=1)
    async with running(secure_manager(slow)) as manager:
        started = trio.current_time()
        for each in tokens:
            assert (await get(metrics_url(manager), each)).status_code == 403
        assert trio.current_time() == started


async def test_concurrent_scrapes_share_one_review_and_its_failure(
    emu: Emulator, manual_clock: trio.testing.MockClock
) -> None:
    """Five scrapes at once with one token make one TokenReview and one SubjectAccessReview;
    when the review fails, all five hear it from that one call."""
    admin = EmuClient(emu.url, emu.token)
    allowed = await reader_token(admin)
    authorizer = MetricsAuthorizer(admin_client(emu))
    answers: list[tuple[int, str] | None] = []

    async def scrape(bearer: str) -> None:
        answers.append(await authorizer.check("GET", "/metrics", f"Bearer {bearer}"))

    before = reviews(emu)
    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(scrape, allowed)
    assert answers == [None] * 5
    assert (reviews(emu)[0] - before[0], reviews(emu)[1] - before[1]) == (1, 1)

    answers.clear()
    emu.faults.add(FaultRule(verb="create", resource="tokenreviews", status=403, count=1))
    before = reviews(emu)
    async with trio.open_nursery() as nursery:
        for _ in range(5):
            nursery.start_soon(scrape, "a-new-token")
    assert answers == [(500, "Authentication failed")] * 5
    assert reviews(emu)[0] - before[0] == 1


async def test_manager_run_raises_an_unusable_certificate_as_one_plain_error(
    emu: Emulator, manual_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    manager = secure_manager(admin_client(emu), SecureServing(tmp_path / "nothing-here"))
    with pytest.raises(CertificateError) as caught:
        await manager.run()
    assert str(caught.value) == (
        f"cannot read {tmp_path}/nothing-here/tls.crt: No such file or directory"
    )
    assert not manager.serving.is_set()  # nothing started
    # Metrics turned off: no certificate is needed, nor read.
    off = Manager(
        admin_client(emu),
        metrics_bind_address="0",
        health_probe_bind_address="0",
        metrics_secure=SecureServing(tmp_path / "nothing-here"),
    )
    async with running(off):
        assert "metrics" not in off.bound_ports

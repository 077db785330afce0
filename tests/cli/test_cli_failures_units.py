"""What ``kubetrio run`` reports when it fails: one line for the expected, a traceback otherwise."""

from __future__ import annotations

import socket

import pytest
import trio

from kubetrio.api.registry import lookup
from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.failures import ServerCheckFailed, describe_failure, expected_failure
from kubetrio.runtime.cache.syncfailure import CacheSyncError, sync_failure
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.unreachable import classify, transport_problem
from kubetrio.runtime.http.errors import NoResponse
from kubetrio.runtime.http.pool import ConnectionPool
from kubetrio.runtime.leaderelection.elector import LeadershipLost
from kubetrio.runtime.leaderelection.leasefailure import lease_refusal
from kubetrio.runtime.metrics.server import ListenError

MACHINES = lookup("machine.sapcloud.io/v1alpha1", "Machine")
PODS = lookup("v1", "Pod")


def forbidden(user: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'pods is forbidden: User "{user}" cannot list resource "pods" in API group "" at the '
        "cluster scope",
    )


def test_a_missing_crd_and_an_unserved_builtin_are_named() -> None:
    missing = ApiError(404, "NotFound", "the server could not find the requested resource")
    crd = sync_failure(MACHINES, "default", missing)
    assert crd is not None and str(crd).startswith(
        "CRD not installed: machines.machine.sapcloud.io ("
    )
    builtin = sync_failure(PODS, None, missing)
    assert builtin is not None and str(builtin).startswith("API not served: pods (")


@pytest.mark.parametrize(
    ("user", "who"),
    [
        ("system:serviceaccount:kube-system:kubetrio", "the ServiceAccount kube-system/kubetrio"),
        ("alice", 'user "alice"'),
    ],
)
def test_forbidden_names_who_and_where(user: str, who: str) -> None:
    failure = sync_failure(PODS, None, forbidden(user))
    assert failure is not None
    assert str(failure).startswith(f"RBAC: {who} cannot list pods cluster-wide (pods is forbidden")


@pytest.mark.parametrize("status", [0, 409, 410, 429, 500, 503, 504])
def test_failures_a_retry_may_heal_are_not_final(status: int) -> None:
    assert sync_failure(PODS, None, ApiError(status, "Whatever", "try again")) is None


def test_exception_groups_are_unwrapped_to_the_cause() -> None:
    lost = LeadershipLost("lease kube-system/kubetrio-leader: not renewed within 10s")
    nested = ExceptionGroup(
        "outer",
        [ExceptionGroup("inner", [ApiError(0, "", "no response"), lost]), trio.TooSlowError()],
    )
    assert expected_failure(nested) is lost
    sync = CacheSyncError("CRD not installed: x", ApiError(404, "NotFound", "gone"))
    assert expected_failure(ExceptionGroup("one", [ExceptionGroup("deeper", [sync])])) is sync
    assert expected_failure(sync) is sync


def test_anything_unexpected_keeps_its_traceback() -> None:
    bug = ZeroDivisionError("a bug")
    assert expected_failure(bug) is None
    assert expected_failure(ExceptionGroup("mixed", [bug, trio.TooSlowError()])) is None


def test_one_anticipated_failure_among_cancellations_is_that_failure() -> None:
    """What trio raises when a task's failure cancelled its siblings, nurseries deep."""
    taken = ListenError(98, "cannot listen on 127.0.0.1:8080 for metrics: Address already in use")
    cancelled = [trio.Cancelled._create() for _ in range(3)]
    group = BaseExceptionGroup(
        "outer", [BaseExceptionGroup("inner", [cancelled[0], taken]), *cancelled[1:]]
    )
    assert expected_failure(group) is taken
    only_cancelled = BaseExceptionGroup("all", cancelled)
    assert expected_failure(only_cancelled) is None  # nothing to report: not ours to explain


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            ListenError(98, "cannot listen on :8081 for healthz, readyz: Address already in use"),
            "cannot listen on :8081 for healthz, readyz: Address already in use; free the port "
            "or choose another address with --health-probe-bind-address ('0' turns it off)",
        ),
        (
            ApiError(401, "Unauthorized", "Unauthorized", method="GET", path="/version"),
            "the API server rejected the credentials (401 Unauthorized: Unauthorized (GET "
            "/version)); check the kubeconfig's user (token, client certificate or exec plugin)",
        ),
        (
            trio.TooSlowError(),
            "the API server did not answer within 30s: is it up and reachable "
            "from here? (--kube-api-timeout sets the limit)",
        ),
    ],
)
def test_each_failure_says_what_to_do(error: Exception, line: str) -> None:
    assert describe_failure(error, ManagerConfig()) == line


def test_unreachable_servers_are_described_by_their_cause() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the block ends: connections are refused
    pool = ConnectionPool(f"http://127.0.0.1:{port}")
    with pytest.raises(NoResponse) as refused:
        trio.run(pool.exchange, "GET", "/version", {}, None)
    assert classify(refused.value) == "refused"
    assert transport_problem(refused.value) == (
        f"no response from the API server at http://127.0.0.1:{port}: connection refused"
    )
    assert transport_problem(ValueError("odd\n  thing")) == (
        "no response from the API server: odd thing"
    )


@pytest.mark.parametrize("status", [0, 409, 422, 429, 500, 503])
def test_lease_failures_a_retry_may_heal_are_not_final(status: int) -> None:
    assert lease_refusal("default", "kubetrio-leader", ApiError(status, "Whatever", "x")) is None
    gone = ApiError(404, "NotFound", 'leases.coordination.k8s.io "kubetrio-leader" not found')
    assert lease_refusal("default", "kubetrio-leader", gone) is None  # only a missing namespace


def test_only_kubetrios_own_crds_get_the_kubetrio_crds_hint() -> None:
    missing = ApiError(404, "NotFound", "the server could not find the requested resource")
    ours = sync_failure(MACHINES, "default", missing)
    assert ours is not None
    assert describe_failure(ours, ManagerConfig()).endswith(
        "; install them with `kubetrio crds | kubectl apply -f -`"
    )
    widgets = CacheSyncError("CRD not installed: widgets.example.com (404 NotFound: x)", missing)
    assert "kubetrio crds" not in describe_failure(widgets, ManagerConfig())


def test_a_bare_api_error_or_timeout_is_a_bug_unless_the_startup_check_raised_it() -> None:
    """From a running controller, either keeps its traceback; from ``GET /version``, one line."""
    gone = ApiError(404, "NotFound", "gone", method="PATCH", path="/api/v1/x")
    for bug in (gone, trio.TooSlowError(), ExceptionGroup("run", [trio.TooSlowError()])):
        assert expected_failure(bug) is None
    refused = ServerCheckFailed(
        ApiError(401, "Unauthorized", "Unauthorized", method="GET", path="/version")
    )
    assert expected_failure(ExceptionGroup("startup", [refused])) is refused
    assert describe_failure(refused, ManagerConfig()).startswith(
        "the API server rejected the credentials (401 Unauthorized"
    )
    late = ServerCheckFailed(trio.TooSlowError())
    assert describe_failure(late, ManagerConfig()).startswith("the API server did not answer")

"""What ``kubetrio run`` reports when it fails: one line for the expected, a traceback otherwise."""

from __future__ import annotations

import pytest
import trio

from kubetrio.api.registry import lookup
from kubetrio.cmd.run import expected_failure
from kubetrio.runtime.errors import ApiError
from kubetrio.runtime.leaderelection import LeadershipLost
from kubetrio.runtime.syncfailure import CacheSyncError, sync_failure

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

"""What the CLI says when a run fails: one line naming what to do, or the traceback.

A failure an operator fixes outside the process (a port taken, CRDs not installed, a server
that does not answer, a broken kubeconfig, RBAC) is anticipated: it is printed as one line,
whatever depth of nurseries it was raised in. Anything else is a bug and keeps its traceback.

trio wraps what a nursery's tasks raise in exception groups, one per nursery, and a task
cancelled because its sibling failed adds ``Cancelled`` leaves; a group is reported as one
line when, cancellations aside, all its leaves are anticipated, and the line is the one of
the leaf that comes first in ``EXPECTED_FAILURES`` (the cause; the others are its
consequences).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from kubetrio.api.machineset import MACHINE_KINDS
from kubetrio.cmd.clusters import TargetClusterError
from kubetrio.cmd.config import ManagerConfig
from kubetrio.cmd.embedded import EmbeddedClusterError
from kubetrio.runtime.cache.syncfailure import CacheSyncError
from kubetrio.runtime.certs.serving import CertificateError
from kubetrio.runtime.client.discovery import UnservedKinds
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.client.unreachable import Problem, classify
from kubetrio.runtime.leaderelection.elector import LeadershipLost
from kubetrio.runtime.leaderelection.leasefailure import LeaseRefused
from kubetrio.runtime.manager.manager import CacheSyncTimeout
from kubetrio.runtime.manager.plugins import PluginError
from kubetrio.runtime.metrics.server import ListenError

__all__ = ["EXPECTED_FAILURES", "ServerCheckFailed", "describe_failure", "expected_failure"]


class ServerCheckFailed(Exception):
    """The startup request to the API server (``GET /version``) failed or timed out.

    Only there is a bare ``ApiError`` or ``trio.TooSlowError`` an operator's problem: raised by
    a running controller, either is a bug (an unhandled answer, its own time limit) and keeps
    its traceback."""

    def __init__(self, error: ApiError | trio.TooSlowError) -> None:
        super().__init__(str(error))
        self.error = error


# Ordered by precedence: in a group, the first kind present is the cause.
EXPECTED_FAILURES: tuple[type[Exception], ...] = (
    LeadershipLost,  # the rest of a group are its consequences
    LeaseRefused,
    ServerCheckFailed,
    ListenError,
    KubeconfigError,
    CacheSyncError,
    CacheSyncTimeout,
    PluginError,
    ApiError,
    EmbeddedClusterError,
    TargetClusterError,
    CertificateError,
    trio.TooSlowError,
)
# Anticipated only as the consequences of another cause in the same group (requests failing
# once the lease is lost); alone they are bugs.
_CONSEQUENCES_ONLY: tuple[type[Exception], ...] = (ApiError, trio.TooSlowError)

CRDS_HINT = "install them with `kubetrio crds | kubectl apply -f -`"

# What to check when no response came, by what went wrong on the way.
_UNREACHABLE_ADVICE: dict[Problem, str] = {
    "untrusted": "check certificate-authority in the kubeconfig",
    "wrong-host": "check the server address in the kubeconfig (or --master) against the names "
    "in the server's certificate",
    "bad-certificate": "the server's certificate must be reissued; the kubeconfig is not the cause",
    "host-not-found": "check the server address in the kubeconfig (or --master)",
    "refused": "is the API server running, and is the kubeconfig's server (or --master) right?",
    "tls": "check the server's scheme and port, and certificate-authority in the kubeconfig",
    "timeout": "is the API server up, and reachable from here? (--kube-api-timeout sets the limit)",
    "other": "check the kubeconfig's server (or --master)",
}


def expected_failure(
    error: BaseException, expected: tuple[type[Exception], ...] = EXPECTED_FAILURES
) -> Exception | None:
    """The anticipated failure to report for ``error``, unwrapping exception groups; None
    when anything in it is unexpected, which then keeps its traceback. ``expected`` is in
    order of precedence."""
    leaves = _leaves(error)
    causes = [leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)]
    if not causes or not all(isinstance(leaf, expected) for leaf in causes):
        return None
    for kind in expected:
        for leaf in causes:
            if isinstance(leaf, kind):
                assert isinstance(leaf, Exception)
                return None if isinstance(leaf, _CONSEQUENCES_ONLY) else leaf
    return None


def _leaves(error: BaseException) -> list[BaseException]:
    if not isinstance(error, BaseExceptionGroup):
        return [error]
    return [leaf for inner in error.exceptions for leaf in _leaves(inner)]


def describe_failure(error: Exception, config: ManagerConfig) -> str:
    """One line for ``error``: what happened, then what to do about it."""
    if isinstance(error, ServerCheckFailed):
        error = error.error
    for kind, describe in _DESCRIBERS:
        if isinstance(error, kind):
            return _one_line(describe(error, config))
    return _one_line(str(error))


def _one_line(text: str) -> str:
    return " ".join(text.split())  # whatever a server's message held


def _too_slow(_: Exception, config: ManagerConfig) -> str:
    return (
        f"the API server did not answer within {config.client.timeout:g}s: is it up and "
        "reachable from here? (--kube-api-timeout sets the limit)"
    )


def _leadership_lost(error: Exception, _: ManagerConfig) -> str:
    return f"{error}; exiting so a restart can campaign again"


def _lease_refused(error: Exception, _: ManagerConfig) -> str:
    assert isinstance(error, LeaseRefused)
    if error.error.status == 404:
        return f"{error}; create it or choose another with --leader-election-namespace"
    return str(error)


def _listen(error: Exception, _: ManagerConfig) -> str:
    assert isinstance(error, ListenError)
    text = error.strerror or str(error)  # without OSError's "[Errno 98]"
    flag = "--metrics-bind-address" if " for metrics" in text else "--health-probe-bind-address"
    return f"{text}; free the port or choose another address with {flag} ('0' turns it off)"


def _unserved(error: Exception, _: ManagerConfig) -> str:
    assert isinstance(error, UnservedKinds)
    ours = all(kind in MACHINE_KINDS for kind in error.kinds)
    if ours:
        return f"{error}; {CRDS_HINT}"
    if "kubetrio crd generate" in str(error):  # declared kinds: the message names the command
        return str(error)
    return f"{error}; install their CustomResourceDefinitions"


def _sync(error: Exception, _: ManagerConfig) -> str:
    assert isinstance(error, CacheSyncError)
    ours = any(f"CRD not installed: {k.group_resource}" in str(error) for k in MACHINE_KINDS)
    if error.error.status == 404 and ours:
        return f"{error}; {CRDS_HINT}"  # a CRD deleted between discovery and the LIST
    if error.error.status == 401:
        return f"{error}; check the user's token, client certificate or exec plugin"
    return str(error)


def _api(error: Exception, _: ManagerConfig) -> str:
    assert isinstance(error, ApiError)
    if error.status == 0:
        return f"{error}; {_UNREACHABLE_ADVICE[classify(error.__cause__ or error)]}"
    if error.status == 401:
        return (
            f"the API server rejected the credentials ({error}); check the kubeconfig's user "
            "(token, client certificate or exec plugin)"
        )
    if error.status == 403:
        return f"{error}; grant this identity the permission with RBAC"
    return str(error)


_DESCRIBERS: tuple[tuple[type[Exception], Callable[[Exception, ManagerConfig], str]], ...] = (
    (trio.TooSlowError, _too_slow),
    (LeadershipLost, _leadership_lost),
    (LeaseRefused, _lease_refused),
    (ListenError, _listen),
    (UnservedKinds, _unserved),
    (CacheSyncError, _sync),
    (ApiError, _api),
)

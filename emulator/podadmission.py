"""What kube-apiserver's default admission plugins and the pod strategy add to a new Pod, in
their order: ServiceAccount (``serviceAccountName``, the account's image pull secrets, the
projected ``kube-api-access-*`` token volume mounted in every container; 403 when the account
does not exist), Priority (``priority`` and ``preemptionPolicy`` from ``priorityClassName``,
the global default class or 0), DefaultTolerationSeconds (300 s of not-ready and unreachable
NoExecute taints tolerated), and ``status.qosClass``. Controllers and kubectl read these fields
on every Pod a cluster returns, so the emulator's Pods carry them too."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.meta import generate_name
from kubetrio.emulator.qos import qos_class

Obj = dict[str, Any]

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
_VOLUME_PREFIX = "kube-api-access-"
_MIRROR = "kubernetes.io/config.mirror"
# The classes kube-apiserver creates at start-up: always there to be named.
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300


def _token_volume(name: str) -> Obj:
    """The projected volume the reference kube-apiserver's ServiceAccount plugin adds: the
    token, the cluster CA, the namespace, and (this build's addition) the service CA."""
    return {
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
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
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
                {
                    "configMap": {
                        "name": "openshift-service-ca.crt",
                        "items": [{"key": "service-ca.crt", "path": "service-ca.crt"}],
                    }
                },
            ],
            "defaultMode": 420,
        },
    }


def _list(parent: Obj, key: str) -> list[Any]:
    value = parent.get(key)
    return value if isinstance(value, list) else []


def service_account(
    pod: Obj, spec: Obj, ns: str, find_account: Callable[[str, str], Obj | None]
) -> None:
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    if not isinstance(name, str):
        return
    account = find_account(ns, name)
    if account is None:
        raise errors.forbidden(
            "",
            "pods",
            pod["metadata"].get("name") or "",
            f'error looking up service account {ns}/{name}: serviceaccount "{name}" not found',
        )
    spec["serviceAccountName"] = name
    spec["serviceAccount"] = name
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [
            {"name": s.get("name")} for s in account["imagePullSecrets"] if isinstance(s, dict)
        ]
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = account.get("automountServiceAccountToken", True)
    if automount is False:
        return
    volumes = _list(spec, "volumes")
    existing = next(
        (
            v["name"]
            for v in volumes
            if isinstance(v, dict) and str(v.get("name", "")).startswith(_VOLUME_PREFIX)
        ),
        None,
    )
    volume = existing or generate_name(_VOLUME_PREFIX)
    needed = False
    for key in ("initContainers", "containers"):
        for c in _list(spec, key):
            if not isinstance(c, dict):
                continue
            mounts = _list(c, "volumeMounts")
            if not any(
                isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts
            ):
                mount = {"name": volume, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
                c["volumeMounts"] = [*mounts, mount]
                needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, _token_volume(volume)]


def priority(
    pod: Obj,
    spec: Obj,
    find_class: Callable[[str], Obj | None],
    classes: Callable[[], Iterable[Obj]],
) -> None:
    name = spec.get("priorityClassName")
    value, policy = 0, "PreemptLowerPriority"
    if name:
        pc = find_class(str(name))
        if pc is not None:
            value = pc.get("value", 0)
            policy = pc.get("preemptionPolicy") or policy
        elif name in SYSTEM_PRIORITY_CLASSES:
            value = SYSTEM_PRIORITY_CLASSES[name]
        else:
            raise _forbidden(pod, f"no PriorityClass with name {name} was found")
    else:
        default = next((pc for pc in classes() if pc.get("globalDefault")), None)
        if default is not None:
            spec["priorityClassName"] = default["metadata"]["name"]
            value = default.get("value", 0)
            policy = default.get("preemptionPolicy") or policy
    given = spec.get("priority")
    if given is not None and given != value:
        raise _forbidden(
            pod,
            f"the integer value of priority ({given}) must not be provided in pod spec; priority "
            f"admission controller computed {value} from the given PriorityClass name",
        )
    spec["priority"] = value
    given_policy = spec.get("preemptionPolicy")
    if given_policy is not None and given_policy != policy:
        raise _forbidden(
            pod,
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod "
            f"spec; priority admission controller computed {policy} from the given "
            "PriorityClass name",
        )
    spec["preemptionPolicy"] = policy


def _forbidden(pod: Obj, why: str) -> errors.ApiError:
    return errors.forbidden("", "pods", pod["metadata"].get("name") or "", why)


def default_toleration_seconds(spec: Obj) -> None:
    tolerations = _list(spec, "tolerations")
    added = []
    for key in (_NOT_READY, _UNREACHABLE):
        tolerated = any(
            isinstance(t, dict)
            and t.get("key") in (key, "", None)
            and t.get("effect") in ("NoExecute", "", None)
            for t in tolerations
        )
        if not tolerated:
            added.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
                }
            )
    if added:
        spec["tolerations"] = [*tolerations, *added]


def admit(
    pod: Obj,
    ns: str,
    find_account: Callable[[str, str], Obj | None],
    find_class: Callable[[str], Obj | None],
    classes: Callable[[], Iterable[Obj]],
) -> None:
    """The admission chain's effects on a new Pod (in place), and its initial status."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        spec = pod["spec"] = {}
    annotations = pod["metadata"].get("annotations") or {}
    if not (isinstance(annotations, dict) and _MIRROR in annotations):
        service_account(pod, spec, ns, find_account)
    priority(pod, spec, find_class, classes)
    default_toleration_seconds(spec)
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def admit_update(pod: Obj) -> None:
    """What admission adds to a Pod on update: DefaultTolerationSeconds runs again, so a
    patch that replaces the tolerations keeps the defaults."""
    spec = pod.get("spec")
    if isinstance(spec, dict):
        default_toleration_seconds(spec)

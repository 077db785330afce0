"""ValidatePodSpec's rules (k8s.io/kubernetes pkg/apis/core/validation), shared by Pods and
every workload's pod template: volumes, containers (names unique across init, regular and
ephemeral containers, image, ports, env, mounts, resources, policies), restart and DNS
policies, node selector, tolerations, host and subdomain names, deadlines. Causes come in the
order kube finds them, so multi-error answers read the same."""

from __future__ import annotations

from typing import Any, TypeGuard

from kubetrio.emulator import quantity
from kubetrio.emulator.validation import identifiers
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

RESTART_POLICIES = ["Always", "OnFailure", "Never"]
_DNS_POLICIES = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
_PULL_POLICIES = ["Always", "IfNotPresent", "Never"]
_MESSAGE_POLICIES = ["File", "FallbackToLogsOnError"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
_INT32_MAX = 2147483647
# The volume sources in the order validateVolumeSource looks at them: a second one set is the
# one named in "may not specify more than 1 volume type".
VOLUME_SOURCES = (
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "configMap",
    "storageos",
    "csi",
    "ephemeral",
    "image",
)
# The field each of these volume sources cannot do without.
_SOURCE_REQUIRES = {
    "hostPath": "path",
    "secret": "secretName",
    "persistentVolumeClaim": "claimName",
    "configMap": "name",
}
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_PROBE_COUNTS = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)
_NOT_EPHEMERAL = (
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
)
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})


def dict_at(parent: Any, key: str) -> Obj:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else {}


def list_at(parent: Any, key: str) -> list[Any]:
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, list) else []


def is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def nonnegative(causes: Causes, field: str, value: Any) -> None:
    if is_int(value) and value < 0:
        causes.invalid(field, value, "must be greater than or equal to 0")


def validate_pod_spec(spec: Obj, path: str, causes: Causes) -> None:
    """Every rule ValidatePodSpec applies, with field paths under ``path``."""
    volumes = _volumes(list_at(spec, "volumes"), f"{path}.volumes", causes)
    names: set[str] = set()
    containers = list_at(spec, "containers")
    if not containers:
        causes.required(f"{path}.containers")
    for i, c in enumerate(containers):
        _container(c, f"{path}.containers[{i}]", volumes, names, causes)
        for key in _PROBES:
            _probe(dict_at(c, key) if key in c else None, f"{path}.containers[{i}].{key}", causes)
    for i, c in enumerate(list_at(spec, "initContainers")):
        _container(c, f"{path}.initContainers[{i}]", volumes, names, causes)
    for i, c in enumerate(list_at(spec, "ephemeralContainers")):
        _container(c, f"{path}.ephemeralContainers[{i}]", volumes, names, causes)
        _ephemeral_only(c, f"{path}.ephemeralContainers[{i}]", causes)
    restart = spec.get("restartPolicy")
    if not restart:
        causes.required(f"{path}.restartPolicy")
    elif restart not in RESTART_POLICIES:
        causes.unsupported(f"{path}.restartPolicy", restart, RESTART_POLICIES)
    dns = spec.get("dnsPolicy")
    if not dns:
        causes.required(f"{path}.dnsPolicy")
    elif dns not in _DNS_POLICIES:
        causes.unsupported(f"{path}.dnsPolicy", dns, _DNS_POLICIES)
    identifiers.labels(causes, f"{path}.nodeSelector", spec.get("nodeSelector"))
    deadline = spec.get("activeDeadlineSeconds")
    if is_int(deadline) and not 1 <= deadline <= _INT32_MAX:
        causes.invalid(
            f"{path}.activeDeadlineSeconds",
            deadline,
            f"must be between 1 and {_INT32_MAX}, inclusive",
        )
    for key in ("hostname", "subdomain"):
        value = spec.get(key)
        if isinstance(value, str) and value:
            identifiers.dns_label(causes, f"{path}.{key}", value)
    tolerations(list_at(spec, "tolerations"), f"{path}.tolerations", causes)


def _volumes(volumes: list[Any], path: str, causes: Causes) -> set[str]:
    """The names of the volumes without errors (mounts may name only those)."""
    good: set[str] = set()
    seen: set[str] = set()
    for i, vol in enumerate(volumes):
        if not isinstance(vol, dict):
            continue
        at = f"{path}[{i}]"
        found = Causes()
        sources = [s for s in VOLUME_SOURCES if vol.get(s) is not None]
        if sources and sources[0] in _SOURCE_REQUIRES:
            required = _SOURCE_REQUIRES[sources[0]]
            if not dict_at(vol, sources[0]).get(required):
                found.required(f"{at}.{sources[0]}.{required}")
        for extra in sources[1:]:
            found.forbidden(f"{at}.{extra}", "may not specify more than 1 volume type")
        if not sources:
            found.required(at, "must specify a volume type")
        name = vol.get("name")
        if not name:
            found.required(f"{at}.name")
        elif isinstance(name, str):
            identifiers.dns_label(found, f"{at}.name", name)
        if isinstance(name, str) and name in seen:
            found.duplicate(f"{at}.name", name)
        if found:
            causes.items.extend(found.items)
        elif isinstance(name, str):
            good.add(name)
            seen.add(name)
    return good


def _container(
    c: Any,
    path: str,
    volumes: set[str],
    names: set[str],
    causes: Causes,
) -> None:
    if not isinstance(c, dict):
        return
    name = c.get("name")
    if not name:
        causes.required(f"{path}.name")
    elif isinstance(name, str):
        identifiers.dns_label(causes, f"{path}.name", name)
    if not c.get("image"):
        causes.required(f"{path}.image")
    policy = c.get("terminationMessagePolicy")
    if not policy:
        causes.required(f"{path}.terminationMessagePolicy")
    elif policy not in _MESSAGE_POLICIES:
        causes.unsupported(f"{path}.terminationMessagePolicy", policy, _MESSAGE_POLICIES)
    _ports(list_at(c, "ports"), f"{path}.ports", causes)
    _env(list_at(c, "env"), f"{path}.env", causes)
    _mounts(list_at(c, "volumeMounts"), f"{path}.volumeMounts", volumes, causes)
    pull = c.get("imagePullPolicy")
    if not pull:
        causes.required(f"{path}.imagePullPolicy")
    elif pull not in _PULL_POLICIES:
        causes.unsupported(f"{path}.imagePullPolicy", pull, _PULL_POLICIES)
    _resources(dict_at(c, "resources"), f"{path}.resources", causes)
    if isinstance(name, str):
        if name in names:
            causes.duplicate(f"{path}.name", name)
        else:
            names.add(name)


def _probe(probe: Obj | None, path: str, causes: Causes) -> None:
    """validateProbe: exactly one handler, counts not negative."""
    if probe is None:
        return
    handlers = [h for h in _PROBE_HANDLERS if probe.get(h) is not None]
    if not handlers:
        causes.required(path, "must specify a handler type")
    for extra in handlers[1:]:
        causes.forbidden(f"{path}.{extra}", "may not specify more than 1 handler type")
    for key in _PROBE_COUNTS:
        nonnegative(causes, f"{path}.{key}", probe.get(key))


def _ephemeral_only(c: Any, path: str, causes: Causes) -> None:
    """What a debugging container may not have, in the Go struct's field order."""
    if not isinstance(c, dict):
        return
    for field in _NOT_EPHEMERAL:
        if c.get(field):
            causes.forbidden(f"{path}.{field}", "cannot be set for an Ephemeral Container")


def _ports(ports: list[Any], path: str, causes: Causes) -> None:
    names: set[str] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        at = f"{path}[{i}]"
        name = port.get("name")
        if isinstance(name, str) and name:
            before = len(causes.items)
            identifiers.port_name(causes, f"{at}.name", name)
            if len(causes.items) == before:
                if name in names:
                    causes.duplicate(f"{at}.name", name)
                names.add(name)
        number = port.get("containerPort")
        if not number:
            causes.required(f"{at}.containerPort")
        else:
            _port_number(causes, f"{at}.containerPort", number)
        host = port.get("hostPort")
        if host:
            _port_number(causes, f"{at}.hostPort", host)
        protocol = port.get("protocol")
        if not protocol:
            causes.required(f"{at}.protocol")
        elif protocol not in _PROTOCOLS:
            causes.unsupported(f"{at}.protocol", protocol, _PROTOCOLS)


def _port_number(causes: Causes, field: str, value: Any) -> None:
    if is_int(value) and not 1 <= value <= 65535:
        causes.invalid(field, value, "must be between 1 and 65535, inclusive")


def _env(env: list[Any], path: str, causes: Causes) -> None:
    for i, var in enumerate(env):
        if not isinstance(var, dict):
            continue
        at = f"{path}[{i}]"
        name = var.get("name")
        if not name:
            causes.required(f"{at}.name")
        elif isinstance(name, str):
            identifiers.env_name(causes, f"{at}.name", name)
        source = var.get("valueFrom")
        if isinstance(source, dict):
            count = sum(1 for v in source.values() if v is not None)
            if count > 1:
                causes.invalid(
                    f"{at}.valueFrom", "", "may not have more than one field specified at a time"
                )
            elif count and var.get("value"):
                causes.invalid(
                    f"{at}.valueFrom", "", "may not be specified when `value` is not empty"
                )


def _mounts(mounts: list[Any], path: str, volumes: set[str], causes: Causes) -> None:
    points: set[str] = set()
    for i, mount in enumerate(mounts):
        if not isinstance(mount, dict):
            continue
        at = f"{path}[{i}]"
        name = mount.get("name") or ""
        if not name:
            causes.required(f"{at}.name")
        if name not in volumes:
            causes.not_found(f"{at}.name", name)
        point = mount.get("mountPath") or ""
        if not point:
            causes.required(f"{at}.mountPath")
        if point in points:
            causes.invalid(f"{at}.mountPath", point, "must be unique")
        points.add(point)


def _resources(resources: Obj, path: str, causes: Causes) -> None:
    limits = dict_at(resources, "limits")
    requests = dict_at(resources, "requests")
    for name in sorted(limits):
        _resource_value(causes, f"{path}.limits[{name}]", name, limits[name])
    for name in sorted(requests):
        value = requests[name]
        _resource_value(causes, f"{path}.requests[{name}]", name, value)
        if name in limits:
            wanted, limit = quantity.parse(value), quantity.parse(limits[name])
            if wanted is not None and limit is not None and wanted > limit:
                causes.invalid(
                    f"{path}.requests",
                    str(value),
                    f"must be less than or equal to {name} limit of {limits[name]}",
                )


def _resource_value(causes: Causes, field: str, name: str, value: Any) -> None:
    standard = name in _STANDARD_CONTAINER_RESOURCES or name.startswith("hugepages-")
    if not standard and "/" not in name:
        causes.invalid(field, name, "must be a standard resource type or fully qualified")
        causes.invalid(field, name, "must be a standard resource for containers")
    amount = quantity.parse(value)
    if amount is not None and amount < 0:
        causes.invalid(field, str(value), "must be greater than or equal to 0")


def tolerations(items: list[Any], path: str, causes: Causes) -> None:
    for i, tol in enumerate(items):
        if not isinstance(tol, dict):
            continue
        at = f"{path}[{i}]"
        key = tol.get("key") or ""
        operator = tol.get("operator") or ""
        value = tol.get("value") or ""
        effect = tol.get("effect") or ""
        if key:
            for problem in identifiers.label_key_problems(key):
                causes.invalid(f"{at}.key", key, problem)
        if not key and operator != "Exists":
            causes.invalid(
                f"{at}.operator",
                operator,
                'operator must be Exists when `key` is empty, which means "match all values and '
                'all keys"',
            )
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.invalid(
                f"{at}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"
            )
        if operator in ("Equal", ""):
            identifiers.label_value(causes, f"{at}.operator", value)
        elif operator == "Exists":
            if value:
                causes.invalid(
                    f"{at}.operator", value, "value must be empty when `operator` is 'Exists'"
                )
        else:
            causes.unsupported(f"{at}.operator", operator, ["Equal", "Exists"])
        if effect and effect not in _TAINT_EFFECTS:
            causes.unsupported(f"{at}.effect", effect, _TAINT_EFFECTS)

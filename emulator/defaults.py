"""API defaulting of built-in kinds: what kube-apiserver fills in on every write.

A real server decodes each request into the Go type and runs the group's ``SetDefaults_*``
functions, so ``kubectl create deployment`` reads back with a strategy, ``kubectl create job``
with its selector and labels, and a pod template with its restart policy. Clients (and our own
controllers) read those fields, so the emulator fills the same ones. Values the user gave are
never changed; values of the wrong type are left for validation to reject (defaulting never
raises).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from kubetrio.emulator import services
from kubetrio.emulator.admission.configs import MUTATING, VALIDATING, admit_configuration

Obj = dict[str, Any]

_POD_SPEC: tuple[tuple[str, Any], ...] = (
    ("restartPolicy", "Always"),
    ("terminationGracePeriodSeconds", 30),
    ("dnsPolicy", "ClusterFirst"),
    ("schedulerName", "default-scheduler"),
    ("securityContext", {}),
)
_CONTAINER: tuple[tuple[str, Any], ...] = (
    ("terminationMessagePath", "/dev/termination-log"),
    ("terminationMessagePolicy", "File"),
    ("resources", {}),
)
_PROBE: tuple[tuple[str, Any], ...] = (
    ("timeoutSeconds", 1),
    ("periodSeconds", 10),
    ("successThreshold", 1),
    ("failureThreshold", 3),
)
_HTTP_GET: tuple[tuple[str, Any], ...] = (("path", "/"), ("scheme", "HTTP"))


def _dict(parent: Obj, key: str) -> Obj | None:
    """``parent[key]`` when it is an object (created empty when absent), else None."""
    value = parent.setdefault(key, {})
    return value if isinstance(value, dict) else None


def _fill(target: Obj, pairs: tuple[tuple[str, Any], ...]) -> None:
    for key, value in pairs:
        if key not in target or target[key] is None:
            target[key] = value.copy() if isinstance(value, dict) else value


def _image_pull_policy(image: Any) -> str:
    """Always for ``:latest`` or an untagged image, IfNotPresent otherwise (by digest too)."""
    if not isinstance(image, str):
        return "IfNotPresent"
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _containers(spec: Obj, key: str) -> None:
    items = spec.get(key)
    if not isinstance(items, list):
        return
    for c in items:
        if not isinstance(c, dict):
            continue
        _fill(c, _CONTAINER)
        c.setdefault("imagePullPolicy", _image_pull_policy(c.get("image")))
        for port in c.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
        for key in ("livenessProbe", "readinessProbe", "startupProbe"):
            probe = c.get(key)
            if isinstance(probe, dict):
                _fill(probe, _PROBE)
                if isinstance(probe.get("httpGet"), dict):
                    _fill(probe["httpGet"], _HTTP_GET)


def pod_spec(spec: Obj) -> None:
    _fill(spec, _POD_SPEC)
    for volume in spec.get("volumes") or []:
        # A volume naming no source is an emptyDir (SetDefaults_Volume).
        if isinstance(volume, dict) and set(volume) <= {"name"}:
            volume["emptyDir"] = {}
    for key in ("initContainers", "containers", "ephemeralContainers"):
        _containers(spec, key)


def _pod_template(parent: Obj) -> None:
    template = _dict(parent, "template")
    if template is None:
        return
    spec = _dict(template, "spec")
    if spec is not None:
        pod_spec(spec)


def _rolling(spec: Obj, strategy_key: str, kind: str, rolling: Obj) -> None:
    strategy = _dict(spec, strategy_key)
    if strategy is None:
        return
    strategy.setdefault("type", kind)
    if strategy["type"] == kind:
        update = _dict(strategy, "rollingUpdate")
        if update is not None:
            for key, value in rolling.items():
                update.setdefault(key, value)


def _spec(obj: Obj) -> Obj | None:
    return _dict(obj, "spec")


def deployment(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    _rolling(spec, "strategy", "RollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _pod_template(spec)


def replicaset(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    _pod_template(spec)


def statefulset(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    _rolling(spec, "updateStrategy", "RollingUpdate", {"partition": 0})
    spec.setdefault("revisionHistoryLimit", 10)
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")
    _pod_template(spec)


def daemonset(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    _rolling(spec, "updateStrategy", "RollingUpdate", {"maxUnavailable": 1, "maxSurge": 0})
    spec.setdefault("revisionHistoryLimit", 10)
    _pod_template(spec)


def job(obj: Obj, uid: str) -> None:
    """The job's defaults plus the selector and labels the batch registry generates (unless
    ``manualSelector``), tying the job's pods to this job's uid."""
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    md = obj.get("metadata") or {}
    name = md.get("name")
    if uid and not spec.get("manualSelector") and "selector" not in spec:
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        spec["manualSelector"] = False
        template = _dict(spec, "template")
        metadata = _dict(template, "metadata") if template is not None else None
        labels = _dict(metadata, "labels") if metadata is not None else None
        if labels is not None:
            for key, value in (
                ("batch.kubernetes.io/controller-uid", uid),
                ("batch.kubernetes.io/job-name", name),
                ("controller-uid", uid),
                ("job-name", name),
            ):
                labels.setdefault(key, value)
    # A job without labels of its own is labelled as its pods are.
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if isinstance(md, dict) and template_labels and not md.get("labels"):
        md["labels"] = dict(template_labels)
    _pod_template(spec)


def cronjob(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    # The job template's own fields are left to the Job made from it (SetDefaults_Job takes
    # a Job); only its pod template is defaulted.
    template = _dict(spec, "jobTemplate")
    if template is not None:
        _dict(template, "metadata")
    job_spec = _dict(template, "spec") if template is not None else None
    if job_spec is not None:
        _pod_template(job_spec)


def secret(obj: Obj, uid: str) -> None:
    """``stringData`` is write-only: the v1 conversion encodes it into ``data`` (winning over
    a key there) and drops it."""
    obj.setdefault("type", "Opaque")
    strings = obj.pop("stringData", None)
    if isinstance(strings, dict) and strings:
        data = obj.get("data")
        if not isinstance(data, dict):
            data = obj["data"] = {}
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def priorityclass(obj: Obj, uid: str) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


def persistentvolume(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
    spec.setdefault("volumeMode", "Filesystem")
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict):
        host_path.setdefault("type", "")


_NODE_INFO = (
    "machineID",
    "systemUUID",
    "bootID",
    "kernelVersion",
    "osImage",
    "containerRuntimeVersion",
    "kubeletVersion",
    "kubeProxyVersion",
    "operatingSystem",
    "architecture",
)


def node(obj: Obj, uid: str) -> None:
    """Allocatable defaults to capacity (SetDefaults_NodeStatus); the daemon endpoints and node
    info structs are always written, zero-valued until a kubelet reports."""
    status = _dict(obj, "status")
    if status is None:
        return
    capacity = status.get("capacity")
    if isinstance(capacity, dict) and status.get("allocatable") is None:
        status["allocatable"] = dict(capacity)
    endpoints = _dict(status, "daemonEndpoints")
    if endpoints is not None:
        kubelet = _dict(endpoints, "kubeletEndpoint")
        if kubelet is not None:
            kubelet.setdefault("Port", 0)
    info = _dict(status, "nodeInfo")
    if info is not None:
        _fill(info, tuple((key, "") for key in _NODE_INFO))


def event(obj: Obj, uid: str) -> None:
    """A core Event's fields without omitempty read back as zero values."""
    _fill(
        obj,
        (
            ("source", {}),
            ("firstTimestamp", None),
            ("lastTimestamp", None),
            ("eventTime", None),
            ("reportingComponent", ""),
            ("reportingInstance", ""),
        ),
    )


def role_binding(obj: Obj, uid: str) -> None:
    """Users and groups are named in the RBAC group (service accounts in the core one, which
    reads back as no apiGroup at all)."""
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group"):
            subject.setdefault("apiGroup", "rbac.authorization.k8s.io")


def persistentvolumeclaim(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is not None:
        spec.setdefault("volumeMode", "Filesystem")


def _requests_from_limits(spec: Obj) -> None:
    """A container's unset requests are its limits (SetDefaults_Pod)."""
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            resources = c.get("resources") if isinstance(c, dict) else None
            if not isinstance(resources, dict):
                continue
            limits = resources.get("limits")
            if not isinstance(limits, dict) or not limits:
                continue
            requests = resources.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)


def pod(obj: Obj, uid: str) -> None:
    spec = _spec(obj)
    if spec is not None:
        pod_spec(spec)
        # Defaulted on the Pod itself (SetDefaults_Pod), never in a workload's pod template.
        _fill(spec, (("enableServiceLinks", True),))
        _requests_from_limits(spec)


def podtemplate(obj: Obj, uid: str) -> None:
    _pod_template(obj)


def replicationcontroller(obj: Obj, uid: str) -> None:
    """SetDefaults_ReplicationController: one replica, selector and labels from the
    template's labels."""
    spec = _spec(obj)
    if spec is None:
        return
    template = _dict(spec, "template")
    labels = (template.get("metadata") or {}).get("labels") if template is not None else None
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        md = obj.setdefault("metadata", {})
        if isinstance(md, dict) and not md.get("labels"):
            md["labels"] = dict(labels)
    spec.setdefault("replicas", 1)
    _pod_template(spec)


def _protocols(ports: Any) -> None:
    for port in ports if isinstance(ports, list) else []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")


def endpoints(obj: Obj, uid: str) -> None:
    for subset in obj.get("subsets") or []:
        if isinstance(subset, dict):
            _protocols(subset.get("ports"))


def endpointslice(obj: Obj, uid: str) -> None:
    """Ports default to TCP; an endpoint's conditions are a struct Go always writes."""
    _protocols(obj.get("ports"))
    for endpoint in obj.get("endpoints") or []:
        if isinstance(endpoint, dict):
            endpoint.setdefault("conditions", {})


def limitrange(obj: Obj, uid: str) -> None:
    """SetDefaults_LimitRangeItem for Container items: default limits from max, default
    requests from the default limits, then from min."""
    for item in (_spec(obj) or {}).get("limits") or []:
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        request = dict(item.get("defaultRequest") or {})
        for key, value in (item.get("max") or {}).items():
            default.setdefault(key, value)
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in (item.get("min") or {}).items():
            request.setdefault(key, value)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


def _scaling_rules(rules: Any, window: int, policies: list[Obj]) -> Obj:
    out = dict(rules) if isinstance(rules, dict) else {}
    out.setdefault("stabilizationWindowSeconds", window)
    out.setdefault("selectPolicy", "Max")
    if not out.get("policies"):
        out["policies"] = policies
    return out


def hpa(obj: Obj, uid: str) -> None:
    """autoscaling/v2's SetDefaults_HorizontalPodAutoscaler: one replica at least, CPU at 80%
    when no metric is named, and a given behavior's rules filled in."""
    spec = _spec(obj)
    if spec is None:
        return
    _fill(spec, (("minReplicas", 1),))
    if not spec.get("metrics"):
        cpu = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}
        spec["metrics"] = [{"type": "Resource", "resource": cpu}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        up = [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ]
        down = [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), 0, up)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), 300, down)


def storageclass(obj: Obj, uid: str) -> None:
    _fill(obj, (("reclaimPolicy", "Delete"), ("volumeBindingMode", "Immediate")))


def csidriver(obj: Obj, uid: str) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        _fill(
            spec,
            (
                ("attachRequired", True),
                ("podInfoOnMount", False),
                ("volumeLifecycleModes", ["Persistent"]),
                ("storageCapacity", False),
                ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
                ("requiresRepublish", False),
                ("seLinuxMount", False),
            ),
        )


def csinode(obj: Obj, uid: str) -> None:
    # Stored as protobuf, where an empty list and none are one: it reads back as null.
    spec = _spec(obj)
    if spec is not None and spec.get("drivers") == []:
        spec["drivers"] = None


# Keyed by the store's resource key (plural.group).
DEFAULTERS: dict[str, Callable[[Obj, str], None]] = {
    "pods": pod,
    "secrets": secret,
    "events": event,
    "nodes": node,
    "rolebindings.rbac.authorization.k8s.io": role_binding,
    "clusterrolebindings.rbac.authorization.k8s.io": role_binding,
    "persistentvolumes": persistentvolume,
    "persistentvolumeclaims": persistentvolumeclaim,
    "deployments.apps": deployment,
    "replicasets.apps": replicaset,
    "statefulsets.apps": statefulset,
    "daemonsets.apps": daemonset,
    "jobs.batch": job,
    "cronjobs.batch": cronjob,
    "priorityclasses.scheduling.k8s.io": priorityclass,
    "services": lambda obj, uid: services.set_defaults(obj),
    "podtemplates": podtemplate,
    "replicationcontrollers": replicationcontroller,
    "endpoints": endpoints,
    "endpointslices.discovery.k8s.io": endpointslice,
    "limitranges": limitrange,
    "csinodes.storage.k8s.io": csinode,
    "storageclasses.storage.k8s.io": storageclass,
    "horizontalpodautoscalers.autoscaling": hpa,
    "csidrivers.storage.k8s.io": csidriver,
    # Defaults and the checks a configuration must pass before any webhook is called with it.
    MUTATING: lambda obj, uid: admit_configuration(obj, mutating=True),
    VALIDATING: lambda obj, uid: admit_configuration(obj, mutating=False),
}


def apply_defaults(resource_key: str, obj: Obj) -> None:
    """Fill the kind's defaults in place (a no-op for kinds without any)."""
    defaulter = DEFAULTERS.get(resource_key)
    if defaulter is not None:
        uid = (obj.get("metadata") or {}).get("uid") or ""
        defaulter(obj, uid if isinstance(uid, str) else "")

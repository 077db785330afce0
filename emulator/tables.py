"""Server-side Table output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``), so
``kubectl get`` prints the columns a real cluster prints."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from kubetrio.emulator.clock import parse_rfc3339
from kubetrio.emulator.kinds import ResourceType

Row = list[Any]
Column = tuple[str, str, int]  # (name, type, priority)


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 60 * 3:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if d < 365 * 2:
        return f"{d}d"
    y = d // 365
    if d < 365 * 8:
        return f"{y}y{d % 365}d" if d % 365 else f"{y}y"
    return f"{y}y"


def age(ts: Any, now: dt.datetime) -> str:
    t = parse_rfc3339(ts) if isinstance(ts, str) else None
    if t is None:
        return "<unknown>"
    return human_duration((now - t).total_seconds())


def _md(o: dict[str, Any]) -> dict[str, Any]:
    md: dict[str, Any] = o.get("metadata") or {}
    return md


def _spec(o: dict[str, Any]) -> dict[str, Any]:
    v: dict[str, Any] = o.get("spec") or {}
    return v


def _status(o: dict[str, Any]) -> dict[str, Any]:
    v: dict[str, Any] = o.get("status") or {}
    return v


def _pod_row(o: dict[str, Any], now: dt.datetime) -> Row:
    st = _status(o)
    containers = _spec(o).get("containers") or []
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    phase = st.get("reason") or st.get("phase") or "Unknown"
    if _md(o).get("deletionTimestamp"):
        phase = "Terminating"
    return [
        _md(o).get("name"),
        f"{ready}/{len(containers)}",
        phase,
        restarts,
        age(_md(o).get("creationTimestamp"), now),
        st.get("podIP") or "<none>",
        _spec(o).get("nodeName") or "<none>",
    ]


def _node_row(o: dict[str, Any], now: dt.datetime) -> Row:
    conds = {c.get("type"): c.get("status") for c in _status(o).get("conditions") or []}
    ready = conds.get("Ready")
    status = "Ready" if ready == "True" else "NotReady" if ready == "False" else "Unknown"
    if _spec(o).get("unschedulable"):
        status += ",SchedulingDisabled"
    roles = sorted(
        k.partition("/")[2]
        for k in (_md(o).get("labels") or {})
        if k.startswith("node-role.kubernetes.io/")
    )
    info = _status(o).get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in _status(o).get("addresses") or []}
    return [
        _md(o).get("name"),
        status,
        ",".join(r for r in roles if r) or "<none>",
        age(_md(o).get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP") or "<none>",
        addrs.get("ExternalIP") or "<none>",
    ]


def _int_or_str(v: Any) -> Any:
    return "N/A" if v is None else v


_BUILTIN: dict[str, tuple[list[Column], Callable[[dict[str, Any], dt.datetime], Row]]] = {
    "pods": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
        ],
        _pod_row,
    ),
    "nodes": (
        [
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
        ],
        _node_row,
    ),
    "namespaces": (
        [("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)],
        lambda o, now: [
            _md(o).get("name"),
            _status(o).get("phase", ""),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "configmaps": (
        [("Name", "string", 0), ("Data", "integer", 0), ("Age", "string", 0)],
        lambda o, now: [
            _md(o).get("name"),
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "secrets": (
        [
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Data", "integer", 0),
            ("Age", "string", 0),
        ],
        lambda o, now: [
            _md(o).get("name"),
            o.get("type", "Opaque"),
            len(o.get("data") or {}),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "poddisruptionbudgets.policy": (
        [
            ("Name", "string", 0),
            ("Min Available", "string", 0),
            ("Max Unavailable", "string", 0),
            ("Allowed Disruptions", "integer", 0),
            ("Age", "string", 0),
        ],
        lambda o, now: [
            _md(o).get("name"),
            _int_or_str(_spec(o).get("minAvailable")),
            _int_or_str(_spec(o).get("maxUnavailable")),
            _status(o).get("disruptionsAllowed", 0),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "deployments.apps": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Up-to-date", "string", 0),
            ("Available", "string", 0),
            ("Age", "string", 0),
        ],
        lambda o, now: [
            _md(o).get("name"),
            f"{_status(o).get('readyReplicas', 0)}/{_spec(o).get('replicas', 1)}",
            _status(o).get("updatedReplicas", 0),
            _status(o).get("availableReplicas", 0),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "leases.coordination.k8s.io": (
        [("Name", "string", 0), ("Holder", "string", 0), ("Age", "string", 0)],
        lambda o, now: [
            _md(o).get("name"),
            _spec(o).get("holderIdentity", ""),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "persistentvolumeclaims": (
        [
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Volume", "string", 0),
            ("Age", "string", 0),
        ],
        lambda o, now: [
            _md(o).get("name"),
            _status(o).get("phase", "Pending"),
            _spec(o).get("volumeName", ""),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "persistentvolumes": (
        [
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Claim", "string", 0),
            ("Age", "string", 0),
        ],
        lambda o, now: [
            _md(o).get("name"),
            _status(o).get("phase", "Pending"),
            "/".join(
                x
                for x in (
                    (_spec(o).get("claimRef") or {}).get(k, "") for k in ("namespace", "name")
                )
                if x
            ),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "volumeattachments.storage.k8s.io": (
        [
            ("Name", "string", 0),
            ("Attacher", "string", 0),
            ("PV", "string", 0),
            ("Node", "string", 0),
            ("Attached", "boolean", 0),
            ("Age", "string", 0),
        ],
        lambda o, now: [
            _md(o).get("name"),
            _spec(o).get("attacher", ""),
            (_spec(o).get("source") or {}).get("persistentVolumeName", ""),
            _spec(o).get("nodeName", ""),
            bool(_status(o).get("attached")),
            age(_md(o).get("creationTimestamp"), now),
        ],
    ),
    "events": (
        [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
        ],
        lambda o, now: [
            age(
                o.get("lastTimestamp") or o.get("eventTime") or _md(o).get("creationTimestamp"), now
            ),
            o.get("type", ""),
            o.get("reason", ""),
            f"{str((o.get('involvedObject') or {}).get('kind', '')).lower()}/"
            f"{(o.get('involvedObject') or {}).get('name', '')}",
            o.get("message", ""),
        ],
    ),
    "customresourcedefinitions.apiextensions.k8s.io": (
        [("Name", "string", 0), ("Created At", "date", 0)],
        lambda o, now: [_md(o).get("name"), _md(o).get("creationTimestamp")],
    ),
}


def _labels(selector: Any) -> str:
    """labels.FormatLabels: sorted ``k=v`` pairs, or <none>."""
    if not isinstance(selector, dict) or not selector:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def _lb_ingress(o: dict[str, Any]) -> str:
    ingress = (_status(o).get("loadBalancer") or {}).get("ingress") or []
    return ",".join(i.get("ip") or i.get("hostname") or "" for i in ingress if isinstance(i, dict))


def _service_external_ip(o: dict[str, Any]) -> str:
    spec = _spec(o)
    kind = spec.get("type", "ClusterIP")
    external = list(spec.get("externalIPs") or [])
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        lb = _lb_ingress(o)
        return ",".join([*([lb] if lb else []), *external]) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _service_ports(o: dict[str, Any]) -> str:
    out = []
    for p in _spec(o).get("ports") or []:
        proto = p.get("protocol", "TCP")
        node = p.get("nodePort")
        out.append(f"{p.get('port')}:{node}/{proto}" if node else f"{p.get('port')}/{proto}")
    return ",".join(out) or "<none>"


def _service_row(o: dict[str, Any], now: dt.datetime) -> Row:
    spec = _spec(o)
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [
        _md(o).get("name"),
        spec.get("type", "ClusterIP"),
        ips[0] if ips else "<none>",
        _service_external_ip(o),
        _service_ports(o),
        age(_md(o).get("creationTimestamp"), now),
        _labels(spec.get("selector")),
    ]


def _conditions(o: dict[str, Any]) -> set[str]:
    return {
        str(c.get("type"))
        for c in _status(o).get("conditions") or []
        if isinstance(c, dict) and c.get("status") == "True"
    }


def _template_containers(pod_template: Any) -> tuple[str, str]:
    containers = ((pod_template or {}).get("spec") or {}).get("containers") or []
    return (
        ",".join(str(c.get("name", "")) for c in containers),
        ",".join(str(c.get("image", "")) for c in containers),
    )


def _selector_string(selector: Any) -> str:
    """metav1.FormatLabelSelector for the matchLabels/matchExpressions kubectl shows."""
    if not isinstance(selector, dict):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        op, values = e.get("operator", ""), ",".join(e.get("values") or [])
        if op in ("In", "NotIn"):
            parts.append(f"{e.get('key')} {op.lower()} ({values})")
        elif op == "Exists":
            parts.append(str(e.get("key")))
        elif op == "DoesNotExist":
            parts.append(f"!{e.get('key')}")
    return ",".join(parts) or "<none>"


def _job_row(o: dict[str, Any], now: dt.datetime) -> Row:
    spec, st = _spec(o), _status(o)
    conds = _conditions(o)
    if "Complete" in conds:
        status = "Complete"
    elif "Failed" in conds:
        status = "Failed"
    elif _md(o).get("deletionTimestamp"):
        status = "Terminating"
    elif "Suspended" in conds:
        status = "Suspended"
    elif "FailureTarget" in conds:
        status = "FailureTarget"
    elif "SuccessCriteriaMet" in conds:
        status = "SuccessCriteriaMet"
    else:
        status = "Running"
    succeeded = st.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif (spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start, end = (parse_rfc3339(str(st.get(k, ""))) for k in ("startTime", "completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    names, images = _template_containers(spec.get("template"))
    return [
        _md(o).get("name"),
        status,
        completions,
        duration,
        age(_md(o).get("creationTimestamp"), now),
        names,
        images,
        _selector_string(spec.get("selector")),
    ]


def _cronjob_row(o: dict[str, Any], now: dt.datetime) -> Row:
    spec, st = _spec(o), _status(o)
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = _template_containers(job_spec.get("template"))
    last = st.get("lastScheduleTime")
    return [
        _md(o).get("name"),
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        "True" if spec.get("suspend") else "False",  # the apiserver defaults suspend to false
        len(st.get("active") or []),
        age(last, now) if last else "<none>",
        age(_md(o).get("creationTimestamp"), now),
        names,
        images,
        _selector_string(job_spec.get("selector")),
    ]


def _ingress_row(o: dict[str, Any], now: dt.datetime) -> Row:
    spec = _spec(o)
    hosts = [r["host"] for r in spec.get("rules") or [] if isinstance(r, dict) and r.get("host")]
    shown = ",".join(hosts[:3]) + (f" + {len(hosts) - 3} more..." if len(hosts) > 3 else "")
    return [
        _md(o).get("name"),
        spec.get("ingressClassName") or "<none>",
        shown or "*",
        _lb_ingress(o),
        "80, 443" if spec.get("tls") else "80",
        age(_md(o).get("creationTimestamp"), now),
    ]


def _quota_row(o: dict[str, Any], now: dt.datetime) -> Row:
    hard = _spec(o).get("hard") or {}
    used = _status(o).get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        cell = f"{name}: {used.get(name, '0')}/{hard[name]}"
        (limits if name.startswith("limits") else requests).append(cell)
    return [
        _md(o).get("name"),
        age(_md(o).get("creationTimestamp"), now),
        ", ".join(requests),
        ", ".join(limits),
    ]


def _binding_row(o: dict[str, Any], now: dt.datetime) -> Row:
    ref = o.get("roleRef") or {}
    subjects = [s for s in o.get("subjects") or [] if isinstance(s, dict)]

    def names(kind: str) -> str:
        return ", ".join(str(s.get("name", "")) for s in subjects if s.get("kind") == kind)

    accounts = ", ".join(
        f"{s.get('namespace', '')}/{s.get('name', '')}"
        for s in subjects
        if s.get("kind") == "ServiceAccount"
    )
    return [
        _md(o).get("name"),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(_md(o).get("creationTimestamp"), now),
        names("User"),
        names("Group"),
        accounts,
    ]


_CREATED_AT: tuple[list[Column], Callable[[dict[str, Any], dt.datetime], Row]] = (
    [("Name", "string", 0), ("Created At", "date", 0)],
    lambda o, now: [_md(o).get("name"), _md(o).get("creationTimestamp")],
)
_BINDING_COLUMNS: list[Column] = [
    ("Name", "string", 0),
    ("Role", "string", 0),
    ("Age", "string", 0),
    ("Users", "string", 1),
    ("Groups", "string", 1),
    ("ServiceAccounts", "string", 1),
]
_TEMPLATE_COLUMNS: list[Column] = [
    ("Containers", "string", 1),
    ("Images", "string", 1),
    ("Selector", "string", 1),
]

# Kinds kubectl's imperative create makes, printed as kube's printers
# (pkg/printers/internalversion) print them.
_WEBHOOKS: tuple[list[Column], Callable[[dict[str, Any], dt.datetime], Row]] = (
    [("Name", "string", 0), ("Webhooks", "integer", 0), ("Age", "string", 0)],
    lambda o, now: [
        _md(o).get("name"),
        len(o.get("webhooks") or []),
        age(_md(o).get("creationTimestamp"), now),
    ],
)


def _labels_string(labels: Any) -> str:
    """labels.FormatLabels: sorted key=value pairs, ``<none>`` when there are none."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _at_most_three(items: list[str], empty: str) -> str:
    """The first three joined, then how many more, as kube's printers shorten lists."""
    if not items:
        return empty
    text = ",".join(items[:3])
    return text + (f" + {len(items) - 3} more..." if len(items) > 3 else "")


def _endpoints_row(o: dict[str, Any], now: dt.datetime) -> Row:
    shown: list[str] = []
    for subset in o.get("subsets") or []:
        ips = [str(a.get("ip", "")) for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        if not ports:
            shown += ips
        for port in ports:
            shown += [
                f"[{ip}]:{port.get('port')}" if ":" in ip else f"{ip}:{port.get('port')}"
                for ip in ips
            ]
    return [_md(o).get("name"), _at_most_three(shown, "<none>"), _age_of(o, now)]


def _endpointslice_row(o: dict[str, Any], now: dt.datetime) -> Row:
    ports = [str(p["port"]) for p in o.get("ports") or [] if p.get("port") is not None]
    addresses = [str(a) for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    return [
        _md(o).get("name"),
        o.get("addressType"),
        ",".join(ports) or "<unset>",
        _at_most_three(addresses, "<unset>"),
        _age_of(o, now),
    ]


def _hpa_target(metric: dict[str, Any]) -> str:
    source = metric.get(str(metric.get("type", "")).lower() or "resource") or {}
    target = source.get("target") or {}
    if target.get("type") == "Utilization":
        want = f"{target.get('averageUtilization')}%"
    else:
        want = str(target.get("averageValue") or target.get("value") or "<unknown>")
    name = source.get("name") or (source.get("metric") or {}).get("name") or ""
    return f"{name}: <unknown>/{want}" if name else f"<unknown>/{want}"


def _hpa_row(o: dict[str, Any], now: dt.datetime) -> Row:
    spec = _spec(o)
    ref = spec.get("scaleTargetRef") or {}
    targets = [_hpa_target(m) for m in spec.get("metrics") or [] if isinstance(m, dict)]
    minimum = spec.get("minReplicas")
    return [
        _md(o).get("name"),
        f"{ref.get('kind')}/{ref.get('name')}",
        _at_most_three(targets, "<none>").replace(",", ", "),
        str(minimum) if minimum is not None else "<unset>",
        spec.get("maxReplicas", 0),
        _status(o).get("currentReplicas", 0),
        _age_of(o, now),
    ]


def _owner_name(o: dict[str, Any]) -> str:
    for ref in _md(o).get("ownerReferences") or []:
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower() + (f".{group}" if group else "")
            return f"{kind}/{ref.get('name')}"
    return "<none>"


def _storageclass_row(o: dict[str, Any], now: dt.datetime) -> Row:
    name = str(_md(o).get("name"))
    annotations = _md(o).get("annotations") or {}
    if "true" in (
        annotations.get("storageclass.kubernetes.io/is-default-class"),
        annotations.get("storageclass.beta.kubernetes.io/is-default-class"),
    ):
        name += " (default)"
    return [
        name,
        o.get("provisioner"),
        o.get("reclaimPolicy") or "Delete",
        o.get("volumeBindingMode") or "Immediate",
        bool(o.get("allowVolumeExpansion")),
        _age_of(o, now),
    ]


def _csidriver_row(o: dict[str, Any], now: dt.datetime) -> Row:
    spec = _spec(o)
    audiences = [str(t.get("audience", "")) for t in spec.get("tokenRequests") or []]
    return [
        _md(o).get("name"),
        spec.get("attachRequired", True),
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        ",".join(audiences) or "<unset>",
        bool(spec.get("requiresRepublish")),
        ",".join(spec.get("volumeLifecycleModes") or []) or "<none>",
        _age_of(o, now),
    ]


def _ingressclass_row(o: dict[str, Any], now: dt.datetime) -> Row:
    params = _spec(o).get("parameters")
    shown = "<none>"
    if isinstance(params, dict):
        group = params.get("apiGroup")
        kind = f"{params.get('kind')}.{group}" if group else str(params.get("kind"))
        shown = f"{kind}/{params.get('name')}"
    return [_md(o).get("name"), _spec(o).get("controller"), shown, _age_of(o, now)]


def _rc_row(o: dict[str, Any], now: dt.datetime) -> Row:
    containers, images = _template_containers(_spec(o).get("template"))
    st = _status(o)
    return [
        _md(o).get("name"),
        _spec(o).get("replicas", 0),
        st.get("replicas", 0),
        st.get("readyReplicas", 0),
        _age_of(o, now),
        containers,
        images,
        _labels_string(_spec(o).get("selector")),
    ]


def _age_of(o: dict[str, Any], now: dt.datetime) -> str:
    return age(_md(o).get("creationTimestamp"), now)


# The kinds controllers commonly watch, as kube's printers print them.
_WATCHED: dict[str, tuple[list[Column], Callable[[dict[str, Any], dt.datetime], Row]]] = {
    "endpoints": (
        [("Name", "string", 0), ("Endpoints", "string", 0), ("Age", "string", 0)],
        _endpoints_row,
    ),
    "endpointslices.discovery.k8s.io": (
        [
            ("Name", "string", 0),
            ("AddressType", "string", 0),
            ("Ports", "string", 0),
            ("Endpoints", "string", 0),
            ("Age", "string", 0),
        ],
        _endpointslice_row,
    ),
    "horizontalpodautoscalers.autoscaling": (
        [
            ("Name", "string", 0),
            ("Reference", "string", 0),
            ("Targets", "string", 0),
            ("MinPods", "string", 0),
            ("MaxPods", "string", 0),
            ("Replicas", "string", 0),
            ("Age", "string", 0),
        ],
        _hpa_row,
    ),
    "controllerrevisions.apps": (
        [
            ("Name", "string", 0),
            ("Controller", "string", 0),
            ("Revision", "string", 0),
            ("Age", "string", 0),
        ],
        lambda o, now: [_md(o).get("name"), _owner_name(o), o.get("revision", 0), _age_of(o, now)],
    ),
    "storageclasses.storage.k8s.io": (
        [
            ("Name", "string", 0),
            ("Provisioner", "string", 0),
            ("ReclaimPolicy", "string", 0),
            ("VolumeBindingMode", "string", 0),
            ("AllowVolumeExpansion", "string", 0),
            ("Age", "string", 0),
        ],
        _storageclass_row,
    ),
    "csidrivers.storage.k8s.io": (
        [
            ("Name", "string", 0),
            ("AttachRequired", "boolean", 0),
            ("PodInfoOnMount", "boolean", 0),
            ("StorageCapacity", "boolean", 0),
            ("TokenRequests", "string", 0),
            ("RequiresRepublish", "boolean", 0),
            ("Modes", "string", 0),
            ("Age", "string", 0),
        ],
        _csidriver_row,
    ),
    "csinodes.storage.k8s.io": (
        [("Name", "string", 0), ("Drivers", "integer", 0), ("Age", "string", 0)],
        lambda o, now: [
            _md(o).get("name"),
            len(_spec(o).get("drivers") or []),
            _age_of(o, now),
        ],
    ),
    "ingressclasses.networking.k8s.io": (
        [
            ("Name", "string", 0),
            ("Controller", "string", 0),
            ("Parameters", "string", 0),
            ("Age", "string", 0),
        ],
        _ingressclass_row,
    ),
    "networkpolicies.networking.k8s.io": (
        [("Name", "string", 0), ("Pod-Selector", "string", 0), ("Age", "string", 0)],
        lambda o, now: [
            _md(o).get("name"),
            _selector_string(_spec(o).get("podSelector")),
            _age_of(o, now),
        ],
    ),
    "runtimeclasses.node.k8s.io": (
        [("Name", "string", 0), ("Handler", "string", 0), ("Age", "string", 0)],
        lambda o, now: [_md(o).get("name"), o.get("handler"), _age_of(o, now)],
    ),
    "podtemplates": (
        [
            ("Name", "string", 0),
            ("Containers", "string", 0),
            ("Images", "string", 0),
            ("Pod Labels", "string", 0),
        ],
        lambda o, now: [
            _md(o).get("name"),
            *_template_containers(o.get("template")),
            _labels_string(((o.get("template") or {}).get("metadata") or {}).get("labels")),
        ],
    ),
    "replicationcontrollers": (
        [
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
            *_TEMPLATE_COLUMNS,
        ],
        _rc_row,
    ),
    "limitranges": _CREATED_AT,
    "csistoragecapacities.storage.k8s.io": _CREATED_AT,
}
_BUILTIN.update(_WATCHED)

_BUILTIN.update(
    {
        "services": (
            [
                ("Name", "string", 0),
                ("Type", "string", 0),
                ("Cluster-IP", "string", 0),
                ("External-IP", "string", 0),
                ("Port(s)", "string", 0),
                ("Age", "string", 0),
                ("Selector", "string", 1),
            ],
            _service_row,
        ),
        "serviceaccounts": (
            [("Name", "string", 0), ("Secrets", "string", 0), ("Age", "string", 0)],
            lambda o, now: [
                _md(o).get("name"),
                len(o.get("secrets") or []),
                age(_md(o).get("creationTimestamp"), now),
            ],
        ),
        "jobs.batch": (
            [
                ("Name", "string", 0),
                ("Status", "string", 0),
                ("Completions", "string", 0),
                ("Duration", "string", 0),
                ("Age", "string", 0),
                *_TEMPLATE_COLUMNS,
            ],
            _job_row,
        ),
        "cronjobs.batch": (
            [
                ("Name", "string", 0),
                ("Schedule", "string", 0),
                ("Timezone", "string", 0),
                ("Suspend", "boolean", 0),
                ("Active", "integer", 0),
                ("Last Schedule", "string", 0),
                ("Age", "string", 0),
                *_TEMPLATE_COLUMNS,
            ],
            _cronjob_row,
        ),
        "ingresses.networking.k8s.io": (
            [
                ("Name", "string", 0),
                ("Class", "string", 0),
                ("Hosts", "string", 0),
                ("Address", "string", 0),
                ("Ports", "string", 0),
                ("Age", "string", 0),
            ],
            _ingress_row,
        ),
        "priorityclasses.scheduling.k8s.io": (
            [
                ("Name", "string", 0),
                ("Value", "integer", 0),
                ("Global-Default", "boolean", 0),
                ("Age", "string", 0),
                ("PreemptionPolicy", "string", 0),
            ],
            lambda o, now: [
                _md(o).get("name"),
                o.get("value", 0),
                bool(o.get("globalDefault")),
                age(_md(o).get("creationTimestamp"), now),
                o.get("preemptionPolicy") or "PreemptLowerPriority",  # the apiserver's default
            ],
        ),
        "resourcequotas": (
            [
                ("Name", "string", 0),
                ("Age", "string", 0),
                ("Request", "string", 0),
                ("Limit", "string", 0),
            ],
            _quota_row,
        ),
        "roles.rbac.authorization.k8s.io": _CREATED_AT,
        "clusterroles.rbac.authorization.k8s.io": _CREATED_AT,
        "rolebindings.rbac.authorization.k8s.io": (_BINDING_COLUMNS, _binding_row),
        "clusterrolebindings.rbac.authorization.k8s.io": (_BINDING_COLUMNS, _binding_row),
        "mutatingwebhookconfigurations.admissionregistration.k8s.io": _WEBHOOKS,
        "validatingwebhookconfigurations.admissionregistration.k8s.io": _WEBHOOKS,
    }
)


_DEFAULT: tuple[list[Column], Callable[[dict[str, Any], dt.datetime], Row]] = (
    [("Name", "string", 0), ("Age", "string", 0)],
    lambda o, now: [_md(o).get("name"), age(_md(o).get("creationTimestamp"), now)],
)

_FILTER = re.compile(r'^\[\?\(@\.([\w.-]+)\s*==\s*["\']([^"\']*)["\']\)\]')


def json_path(obj: Any, path: str) -> Any:
    """The subset of JSONPath CRD printer columns use: ``.a.b``, ``[0]``, ``[?(@.k=="v")]``."""
    rest = path.strip()
    if rest.startswith("{") and rest.endswith("}"):
        rest = rest[1:-1]
    cur = obj
    while rest:
        if rest.startswith("."):
            m = re.match(r"^\.([\w-]+)", rest)
            if not m:
                return None
            cur = cur.get(m.group(1)) if isinstance(cur, dict) else None
            rest = rest[m.end() :]
        elif rest.startswith("[?"):
            m = _FILTER.match(rest)
            if not m or not isinstance(cur, list):
                return None
            key, want = m.groups()
            found = None
            for item in cur:
                if str(json_path(item, "." + key)) == want:
                    found = item
                    break
            cur = found
            rest = rest[m.end() :]
        elif rest.startswith("["):
            m = re.match(r"^\[(\d+)\]", rest)
            if not m or not isinstance(cur, list):
                return None
            i = int(m.group(1))
            cur = cur[i] if i < len(cur) else None
            rest = rest[m.end() :]
        else:
            return None
        if cur is None:
            return None
    return cur


def _custom(rt: ResourceType) -> tuple[list[Column], Callable[[dict[str, Any], dt.datetime], Row]]:
    cols = rt.printer_columns

    def row(o: dict[str, Any], now: dt.datetime) -> Row:
        cells: Row = [_md(o).get("name")]
        for c in cols:
            v = json_path(o, c.json_path)
            if c.type == "date":
                v = age(v, now) if v is not None else "<unknown>"
            elif v is None:
                v = None
            elif isinstance(v, dict | list):
                v = str(v)
            cells.append(v)
        return cells

    columns: list[Column] = [("Name", "string", 0)]
    columns += [(c.name, "string" if c.type == "date" else c.type, c.priority) for c in cols]
    return columns, row


def _converter(
    rt: ResourceType,
) -> tuple[list[Column], Callable[[dict[str, Any], dt.datetime], Row]]:
    if rt.key in _BUILTIN:
        return _BUILTIN[rt.key]
    if not rt.builtin and rt.printer_columns:
        return _custom(rt)
    return _DEFAULT


def table(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    rv: int | None,
    include_object: str = "Metadata",
    headers: bool = True,
    continue_token: str = "",
) -> dict[str, Any]:
    columns, row = _converter(rt)
    now = dt.datetime.now(dt.UTC)
    rows = []
    for o in objects:
        try:
            cells = row(o, now)
        except (AttributeError, TypeError, ValueError):
            # A malformed (but stored) object must not break `kubectl get` for its neighbours.
            cells = [_md(o).get("name")] + ["<invalid>"] * (len(columns) - 1)
        r: dict[str, Any] = {"cells": cells}
        if include_object == "Object":
            r["object"] = o
        elif include_object != "None":
            r["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": _md(o),
            }
        rows.append(r)
    meta: dict[str, Any] = {}
    if rv is not None:
        meta["resourceVersion"] = str(rv)
    if continue_token:
        meta["continue"] = continue_token
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": [
            {
                "name": n,
                "type": t,
                "format": "name" if n == "Name" else "",
                "description": "",
                "priority": p,
            }
            for n, t, p in columns
        ]
        if headers
        else [],
        "rows": rows,
    }

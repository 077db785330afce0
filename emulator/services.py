"""Services as the core registry makes them: defaults, cluster IPs and node ports.

kube-apiserver allocates a Service's cluster IP from ``--service-cluster-ip-range`` and its node
ports from ``--service-node-port-range`` when the Service is created, refusing values already
taken. ``kubectl create service nodeport`` and every client that reads ``spec.clusterIP`` see
these, so the emulator allocates them too (from kubeadm's default range, 10.96.0.0/12).
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterable
from typing import Any

from kubetrio.emulator import errors

CLUSTER_IP_RANGE = ipaddress.ip_network("10.96.0.0/12")
NODE_PORTS = range(30000, 32768)
# The in-cluster apiserver Service takes the first address, as on a real cluster.
KUBERNETES_SERVICE_IP = str(CLUSTER_IP_RANGE[1])

_rng = random.Random()


def _invalid(name: str, field: str, message: str) -> errors.ApiError:
    return errors.invalid("", "Service", name, [("FieldValueInvalid", field, message)])


def set_defaults(svc: dict[str, Any]) -> None:
    """SetDefaults_Service: type, session affinity, port protocol/targetPort, traffic policies."""
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "ClientIP":
        config = spec.setdefault("sessionAffinityConfig", {})
        if isinstance(config, dict):
            client_ip = config.setdefault("clientIP", {})
            if isinstance(client_ip, dict):
                client_ip.setdefault("timeoutSeconds", 10800)
    for port in spec.get("ports") or []:
        if not isinstance(port, dict):
            continue
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    kind = spec["type"]
    if kind != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    svc.setdefault("status", {"loadBalancer": {}})


def allocate(svc: dict[str, Any], existing: Iterable[dict[str, Any]]) -> None:
    """Give a new Service its cluster IP and node ports; 422 for values already taken or out of
    range, worded as the registry words them."""
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        return
    name = str((svc.get("metadata") or {}).get("name", ""))
    used_ips: set[str] = set()
    used_ports: set[int] = set()
    for other in existing:
        ospec = other.get("spec") or {}
        used_ips.update(ip for ip in ospec.get("clusterIPs") or [] if ip != "None")
        for p in ospec.get("ports") or []:
            if isinstance(p, dict) and isinstance(p.get("nodePort"), int):
                used_ports.add(p["nodePort"])
    kind = spec.get("type")
    if kind == "ExternalName":
        if not spec.get("externalName"):
            raise errors.invalid(
                "",
                "Service",
                name,
                [("FieldValueRequired", "spec.externalName", "Required value")],
            )
        return
    spec["clusterIP"] = _cluster_ip(name, spec.get("clusterIP"), used_ips)
    spec["clusterIPs"] = [spec["clusterIP"]]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    wants_node_ports = kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True)
    )
    if not wants_node_ports:
        return
    for i, port in enumerate(spec.get("ports") or []):
        if not isinstance(port, dict):
            continue
        port["nodePort"] = _node_port(name, i, port.get("nodePort"), used_ports)
        used_ports.add(port["nodePort"])


def keep_allocated(
    svc: dict[str, Any], old: dict[str, Any], existing: Iterable[dict[str, Any]]
) -> None:
    """An update that omits the allocated values keeps them (as the registry patches them in
    from the stored object); a type change that needs new ones allocates them."""
    spec, old_spec = svc.get("spec"), old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if key in old_spec and not spec.get(key):
            spec[key] = old_spec[key]
    external = ("NodePort", "LoadBalancer")
    if spec.get("type") not in external and old_spec.get("type") in external:
        # Type-dependent fields left as they were are dropped with the type.
        if spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
            spec.pop("externalTrafficPolicy", None)
        allocated = {p.get("nodePort") for p in old_spec.get("ports") or [] if isinstance(p, dict)}
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and port.get("nodePort") in allocated - {None}:
                port.pop("nodePort")
    old_ports = {
        (p.get("port"), p.get("protocol")): p.get("nodePort")
        for p in old_spec.get("ports") or []
        if isinstance(p, dict) and p.get("nodePort")
    }
    for port in spec.get("ports") or []:
        if isinstance(port, dict) and not port.get("nodePort"):
            kept = old_ports.get((port.get("port"), port.get("protocol")))
            if kept and spec.get("type") in ("NodePort", "LoadBalancer"):
                port["nodePort"] = kept
    needs_ip = spec.get("type") != "ExternalName" and not spec.get("clusterIP")
    needs_ports = spec.get("type") in ("NodePort", "LoadBalancer") and any(
        isinstance(p, dict) and not p.get("nodePort") for p in spec.get("ports") or []
    )
    if not (needs_ip or needs_ports):
        return
    this = _key(old)
    allocate(svc, (o for o in existing if _key(o) != this))


def _key(svc: dict[str, Any]) -> tuple[Any, Any]:
    md = svc.get("metadata") or {}
    return md.get("namespace"), md.get("name")


def _cluster_ip(name: str, wanted: Any, used: set[str]) -> str:
    if wanted == "None":
        return "None"
    if wanted:
        try:
            address = ipaddress.ip_address(str(wanted))
        except ValueError:
            raise _invalid(
                name, "spec.clusterIPs[0]", f'Invalid value: "{wanted}": must be a valid IP address'
            ) from None
        text = str(address)
        if address not in CLUSTER_IP_RANGE:
            raise _invalid(
                name,
                "spec.clusterIPs",
                f'Invalid value: []string{{"{text}"}}: failed to allocate IP {text}: the '
                f"provided IP ({text}) is not in the valid range. The range of valid IPs is "
                f"{CLUSTER_IP_RANGE}",
            )
        if text in used:
            raise _invalid(
                name,
                "spec.clusterIPs",
                f'Invalid value: []string{{"{text}"}}: failed to allocate IP {text}: provided '
                "IP is already allocated",
            )
        return text
    size = CLUSTER_IP_RANGE.num_addresses
    for _ in range(64):
        candidate = str(CLUSTER_IP_RANGE[_rng.randrange(2, size - 1)])
        if candidate not in used:
            return candidate
    raise errors.internal("failed to allocate a serviceIP: range is full")


def _node_port(name: str, index: int, wanted: Any, used: set[int]) -> int:
    field = f"spec.ports[{index}].nodePort"
    if wanted:
        if not isinstance(wanted, int) or wanted not in NODE_PORTS:
            raise _invalid(
                name,
                field,
                f"Invalid value: {wanted}: provided port is not in the valid range. The range "
                f"of valid ports is {NODE_PORTS.start}-{NODE_PORTS.stop - 1}",
            )
        if wanted in used:
            raise _invalid(
                name, field, f"Invalid value: {wanted}: provided port is already allocated"
            )
        return wanted
    free = [p for p in NODE_PORTS if p not in used]
    if not free:
        raise errors.internal("failed to allocate a nodePort: range is full")
    return _rng.choice(free)


def kubernetes_service() -> dict[str, Any]:
    """The ``default/kubernetes`` Service every cluster has."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "clusterIP": KUBERNETES_SERVICE_IP,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
        },
    }

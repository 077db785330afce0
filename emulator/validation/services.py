"""Service rules (``ValidateService``/``ValidateServiceUpdate``): a known type, ports (named
when there are several, unique names, numbers in range, a known protocol, a valid target),
and cluster IPs that never change once allocated. Allocation itself is ``emulator.services``."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator.validation import names, objectmeta
from kubetrio.emulator.validation.causes import Causes

Obj = dict[str, Any]

TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
AFFINITIES = ["ClientIP", "None"]
TRAFFIC_POLICIES = ["Cluster", "Local"]


def _port(port: Obj, at: str, named: bool, seen: set[str], causes: Causes) -> None:
    name = port.get("name") or ""
    if named and not name:
        causes.required(f"{at}.name")
    elif name:
        causes.extend(f"{at}.name", name, names.dns_label(name))
        if name in seen:
            causes.duplicate(f"{at}.name", name)
        seen.add(name)
    number = port.get("port")
    if isinstance(number, int):
        causes.extend(f"{at}.port", number, names.port_number(number))
    protocol = port.get("protocol") or ""
    if not protocol:
        causes.required(f"{at}.protocol")
    elif protocol not in PROTOCOLS:
        causes.unsupported(f"{at}.protocol", protocol, PROTOCOLS)
    target = port.get("targetPort")
    if isinstance(target, int) and not isinstance(target, bool):
        causes.extend(f"{at}.targetPort", target, names.port_number(target))
    elif isinstance(target, str):
        causes.extend(f"{at}.targetPort", target, names.port_name(target))


def create(obj: Obj, causes: Causes) -> None:
    spec = obj.get("spec") or {}
    kind = spec.get("type")
    ports = [p for p in spec.get("ports") or [] if isinstance(p, dict)]
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and kind != "ExternalName":
        causes.required("spec.ports")
    seen: set[str] = set()
    for i, port in enumerate(ports):
        _port(port, f"spec.ports[{i}]", len(ports) > 1, seen, causes)
    if kind is not None and kind not in TYPES:
        causes.unsupported("spec.type", kind, TYPES)
    affinity = spec.get("sessionAffinity")
    if affinity is not None and affinity not in AFFINITIES:
        causes.unsupported("spec.sessionAffinity", affinity, AFFINITIES)
    external = spec.get("externalTrafficPolicy")
    if external and kind not in ("NodePort", "LoadBalancer"):
        causes.invalid(
            "spec.externalTrafficPolicy",
            external,
            "may only be set for externally-accessible services",
        )
    elif external and external not in TRAFFIC_POLICIES:
        causes.unsupported("spec.externalTrafficPolicy", external, TRAFFIC_POLICIES)
    internal = spec.get("internalTrafficPolicy")
    if internal is not None and internal not in TRAFFIC_POLICIES:
        causes.unsupported("spec.internalTrafficPolicy", internal, TRAFFIC_POLICIES)


def update(new: Obj, old: Obj, causes: Causes) -> None:
    objectmeta.fields(new.get("metadata") or {}, causes)
    create(new, causes)
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    before = list(old_spec.get("clusterIPs") or [])
    after = list(spec.get("clusterIPs") or [])
    wanted = spec.get("clusterIP")
    if wanted and after and wanted != after[0]:
        after[0] = wanted  # clusterIP leads: the registry copies it into clusterIPs
    for i, ip in enumerate(before):
        if i < len(after) and after[i] != ip:
            causes.invalid(f"spec.clusterIPs[{i}]", after, "may not change once set")


RULES = {"services": (create, update, None)}

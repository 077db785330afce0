"""HorizontalPodAutoscalers between autoscaling/v2 (stored) and autoscaling/v1, as kube's
conversion does it: v1 has one CPU target and one current CPU figure; everything else v2 says
travels in ``autoscaling.alpha.kubernetes.io/*`` annotations, so an object written in one
version reads back whole in the other."""

from __future__ import annotations

import json
from typing import Any

Obj = dict[str, Any]

V1 = "autoscaling/v1"
V2 = "autoscaling/v2"
_METRICS = "autoscaling.alpha.kubernetes.io/metrics"
_CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"
_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_COMPACT = (",", ":")


def _is_cpu(metric: Any, key: str, field: str) -> bool:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return False
    source = metric.get("resource") or {}
    return bool(source.get("name") == "cpu" and (source.get(key) or {}).get(field) is not None)


def _spec_to_v1(metric: Obj) -> Obj:
    """A v2 MetricSpec as v1's annotation spells it (targets flattened into the source)."""
    kind = str(metric.get("type", ""))
    key = {"ContainerResource": "containerResource"}.get(kind, kind[:1].lower() + kind[1:])
    source = dict(metric.get(key) or {})
    target = source.pop("target", None) or {}
    flat: Obj = {}
    if kind in ("Resource", "ContainerResource"):
        flat["name"] = source.get("name")
        if kind == "ContainerResource":
            flat["container"] = source.get("container")
        if target.get("averageUtilization") is not None:
            flat["targetAverageUtilization"] = target["averageUtilization"]
        if target.get("averageValue") is not None:
            flat["targetAverageValue"] = target["averageValue"]
    else:
        flat.update(source)
        if target.get("value") is not None:
            flat["targetValue"] = target["value"]
        if target.get("averageValue") is not None:
            flat["targetAverageValue"] = target["averageValue"]
    return {"type": kind, key: flat}


def _status_to_v1(metric: Obj) -> Obj:
    kind = str(metric.get("type", ""))
    key = {"ContainerResource": "containerResource"}.get(kind, kind[:1].lower() + kind[1:])
    source = dict(metric.get(key) or {})
    current = source.pop("current", None) or {}
    flat: Obj = dict(source)
    if current.get("averageUtilization") is not None:
        flat["currentAverageUtilization"] = current["averageUtilization"]
    if current.get("averageValue") is not None:
        flat["currentAverageValue"] = current["averageValue"]
    if current.get("value") is not None:
        flat["currentValue"] = current["value"]
    return {"type": kind, key: flat}


def _go_names(value: Any) -> Any:
    """The behavior annotation is written from Go structs without JSON tags: field names
    capitalised, every field present."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: _go_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_go_names(v) for v in value]
    return value


def _rules_go(rules: Any) -> Any:
    if not isinstance(rules, dict):
        return None
    return {
        "StabilizationWindowSeconds": rules.get("stabilizationWindowSeconds"),
        "SelectPolicy": rules.get("selectPolicy"),
        "Policies": _go_names(rules.get("policies") or []),
        "Tolerance": rules.get("tolerance"),
    }


def to_v1(obj: Obj) -> Obj:
    """A stored (v2) HPA as autoscaling/v1 shows it."""
    spec: Obj = obj.get("spec") or {}
    status: Obj = obj.get("status") or {}
    annotations = dict((obj.get("metadata") or {}).get("annotations") or {})
    out_spec: Obj = {"scaleTargetRef": spec.get("scaleTargetRef")}
    for key in ("minReplicas", "maxReplicas"):
        if key in spec:
            out_spec[key] = spec[key]
    others = []
    for metric in spec.get("metrics") or []:
        if "targetCPUUtilizationPercentage" not in out_spec and _is_cpu(
            metric, "target", "averageUtilization"
        ):
            out_spec["targetCPUUtilizationPercentage"] = metric["resource"]["target"][
                "averageUtilization"
            ]
        elif isinstance(metric, dict):
            others.append(_spec_to_v1(metric))
    if others:
        annotations[_METRICS] = json.dumps(others, separators=_COMPACT)
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        go = {"ScaleUp": _rules_go(behavior.get("scaleUp"))}
        go["ScaleDown"] = _rules_go(behavior.get("scaleDown"))
        annotations[_BEHAVIOR] = json.dumps(go, separators=_COMPACT)
    out_status: Obj = {}
    for key in ("observedGeneration", "lastScaleTime"):
        if status.get(key) is not None:
            out_status[key] = status[key]
    out_status["currentReplicas"] = status.get("currentReplicas", 0)
    out_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    for metric in current:
        if _is_cpu(metric, "current", "averageUtilization"):
            value = metric["resource"]["current"]["averageUtilization"]
            out_status["currentCPUUtilizationPercentage"] = value
            break
    if current:
        annotations[_CURRENT] = json.dumps([_status_to_v1(m) for m in current], separators=_COMPACT)
    if status.get("conditions"):
        annotations[_CONDITIONS] = json.dumps(status["conditions"], separators=_COMPACT)
    metadata = dict(obj.get("metadata") or {})
    if annotations:
        metadata["annotations"] = annotations
    return {
        "kind": obj.get("kind", "HorizontalPodAutoscaler"),
        "apiVersion": V1,
        "metadata": metadata,
        "spec": out_spec,
        "status": out_status,
    }


def _spec_from_v1(metric: Obj) -> Obj:
    kind = str(metric.get("type", ""))
    key = {"ContainerResource": "containerResource"}.get(kind, kind[:1].lower() + kind[1:])
    flat = dict(metric.get(key) or {})
    target: Obj = {}
    if flat.get("targetAverageUtilization") is not None:
        target = {"type": "Utilization", "averageUtilization": flat.pop("targetAverageUtilization")}
    elif flat.get("targetAverageValue") is not None:
        target = {"type": "AverageValue", "averageValue": flat.pop("targetAverageValue")}
    elif flat.get("targetValue") is not None:
        target = {"type": "Value", "value": flat.pop("targetValue")}
    flat.pop("targetAverageValue", None)
    return {"type": kind, key: {**flat, "target": target}}


def _rules_from_go(rules: Any) -> Any:
    if not isinstance(rules, dict):
        return None
    out: Obj = {
        "stabilizationWindowSeconds": rules.get("StabilizationWindowSeconds"),
        "selectPolicy": rules.get("SelectPolicy"),
        "policies": [
            {
                "type": p.get("Type"),
                "value": p.get("Value"),
                "periodSeconds": p.get("PeriodSeconds"),
            }
            for p in rules.get("Policies") or []
            if isinstance(p, dict)
        ],
    }
    if rules.get("Tolerance") is not None:
        out["tolerance"] = rules["Tolerance"]
    return {k: v for k, v in out.items() if v is not None}


def from_v1(obj: Obj) -> Obj:
    """An autoscaling/v1 HPA as it is stored (v2); its annotations give back what v1 cannot
    say. Status is left to the status writes (v1's current figures come from v2's)."""
    spec: Obj = obj.get("spec") or {}
    metadata = dict(obj.get("metadata") or {})
    annotations = dict(metadata.get("annotations") or {})
    metrics: list[Obj] = []
    cpu = spec.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        target = {"type": "Utilization", "averageUtilization": cpu}
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": target}})
    try:
        metrics += [_spec_from_v1(m) for m in json.loads(annotations.pop(_METRICS, "[]"))]
        behavior_go = json.loads(annotations.pop(_BEHAVIOR, "null"))
    except ValueError:
        behavior_go = None
    try:
        current = json.loads(annotations.pop(_CURRENT, "null"))
        conditions = json.loads(annotations.pop(_CONDITIONS, "null"))
    except ValueError:
        current = conditions = None
    out_spec: Obj = {"scaleTargetRef": spec.get("scaleTargetRef")}
    for key in ("minReplicas", "maxReplicas"):
        if key in spec:
            out_spec[key] = spec[key]
    if metrics:
        out_spec["metrics"] = metrics
    if isinstance(behavior_go, dict):
        behavior = {
            "scaleUp": _rules_from_go(behavior_go.get("ScaleUp")),
            "scaleDown": _rules_from_go(behavior_go.get("ScaleDown")),
        }
        out_spec["behavior"] = {k: v for k, v in behavior.items() if v is not None}
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    out: Obj = {
        "kind": obj.get("kind", "HorizontalPodAutoscaler"),
        "apiVersion": V2,
        "metadata": metadata,
        "spec": out_spec,
    }
    status = obj.get("status")
    if isinstance(status, dict):
        out["status"] = _status_from_v1(status, current, conditions)
    return out


def _status_from_v1(status: Obj, current: Any, conditions: Any) -> Obj:
    out: Obj = {
        k: status[k]
        for k in ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
        if status.get(k) is not None
    }
    metrics: list[Obj] = []
    for metric in current if isinstance(current, list) else []:
        kind = str(metric.get("type", ""))
        key = {"ContainerResource": "containerResource"}.get(kind, kind[:1].lower() + kind[1:])
        flat = dict(metric.get(key) or {})
        now: Obj = {}
        for v1_key, v2_key in (
            ("currentAverageUtilization", "averageUtilization"),
            ("currentAverageValue", "averageValue"),
            ("currentValue", "value"),
        ):
            if v1_key in flat:
                now[v2_key] = flat.pop(v1_key)
        metrics.append({"type": kind, key: {**flat, "current": now}})
    cpu = status.get("currentCPUUtilizationPercentage")
    if not metrics and cpu is not None:
        now = {"averageUtilization": cpu}
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "current": now}})
    out["currentMetrics"] = metrics or None
    if isinstance(conditions, list) and conditions:
        out["conditions"] = conditions
    return out


def convert(obj: Obj, api_version: str) -> Obj:
    """``obj`` (in either version) in ``api_version``."""
    have = obj.get("apiVersion")
    if have == api_version:
        return obj
    if api_version == V1:
        return to_v1(obj if have == V2 else from_v1(obj))
    return from_v1(obj)

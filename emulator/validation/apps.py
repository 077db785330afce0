"""apps/v1 workload rules (pkg/apis/apps/validation): Deployments, ReplicaSets, StatefulSets
and DaemonSets need a selector that matches their pod template, non-negative counts, a known
update strategy with sane rolling parameters and pods that restart Always; their selectors
(and most of a StatefulSet's spec) never change after create."""

from __future__ import annotations

import json
import re
from typing import Any

from kubetrio.emulator.validation import identifiers, labelselector
from kubetrio.emulator.validation.causes import Causes, GoValue
from kubetrio.emulator.validation.podspec import dict_at, is_int, nonnegative, validate_pod_spec

Obj = dict[str, Any]

_PERCENT = re.compile(r"[0-9]+%\Z")
_STS_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


def validate_template(template: Obj, path: str, causes: Causes) -> None:
    """ValidatePodTemplateSpec: the template's labels and its pod spec."""
    identifiers.labels(
        causes, f"{path}.metadata.labels", dict_at(template, "metadata").get("labels")
    )
    validate_pod_spec(dict_at(template, "spec"), f"{path}.spec", causes)


def _template_labels(template: Obj) -> Any:
    return dict_at(template, "metadata").get("labels")


def _selector_matches_template(spec: Obj, causes: Causes, path: str = "spec") -> None:
    template = dict_at(spec, "template")
    labels = _template_labels(template)
    if not labelselector.matches(spec.get("selector"), labels):
        causes.invalid(
            f"{path}.template.metadata.labels",
            labels,
            "`selector` does not match template `labels`",
        )


def _selector(spec: Obj, causes: Causes, kind: str, path: str = "spec") -> bool:
    """Required, valid and not empty; whether it converts to a selector."""
    selector = spec.get("selector")
    if selector is None:
        causes.required(f"{path}.selector")
    else:
        labelselector.validate(selector, f"{path}.selector", causes)
        if labelselector.is_empty(selector):
            causes.invalid(
                f"{path}.selector",
                labelselector.go_value(selector),
                f"empty selector is invalid for {kind}",
            )
    if not labelselector.convertible(selector):
        causes.invalid(
            f"{path}.selector", labelselector.go_value(selector), "invalid label selector"
        )
        return False
    return True


def _replica_set_template(spec: Obj, causes: Causes, kind: str) -> None:
    """ValidatePodTemplateSpecForReplicaSet: selector match, pod spec, restart Always."""
    template = dict_at(spec, "template")
    if spec.get("selector") is None or not labelselector.is_empty(spec.get("selector")):
        _selector_matches_template(spec, causes)
    validate_template(template, "spec.template", causes)
    _always(template, causes, kind)


def _always(template: Obj, causes: Causes, kind: str) -> None:
    pod = dict_at(template, "spec")
    restart = pod.get("restartPolicy")
    if restart != "Always":
        causes.unsupported("spec.template.spec.restartPolicy", restart, ["Always"])
    if pod.get("activeDeadlineSeconds") is not None:
        causes.forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            f"activeDeadlineSeconds in {kind} is not Supported",
        )


def _int_or_percent(value: Any) -> int:
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return value if is_int(value) else 0


def _positive_int_or_percent(causes: Causes, field: str, value: Any) -> None:
    if isinstance(value, str):
        if not _PERCENT.match(value):
            causes.invalid(
                field,
                value,
                "a valid percent string must be a numeric string followed by an ending '%' "
                "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            )
    else:
        nonnegative(causes, field, value)


def _not_over_100(causes: Causes, field: str, value: Any) -> None:
    if isinstance(value, str) and _PERCENT.match(value) and int(value[:-1]) > 100:
        causes.invalid(field, value, "must not be greater than 100%")


def _strategy_value(strategy: Obj, rolling_fields: tuple[str, ...]) -> GoValue:
    """The strategy as field.Error prints an internal Go struct: Go field names, nil as null."""
    rolling = strategy.get("rollingUpdate")
    if isinstance(rolling, dict):
        inner = ",".join(
            f"{json.dumps(f[0].upper() + f[1:])}:{json.dumps(rolling.get(f))}"
            for f in rolling_fields
        )
        rendered = "{" + inner + "}"
    else:
        rendered = "null"
    return GoValue(
        '{"Type":' + json.dumps(strategy.get("type", "")) + ',"RollingUpdate":' + rendered + "}"
    )


def _deployment_strategy(strategy: Obj, causes: Causes) -> None:
    path = "spec.strategy"
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            causes.forbidden(
                f"{path}.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"
            )
    elif kind == "RollingUpdate":
        if not isinstance(rolling, dict):
            causes.required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")
            return
        at = f"{path}.rollingUpdate"
        unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
        _positive_int_or_percent(causes, f"{at}.maxUnavailable", unavailable)
        _positive_int_or_percent(causes, f"{at}.maxSurge", surge)
        if _int_or_percent(unavailable) == 0 and _int_or_percent(surge) == 0:
            causes.invalid(f"{at}.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0")
        _not_over_100(causes, f"{at}.maxUnavailable", unavailable)
    else:
        causes.unsupported(
            path,
            _strategy_value(strategy, ("maxUnavailable", "maxSurge")),
            ["Recreate", "RollingUpdate"],
        )


def _deployment_spec(spec: Obj, causes: Causes) -> None:
    nonnegative(causes, "spec.replicas", spec.get("replicas"))
    if _selector(spec, causes, "deployment"):
        _replica_set_template(spec, causes, "ReplicaSet")
    _deployment_strategy(dict_at(spec, "strategy"), causes)
    nonnegative(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    nonnegative(causes, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    deadline = spec.get("progressDeadlineSeconds")
    if is_int(deadline):
        nonnegative(causes, "spec.progressDeadlineSeconds", deadline)
        ready = spec.get("minReadySeconds")
        if deadline <= (ready if is_int(ready) else 0):
            causes.invalid(
                "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
            )


def _immutable_selector(new: Obj, old: Obj, causes: Causes) -> None:
    selector = dict_at(new, "spec").get("selector")
    if selector != dict_at(old, "spec").get("selector"):
        causes.invalid("spec.selector", labelselector.go_value(selector), "field is immutable")


def deployment_create(obj: Obj, causes: Causes) -> None:
    _deployment_spec(dict_at(obj, "spec"), causes)


def deployment_update(new: Obj, old: Obj, causes: Causes) -> None:
    _deployment_spec(dict_at(new, "spec"), causes)
    _immutable_selector(new, old, causes)


def _replica_set_spec(spec: Obj, causes: Causes) -> None:
    nonnegative(causes, "spec.replicas", spec.get("replicas"))
    nonnegative(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    if _selector(spec, causes, "deployment"):
        _replica_set_template(spec, causes, "ReplicaSet")


def replicaset_create(obj: Obj, causes: Causes) -> None:
    _replica_set_spec(dict_at(obj, "spec"), causes)


def replicaset_update(new: Obj, old: Obj, causes: Causes) -> None:
    _replica_set_spec(dict_at(new, "spec"), causes)
    _immutable_selector(new, old, causes)


def _statefulset_spec(spec: Obj, causes: Causes) -> None:
    policy = spec.get("podManagementPolicy")
    if not policy:
        causes.required("spec.podManagementPolicy")
    elif policy not in ("OrderedReady", "Parallel"):
        causes.invalid("spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'")
    strategy = dict_at(spec, "updateStrategy")
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if not kind:
        causes.required("spec.updateStrategy")
    elif kind == "OnDelete":
        if rolling is not None:
            causes.invalid(
                "spec.updateStrategy.rollingUpdate",
                _rolling_value(rolling),
                "only allowed for updateStrategy 'RollingUpdate'",
            )
    elif kind == "RollingUpdate":
        if isinstance(rolling, dict):
            nonnegative(
                causes, "spec.updateStrategy.rollingUpdate.partition", rolling.get("partition")
            )
    else:
        causes.invalid(
            "spec.updateStrategy",
            _strategy_value(strategy, ("partition", "maxUnavailable")),
            "must be 'RollingUpdate' or 'OnDelete'",
        )
    nonnegative(causes, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    retention = dict_at(spec, "persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):
        value = retention.get(key)
        if value is not None and value not in ("Retain", "Delete"):
            causes.unsupported(
                f"spec.persistentVolumeClaimRetentionPolicy.{key}", value, ["Retain", "Delete"]
            )
    nonnegative(causes, "spec.replicas", spec.get("replicas"))
    nonnegative(causes, "spec.ordinals.start", dict_at(spec, "ordinals").get("start"))
    nonnegative(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    if _selector(spec, causes, "statefulset"):
        if spec.get("selector") is None or not labelselector.is_empty(spec.get("selector")):
            _selector_matches_template(spec, causes)
        validate_template(dict_at(spec, "template"), "spec.template", causes)
    _always(dict_at(spec, "template"), causes, "StatefulSet")


def _rolling_value(rolling: Any) -> GoValue:
    if not isinstance(rolling, dict):
        return GoValue("null")
    return GoValue(
        '{"Partition":'
        + json.dumps(rolling.get("partition"))
        + ',"MaxUnavailable":'
        + json.dumps(rolling.get("maxUnavailable"))
        + "}"
    )


def statefulset_create(obj: Obj, causes: Causes) -> None:
    _statefulset_spec(dict_at(obj, "spec"), causes)


def statefulset_update(new: Obj, old: Obj, causes: Causes) -> None:
    spec, old_spec = dict_at(new, "spec"), dict_at(old, "spec")
    _statefulset_spec(spec, causes)
    rest = {k: v for k, v in spec.items() if k not in _STS_MUTABLE}
    old_rest = {k: v for k, v in old_spec.items() if k not in _STS_MUTABLE}
    if rest != old_rest:
        causes.forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
            "'template', 'updateStrategy', 'revisionHistoryLimit', "
            "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )


def _daemonset_spec(spec: Obj, causes: Causes) -> None:
    selector = spec.get("selector")
    labelselector.validate(selector, "spec.selector", causes)
    if labelselector.convertible(selector):
        _selector_matches_template(spec, causes)
    if labelselector.is_empty(selector):
        causes.invalid(
            "spec.selector",
            labelselector.go_value(selector),
            "empty selector is invalid for daemonset",
        )
    template = dict_at(spec, "template")
    validate_template(template, "spec.template", causes)
    _always(template, causes, "DaemonSet")
    nonnegative(causes, "spec.minReadySeconds", spec.get("minReadySeconds"))
    strategy = dict_at(spec, "updateStrategy")
    kind = strategy.get("type")
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        at = "spec.updateStrategy.rollingUpdate"
        if not isinstance(rolling, dict):
            causes.required(at)
        else:
            unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
            _positive_int_or_percent(causes, f"{at}.maxUnavailable", unavailable)
            _positive_int_or_percent(causes, f"{at}.maxSurge", surge)
            _not_over_100(causes, f"{at}.maxUnavailable", unavailable)
            _not_over_100(causes, f"{at}.maxSurge", surge)
            has_unavailable = _int_or_percent(unavailable) != 0
            has_surge = _int_or_percent(surge) != 0
            if has_unavailable and has_surge:
                causes.invalid(
                    f"{at}.maxSurge", surge, "may not be set when maxUnavailable is non-zero"
                )
            elif not has_unavailable and not has_surge:
                causes.required(f"{at}.maxUnavailable", "cannot be 0 when maxSurge is 0")
    elif kind != "OnDelete":
        causes.unsupported(
            "spec.updateStrategy",
            _strategy_value(strategy, ("maxUnavailable", "maxSurge")),
            ["RollingUpdate", "OnDelete"],
        )
    nonnegative(causes, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))


def daemonset_create(obj: Obj, causes: Causes) -> None:
    _daemonset_spec(dict_at(obj, "spec"), causes)


def daemonset_update(new: Obj, old: Obj, causes: Causes) -> None:
    _immutable_selector(new, old, causes)
    _daemonset_spec(dict_at(new, "spec"), causes)


RULES = {
    "deployments.apps": (deployment_create, deployment_update, None),
    "replicasets.apps": (replicaset_create, replicaset_update, None),
    "statefulsets.apps": (statefulset_create, statefulset_update, None),
    "daemonsets.apps": (daemonset_create, daemonset_update, None),
}

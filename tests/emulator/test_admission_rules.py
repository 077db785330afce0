"""Pure logic of the emulator's webhook admission: which webhooks a request reaches, how a
refusal is worded and coded, and the defaults and checks of a configuration."""

from __future__ import annotations

from typing import Any

import pytest

from kubetrio.emulator.admission.configs import admit_configuration
from kubetrio.emulator.admission.dispatch import denied
from kubetrio.emulator.admission.rules import (
    Attributes,
    matched_version,
    namespace_selected,
    object_selected,
    rule_matches,
)
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.kinds import ResourceTypes

TYPES = ResourceTypes()
PODS = TYPES.by_key("pods")
NAMESPACES = TYPES.by_key("namespaces")
assert PODS is not None and NAMESPACES is not None


def attrs(sub: str = "", op: str = "CREATE", labels: dict[str, str] | None = None) -> Attributes:
    obj = {"metadata": {"name": "p", "labels": labels or {}}}
    return Attributes(PODS, "v1", op, "ns", "p", sub, obj, None, False)  # type: ignore[arg-type]


def rule(resources: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "operations": ["*"],
        "apiGroups": [""],
        "apiVersions": ["*"],
        "resources": resources,
    } | extra


@pytest.mark.parametrize(
    ("resources", "sub", "matches"),
    [
        (["pods"], "", True),
        (["pods"], "status", False),
        (["pods/*"], "status", True),
        (["pods/status"], "status", True),
        (["pods/status"], "", False),
        (["*"], "", True),
        (["*"], "status", False),
        (["*/*"], "eviction", True),
        (["*/status"], "status", True),
        (["nodes"], "", False),
    ],
)
def test_resources_and_subresources_match_as_kube_splits_them(
    resources: list[str], sub: str, matches: bool
) -> None:
    assert rule_matches(rule(resources), attrs(sub), "v1") is matches


def test_operations_groups_and_scope() -> None:
    assert not rule_matches(rule(["pods"], operations=["UPDATE"]), attrs(), "v1")
    assert not rule_matches(rule(["pods"], apiGroups=["apps"]), attrs(), "v1")
    assert rule_matches(rule(["pods"], scope="Namespaced"), attrs(), "v1")
    assert not rule_matches(rule(["pods"], scope="Cluster"), attrs(), "v1")


def test_match_policy_exact_needs_the_requested_version() -> None:
    hook = {"rules": [rule(["pods"], apiVersions=["v2"])], "matchPolicy": "Exact"}
    assert matched_version(hook, attrs()) is None


def test_selectors_look_at_new_or_old_labels_and_the_namespace() -> None:
    hook = {"objectSelector": {"matchLabels": {"a": "1"}}, "namespaceSelector": {}}
    assert object_selected(hook, attrs(labels={"a": "1"}))
    assert not object_selected(hook, attrs(labels={"a": "2"}))
    ns_hook = {
        "namespaceSelector": {
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]
        }
    }
    assert namespace_selected(ns_hook, attrs(), {"env": "prod"})
    assert not namespace_selected(ns_hook, attrs(), {})


def test_a_refusal_is_at_least_400_and_worded_as_kube_words_it() -> None:
    e = denied("d.example.com", {"code": 403, "reason": "Forbidden", "message": "no"})
    assert (e.code, e.reason, e.message) == (
        403,
        "Forbidden",
        'admission webhook "d.example.com" denied the request: no',
    )
    e = denied("d.example.com", {"code": 200})
    assert e.code == 400
    assert e.message == 'admission webhook "d.example.com" denied the request without explanation'
    assert denied("d.example.com", None).code == 400
    assert denied("d.example.com", {"reason": "Because"}).message.endswith("request: Because")


def test_a_configuration_is_defaulted_and_checked() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "c"},
        "webhooks": [
            {
                "name": "a.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"service": {"namespace": "n", "name": "s"}},
                "rules": [rule(["pods"])],
            }
        ],
    }
    admit_configuration(obj, mutating=True)
    hook = obj["webhooks"][0]
    assert hook["reinvocationPolicy"] == "Never" and hook["clientConfig"]["service"]["port"] == 443
    obj["webhooks"].append(dict(hook, sideEffects="Some"))
    with pytest.raises(ApiError) as caught:
        admit_configuration(obj, mutating=False)
    assert caught.value.code == 422
    assert 'webhooks[1].sideEffects: Unsupported value: "Some"' in caught.value.message
    assert 'webhooks[1].name: Duplicate value: "a.example.com"' in caught.value.message

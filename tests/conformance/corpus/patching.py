"""Strategic merge, merge and JSON patches, server-side apply, and the validation of request
options (dryRun, fieldManager, fieldValidation, force, content types)."""

from __future__ import annotations

from ..runner import APPLY, MERGE, Req, probe
from .objects import (
    CMS,
    DEPLOYMENTS,
    PODS,
    apply,
    cm,
    container,
    deployment,
    get,
    merge,
    post,
    put,
    setup,
    strategic,
)

CM = f"{CMS}/c"
D = f"{DEPLOYMENTS}/d"
P = f"{PODS}/p"


def containers(body: object) -> object:
    if not isinstance(body, dict) or "spec" not in body:
        return body
    spec = body["spec"]
    tpl = spec.get("template", {}).get("spec", spec)
    return [{k: c.get(k) for k in ("name", "image", "env")} for c in tpl.get("containers", [])]


TWO = [container("a"), container("b", image="nginx")]
TWO_CONTAINERS = {
    **deployment("d"),
    "spec": {
        **deployment("d")["spec"],
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": TWO}},
    },
}

PROBES = [
    # -- strategic merge patch
    probe(
        "patch.strategic-merges-containers-by-name",
        setup(post(DEPLOYMENTS, deployment("d"))),
        strategic(
            D,
            {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]
                        }
                    }
                }
            },
            view=containers,
        ),
    ),
    probe(
        "patch.strategic-adds-container",
        setup(post(DEPLOYMENTS, deployment("d"))),
        strategic(
            D,
            {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "nginx"}]}}}},
            view=containers,
        ),
    ),
    probe(
        "patch.strategic-delete-directive",
        setup(post(DEPLOYMENTS, TWO_CONTAINERS)),
        strategic(
            D,
            {"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}},
            view=containers,
        ),
    ),
    probe(
        "patch.strategic-replace-directive",
        setup(post(DEPLOYMENTS, deployment("d"))),
        strategic(
            D,
            {
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "x", "image": "y"}], "$patch": "replace"}
                    }
                }
            },
            view=containers,
        ),
    ),
    probe(
        "patch.strategic-set-element-order",
        setup(post(DEPLOYMENTS, TWO_CONTAINERS)),
        strategic(
            D,
            {
                "spec": {
                    "template": {
                        "spec": {
                            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                            "containers": [{"name": "a", "image": "busybox:2"}],
                        }
                    }
                }
            },
            view=containers,
        ),
    ),
    probe(
        "patch.strategic-null-removes-label",
        setup(post(CMS, cm("c", labels={"a": "1", "b": "2"}))),
        strategic(CM, {"metadata": {"labels": {"a": None}}}),
    ),
    probe(
        "patch.strategic-bad-directive",
        setup(post(DEPLOYMENTS, deployment("d"))),
        strategic(
            D,
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "$patch": "explode"}]}}}},
        ),
    ),
    # -- merge patch
    probe(
        "patch.merge-replaces-lists",
        setup(post(DEPLOYMENTS, deployment("d"))),
        merge(
            D,
            {"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "nginx"}]}}}},
            view=containers,
        ),
    ),
    probe(
        "patch.merge-invalid-result",
        setup(post(DEPLOYMENTS, deployment("d"))),
        merge(D, {"spec": {"template": {"spec": {"containers": None}}}}),
    ),
    probe("patch.merge-bad-json", setup(post(CMS, cm("c"))), merge(CM, b"{not json")),
    probe(
        "patch.merge-stale-resourceversion",
        setup(post(CMS, cm("c"))),
        merge(CM, {"metadata": {"resourceVersion": "1"}, "data": {"a": "2"}}),
    ),
    probe(
        "patch.merge-changes-name",
        setup(post(CMS, cm("c"))),
        merge(CM, {"metadata": {"name": "d"}}),
    ),
    probe(
        "patch.merge-changes-uid",
        setup(post(CMS, cm("c"))),
        merge(CM, {"metadata": {"uid": "00000000-0000-0000-0000-000000000000"}}),
    ),
    probe("patch.merge-no-op", setup(post(CMS, cm("c"))), merge(CM, {"data": {"a": "1"}})),
    probe(
        "patch.merge-dry-run",
        setup(post(CMS, cm("c"))),
        merge(f"{CM}?dryRun=All", {"data": {"a": "2"}}),
        get(CM),
    ),
    # -- server-side apply
    probe("apply.create", apply(CM, cm("c")), get(CM)),
    probe(
        "apply.update",
        setup(apply(CM, cm("c", {"a": "1", "b": "2"}))),
        apply(CM, cm("c", {"a": "3"})),
    ),
    probe(
        "apply.managed-fields",
        apply(CM, cm("c", labels={"x": "y"})),
        setup(merge(CM, {"data": {"z": "9"}})),
        get(CM),
        managed_fields=True,
    ),
    probe(
        "apply.conflict",
        setup(apply(CM, cm("c"), manager="first")),
        apply(CM, cm("c", {"a": "2"}), manager="second"),
        apply(CM, cm("c", {"a": "2"}), manager="second", force=True),
    ),
    probe(
        "apply.deployment",
        apply(D, deployment("d")),
        apply(
            D,
            {**deployment("d"), "spec": {**deployment("d")["spec"], "replicas": 3}},
            view=containers,
        ),
    ),
    probe("apply.no-api-version", apply(CM, {"kind": "ConfigMap", "metadata": {"name": "c"}})),
    probe("apply.no-kind", apply(CM, {"apiVersion": "v1", "metadata": {"name": "c"}})),
    probe("apply.no-field-manager", Req("PATCH", CM, cm("c"), ctype=APPLY)),
    probe("apply.name-mismatch", apply(CM, cm("other"))),
    probe(
        "apply.yaml-body",
        Req(
            "PATCH",
            f"{CM}?fieldManager=probe",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: x\n",
            ctype=APPLY,
        ),
    ),
    probe("apply.bad-yaml", Req("PATCH", f"{CM}?fieldManager=probe", "a: [b", ctype=APPLY)),
    # -- request options
    probe(
        "options.force-on-merge-patch",
        setup(post(CMS, cm("c"))),
        merge(f"{CM}?force=true", {"data": {}}),
    ),
    probe("options.force-on-create", post(f"{CMS}?force=true", cm("c"))),
    probe("options.field-manager-too-long", post(f"{CMS}?fieldManager={'m' * 129}", cm("c"))),
    probe("options.field-manager-128", post(f"{CMS}?fieldManager={'m' * 128}", cm("c"))),
    probe(
        "options.field-manager-too-long-on-patch",
        setup(post(CMS, cm("c"))),
        merge(f"{CM}?fieldManager={'m' * 129}", {"data": {}}),
    ),
    probe(
        "options.force-false-on-merge-patch",
        setup(post(CMS, cm("c"))),
        merge(f"{CM}?force=false", {"data": {}}),
    ),
    probe("options.field-manager-non-printable", post(f"{CMS}?fieldManager=a%09b", cm("c"))),
    probe(
        "options.several-bad-options",
        post(f"{CMS}?fieldManager={'m' * 129}&dryRun=Some&fieldValidation=Loose", cm("c")),
    ),
    probe(
        "options.yaml-body-on-put",
        setup(post(CMS, cm("c"))),
        Req(
            "PUT",
            CM,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n",
            ctype="application/yaml",
        ),
    ),
    probe("options.content-type-text-plain", post(CMS, "apiVersion: v1", ctype="text/plain")),
    probe(
        "options.patch-content-type-text-plain",
        setup(post(CMS, cm("c"))),
        Req("PATCH", CM, {"data": {}}, ctype="text/plain"),
    ),
    probe(
        "options.patch-content-type-json",
        setup(post(CMS, cm("c"))),
        Req("PATCH", CM, {"data": {}}, ctype="application/json"),
    ),
    probe(
        "options.yaml-body",
        post(
            CMS, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", ctype="application/yaml"
        ),
    ),
    probe("options.bad-dry-run", post(f"{CMS}?dryRun=Some", cm("c"))),
    probe(
        "options.bad-dry-run-on-delete",
        setup(post(CMS, cm("c"))),
        Req("DELETE", f"{CM}?dryRun=Some"),
    ),
    probe("options.bad-field-validation", post(f"{CMS}?fieldValidation=Loose", cm("c"))),
    probe(
        "options.field-validation-strict",
        post(
            f"{CMS}?fieldValidation=Strict",
            {**cm("c"), "extra": 1, "metadata": {"name": "c", "nope": 2}},
        ),
    ),
    probe(
        "options.field-validation-warn",
        post(f"{CMS}?fieldValidation=Warn", {**cm("c"), "extra": 1}, headers=("Warning",)),
    ),
    probe(
        "options.field-validation-duplicate-key",
        post(
            f"{CMS}?fieldValidation=Strict",
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1","a":"2"}}',
        ),
    ),
    probe(
        "options.unknown-query-parameter",
        post(f"{CMS}?bogus=1", cm("c"), view=lambda b: b.get("metadata", {}).get("name")),
    ),
    probe(
        "options.put-with-merge-content-type",
        setup(post(CMS, cm("c"))),
        Req("PUT", CM, cm("c"), ctype=MERGE),
    ),
    probe("options.empty-body", Req("POST", CMS, b"")),
    probe(
        "options.update-dry-run",
        setup(post(CMS, cm("c"))),
        put(f"{CM}?dryRun=All", cm("c", {"z": "1"})),
        get(CM),
    ),
]

"""ConfigMaps, Secrets, ServiceAccounts and Namespaces: the CRUD verbs and their validation."""

from __future__ import annotations

from ..runner import Poll, b64, probe
from .objects import (
    ACCOUNTS,
    CMS,
    NS,
    SECRETS,
    cm,
    delete,
    get,
    jsonpatch,
    merge,
    post,
    put,
    setup,
    strategic,
)

CM = f"{CMS}/c"


def secret(name: str, **fields: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


PROBES = [
    # -- ConfigMap CRUD
    probe("configmap.create", post(CMS, cm("c", labels={"x": "y"}, annotations={"k": "v"}))),
    probe("configmap.get", setup(post(CMS, cm("c"))), get(CM)),
    probe("configmap.get-missing", get(f"{CMS}/nope")),
    probe("configmap.create-twice", setup(post(CMS, cm("c"))), post(CMS, cm("c"))),
    probe(
        "configmap.update",
        post(CMS, cm("c"), capture={"rv": "metadata.resourceVersion"}),
        put(CM, {**cm("c", {"a": "2"}), "metadata": {"name": "c", "resourceVersion": "$rv"}}),
        get(CM),
    ),
    probe(
        "configmap.update-stale-resourceversion",
        setup(post(CMS, cm("c"))),
        setup(merge(CM, {"data": {"a": "2"}})),
        put(CM, {**cm("c", {"a": "3"}), "metadata": {"name": "c", "resourceVersion": "1"}}),
    ),
    probe(
        "configmap.update-unconditional", setup(post(CMS, cm("c"))), put(CM, cm("c", {"b": "2"}))
    ),
    probe("configmap.update-missing", put(f"{CMS}/nope", cm("nope"))),
    probe("configmap.update-name-mismatch", setup(post(CMS, cm("c"))), put(CM, cm("other"))),
    probe("configmap.create-namespace-mismatch", post(CMS, cm("c", namespace="elsewhere"))),
    probe("configmap.create-with-resourceversion", post(CMS, cm("c", resourceVersion="5"))),
    probe("configmap.create-no-name", post(CMS, {"apiVersion": "v1", "kind": "ConfigMap"})),
    probe(
        "configmap.generate-name",
        post(
            CMS,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}},
        ),
    ),
    probe("configmap.bad-name", post(CMS, cm("Bad_Name"))),
    probe("configmap.name-too-long", post(CMS, cm("n" * 254))),
    probe("configmap.bad-data-key", post(CMS, cm("c", {"a b": "1"}))),
    probe("configmap.bad-label-key", post(CMS, cm("c", labels={"-bad/key/x": "v"}))),
    probe("configmap.bad-label-value", post(CMS, cm("c", labels={"k": "bad value!"}))),
    probe("configmap.label-value-too-long", post(CMS, cm("c", labels={"k": "v" * 64}))),
    probe("configmap.bad-annotation-key", post(CMS, cm("c", annotations={"a b": "v"}))),
    probe("configmap.bad-label-key-prefix", post(CMS, cm("c", labels={"Bad_Prefix/x": "v"}))),
    probe("configmap.label-key-too-long", post(CMS, cm("c", labels={"k" * 64: "v"}))),
    probe("configmap.annotations-too-large", post(CMS, cm("c", annotations={"a": "b" * 262144}))),
    probe(
        "configmap.bad-generate-name",
        # The first cause: the others name the random name generated from the prefix.
        post(
            CMS,
            {"metadata": {"generateName": "Bad_"}},
            view=lambda b: (b.get("details") or {}).get("causes", [])[:1],
        ),
    ),
    probe("configmap.bad-finalizer", post(CMS, cm("c", finalizers=["no slash"]))),
    probe(
        "configmap.bad-label-on-update",
        setup(post(CMS, cm("c"))),
        merge(CM, {"metadata": {"labels": {"k": "bad value!"}}}),
    ),
    probe(
        "configmap.bad-data-key-on-update",
        setup(post(CMS, cm("c"))),
        merge(CM, {"data": {"a b": "1"}}),
    ),
    probe(
        "configmap.binary-data",
        post(CMS, {**cm("c"), "binaryData": {"bin": b64("\x00\x01raw")}}),
    ),
    probe("configmap.binary-data-not-base64", post(CMS, {**cm("c"), "binaryData": {"b": "%%%"}})),
    probe(
        "configmap.data-and-binary-same-key", post(CMS, {**cm("c"), "binaryData": {"a": "AA=="}})
    ),
    probe("configmap.key-starting-with-dots", post(CMS, cm("c", {"..a": "1"}))),
    probe("configmap.bad-binary-key", post(CMS, {**cm("c"), "binaryData": {"a b": "AA=="}})),
    probe(
        "configmap.made-immutable-with-edit",
        setup(post(CMS, cm("c"))),
        merge(CM, {"immutable": True, "data": {"a": "2"}}),
        merge(CM, {"metadata": {"annotations": {"note": "ok"}}}),
    ),
    probe(
        "configmap.immutable-edit",
        setup(post(CMS, {**cm("c"), "immutable": True})),
        merge(CM, {"data": {"a": "2"}}),
        merge(CM, {"immutable": False}),
        merge(CM, {"metadata": {"labels": {"may": "change"}}}),
    ),
    probe(
        "configmap.strategic-patch", setup(post(CMS, cm("c"))), strategic(CM, {"data": {"b": "2"}})
    ),
    probe(
        "configmap.merge-patch-remove-key",
        setup(post(CMS, cm("c", {"a": "1", "b": "2"}))),
        merge(CM, {"data": {"a": None}}),
    ),
    probe(
        "configmap.json-patch",
        setup(post(CMS, cm("c"))),
        jsonpatch(CM, [{"op": "add", "path": "/data/b", "value": "2"}]),
        jsonpatch(CM, [{"op": "replace", "path": "/data/a", "value": "9"}]),
        jsonpatch(CM, [{"op": "remove", "path": "/data/b"}]),
    ),
    probe(
        "configmap.json-patch-test-fails",
        setup(post(CMS, cm("c"))),
        jsonpatch(CM, [{"op": "test", "path": "/data/a", "value": "2"}]),
    ),
    probe(
        "configmap.json-patch-missing-path",
        setup(post(CMS, cm("c"))),
        jsonpatch(CM, [{"op": "replace", "path": "/data/zz", "value": "2"}]),
    ),
    probe(
        "configmap.json-patch-not-a-list", setup(post(CMS, cm("c"))), jsonpatch(CM, {"op": "add"})
    ),
    probe("configmap.patch-missing", merge(f"{CMS}/nope", {"data": {"a": "1"}})),
    probe("configmap.delete", setup(post(CMS, cm("c"))), delete(CM), get(CM)),
    probe("configmap.delete-missing", delete(f"{CMS}/nope")),
    probe(
        "configmap.generation-absent", setup(post(CMS, cm("c"))), merge(CM, {"data": {"a": "2"}})
    ),
    probe(
        "configmap.dry-run-create",
        post(f"{CMS}?dryRun=All", cm("c")),
        get(CM),
    ),
    probe("configmap.bad-json", post(CMS, b'{"apiVersion": "v1", "kind": "ConfigMap", ')),
    probe(
        "configmap.wrong-kind-on-path",
        post(CMS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}),
    ),
    probe(
        "configmap.missing-type-meta",
        post(CMS, {"metadata": {"name": "c"}, "data": {"a": "1"}}),
    ),
    probe("configmap.method-not-allowed", put(CMS, cm("c"))),
    probe("configmap.post-on-named", post(CM, cm("c"))),
    # -- Secret
    probe("secret.create", post(SECRETS, secret("s", data={"k": b64("v")}))),
    probe("secret.not-base64", post(SECRETS, secret("s", data={"k": "not base64!"}))),
    probe(
        "secret.string-data",
        post(SECRETS, secret("s", data={"a": b64("1")}, stringData={"a": "2", "b": "3"})),
    ),
    probe(
        "secret.type-immutable",
        setup(post(SECRETS, secret("s", data={"k": b64("v")}))),
        merge(f"{SECRETS}/s", {"type": "example.com/other"}),
    ),
    probe("secret.tls-missing-keys", post(SECRETS, secret("s", type="kubernetes.io/tls"))),
    probe(
        "secret.service-account-token-without-account",
        post(SECRETS, secret("s", type="kubernetes.io/service-account-token")),
    ),
    probe("secret.bad-key", post(SECRETS, secret("s", data={"a/b": b64("v")}))),
    probe(
        "secret.immutable-edit",
        setup(post(SECRETS, secret("s", data={"k": b64("v")}, immutable=True))),
        merge(f"{SECRETS}/s", {"data": {"k": b64("w")}}),
    ),
    probe(
        "secret.dockerconfigjson-missing-key",
        post(SECRETS, secret("s", type="kubernetes.io/dockerconfigjson")),
    ),
    probe(
        "secret.dockerconfigjson-not-json",
        post(
            SECRETS,
            secret(
                "s", type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": b64("x")}
            ),
        ),
    ),
    probe("secret.ssh-auth-missing-key", post(SECRETS, secret("s", type="kubernetes.io/ssh-auth"))),
    probe(
        "secret.basic-auth-missing-keys",
        post(SECRETS, secret("s", type="kubernetes.io/basic-auth")),
    ),
    probe(
        "secret.bad-key-on-update",
        setup(post(SECRETS, secret("s", data={"k": b64("v")}))),
        merge(f"{SECRETS}/s", {"data": {"a/b": b64("v")}}),
    ),
    probe(
        "secret.tls-keys-removed-on-update",
        setup(
            post(
                SECRETS,
                secret(
                    "s", type="kubernetes.io/tls", data={"tls.crt": b64("c"), "tls.key": b64("k")}
                ),
            )
        ),
        merge(f"{SECRETS}/s", {"data": {"tls.key": None}}),
    ),
    # -- ServiceAccount
    probe("serviceaccount.bad-name", post(ACCOUNTS, {"metadata": {"name": "Bad_Name"}})),
    probe(
        "serviceaccount.no-generation",
        setup(post(ACCOUNTS, {"metadata": {"name": "sa"}})),
        merge(f"{ACCOUNTS}/sa", {"automountServiceAccountToken": False}),
    ),
    probe(
        "serviceaccount.create",
        post(ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}),
        get(f"{ACCOUNTS}/sa"),
    ),
    probe(
        "serviceaccount.token-request",
        setup(post(ACCOUNTS, {"metadata": {"name": "sa"}})),
        post(
            f"{ACCOUNTS}/sa/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
        ),
    ),
    probe(
        "serviceaccount.token-request-short",
        setup(post(ACCOUNTS, {"metadata": {"name": "sa"}})),
        post(
            f"{ACCOUNTS}/sa/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 60},
            },
        ),
    ),
    probe(
        "serviceaccount.token-request-missing",
        post(
            f"{ACCOUNTS}/nobody/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        ),
    ),
    # -- Namespace
    probe("namespace.create-with-dots", post("/api/v1/namespaces", {"metadata": {"name": "a.b"}})),
    probe("namespace.uppercase", post("/api/v1/namespaces", {"metadata": {"name": "Upper"}})),
    probe("namespace.name-too-long", post("/api/v1/namespaces", {"metadata": {"name": "n" * 64}})),
    probe(
        "namespace.bad-label-on-update", merge(NS, {"metadata": {"labels": {"k": "bad value!"}}})
    ),
    probe("namespace.get", get(NS)),
    probe(
        "namespace.create",
        post("/api/v1/namespaces", {"metadata": {"name": "$ns-new"}}),
        delete("/api/v1/namespaces/$ns-new"),
    ),
    probe("namespace.delete-default", delete("/api/v1/namespaces/default")),
    probe("namespace.delete-kube-system", delete("/api/v1/namespaces/kube-system")),
    probe(
        "namespace.terminating",
        setup(post(CMS, cm("held", finalizers=["example.com/hold"]))),
        delete(NS),
        post(CMS, cm("late")),
        get(NS, view=lambda b: {"phase": (b.get("status") or {}).get("phase")}),
        # The namespace controller deletes what is left (a cluster does it a moment later).
        Poll(get(f"{CMS}/held"), until=lambda a: "deletionTimestamp" in a["body"]["metadata"]),
        setup(merge(f"{CMS}/held", {"metadata": {"finalizers": None}})),
    ),
    probe(
        "namespace.finalize",
        put(f"{NS}/finalize", {"metadata": {"name": "$ns"}, "spec": {"finalizers": []}}),
        get(NS),
    ),
    probe(
        "namespace.finalize-bad-name",
        put(f"{NS}/finalize", {"metadata": {"name": "$ns"}, "spec": {"finalizers": ["no slash"]}}),
    ),
    probe("namespace.finalize-by-patch", merge(f"{NS}/finalize", {"spec": {"finalizers": []}})),
    probe("namespace.update-keeps-finalizers", merge(NS, {"spec": {"finalizers": []}})),
    probe(
        "namespace.terminating-conditions",
        setup(post(CMS, cm("held", finalizers=["example.com/hold"]))),
        setup(delete(NS)),
        # The namespace controller reports what holds the namespace (a cluster a moment later).
        Poll(
            get(NS, view=lambda b: (b.get("status") or {}).get("conditions")),
            until=lambda a: len((a["body"].get("status") or {}).get("conditions") or []) >= 5,
        ),
        setup(merge(f"{CMS}/held", {"metadata": {"finalizers": None}})),
    ),
    probe(
        "namespace.name-immutable",
        merge(NS, {"metadata": {"name": "$ns-other"}}),
    ),
]

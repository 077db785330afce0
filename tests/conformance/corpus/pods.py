"""Pods and Services: defaults, validation, status on create, generation, subresources."""

from __future__ import annotations

from typing import Any

from ..runner import probe
from .objects import (
    ACCOUNTS,
    PODS,
    SERVICES,
    container,
    delete,
    get,
    merge,
    pod,
    post,
    put,
    service,
    setup,
    strategic,
)

P = f"{PODS}/p"
S = f"{SERVICES}/s"
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def causes_in_order(body: Any) -> Any:
    """An Invalid Status with its causes, and the message's list of them, in one order: the
    real server checks a resource list in Go's map order, which differs from call to call."""
    if not isinstance(body, dict) or not isinstance(body.get("details"), dict):
        return body
    causes = body["details"].get("causes") or []
    details = {
        **body["details"],
        "causes": sorted(causes, key=lambda c: (c["field"], c["message"])),
    }
    head, bracket, listed = str(body.get("message", "")).partition(": [")
    message = head + bracket + ", ".join(sorted(listed.removesuffix("]").split(", "))) + "]"
    return {**body, "details": details, "message": message if bracket else body.get("message")}


def priority_class(value: int) -> dict[str, Any]:
    """A class of this probe's own (cluster-scoped: named after the probe's namespace)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "pc-$ns"},
        "value": value,
    }


PROBES = [
    # -- Pod create and defaults
    probe("pod.create", post(PODS, pod("p"))),
    probe("pod.create-tagged-image", post(PODS, pod("p", container(image="busybox:1.36")))),
    probe(
        "pod.create-resources",
        post(
            PODS,
            pod(
                "p",
                container(
                    resources={
                        "requests": {"cpu": "1000m", "memory": "1024Mi"},
                        "limits": {"cpu": "2", "memory": "2Gi"},
                    }
                ),
            ),
        ),
    ),
    probe(
        "pod.create-guaranteed",
        post(PODS, pod("p", container(resources={"limits": {"cpu": "500m", "memory": "1Gi"}}))),
    ),
    probe("pod.create-with-ports", post(PODS, pod("p", container(ports=[{"containerPort": 80}])))),
    probe(
        "pod.status-dropped-on-create",
        post(PODS, {**pod("p"), "status": {"phase": "Running", "podIP": "10.1.2.3"}}),
    ),
    probe("pod.get", setup(post(PODS, pod("p"))), get(P)),
    # -- Pod validation
    probe("pod.no-containers", post(PODS, {**pod("p"), "spec": {"containers": []}})),
    probe(
        "pod.no-spec", post(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    ),
    probe("pod.bad-container-name", post(PODS, pod("p", container("C_1")))),
    probe("pod.duplicate-container-names", post(PODS, pod("p", container("c"), container("c")))),
    probe("pod.missing-image", post(PODS, pod("p", {"name": "c"}))),
    probe("pod.bad-restart-policy", post(PODS, pod("p", restartPolicy="Sometimes"))),
    probe(
        "pod.container-port-out-of-range",
        post(PODS, pod("p", container(ports=[{"containerPort": 70000}]))),
    ),
    probe(
        "pod.requests-above-limits",
        post(
            PODS,
            pod("p", container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})),
        ),
    ),
    probe(
        "pod.volume-mount-unknown-volume",
        post(PODS, pod("p", container(volumeMounts=[{"name": "v", "mountPath": "/v"}]))),
    ),
    probe("pod.bad-label-key", post(PODS, pod("p", labels={"a/b/c": "x"}))),
    probe("pod.bad-label-value", post(PODS, pod("p", labels={"a": "-x-"}))),
    # -- Pod updates, status, generation
    probe(
        "pod.update-image",
        setup(post(PODS, pod("p"))),
        strategic(P, {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}),
    ),
    probe(
        "pod.update-forbidden-field",
        setup(post(PODS, pod("p"))),
        strategic(P, {"spec": {"containers": [{"name": "c", "command": ["sh"]}]}}),
    ),
    probe(
        "pod.update-labels-keeps-generation",
        setup(post(PODS, pod("p"))),
        merge(P, {"metadata": {"labels": {"a": "b"}}}),
    ),
    probe(
        "pod.status-update",
        setup(post(PODS, pod("p"))),
        merge(f"{P}/status", {"status": {"phase": "Running"}, "spec": {"nodeName": "x"}}),
        get(f"{P}/status"),
    ),
    probe(
        "pod.main-update-ignores-status",
        setup(post(PODS, pod("p"))),
        merge(P, {"status": {"phase": "Running"}}),
    ),
    probe(
        "pod.binding",
        setup(post(PODS, pod("p"))),
        post(
            f"{P}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "p"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
            },
        ),
        get(P),
        post(
            f"{P}/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "p"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "n2"},
            },
        ),
        setup(delete(f"{P}?gracePeriodSeconds=0")),
    ),
    probe(
        "pod.node-name-immutable",
        setup(post(PODS, pod("p", nodeName="n1"))),
        merge(P, {"spec": {"nodeName": "n2"}}),
        setup(delete(f"{P}?gracePeriodSeconds=0")),
    ),
    probe("pod.unknown-subresource", setup(post(PODS, pod("p"))), get(f"{P}/bogus")),
    probe("pod.status-of-missing", get(f"{PODS}/nope/status")),
    # -- Pod spec rules
    probe(
        "pod.init-container-name-taken",
        post(PODS, pod("p", initContainers=[container("c")])),
    ),
    probe(
        "pod.bad-ports",
        post(
            PODS,
            pod(
                "p",
                container(
                    ports=[
                        {"containerPort": 0},
                        {"containerPort": 80, "protocol": "XX", "name": "Bad_Name"},
                        {"containerPort": 81, "hostPort": 70000},
                    ]
                ),
            ),
        ),
    ),
    probe(
        "pod.duplicate-port-names",
        post(
            PODS,
            pod(
                "p",
                container(
                    ports=[{"containerPort": 80, "name": "a"}, {"containerPort": 81, "name": "a"}]
                ),
            ),
        ),
    ),
    probe(
        "pod.bad-env",
        post(
            PODS,
            pod(
                "p",
                container(
                    env=[
                        {"name": ""},
                        {"name": "1=A", "value": "x"},
                        {
                            "name": "A",
                            "value": "x",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                        },
                    ]
                ),
            ),
        ),
    ),
    probe("pod.bad-dns-policy", post(PODS, pod("p", dnsPolicy="Bogus"))),
    probe(
        "pod.bad-tolerations",
        post(
            PODS,
            pod(
                "p",
                tolerations=[
                    {"key": "a", "operator": "Bogus"},
                    {"key": "b", "operator": "Exists", "value": "x"},
                    {"key": "c", "effect": "Bad"},
                    {"operator": "Equal", "value": "v"},
                    {"key": "d", "effect": "NoSchedule", "tolerationSeconds": 5},
                ],
            ),
        ),
    ),
    probe(
        "pod.bad-volumes",
        post(
            PODS,
            pod(
                "p",
                container(volumeMounts=[{"name": "x", "mountPath": "/x"}]),
                volumes=[
                    {"name": "v", "emptyDir": {}},
                    {"name": "v", "emptyDir": {}},
                    {"name": "Bad_", "emptyDir": {}},
                    {"name": "x", "emptyDir": {}, "hostPath": {"path": "/x"}},
                ],
            ),
        ),
    ),
    probe(
        "pod.volume-sources-missing-fields",
        post(
            PODS,
            pod(
                "p",
                volumes=[
                    {"name": "a", "secret": {}},
                    {"name": "b", "configMap": {}},
                    {"name": "c", "persistentVolumeClaim": {}},
                    {"name": "d", "hostPath": {}},
                ],
            ),
        ),
    ),
    probe(
        "pod.bad-probes",
        post(
            PODS,
            pod(
                "p",
                container(
                    livenessProbe={},
                    readinessProbe={
                        "exec": {"command": ["x"]},
                        "httpGet": {"port": 80},
                        "periodSeconds": -1,
                    },
                ),
            ),
        ),
    ),
    probe(
        "pod.volume-without-source",
        post(
            PODS,
            pod(
                "p",
                container(volumeMounts=[{"name": "w", "mountPath": "/w"}]),
                volumes=[{"name": "w"}],
            ),
        ),
    ),
    probe(
        "pod.negative-quantities",
        post(
            PODS,
            pod(
                "p",
                container(resources={"requests": {"cpu": "-1"}, "limits": {"memory": "-1Gi"}}),
            ),
            view=causes_in_order,
        ),
    ),
    probe(
        "pod.unknown-resource-name",
        post(PODS, pod("p", container(resources={"requests": {"foo": "1"}}))),
    ),
    probe(
        "pod.bad-pull-and-message-policies",
        post(
            PODS,
            pod("p", container(imagePullPolicy="Sometimes", terminationMessagePolicy="X")),
        ),
    ),
    probe("pod.bad-node-selector", post(PODS, pod("p", nodeSelector={"a/b/c": "x"}))),
    probe("pod.bad-hostname", post(PODS, pod("p", hostname="Bad_", subdomain="x_y"))),
    probe("pod.zero-active-deadline", post(PODS, pod("p", activeDeadlineSeconds=0))),
    # -- Pod admission: ServiceAccount, Priority, DefaultTolerationSeconds, QoS
    probe("pod.missing-service-account", post(PODS, pod("p", serviceAccountName="robot"))),
    probe(
        "pod.named-service-account",
        setup(
            post(
                ACCOUNTS,
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
            )
        ),
        post(PODS, pod("p", serviceAccountName="robot")),
    ),
    probe(
        "pod.account-pull-secrets",
        setup(
            post(
                ACCOUNTS,
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "puller"},
                    "imagePullSecrets": [{"name": "registry"}],
                    "automountServiceAccountToken": False,
                },
            )
        ),
        post(PODS, pod("p", serviceAccountName="puller")),
    ),
    probe("pod.no-automount", post(PODS, pod("p", automountServiceAccountToken=False))),
    probe(
        "pod.own-token-mount",
        post(
            PODS,
            pod(
                "p",
                container(
                    volumeMounts=[
                        {"name": "t", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
                    ]
                ),
                container("d"),
                volumes=[{"name": "t", "emptyDir": {}}],
            ),
        ),
    ),
    probe(
        "pod.init-container-token-mount",
        post(PODS, pod("p", initContainers=[container("init")])),
    ),
    probe(
        "pod.priority-class",
        setup(post(PRIORITY_CLASSES, priority_class(1000))),
        post(PODS, pod("p", priorityClassName="pc-$ns")),
        setup(delete(f"{PRIORITY_CLASSES}/pc-$ns")),
    ),
    probe(
        "pod.system-priority-class",
        post(PODS, pod("p", priorityClassName="system-cluster-critical")),
    ),
    probe("pod.missing-priority-class", post(PODS, pod("p", priorityClassName="nope"))),
    probe("pod.priority-given", post(PODS, pod("p", priority=5))),
    probe(
        "pod.own-not-ready-toleration",
        post(
            PODS,
            pod(
                "p",
                tolerations=[
                    {
                        "key": "node.kubernetes.io/not-ready",
                        "operator": "Exists",
                        "effect": "NoExecute",
                    }
                ],
            ),
        ),
    ),
    probe("pod.tolerates-everything", post(PODS, pod("p", tolerations=[{"operator": "Exists"}]))),
    probe(
        "pod.burstable",
        post(PODS, pod("p", container(resources={"limits": {"cpu": "1"}}))),
    ),
    # -- Pod updates: what may change
    probe(
        "pod.update-add-toleration",
        setup(post(PODS, pod("p"))),
        strategic(P, {"spec": {"tolerations": [{"key": "x", "operator": "Exists"}]}}),
    ),
    probe(
        "pod.update-active-deadline",
        setup(post(PODS, pod("p", activeDeadlineSeconds=100))),
        merge(P, {"spec": {"activeDeadlineSeconds": 50}}),
        merge(P, {"spec": {"activeDeadlineSeconds": 200}}),
    ),
    probe(
        "pod.update-add-container",
        setup(post(PODS, pod("p"))),
        strategic(P, {"spec": {"containers": [{"name": "d", "image": "busybox"}]}}),
    ),
    probe(
        "pod.update-removes-default-toleration",
        setup(post(PODS, pod("p"))),
        merge(P, {"spec": {"tolerations": [{"key": "x", "operator": "Exists"}]}}),
    ),
    # -- ephemeralcontainers and resize: one part of the pod changed, the rest ignored
    probe(
        "pod.ephemeral-containers",
        setup(post(PODS, pod("p"))),
        get(f"{P}/ephemeralcontainers"),
        strategic(
            f"{P}/ephemeralcontainers",
            {
                "spec": {
                    "ephemeralContainers": [
                        {"name": "dbg", "image": "busybox", "stdin": True, "tty": True}
                    ],
                    "containers": [{"name": "c", "image": "ignored"}],
                }
            },
        ),
    ),
    probe(
        "pod.ephemeral-container-with-ports",
        setup(post(PODS, pod("p"))),
        strategic(
            f"{P}/ephemeralcontainers",
            {
                "spec": {
                    "ephemeralContainers": [
                        {"name": "dbg", "image": "busybox", "ports": [{"containerPort": 80}]}
                    ]
                }
            },
        ),
    ),
    probe(
        "pod.ephemeral-container-name-taken",
        setup(post(PODS, pod("p"))),
        strategic(
            f"{P}/ephemeralcontainers",
            {"spec": {"ephemeralContainers": [{"name": "c", "image": "busybox"}]}},
        ),
    ),
    probe(
        "pod.resize",
        setup(
            post(
                PODS,
                pod(
                    "p",
                    container(resources={"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}),
                ),
            )
        ),
        strategic(
            f"{P}/resize",
            {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "ignored",
                            "resources": {"requests": {"cpu": "150m"}},
                        }
                    ]
                }
            },
        ),
        strategic(
            f"{P}/resize",
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "300m"}}}]}},
        ),
        strategic(
            f"{P}/resize",
            {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "resources": {"limits": {"cpu": None}, "requests": {"cpu": None}},
                        }
                    ]
                }
            },
        ),
    ),
    # -- Pod deletion
    probe("pod.delete-unscheduled", setup(post(PODS, pod("p"))), delete(P), get(P)),
    probe(
        "pod.delete-scheduled-is-graceful",
        setup(post(PODS, pod("p", nodeName="n1"))),
        delete(P),
        get(P),
        delete(f"{P}?gracePeriodSeconds=0"),
        get(P),
    ),
    probe(
        "pod.delete-grace-period",
        setup(post(PODS, pod("p", nodeName="n1"))),
        delete(f"{P}?gracePeriodSeconds=5"),
        delete(f"{P}?gracePeriodSeconds=60"),
        delete(f"{P}?gracePeriodSeconds=0"),
    ),
    # -- Service
    probe("service.create", post(SERVICES, service("s"))),
    probe(
        "service.create-named-target",
        post(SERVICES, service("s", {"name": "web", "port": 80, "targetPort": "http"})),
    ),
    probe("service.port-out-of-range", post(SERVICES, service("s", {"port": 70000}))),
    probe("service.no-ports", post(SERVICES, {**service("s"), "spec": {"selector": {"a": "b"}}})),
    probe(
        "service.duplicate-port-names",
        post(SERVICES, service("s", {"name": "a", "port": 80}, {"name": "a", "port": 81})),
    ),
    probe(
        "service.unnamed-ports",
        post(SERVICES, service("s", {"port": 80}, {"port": 81})),
    ),
    probe("service.bad-type", post(SERVICES, service("s", type="Bogus"))),
    probe("service.bad-protocol", post(SERVICES, service("s", {"port": 80, "protocol": "ICMP"}))),
    probe(
        "service.bad-port-name",
        post(SERVICES, service("s", {"name": "Web_Port", "port": 80})),
    ),
    probe("service.name-starting-with-digit", post(SERVICES, service("1abc"))),
    probe("service.dotted-name", post(SERVICES, service("a.b"))),
    probe(
        "service.external-name-missing",
        post(SERVICES, {**service("s"), "spec": {"type": "ExternalName"}}),
    ),
    probe(
        "service.port-out-of-range-on-update",
        setup(post(SERVICES, service("s"))),
        merge(S, {"spec": {"ports": [{"port": 0}]}}),
    ),
    probe(
        "service.status-dropped-on-create",
        post(
            SERVICES,
            {**service("s"), "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}},
        ),
    ),
    probe("service.bad-session-affinity", post(SERVICES, service("s", sessionAffinity="Sticky"))),
    probe(
        "service.external-traffic-policy-on-cluster-ip",
        post(SERVICES, service("s", externalTrafficPolicy="Local")),
    ),
    probe(
        "service.bad-target-port-name",
        post(SERVICES, service("s", {"port": 80, "targetPort": "Bad_Name"})),
    ),
    probe(
        "service.node-port-to-cluster-ip",
        setup(post(SERVICES, service("s", type="NodePort"))),
        merge(S, {"spec": {"type": "ClusterIP"}}),
    ),
    probe("service.node-port", post(SERVICES, service("s", type="NodePort"))),
    probe("service.headless", post(SERVICES, service("s", clusterIP="None"))),
    probe(
        "service.external-name",
        post(
            SERVICES,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "s"},
                "spec": {"type": "ExternalName", "externalName": "example.com"},
            },
        ),
    ),
    probe(
        "service.cluster-ip-immutable",
        setup(post(SERVICES, service("s", clusterIP="None"))),
        merge(S, {"spec": {"clusterIP": "10.0.0.77"}}),
    ),
    probe(
        "service.update-keeps-cluster-ip",
        setup(post(SERVICES, service("s"))),
        put(S, service("s", {"port": 81})),
    ),
    probe(
        "service.cluster-ip-outside-range",
        post(SERVICES, service("s", clusterIP="192.168.99.1")),
    ),
    probe("service.load-balancer", post(SERVICES, service("s", type="LoadBalancer"))),
    probe("service.delete", setup(post(SERVICES, service("s"))), delete(S)),
]

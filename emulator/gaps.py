"""What the emulator does not do that a cluster does: one table, shown by ``kubetrio emulator
--help`` and on the documentation site, so nobody is surprised.

Each row names the cluster behaviour and what happens here instead. Rows with a ``probe`` are
checked by ``tests/emulator/test_emulator_gaps.py``: if a gap is closed (or behaves differently from
what the row says) the test fails until the row changes, so the table cannot drift. Rows with
``conformance`` probes are checked against a real kube-apiserver by ``tests/conformance``: each
named probe must still differ from the cluster exactly where its entry in
``tests/conformance/differences.py`` says, and every other probe must answer as the cluster does.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from kubetrio.emulator import errors


@dataclass(frozen=True, slots=True)
class Gap:
    feature: str
    instead: str
    probe: str = ""  # id of the test that keeps this row honest ("" when none can)
    # ids of the conformance probes (tests/conformance/corpus) that show the difference
    conformance: tuple[str, ...] = ()


GAPS: tuple[Gap, ...] = (
    Gap(
        "containers: pods/log, exec, attach, portforward, proxy (also services/proxy, nodes/proxy)",
        "no container runs; these answer 501 with a Status naming the gap",
        "streaming-subresources",
    ),
    Gap(
        "admission policies (ValidatingAdmissionPolicy), PodSecurity, LimitRanger; webhooks "
        "reached through clientConfig.service, or on the scale subresource",
        "policies are not served (404); webhooks are called by clientConfig.url only, on "
        "every write but scale",
        "admission-webhooks",
    ),
    Gap(
        "ResourceQuota enforcement and usage",
        "quotas are stored; nothing is counted or refused",
        "quota-not-enforced",
    ),
    Gap(
        "managedFields for the writes a cluster's own components make (kube-apiserver's "
        "bootstrap objects, controllers, kubelets, the garbage collector), and fields a "
        "mutating webhook adds left unowned",
        "the emulator's own writes (bootstrap namespaces, the simulated cluster, garbage "
        "collection) record no entry, and an object made that way is not tracked until an "
        "apply credits what it holds to before-first-apply; a webhook's additions are "
        "credited to the writer",
        "own-writes-unmanaged",
    ),
    Gap(
        "CEL's type-checked compile, cost budgets and kube's CEL library extensions",
        "CEL rules are evaluated untyped, without budgets or kube's extension functions; a "
        'failed rule\'s message names the value\'s type ("object", "string") where a cluster '
        "shows the value",
        "cel-untyped",
        conformance=(
            "crd.cel-does-not-compile",
            "widget.cel-rule",
            "widget.cel-transition-rule",
        ),
    ),
    Gap(
        "responses as YAML or CBOR (Accept: application/yaml, application/cbor)",
        "answered as JSON (protobuf and JSON are served as a cluster serves them)",
        "yaml-as-json",
    ),
    Gap(
        "API aggregation (APIService), API priority and fairness",
        "APIServices are not served (404); FlowSchemas and PriorityLevelConfigurations are "
        "stored, but requests are not queued",
        "aggregation",
    ),
    Gap(
        "client certificates, OIDC and webhook authentication; RBAC role aggregation",
        "bearer tokens only (the admin token, ServiceAccount tokens); admin/edit/view are "
        "flat roles",
    ),
    Gap(
        "controllers of kube-controller-manager beyond garbage collection, namespaces and "
        "ServiceAccounts: Job/CronJob, endpoints, HPA, node IPAM, ...",
        "none run; with --simulate the Deployment/ReplicaSet/StatefulSet/DaemonSet, scheduling, "
        "kubelet, volume and disruption behaviours run",
        "jobs-not-run",
    ),
    # Found by the conformance corpus (tests/conformance), each shown by the probes it names.
    Gap(
        "metadata.uid immutable",
        "a uid in a patch is read as a precondition (409 Conflict)",
        conformance=("patch.merge-changes-uid",),
    ),
    Gap(
        "the rest of the pod and workload rules: volume sources' fields past the one each "
        "requires, probe handlers' own fields, lifecycle hooks, security contexts, affinity, "
        "topology spread constraints, DNS config; "
        "each field of a cron schedule; the "
        "kube-root-ca.crt ConfigMap in every namespace",
        "accepted as sent (a schedule needs five fields); no kube-root-ca.crt is made",
    ),
    Gap(
        "the Go structs some refusals print: a refused Pod update's diff and a Job's "
        "immutable template are kube's internal types as JSON, with Go field names and every "
        "unset field (a diff's line numbers counted in that rendering)",
        "the same message head; the object's own JSON is printed, unset fields left out",
        conformance=(
            "pod.update-forbidden-field",
            "pod.node-name-immutable",
            "job.template-immutable",
        ),
    ),
    Gap(
        "resource quantities in canonical form (1000m reads back as 1, 1024Mi as 1Gi)",
        "quantities are kept as written",
        conformance=("pod.create-resources",),
    ),
    Gap(
        "the unified diff of the old and new Go structs that ends the refusal of a change to a "
        "PersistentVolume's source or a PersistentVolumeClaim's spec",
        "the message ends with the rule's sentence",
        conformance=("pv.source-immutable", "pvc.spec-immutable"),
    ),
    Gap(
        "storage admission: the kubernetes.io/pv-protection and pvc-protection finalizers",
        "none are added",
        conformance=(
            "pv.create",
            "pvc.create",
            "pvc.storage-class",
            "pvc.status-dropped-on-create",
        ),
    ),
    Gap(
        "the answer to DELETE of an unscheduled Pod, deleted at once: with deletionTimestamp, "
        "grace 0 and its generation bumped",
        "the Pod as it was",
        conformance=("pod.delete-unscheduled",),
    ),
    Gap(
        'DeleteOptions checks: failed preconditions worded "the UID in the precondition '
        '(\u2026) does not match the UID in record (\u2026)" naming the Kind; '
        "gracePeriodSeconds=-1 accepted; a body of another kind refused (400)",
        '"Precondition failed: UID in precondition: \u2026" naming the resource; '
        "gracePeriodSeconds=-1 refused (400); any body kind is read as DeleteOptions",
        conformance=(
            "delete.precondition-uid",
            "delete.precondition-resourceversion",
            "delete.negative-grace-period",
            "delete.bad-body",
        ),
    ),
    Gap(
        "media types: 406 NotAcceptable for an unknown Accept transformation",
        "an unknown as= transformation is ignored",
        conformance=("table.unsupported-accept",),
    ),
    Gap(
        "the wording of decode and parse errors (malformed JSON or YAML, empty bodies, a body "
        "of another kind, JSON patches that are not lists, continue tokens, label and field "
        "selectors, a Service IP outside the range, strict decoding of custom resources, "
        "TokenRequest and review validation) and of Status details (JSON patch test failures "
        "carry no causes)",
        "the same code and reason, other words or details",
        conformance=(
            "configmap.json-patch-test-fails",
            "configmap.json-patch-not-a-list",
            "configmap.bad-json",
            "configmap.wrong-kind-on-path",
            "patch.merge-bad-json",
            "apply.bad-yaml",
            "options.empty-body",
            "list.bad-continue",
            "list.label-selector-bad",
            "list.field-selector-unsupported",
            "service.cluster-ip-outside-range",
            "widget.prune-unknown-strict",
            "widget.strategic-patch-unsupported",
            "serviceaccount.token-request-short",
            "auth.access-review-empty",
        ),
    ),
    Gap(
        "patch semantics: a JSON patch may replace a missing path; a strategic merge patch puts "
        "new list items first; an unknown $patch directive is a 500",
        "replace of a missing path fails (422); new items are appended; unknown directives are "
        "ignored",
        conformance=(
            "configmap.json-patch-missing-path",
            "patch.strategic-adds-container",
            "patch.strategic-bad-directive",
        ),
    ),
    Gap(
        "events.k8s.io/v1 Events (the core/v1 Events, converted between the shapes)",
        "not served (404; core/v1 Events are)",
        conformance=(
            "event.new-api-create",
            "event.new-api-missing-fields",
        ),
    ),
    Gap(
        "fields Go always writes (no omitempty): a custom "
        "resource list's metadata.continue \"\"; a TokenRequest's boundObjectRef null and uid; "
        "its default audience is the API server's issuer",
        "left out; the audience is https://kubernetes.default.svc.cluster.local",
        conformance=(
            "widget.list",
            "list.custom-resource-resourceversion-0-with-limit",
            "serviceaccount.token-request",
        ),
    ),
    Gap(
        "CustomResourceDefinitions: spec.conversion (strategy None) and names.listKind "
        "defaulted; validation errors under spec.validation.openAPIV3Schema with the versions "
        "or rule printed as Go values",
        "no conversion or listKind is added; errors name "
        "spec.versions[i].schema.openAPIV3Schema and print JSON",
        conformance=(
            "crd.get",
            "crd.create-and-delete",
            "crd.bad-schema-type",
            "crd.non-structural",
            "crd.cel-syntax-error",
            "crd.no-storage-version",
        ),
    ),
    Gap(
        "custom resource writes: an update must carry metadata.resourceVersion (422), "
        "apiVersion is required (400), a wrong kind is 422 Invalid; scale writes are validated "
        "against the CRD schema (errors name the custom resource)",
        "unconditional updates are taken, the URL's apiVersion is assumed, a wrong kind is 400, "
        "a negative scale is refused as a Scale",
        conformance=(
            "widget.update-invalid",
            "widget.no-api-version",
            "widget.wrong-kind",
            "widget.scale-negative",
        ),
    ),
    Gap(
        "list items of built-in kinds carry no apiVersion or kind",
        "list items carry apiVersion and kind",
        conformance=(
            "list.continue-with-resourceversion",
            "list.items",
            "kinds.hpa-v1-create",
        ),
    ),
    Gap(
        "SelfSubjectReview and SelfSubjectAccessReview answers: a review's creationTimestamp, "
        "the user's uid, no spec echoed back; an access review without creationTimestamp or an "
        "empty group",
        'creationTimestamp null, spec {}, no uid for the admin, group "" echoed back',
        conformance=(
            "auth.self-subject-review-admin",
            "auth.access-review-admin",
            "auth.self-subject-review-service-account",
            "auth.service-account-access-review-denied",
            "auth.service-account-access-review-allowed",
        ),
    ),
    Gap(
        "/version's emulationMajor, emulationMinor, minCompatibilityMajor and "
        "minCompatibilityMinor",
        "left out",
        conformance=(
            "server.version",
            "auth.service-account-version",
            "auth.anonymous-version",
        ),
    ),
    Gap(
        "discovery of everything a cluster serves: more API groups (autoscaling, "
        "apiregistration, discovery, flowcontrol, storage, ...) and resources (bindings, "
        "componentstatuses, endpoints, limitranges, podtemplates, replicationcontrollers, "
        "controllerrevisions, the streaming subresources), CRD resources with "
        "storageVersionHash and kube's verb order, a plain-text 404 page for unknown groups, "
        "OpenAPI paths of every subresource",
        "only what it serves is listed (namespaces with deletecollection), verbs sorted, "
        "storageVersionHash left out, unknown groups answer a 404 Status",
        conformance=(
            "discovery.apis",
            "discovery.core-v1",
            "discovery.aggregated-apis",
            "discovery.aggregated-api",
            "discovery.missing-group",
            "widget.short-name-discovery",
            "openapi.v2",
            "openapi.v3-missing",
        ),
    ),
    Gap(
        "PartialObjectMetadata(List) answers",
        "whole objects (clients fall back)",
        conformance=(
            "table.partial-object-metadata-list",
            "table.partial-object-metadata",
        ),
    ),
    Gap(
        "Table answers: column descriptions from the OpenAPI schema, the wide columns (priority "
        "1) of Pods, Deployments and Nodes, a ConfigMap's Data column typed string, a Pod's "
        "Restarts cell a string",
        "empty descriptions, the default columns only, other cell types",
        conformance=(
            "table.configmaps",
            "table.configmap-single",
            "table.pods",
            "table.deployments",
            "table.services",
            "table.namespace",
            "table.nodes-empty",
            "table.include-object-none",
            "table.include-object-object",
            "table.custom-resource-columns",
            "table.endpoints",
            "table.limitranges",
            "table.podtemplates",
            "table.controllerrevisions",
            "table.horizontalpodautoscalers",
            "table.endpointslices",
            "table.networkpolicies",
            "table.ingressclasses",
            "table.runtimeclasses",
            "table.storageclasses",
            "table.csidrivers",
            "table.csinodes",
            "table.csistoragecapacities",
        ),
    ),
)

# Subresources a cluster serves that need running containers; they answer 501 here.
UNSERVED_SUBRESOURCES: dict[str, frozenset[str]] = {
    "pods": frozenset({"log", "exec", "attach", "portforward", "proxy"}),
    "services": frozenset({"proxy"}),
    "nodes": frozenset({"proxy"}),
}


def unserved(plural: str, sub: str) -> errors.ApiError:
    """501 for a subresource a cluster serves and the emulator cannot (no containers run)."""
    return errors.ApiError(
        501,
        "",
        f"the kubetrio emulator does not serve {plural}/{sub}: no containers run here "
        "(kubetrio emulator --help lists what the emulator leaves out)",
        {"group": "", "kind": plural},
    )


def shown_by(gap: Gap, most: int = 3) -> str:
    """The conformance probes of a row, the first ``most`` by name."""
    names = [f"`{p}`" for p in gap.conformance[:most]]
    more = len(gap.conformance) - most
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def table() -> str:
    """The rows as a Markdown table (the documentation site's gaps page, filled in at build)."""
    lines = ["| a cluster does | the emulator | conformance probes |", "| --- | --- | --- |"]
    lines += [f"| {g.feature} | {g.instead} | {shown_by(g)} |" for g in GAPS]
    return "\n".join(lines)


def plain_text(width: int = 96) -> str:
    """The rows for ``--help``: one bullet per gap, wrapped."""
    out = ["what a cluster does that the emulator does not:"]
    for g in GAPS:
        text = f"{g.feature}: {g.instead}"
        out.append(
            textwrap.fill(
                text,
                width,
                initial_indent="  - ",
                subsequent_indent="    ",
                break_on_hyphens=False,  # "kube-api-access-*" and the like stay whole
                break_long_words=False,
            )
        )
    return "\n".join(out)

"""What the emulator does not do that a cluster does: one table, shown by ``kubetrio emulator
--help`` and in the README, so nobody is surprised.

Each row names the cluster behaviour and what happens here instead. Rows with a ``probe`` are
checked by ``tests/emulator/test_emulator_gaps.py``: if a gap is closed (or behaves differently from
what the row says) the test fails until the row changes, so the table cannot drift.
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
        "server-side apply field ownership (managedFields, conflicts between managers)",
        "apply merges into the live object: no conflicts, fields dropped from a later apply stay",
        "apply-no-conflicts",
    ),
    Gap(
        "CEL's type-checked compile, cost budgets and kube's CEL library extensions",
        "CEL rules are evaluated untyped, without budgets or kube's extension functions",
        "cel-untyped",
    ),
    Gap(
        "responses as YAML or CBOR (Accept: application/yaml, application/cbor)",
        "answered as JSON (protobuf and JSON are served as a cluster serves them)",
        "yaml-as-json",
    ),
    Gap(
        "API aggregation (APIService), API priority and fairness",
        "not served (404); requests are not queued",
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


def table() -> str:
    """The rows as a Markdown table (the README holds this text verbatim)."""
    lines = ["| a cluster does | the emulator |", "| --- | --- |"]
    lines += [f"| {g.feature} | {g.instead} |" for g in GAPS]
    return "\n".join(lines)


def plain_text(width: int = 96) -> str:
    """The rows for ``--help``: one bullet per gap, wrapped."""
    out = ["what a cluster does that the emulator does not:"]
    for g in GAPS:
        text = f"{g.feature}: {g.instead}"
        out.append(textwrap.fill(text, width, initial_indent="  - ", subsequent_indent="    "))
    return "\n".join(out)

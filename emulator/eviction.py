"""``POST pods/{name}/eviction``: the PodDisruptionBudget check of
pkg/registry/core/pod/storage/eviction.go, with its messages."""

from __future__ import annotations

from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.kinds import ResourceType
from kubetrio.emulator.options import parse_delete_options
from kubetrio.emulator.selectors import Requirement
from kubetrio.emulator.store import Store

EVICTION_API_VERSIONS = ("policy/v1", "policy/v1beta1")


def selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics for policy/v1: ``{}`` selects everything, null nothing."""
    if not isinstance(selector, dict):
        return False
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        return False
    for k, v in match_labels.items():
        if labels.get(k) != v:
            return False
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in expressions:
        if not isinstance(expr, dict) or not isinstance(expr.get("values") or [], list):
            return False
        op = ops.get(expr.get("operator", ""))
        if op is None:
            return False
        req = Requirement(str(expr.get("key", "")), op, tuple(expr.get("values") or ()))
        if not req.matches(labels):
            return False
    return True


def _can_ignore_pdb(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed", "Pending") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def _too_many(cause: str, retry_after: int = 0) -> errors.ApiError:
    err = errors.too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.", retry_after
    )
    assert err.details is not None
    err.details["causes"] = [{"reason": "DisruptionBudget", "message": cause}]
    return err


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


def _check_budget(
    store: Store, pdbs: ResourceType, pod: dict[str, Any], ns: str, name: str, dry_run: bool
) -> None:
    """Raise unless the pod's budget allows one more disruption, taking that disruption
    (EvictionREST.Create + checkAndDecrement)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    matching = [
        e
        for e in store.iter(pdbs, ns)
        if selector_matches((e.obj.get("spec") or {}).get("selector"), labels)
    ]
    if len(matching) > 1:
        # Returned by the registry as a failed Status object, not an error: no reason field.
        raise errors.ApiError(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource "
            "does not support.",
        )
    if not matching:
        return
    pdb = matching[0]
    pmd = pdb.obj["metadata"]
    spec = pdb.obj.get("spec") or {}
    st = pdb.obj.get("status") or {}
    pdb_name = pmd["name"]
    if not _pod_ready(pod):
        # An unready pod does not count as healthy: deleting it disrupts nothing more.
        if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
            return
        desired = _int(st.get("desiredHealthy"))
        if _int(st.get("currentHealthy")) >= desired > 0:
            return
    if _int(st.get("observedGeneration")) < _int(pmd.get("generation")):
        raise _too_many(
            f"The disruption budget {pdb_name} is still being processed by the server.", 10
        )
    allowed = _int(st.get("disruptionsAllowed"))
    if allowed < 0:
        raise errors.forbidden(
            "policy", "poddisruptionbudget", pdb_name, "pdb disruptions allowed is negative"
        )
    if len(st.get("disruptedPods") or {}) > 2000:
        raise errors.forbidden(
            "policy",
            "poddisruptionbudget",
            pdb_name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        )
    if allowed == 0:
        raise _too_many(
            f"The disruption budget {pdb_name} needs {_int(st.get('desiredHealthy'))} healthy "
            f"pods and has {_int(st.get('currentHealthy'))} currently"
        )
    if dry_run:
        return
    new = pdb.clone()
    nst = new.setdefault("status", {})
    nst["disruptionsAllowed"] = allowed - 1
    disrupted = nst.get("disruptedPods")
    disrupted = dict(disrupted) if isinstance(disrupted, dict) else {}
    disrupted[name] = store.clock.now_rfc3339()
    nst["disruptedPods"] = disrupted
    store.update(pdbs, ns, pdb_name, new, subresource="status")


def evict(
    store: Store,
    pods: ResourceType,
    pdbs: ResourceType,
    ns: str,
    name: str,
    body: Any,
    dry_run: bool,
) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    if (
        body.get("kind", "Eviction") != "Eviction"
        or body.get("apiVersion", "policy/v1") not in EVICTION_API_VERSIONS
    ):
        raise errors.bad_request(
            f"the kind in the data ({body.get('apiVersion')}, Kind={body.get('kind')}) is not "
            "an Eviction (policy/v1 or policy/v1beta1)"
        )
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise errors.bad_request("metadata: Invalid value: must be an object")
    body_name = metadata.get("name")
    if body_name and body_name != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = parse_delete_options(body.get("deleteOptions"), "deleteOptions.")
    dry_run = dry_run or options.dry_run
    pod = store.get(pods, ns, name)
    if not _can_ignore_pdb(pod.obj):
        _check_budget(store, pdbs, pod.obj, ns, name, dry_run)
    store.delete(
        pods,
        ns,
        name,
        grace=options.grace_period,
        preconditions=options.preconditions,
        dry_run=dry_run,
        propagation=options.propagation,
        orphan_dependents=options.orphan_dependents,
    )
    return errors.success(201)

"""The disruption controller: keeps each PodDisruptionBudget's status current, which is what the
eviction subresource decides on.

``expectedPods`` is the number of selected pods for an integer ``minAvailable``, otherwise the
scale of their controllers (ReplicaSet/StatefulSet ``spec.replicas``; a pod with no such
controller counts as itself). ``currentHealthy`` counts selected pods that are Ready, not being
deleted and not in ``disruptedPods``; entries there go once their pod is deleted or gone, or
after two minutes (the eviction that added them never happened).
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from kubetrio.emulator.clock import parse_rfc3339
from kubetrio.emulator.eviction import selector_matches
from kubetrio.sim.cluster.loop import Deadlines
from kubetrio.sim.cluster.objects import (
    Obj,
    Objects,
    condition,
    deleting,
    set_condition,
)
from kubetrio.sim.cluster.options import ClusterSimulation
from kubetrio.sim.cluster.templates import replicas

DELETION_TIMEOUT = 120.0


def scaled(value: Any, total: int) -> int:
    """An int-or-percent against ``total``, rounding up (GetScaledValueFromIntOrPercent)."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            return math.ceil(int(value[:-1]) * total / 100)
        except ValueError:
            return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


@dataclass
class Disruption:
    objs: Objects
    options: ClusterSimulation
    name: str = "disruption"
    watches: frozenset[str] = frozenset(
        {"pods", "poddisruptionbudgets.policy", "replicasets.apps", "statefulsets.apps"}
    )

    def reconcile(self, now: float) -> float | None:
        deadlines = Deadlines()
        for pdb in self.objs.all(self.objs.pdbs):
            if not deleting(pdb):
                self._sync(pdb, now, deadlines)
        return deadlines.next

    def _sync(self, pdb: Obj, now: float, deadlines: Deadlines) -> None:
        ns = pdb["metadata"].get("namespace", "")
        spec = pdb.get("spec") or {}
        pods = [
            p
            for p in self.objs.all(self.objs.pods, ns)
            if selector_matches(spec.get("selector"), p["metadata"].get("labels") or {})
        ]
        expected, desired = self._expected_and_desired(spec, pods)
        disrupted = self._disrupted(pdb, pods, now, deadlines)
        healthy = sum(
            1
            for p in pods
            if not deleting(p)
            and condition(p, "Ready") == "True"
            and p["metadata"]["name"] not in disrupted
        )
        allowed = max(0, healthy - desired)
        status: Obj = {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        stamp = self.objs.now_rfc3339()

        def change(p: Obj) -> None:
            old = p.get("status") or {}
            p["status"] = {**status, "conditions": old.get("conditions") or []}
            if allowed > 0:
                set_condition(p, "DisruptionAllowed", "True", "SufficientPods", stamp, message="")
            else:
                set_condition(
                    p, "DisruptionAllowed", "False", "InsufficientPods", stamp, message=""
                )

        self.objs.mutate(self.objs.pdbs, pdb, change, status=True)

    def _expected_and_desired(self, spec: Obj, pods: list[Obj]) -> tuple[int, int]:
        min_available = spec.get("minAvailable")
        max_unavailable = spec.get("maxUnavailable")
        if max_unavailable is None and (min_available is None or isinstance(min_available, int)):
            return len(pods), min_available or 0
        expected = self._controller_scale(pods)
        if max_unavailable is not None:
            return expected, max(0, expected - scaled(max_unavailable, expected))
        return expected, scaled(min_available, expected)

    def _controller_scale(self, pods: list[Obj]) -> int:
        total = 0
        counted: set[str] = set()
        for pod in pods:
            ref = next(
                (
                    r
                    for r in pod["metadata"].get("ownerReferences") or []
                    if isinstance(r, dict) and r.get("controller")
                ),
                None,
            )
            rt = {"ReplicaSet": self.objs.replicasets, "StatefulSet": self.objs.statefulsets}.get(
                str((ref or {}).get("kind"))
            )
            owner = (
                self.objs.by_uid(rt, pod["metadata"].get("namespace", ""), str(ref.get("uid")))
                if rt is not None and ref is not None
                else None
            )
            if owner is None:
                total += 1
            elif owner["metadata"]["uid"] not in counted:
                counted.add(owner["metadata"]["uid"])
                total += replicas(owner)
        return total

    def _disrupted(
        self, pdb: Obj, pods: list[Obj], now: float, deadlines: Deadlines
    ) -> dict[str, str]:
        by_name = {p["metadata"]["name"]: p for p in pods}
        kept: dict[str, str] = {}
        wall = self.objs.now()
        for name, stamp in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            pod = by_name.get(name)
            when = parse_rfc3339(str(stamp))
            if pod is None or deleting(pod) or when is None:
                continue
            left = (when + dt.timedelta(seconds=DELETION_TIMEOUT) - wall).total_seconds()
            if left < 0:
                continue
            kept[name] = str(stamp)
            deadlines.add(now + left + 0.001)
        return kept

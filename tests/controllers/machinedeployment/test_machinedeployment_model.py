"""Property test of the rollout arithmetic on a fast in-process model: a deployment's sets and
their machines (each available ``BOOT`` ticks after it is asked for; scale-down removes
unavailable machines first, as MCM's deletion priority), the controller's decisions taken by
the same functions the reconciler calls, driven by hypothesis through random sequences of
scaling, template changes, pause/resume, machine failures and time.

Properties, checked after every controller pass:
- its own rollout steps never take availability below ``replicas - maxUnavailable`` (nor further
  down when a failure already did) — a resize mid-rollout is proportional, as in MCM, and can;
- it never asks for more machines than ``replicas + maxSurge`` (beyond what a resize left);
- once left alone, it converges: every machine on the current template and available, exactly
  ``replicas`` of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from kubetrio.controllers.machinedeployment import fenceposts, scaling
from kubetrio.controllers.machinedeployment.revisions import (
    DESIRED_REPLICAS_ANNOTATION,
    REVISION_ANNOTATION,
    int_annotation,
    max_revision,
    replicas_annotations,
)
from kubetrio.controllers.machinedeployment.sets import SetState, active

pytestmark = pytest.mark.slow

BOOT = 3
BOUNDS = st.sampled_from([0, 1, 2, 3, "25%", "50%", "0%", "100%"])


@dataclass
class ModelSet:
    name: str
    template: int
    created: int
    replicas: int = 0
    annotations: dict[str, str] = field(default_factory=dict)
    machines: list[int] = field(default_factory=list)  # tick at which each is available

    def state(self, now: int) -> SetState:
        up = sum(1 for t in self.machines if t <= now)
        return SetState(
            name=self.name,
            replicas=self.replicas,
            created=f"{self.created:06d}",
            actual=len(self.machines),
            ready=up,
            available=up,
            annotations=dict(self.annotations),
        )


class Rollouts(RuleBasedStateMachine):
    @initialize(replicas=st.integers(0, 8), surge=BOUNDS, unavailable=BOUNDS)
    def start(self, replicas: int, surge: int | str, unavailable: int | str) -> None:
        self.now = 0
        self.replicas = replicas
        self.surge_spec = surge
        self.unavailable_spec = unavailable
        self.template = 0
        self.paused = False
        self.sets: dict[str, ModelSet] = {}
        self.created = 0
        self.settle()

    # -- the world

    @property
    def bounds(self) -> fenceposts.Fenceposts:
        return fenceposts.resolve(
            fenceposts.STRATEGY_ROLLING_UPDATE,
            self.replicas,
            self.surge_spec,
            self.unavailable_spec,
        )

    def available(self) -> int:
        return sum(1 for s in self.sets.values() for t in s.machines if t <= self.now)

    def total(self) -> int:
        return sum(len(s.machines) for s in self.sets.values())

    def set_controller(self) -> None:
        for s in self.sets.values():
            while len(s.machines) < s.replicas:
                s.machines.append(self.now + BOOT)
            if len(s.machines) > s.replicas:
                s.machines.sort(key=lambda t: (t <= self.now, -t))
                del s.machines[: len(s.machines) - s.replicas]

    def write(self, sizes: dict[str, int]) -> None:
        ceiling = self.replicas + self.bounds.max_surge
        for name, size in sizes.items():
            s = self.sets[name]
            s.replicas = size
            s.annotations.update(replicas_annotations(self.replicas, ceiling))

    def controller(self) -> bool:
        """One reconcile pass, as ``DeploymentReconciler`` decides it; True for a resize."""
        bounds = self.bounds
        states = {n: s.state(self.now) for n, s in self.sets.items()}
        new = next(
            (s for s in sorted(self.sets.values(), key=lambda s: s.created)
             if s.template == self.template),
            None,
        )  # fmt: skip
        old = [states[n] for n, s in self.sets.items() if new is None or n != new.name]
        if new is not None:
            revision = max_revision(s.annotations for n, s in self.sets.items() if n != new.name)
            if (int_annotation(new.annotations, REVISION_ANNOTATION) or 0) <= revision:
                new.annotations[REVISION_ANNOTATION] = str(revision + 1)
        new_state = states[new.name] if new else None
        if self.paused or self._scaling_event(new):
            self.write(
                scaling.scale(
                    fenceposts.STRATEGY_ROLLING_UPDATE,
                    self.replicas,
                    bounds.max_surge,
                    sum(s.actual for s in states.values()),
                    new_state,
                    old,
                )
            )
            return True
        if new is None:
            self.created += 1
            fresh = ModelSet(f"t{self.template}-{self.created}", self.template, self.created)
            fresh_state = fresh.state(self.now)
            fresh.replicas = scaling.new_set_replicas(
                fenceposts.STRATEGY_ROLLING_UPDATE,
                self.replicas,
                bounds.max_surge,
                [*states.values(), fresh_state],
                fresh_state,
            )
            fresh.annotations.update(
                replicas_annotations(self.replicas, self.replicas + bounds.max_surge)
            )
            fresh.annotations[REVISION_ANNOTATION] = str(
                max_revision(s.annotations for s in self.sets.values()) + 1
            )
            self.sets[fresh.name] = fresh
            return False
        assert new_state is not None
        self.write(
            scaling.rolling_step(
                self.replicas, bounds.max_surge, bounds.max_unavailable, new_state, old
            )
        )
        return False

    def _scaling_event(self, new: ModelSet | None) -> bool:
        if new is None:
            return False
        running = active(s.state(self.now) for s in self.sets.values())
        if not running and self.replicas > 0:
            return True
        return any(
            (d := int_annotation(s.annotations, DESIRED_REPLICAS_ANNOTATION)) is not None
            and d != self.replicas
            for s in running
        )

    def checked_pass(self) -> None:
        """A controller pass, and the set controller acting on it; the bounds checked."""
        before_available = self.available()
        before_spec = sum(s.replicas for s in self.sets.values())
        resize = self.controller()
        self.set_controller()
        floor = self.replicas - self.bounds.max_unavailable
        # A resize mid-rollout is proportional across the sets (MCM's ``scale``, as
        # Kubernetes'): it may remove a set's available machines while another set's are
        # still booting, so this bound is the rollout's, not a resize's.
        assert resize or self.available() >= min(before_available, floor), (
            before_available,
            self.available(),
            floor,
        )
        spec = sum(s.replicas for s in self.sets.values())
        ceiling = self.replicas + self.bounds.max_surge
        assert spec <= max(before_spec, ceiling), (before_spec, spec, ceiling)

    def settle(self, limit: int = 400) -> None:
        """Passes and time until nothing changes; then the rollout must be complete."""
        for _ in range(limit):
            snapshot = self.snapshot()
            self.checked_pass()
            if self.snapshot() == snapshot:
                if all(t <= self.now for s in self.sets.values() for t in s.machines):
                    if self.paused:
                        return
                    current = [s for s in self.sets.values() if s.template == self.template]
                    if self.total() == self.replicas and (
                        self.replicas == 0 or (current and current[0].replicas == self.replicas)
                    ):
                        assert self.available() == self.replicas
                        assert all(
                            s.replicas == 0
                            for s in self.sets.values()
                            if s.template != self.template
                        )
                        return
                self.now += 1
        raise AssertionError(f"no convergence: {self.snapshot()}")

    def snapshot(self) -> object:
        return sorted((n, s.replicas, tuple(s.machines), tuple(sorted(s.annotations.items())))
                      for n, s in self.sets.items())  # fmt: skip

    # -- what users and the world do

    @rule(replicas=st.integers(0, 8))
    def scale(self, replicas: int) -> None:
        self.replicas = replicas
        self.checked_pass()

    @rule()
    def change_template(self) -> None:
        self.template += 1
        self.checked_pass()

    @rule()
    def roll_back(self) -> None:
        if self.template > 0:
            self.template -= 1
            self.checked_pass()

    @rule()
    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self.checked_pass()

    @rule(data=st.data())
    def machine_fails(self, data: st.DataObject) -> None:
        """A ready machine breaks; the set replaces it (a new one boots)."""
        ready = [
            (s, i) for s in self.sets.values() for i, t in enumerate(s.machines) if t <= self.now
        ]
        if ready:
            s, index = data.draw(st.sampled_from(ready))
            s.machines[index] = self.now + BOOT
        self.checked_pass()

    @rule(ticks=st.integers(1, 4))
    def time_passes(self, ticks: int) -> None:
        for _ in range(ticks):
            self.now += 1
            self.checked_pass()

    @rule()
    def left_alone(self) -> None:
        if self.paused:
            self.paused = False
        self.settle()

    def teardown(self) -> None:
        if getattr(self, "sets", None) is not None:
            self.paused = False
            self.settle()


TestRollouts = Rollouts.TestCase
TestRollouts.settings = settings(max_examples=300, stateful_step_count=30, deadline=None)

"""The rollout property end to end: the real MachineDeployment controller over HTTP against
the emulator on a MockClock (sets' machines from ``SetSimulator``), driven by hypothesis through
random sequences of scaling, template changes, pause/resume and machine failures. Whatever came
before, the deployment converges, and a rollout from there stays within its bounds at every
change the machines see: ``total <= replicas + maxSurge``, ``available >= replicas -
maxUnavailable``. (The fast model, test_machinedeployment_model.py, explores many more.)"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetrio.sim import serve_world
from tests.helpers.deployments import deployment_doc, deployment_manager
from tests.helpers.kube import IO_AUTOJUMP
from tests.helpers.machines import install_crds

pytestmark = pytest.mark.slow

Op = tuple[str, int]
ops_strategy = st.lists(
    st.tuples(st.sampled_from(["scale", "template", "pause", "fail", "wait"]), st.integers(0, 6)),
    max_size=8,
)


async def scenario(ops: list[Op], replicas: int, surge: int, unavailable: int) -> None:
    strategy = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable},
    }
    async with serve_world() as emu:
        install_crds(emu)
        async with deployment_manager(emu, boot=60) as h:
            sim = h.sim
            assert sim is not None
            emu.create(deployment_doc(replicas=replicas, strategy=strategy))
            await h.wait_complete()
            template, paused = 0, False
            for kind, value in ops:
                if kind == "scale":
                    replicas = value
                    await h.patch({"spec": {"replicas": value}})
                elif kind == "template":
                    template += 1
                    await h.patch(
                        {"spec": {"template": {"spec": {"class": {"name": f"c{template}"}}}}}
                    )
                elif kind == "pause":
                    paused = not paused
                    await h.patch({"spec": {"paused": paused}})
                elif kind == "fail":
                    for machine_set in h.sets_of():
                        sim.fail(machine_set.name, value % 2 + 1)
                await trio.sleep(value * 20)
            generation = await h.patch({"spec": {"paused": False}})
            await h.wait_complete(generation=generation)

            # From a settled state, a rollout keeps to its bounds at every step.
            sim.history.clear()
            max_surge = surge if (surge or unavailable) else 0
            max_unavailable = min(unavailable if (surge or unavailable) else 1, replicas)
            generation = await h.patch(
                {"spec": {"template": {"spec": {"class": {"name": "final"}}}}}
            )
            done = await h.wait_complete(generation=generation)
            assert done.spec.replicas == replicas
            for total, available in sim.history:
                assert total <= replicas + max_surge, sim.history
                assert available >= replicas - max_unavailable, sim.history
            assert sim.total() == sim.available() == replicas
            running = [s for s in h.sets_of() if s.spec.replicas]
            assert [s.spec.template.spec.class_.name for s in running] == (
                ["final"] if replicas else []
            )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    ops=ops_strategy,
    replicas=st.integers(0, 5),
    surge=st.integers(0, 2),
    unavailable=st.integers(0, 2),
)
def test_rollouts_converge_and_keep_their_bounds(
    ops: list[Op], replicas: int, surge: int, unavailable: int
) -> None:
    clock = trio.testing.MockClock(autojump_threshold=IO_AUTOJUMP)
    trio.run(scenario, ops, replicas, surge, unavailable, clock=clock)

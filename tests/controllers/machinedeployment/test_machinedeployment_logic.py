"""The MachineDeployment controller's pure logic: fenceposts, hashing, revisions, rolling and
proportional scaling arithmetic, conditions — against MCM's (and Kubernetes') examples."""

from __future__ import annotations

import datetime as dt

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import example, given
from hypothesis import strategies as st

from kubetrio.api.machine import Machine
from kubetrio.api.machineset import MachineDeployment
from kubetrio.controllers.machinedeployment import (
    autoscaler,
    fenceposts,
    hashing,
    progress,
    revisions,
)
from kubetrio.controllers.machinedeployment.catchup import PATIENCE, OwnWrites
from kubetrio.controllers.machinedeployment.scaling import (
    find_active_or_latest,
    new_set_replicas,
    old_sets_scale_down,
    scale,
)
from kubetrio.controllers.machinedeployment.sets import SetState

ROLLING = fenceposts.STRATEGY_ROLLING_UPDATE
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


# -- fenceposts


@pytest.mark.parametrize(
    ("value", "total", "up", "expected"),
    [
        (3, 10, True, 3),
        ("25%", 10, True, 3),
        ("25%", 10, False, 2),
        ("10%", 200, True, 20),
        ("0%", 5, True, 0),
        ("100%", 7, False, 7),
        ("29%", 100, False, 29),
        ("1%", 1, True, 1),
    ],
)
def test_scaled_value_rounds_surge_up_and_unavailability_down(
    value: int | str, total: int, up: bool, expected: int
) -> None:
    assert fenceposts.scaled_value(value, total, up, "f") == expected


@pytest.mark.parametrize("value", ["25", "abc%", "%", None, True, -1, "x25%"])
def test_scaled_value_rejects_what_is_neither_an_int_nor_a_percentage(value: object) -> None:
    with pytest.raises(fenceposts.SpecError, match=r"^spec.x: "):
        fenceposts.scaled_value(value, 10, True, "spec.x")  # type: ignore[arg-type]


def test_resolve_never_lets_a_rollout_stall_and_never_exceeds_replicas() -> None:
    assert fenceposts.resolve(ROLLING, 10, 0, 0) == fenceposts.Fenceposts(0, 1)
    assert fenceposts.resolve(ROLLING, 10, "0%", "5%") == fenceposts.Fenceposts(0, 1)
    assert fenceposts.resolve(ROLLING, 3, 1, 5) == fenceposts.Fenceposts(1, 3)
    assert fenceposts.resolve(ROLLING, 0, 1, 1) == fenceposts.Fenceposts(1, 0)
    assert fenceposts.resolve("Recreate", 5, None, None) == fenceposts.Fenceposts(0, 0)
    with pytest.raises(fenceposts.SpecError, match=r"^spec.strategy.type: "):
        fenceposts.resolve("InPlace", 5, 1, 1)
    with pytest.raises(fenceposts.SpecError, match=r"^spec.strategy.rollingUpdate.maxSurge: "):
        fenceposts.resolve(ROLLING, 5, None, 1)


# -- hashing

TEMPLATE = {
    "metadata": {"labels": {"name": "pool"}},
    "spec": {"class": {"kind": "MachineClass", "name": "small"}, "nodeTemplate": {"a": 1}},
}


def test_template_hash_is_stable_and_a_collision_count_changes_it() -> None:
    first = hashing.template_hash(TEMPLATE, None)
    assert first == hashing.template_hash(dict(reversed(list(TEMPLATE.items()))), None)
    assert first != hashing.template_hash(TEMPLATE, 1)
    assert hashing.template_hash(TEMPLATE, 1) != hashing.template_hash(TEMPLATE, 2)
    name = hashing.set_name("pool", first)
    assert name.startswith("pool-") and len(name) == len("pool-") + 5
    assert set(name[5:]) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_fnv1a_matches_the_reference_vectors() -> None:
    assert hashing.fnv1a_32(b"") == 0x811C9DC5
    assert hashing.fnv1a_32(b"a") == 0xE40C292C
    assert hashing.fnv1a_32(b"foobar") == 0xBF9CF968


def test_equal_ignore_hash_ignores_what_mcm_updates_in_place() -> None:
    labelled = hashing.with_hash_label(TEMPLATE, "123")
    assert labelled["metadata"]["labels"][hashing.TEMPLATE_HASH_LABEL] == "123"
    assert hashing.equal_ignore_hash(TEMPLATE, labelled)
    assert hashing.without_hash_label(labelled) == TEMPLATE
    in_place = {
        "metadata": {"labels": {"name": "pool"}},
        "spec": {"class": {"kind": "Other", "name": "small"}, "machineConfiguration": {"x": 1}},
    }
    assert hashing.equal_ignore_hash(TEMPLATE, in_place)
    other_class = {**TEMPLATE, "spec": {"class": {"kind": "MachineClass", "name": "large"}}}
    assert not hashing.equal_ignore_hash(TEMPLATE, other_class)
    other_label = {**TEMPLATE, "metadata": {"labels": {"name": "pool", "x": "y"}}}
    assert not hashing.equal_ignore_hash(TEMPLATE, other_label)


# -- revisions


def test_revisions_max_and_last_skip_unreadable_ones() -> None:
    sets = [{revisions.REVISION_ANNOTATION: v} for v in ("1", "3", "x", "2")] + [{}]
    assert revisions.max_revision(sets) == 3
    assert revisions.last_revision(sets) == 2
    assert revisions.last_revision([{revisions.REVISION_ANNOTATION: "4"}]) == 0


def test_a_set_brought_back_takes_the_next_revision_and_remembers_the_old_ones() -> None:
    deployment = {
        "team": "a",
        revisions.REVISION_ANNOTATION: "9",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    fresh = revisions.new_set_annotations(deployment, {}, 1)
    assert fresh == {"team": "a", revisions.REVISION_ANNOTATION: "1"}
    again = revisions.new_set_annotations(deployment, fresh, 3)
    assert again[revisions.REVISION_ANNOTATION] == "3"
    assert again[revisions.REVISION_HISTORY_ANNOTATION] == "1"
    third = revisions.new_set_annotations(deployment, again, 5)
    assert third[revisions.REVISION_HISTORY_ANNOTATION] == "1,3"
    assert revisions.new_set_annotations(deployment, third, 5) == third
    rolled = revisions.rollback_annotations(
        {revisions.REVISION_ANNOTATION: "5", "old": "x"},
        {"team": "b", revisions.REVISION_ANNOTATION: "2"},
    )
    assert rolled == {revisions.REVISION_ANNOTATION: "5", "team": "b"}


# -- rolling arithmetic


def s(name: str, replicas: int, available: int = -1, actual: int = -1, **kw: object) -> SetState:
    return SetState(
        name=name,
        replicas=replicas,
        created=kw.pop("created", name),  # type: ignore[arg-type]
        actual=replicas if actual < 0 else actual,
        ready=replicas if available < 0 else available,
        available=replicas if available < 0 else available,
        annotations=kw.pop("annotations", {}),  # type: ignore[arg-type]
    )


def test_new_set_grows_by_the_surge_over_existing_machines() -> None:
    old, new = s("a", 10), s("b", 0)
    assert new_set_replicas(ROLLING, 10, 3, [old, new], new) == 3
    # Machines of a set scaled down still exist until deleted: they count against the surge.
    assert new_set_replicas(ROLLING, 10, 3, [s("a", 7, actual=10), s("b", 3)], s("b", 3)) == 3
    assert new_set_replicas(ROLLING, 10, 3, [s("a", 2), s("b", 8)], s("b", 8)) == 10
    assert new_set_replicas("Recreate", 10, 0, [old, new], new) == 10
    # A set's report lags its growth: asked for 2, it still reports 1 — still at the ceiling.
    lagging = s("new", 2, actual=1)
    assert new_set_replicas(ROLLING, 3, 1, [s("old", 2), lagging], lagging) == 2


def test_old_sets_lose_unavailable_machines_first_then_down_to_min_available() -> None:
    # 10 replicas, maxUnavailable 2; new set has 3, all available; old has 10, 2 unavailable.
    new = s("new", 3)
    old = [s("old", 10, available=8)]
    # budget 13-8-0=5: 2 unavailable go, then available 11 > 8: 3 more.
    assert old_sets_scale_down(10, 2, new, old) == {"old": 5}
    # Nothing available to spare: the new set's machines are still booting.
    assert old_sets_scale_down(10, 1, s("new", 2, available=0), [s("old", 10)]) == {"old": 9}
    assert old_sets_scale_down(10, 0, s("new", 1, available=0), [s("old", 10)]) == {}
    # Oldest set first.
    two_old = [s("o2", 3, created="2"), s("o1", 3, created="1")]
    assert old_sets_scale_down(6, 0, s("new", 2), two_old) == {"o1": 1}


def test_scaling_a_single_active_set_or_the_newest_one() -> None:
    assert scale(ROLLING, 7, 1, 5, s("n", 5), [s("o", 0)]) == {"n": 7}
    latest = find_active_or_latest(None, [s("o1", 0, created="1"), s("o2", 0, created="2")])
    assert latest is not None and latest.name == "o2"


def test_proportional_scaling_spreads_a_resize_over_a_rollout() -> None:
    # Kubernetes' example: 10 replicas (maxSurge 3) mid-rollout as 8 old + 5 new, scaled to 15.
    old = s("old", 8, annotations={revisions.MAX_REPLICAS_ANNOTATION: "13"})
    new = s("new", 5, annotations={revisions.MAX_REPLICAS_ANNOTATION: "13"})
    assert scale(ROLLING, 15, 3, 13, new, [old]) == {"old": 8, "new": 10}
    # Down from 10 to 5 (max 8): old 8*8/13 = 5 (-3), new 5*8/13 = 3 (-2).
    assert scale(ROLLING, 5, 3, 13, new, [old]) == {"old": 5, "new": 3}


@given(
    sizes=st.lists(st.integers(0, 30), min_size=2, max_size=4),
    replicas=st.integers(0, 60),
    surge=st.integers(0, 10),
)
# Halves round away from zero: four sets of 1 resized to 1 (+1 surge) keep their size, and the
# whole -2 lands on the largest, which stops at 0 — Kubernetes' scale ends at 3, not 2.
@example(sizes=[1, 1, 1, 1], replicas=1, surge=1)
def test_proportional_scaling_hits_the_new_total_and_never_goes_negative(
    sizes: list[int], replicas: int, surge: int
) -> None:
    sets = [
        s(f"s{i}", n, annotations={revisions.MAX_REPLICAS_ANNOTATION: str(sum(sizes) or 1)})
        for i, n in enumerate(sizes)
    ]
    new, old = sets[-1], sets[:-1]
    result = scale(ROLLING, replicas, surge, sum(sizes), new, old)
    assert all(v >= 0 for v in result.values())
    running = [x for x in sets if x.replicas > 0]
    if len(running) > 1 and result:
        allowed = replicas + surge if replicas else 0
        after = sum(result.get(x.name, x.replicas) for x in sets)
        # The leftover goes to the largest set alone and stops at zero (Kubernetes' scale): a
        # total short of the target is never reached, one above it only through that stop.
        assert after == allowed or (
            after > allowed and any(result[x.name] == 0 for x in running if x.name in result)
        )


# -- conditions and progress

SPEC = progress.Spec(
    name="pool", replicas=3, generation=2, max_unavailable=1, progress_deadline_seconds=600
)


def test_status_counts_and_availability() -> None:
    status = progress.calculate_status(
        SPEC,
        [s("old", 1, available=1), s("new", 2, available=1)],
        s("new", 2, available=1),
        {},
        [],
        NOW,
    )
    assert status["replicas"] == 3 and status["updatedReplicas"] == 2
    assert status["availableReplicas"] == 2 and status["unavailableReplicas"] == 1
    available = progress.get_condition(status["conditions"], "Available")
    assert available is not None and available["reason"] == "MinimumReplicasAvailable"


def test_progress_deadline_counts_from_the_last_progress() -> None:
    start = progress.rollout_status(
        SPEC,
        {},
        progress.calculate_status(
            SPEC, [s("n", 3, available=0)], s("n", 3, available=0), {}, [], NOW
        ),
        "n",
        None,
        NOW,
    )
    cond = progress.get_condition(start["conditions"], "Progressing")
    assert cond is not None and cond["reason"] == "MachineSetUpdated"
    assert progress.requeue_after(SPEC, start, start, NOW) == 601
    later = NOW + dt.timedelta(seconds=601)
    again = progress.calculate_status(
        SPEC, [s("n", 3, available=0)], s("n", 3, available=0), start, [], later
    )
    timed = progress.rollout_status(SPEC, start, again, "n", None, later)
    cond = progress.get_condition(timed["conditions"], "Progressing")
    assert cond is not None and (cond["status"], cond["reason"]) == (
        "False",
        "ProgressDeadlineExceeded",
    )
    assert cond["message"] == 'MachineSet "n" has timed out progressing.'
    done_status = progress.calculate_status(SPEC, [s("n", 3)], s("n", 3), timed, [], later)
    done = progress.rollout_status(SPEC, timed, done_status, "n", None, later)
    cond = progress.get_condition(done["conditions"], "Progressing")
    assert cond is not None and cond["reason"] == "NewMachineSetAvailable"


def test_paused_and_resumed_conditions() -> None:
    paused = progress.paused_condition(True, [], NOW)
    assert paused is not None and paused[0]["reason"] == "DeploymentPaused"
    assert progress.paused_condition(True, paused, NOW) is None
    resumed = progress.paused_condition(False, paused, NOW)
    assert resumed is not None and resumed[0]["reason"] == "DeploymentResumed"


def test_set_condition_keeps_times_when_nothing_changed() -> None:
    first = progress.new_condition("X", "True", "A", "m", NOW)
    later = progress.new_condition("X", "True", "A", "m", NOW + dt.timedelta(hours=1))
    assert progress.set_condition([first], later) == [first]
    moved = progress.set_condition(
        [first], progress.new_condition("X", "True", "B", "m", NOW + dt.timedelta(hours=1))
    )
    assert moved[0]["lastTransitionTime"] == first["lastTransitionTime"]
    assert moved[0]["reason"] == "B"


# -- the cluster autoscaler's annotations


def test_trigger_deletion_entries_get_times_and_gone_machines_are_dropped() -> None:
    assert autoscaler.with_times("a,b~2026-01-01T00:00:00Z,c~x~y", "T") == (
        "a~T,b~2026-01-01T00:00:00Z"
    )

    def machine(name: str, phase: str = "Running", deleting: bool = False) -> Machine:
        doc = {"metadata": {"name": name}, "status": {"currentStatus": {"phase": phase}}}
        if deleting:
            doc["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # type: ignore[index]
        return msgspec.convert(doc, Machine)

    value = (
        ",".join(f"{n}~2026-01-01T00:00:00Z" for n in ("a", "failed", "leaving", "gone"))
        + ",bad~time"
    )
    lookup = {
        "a": machine("a"),
        "failed": machine("failed", "Failed"),
        "leaving": machine("leaving", deleting=True),
        "bad": machine("bad"),
    }
    pending, marked = autoscaler.still_pending(
        value, ((n, lookup.get(n)) for n in autoscaler.entry_names(value))
    )
    assert pending == "a~2026-01-01T00:00:00Z"
    assert [(m.machine.name, m.time) for m in marked] == [("a", "2026-01-01T00:00:00Z")]


# -- waiting for our own writes


async def test_a_pass_waits_until_the_cache_shows_our_last_write(
    autojump_clock: trio.testing.MockClock,
) -> None:
    def version(rv: str) -> MachineDeployment:
        return msgspec.convert(
            {"metadata": {"name": "pool", "uid": "u1", "resourceVersion": rv}}, MachineDeployment
        )

    own = OwnWrites()
    assert not own.behind(version("1"))
    own.wrote(version("5"))
    assert own.behind(version("4"))
    handler = own.handler()
    assert handler.on_update is not None
    handler.on_update(version("4"), version("5"))  # the informer delivers it
    assert not own.behind(version("4"))  # (a stale read elsewhere no longer blocks)
    own.wrote(version("7"))
    assert own.behind(version("6"))
    await trio.sleep(PATIENCE)  # a version the cache never shows exactly is given up on
    assert not own.behind(version("6"))

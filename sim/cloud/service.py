"""The simulated cloud's state and behaviour: VMs keyed by provider ID, booting on the emulator's
clock into a registered Node, and the scripted failures tests ask for.

A VM's kubelet registers the Node once it has booted, with the VM's providerID, its labels and
capacity, and posts Ready at once (so the cloud works with or without the simulated cluster's
kubelet) — unless the script says ``neverReady``, in which case the Node carries the simulated
cluster's never-ready annotation and no Ready condition ever appears. Deleting a VM leaves its
Node in place, as a real cloud does (removing it is the machine controller's job), with Ready
turned Unknown since its kubelet is gone.

A Node belongs to the VM whose providerID it carries: a second VM with the same hostname cannot
register over it (its kubelet keeps trying, every ``REGISTER_RETRY`` seconds, and registers once
that Node is gone), while a Node without a providerID is adopted, as kubelets do. A VM that
needs initialization boots only once initialized.

**Cost.** VMs are indexed by provider ID and by the machine they were made for, and the
kubelets' loop only visits VMs that still have something to do (boot, register, a scripted
condition to report): a VM that booted, registered and reported everything drops out, so
creating the 10 000th VM costs what the first did. ``examined`` counts the VMs the loop has
visited, so a test can check that cost::

    before = cloud.examined
    cloud.create("m-10001", "default", "default/sim", VmScript())
    await wait_until(lambda: cloud.examined > before)
    assert cloud.examined - before == 1  # the new VM only, not the 10 000 running ones
"""

from __future__ import annotations

import logging
import math
import random
from dataclasses import dataclass, field
from typing import Any

import trio

from kubetrio.sim.cloud.errors import CloudError
from kubetrio.sim.cloud.script import Failure, VmScript
from kubetrio.sim.cluster.objects import Obj, Objects, set_condition, set_kubelet_ready
from kubetrio.sim.cluster.options import NEVER_READY_ANNOTATION

log = logging.getLogger("kubetrio.emulator.cloud")

# How often a kubelet that could not register its Node tries again.
REGISTER_RETRY = 10.0
# The conditions a healthy kubelet reports besides Ready.
_KUBELET_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory"),
    ("DiskPressure", "KubeletHasNoDiskPressure"),
    ("PIDPressure", "KubeletHasSufficientPID"),
)


@dataclass(slots=True)
class Vm:
    provider_id: str
    machine_name: str
    machine_namespace: str
    class_key: str
    node_name: str
    script: VmScript
    created_at: float
    booted: bool = False
    registered: bool = False
    initialized: bool = True
    # The VM broke (``fail``): it stays listed until deleted, but never boots or reports again.
    failed: bool = False
    applied: set[int] = field(default_factory=set)

    @property
    def boot_at(self) -> float:
        return self.created_at + self.script.boot_seconds

    def to_json(self) -> dict[str, Any]:
        return {
            "providerID": self.provider_id,
            "machineName": self.machine_name,
            "machineNamespace": self.machine_namespace,
            "class": self.class_key,
            "nodeName": self.node_name,
            "instanceType": self.script.instance_type,
            "zone": self.script.zone,
            "booted": self.booted,
            "registered": self.registered,
            "initialized": self.initialized,
            "failed": self.failed,
        }


class SimulatedCloud:
    url = ""  # where its API answers, once served (``kubetrio.sim.serve_world``)

    def __init__(self, objects: Objects) -> None:
        self.objects = objects
        self.vms: dict[str, Vm] = {}
        self._by_machine: dict[tuple[str, str], Vm] = {}  # (namespace, machine name)
        # Provider IDs of the VMs the kubelets' loop still has work for (see ``step``).
        self._pending: set[str] = set()
        self.examined = 0  # VMs visited by ``step``, ever (the cost tests read it)
        self._serial = 0
        self._spec_failures: dict[tuple[str, str], tuple[Failure, int]] = {}
        self._scripted: dict[tuple[str, str], list[Failure]] = {}
        self._wakeup = trio.Event()
        self._request_ids = random.Random(0)  # reproducible runs

    # -- scripting

    def script(self, class_key: str, op: str, failure: Failure) -> None:
        """Fail the next ``failure.count`` calls of ``op`` for the class (before any failures
        its providerSpec asks for)."""
        if failure.count > 0:
            self._scripted.setdefault((class_key, op), []).append(failure)

    def clear_scripts(self) -> None:
        self._scripted.clear()

    def check(self, class_key: str, op: str, script: VmScript) -> None:
        """Raise the failure scripted for this call, if any."""
        queue = self._scripted.get((class_key, op))
        if queue:
            failure = queue[0]
            if failure.count <= 1:
                queue.pop(0)
            else:
                queue[0] = Failure(failure.code, failure.count - 1, failure.message)
            raise self._scripted_error(op, failure)
        wanted = script.fail_next.get(op)
        key = (class_key, op)
        if wanted is None:
            self._spec_failures.pop(key, None)
            return
        seen, used = self._spec_failures.get(key, (wanted, 0))
        if seen != wanted:
            used = 0
        if used < wanted.count:
            self._spec_failures[key] = (wanted, used + 1)
            raise self._scripted_error(op, wanted)
        self._spec_failures[key] = (wanted, used)

    def _scripted_error(self, op: str, failure: Failure) -> CloudError:
        """The scripted failure; ``{requestId}`` in its message becomes a fresh request id,
        as real clouds put one in every error."""
        message = failure.message or f"scripted {op} failure"
        if "{requestId}" in message:
            message = message.replace("{requestId}", f"{self._request_ids.getrandbits(64):016x}")
        return CloudError(failure.code, message)

    # -- operations

    def create(self, machine: str, namespace: str, class_key: str, script: VmScript) -> Vm:
        self.check(class_key, "create", script)
        existing = self.find(machine, namespace)
        if existing is not None:
            return existing
        self._serial += 1
        vm_id = f"vm-{self._serial:05d}"
        vm = Vm(
            provider_id=f"sim://{script.region}/{vm_id}",
            machine_name=machine,
            machine_namespace=namespace,
            class_key=class_key,
            node_name=script.node_name or machine,
            script=script,
            created_at=trio.current_time(),
            initialized=not script.needs_initialization,
        )
        self.vms[vm.provider_id] = vm
        self._by_machine[(namespace, machine)] = vm
        self._pending.add(vm.provider_id)
        log.info("vm created provider_id=%s machine=%s/%s", vm.provider_id, namespace, machine)
        self._wakeup.set()
        return vm

    def status(
        self, machine: str, namespace: str, provider_id: str, class_key: str, script: VmScript
    ) -> Vm:
        self.check(class_key, "status", script)
        vm = self.lookup(machine, namespace, provider_id)
        if not vm.initialized:
            raise CloudError("Uninitialized", f"VM {vm.provider_id} is not initialized yet")
        return vm

    def initialize(
        self, machine: str, namespace: str, provider_id: str, class_key: str, script: VmScript
    ) -> Vm:
        self.check(class_key, "initialize", script)
        vm = self.lookup(machine, namespace, provider_id)
        if not script.needs_initialization:
            raise CloudError("Unimplemented", "VMs of this class need no initialization")
        vm.initialized = True
        self._wakeup.set()  # it may boot now
        return vm

    def delete(
        self, machine: str, namespace: str, provider_id: str, class_key: str, script: VmScript
    ) -> Vm:
        self.check(class_key, "delete", script)
        vm = self.lookup(machine, namespace, provider_id)
        self._forget(vm)
        log.info("vm deleted provider_id=%s", vm.provider_id)
        if vm.booted:
            self._kubelet_gone(vm)
        self._wakeup.set()
        return vm

    def fail(self, provider_id: str) -> Vm:
        """The VM breaks as real ones do (host failure, kernel panic): it still exists at the
        cloud, but its kubelet stops, so its Node's Ready turns Unknown and nothing about it
        changes again until the machine controller deletes it."""
        vm = self.lookup("", "", provider_id)
        if not vm.failed:
            vm.failed = True
            log.info("vm failed provider_id=%s", vm.provider_id)
            if vm.booted:
                self._kubelet_gone(vm)
        return vm

    def list(self, class_key: str, script: VmScript) -> dict[str, str]:
        self.check(class_key, "list", script)
        return {pid: vm.machine_name for pid, vm in self.vms.items() if vm.class_key == class_key}

    def find(self, machine: str, namespace: str) -> Vm | None:
        return self._by_machine.get((namespace, machine))

    def _forget(self, vm: Vm) -> None:
        del self.vms[vm.provider_id]
        self._pending.discard(vm.provider_id)
        if self._by_machine.get((vm.machine_namespace, vm.machine_name)) is vm:
            del self._by_machine[(vm.machine_namespace, vm.machine_name)]

    def lookup(self, machine: str, namespace: str, provider_id: str) -> Vm:
        """By provider ID when the caller knows it, else by the machine it was created for."""
        vm = self.vms.get(provider_id) if provider_id else self.find(machine, namespace)
        if vm is None:
            what = provider_id or f"machine {namespace}/{machine}"
            raise CloudError("NotFound", f"no VM for {what}")
        return vm

    # -- the VMs' kubelets

    async def run(self) -> None:
        """Boot VMs and report their scripted conditions on time; until cancelled. An idle
        cloud reads nothing: the cluster is followed from the first VM on."""
        while not self.vms:
            self._wakeup = trio.Event()
            await self._wakeup.wait()
        await self.objects.ready()
        while True:
            self._wakeup = trio.Event()
            next_at = self.step(trio.current_time())
            with trio.move_on_at(next_at if next_at is not None else math.inf):
                await self._wakeup.wait()

    def step(self, now: float) -> float | None:
        """Everything due by ``now``; the time of the next due thing. Visits the pending VMs
        only; one with nothing left to do (failed, or booted, registered and every scripted
        condition reported) leaves that set for good."""
        upcoming: list[float] = []
        for provider_id in list(self._pending):
            vm = self.vms[provider_id]
            self.examined += 1
            if vm.failed or self._done(vm):
                self._pending.discard(provider_id)
                continue
            if not vm.booted:
                if not vm.initialized:
                    continue  # initialize() wakes the loop
                if now < vm.boot_at:
                    upcoming.append(vm.boot_at)
                    continue
                vm.booted = True
            if not vm.registered:
                vm.registered = self._register(vm)
                if not vm.registered:
                    upcoming.append(now + REGISTER_RETRY)
                    continue
            for i, later in enumerate(vm.script.conditions_after):
                if i in vm.applied:
                    continue
                due = vm.boot_at + later.after_seconds
                if now < due:
                    upcoming.append(due)
                    continue
                vm.applied.add(i)
                self._report(vm, later.type, later.status, later.reason)
            if self._done(vm):
                self._pending.discard(provider_id)
        return min(upcoming) if upcoming else None

    @staticmethod
    def _done(vm: Vm) -> bool:
        return vm.registered and len(vm.applied) == len(vm.script.conditions_after)

    def _register(self, vm: Vm) -> bool:
        """Register (or adopt) the VM's Node; False when another VM's Node has the name."""
        nodes = self.objects.nodes
        existing = self.objects.get(nodes, "", vm.node_name)
        owner = ((existing or {}).get("spec") or {}).get("providerID")
        if owner and owner != vm.provider_id:
            log.info(
                "node registration refused node=%s provider_id=%s owner=%s",
                vm.node_name,
                vm.provider_id,
                owner,
            )
            return False
        if existing is None:
            script = vm.script
            labels = {
                "kubernetes.io/hostname": vm.node_name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": script.architecture,
                "node.kubernetes.io/instance-type": script.instance_type,
                "topology.kubernetes.io/region": script.node_region or script.region,
            }
            if script.zone:
                labels["topology.kubernetes.io/zone"] = script.zone
            metadata: Obj = {"name": vm.node_name, "labels": labels}
            if vm.script.never_ready:
                metadata["annotations"] = {NEVER_READY_ANNOTATION: "true"}
            node: Obj = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": metadata,
                "spec": {"providerID": vm.provider_id},
            }
            existing = self.objects.create(nodes, "", node)
        else:

            def adopt(n: Obj) -> None:
                n.setdefault("spec", {})["providerID"] = vm.provider_id

            existing = self.objects.mutate(nodes, existing, adopt)
        if existing is None:
            return False
        now = self.objects.now_rfc3339()
        script = vm.script

        def post_status(n: Obj) -> None:
            st = n.setdefault("status", {})
            st["capacity"] = dict(script.capacity)
            st["allocatable"] = dict(script.capacity)
            st["nodeInfo"] = {"kubeletVersion": "v1.33.0", "operatingSystem": "linux"}
            for type_, reason in _KUBELET_CONDITIONS:
                set_condition(n, type_, "False", reason, now, lastHeartbeatTime=now)
            if not script.never_ready:
                set_kubelet_ready(n, now)

        self.objects.mutate(nodes, existing, post_status, status=True)
        log.info("node registered node=%s provider_id=%s", vm.node_name, vm.provider_id)
        return True

    def _own_node(self, vm: Vm) -> Obj | None:
        """The VM's Node, if the Node of its name is its own."""
        node = self.objects.get(self.objects.nodes, "", vm.node_name)
        if node is None or (node.get("spec") or {}).get("providerID") != vm.provider_id:
            return None
        return node

    def _kubelet_gone(self, vm: Vm) -> None:
        """The VM's kubelet stopped with it: its Node's Ready turns Unknown, as the node
        lifecycle controller reports a node that stopped posting status."""
        node = self._own_node(vm)
        if node is None:
            return
        now = self.objects.now_rfc3339()

        def change(n: Obj) -> None:
            set_condition(
                n,
                "Ready",
                "Unknown",
                "NodeStatusUnknown",
                now,
                message="Kubelet stopped posting node status.",
            )

        self.objects.mutate(self.objects.nodes, node, change, status=True)

    def _report(self, vm: Vm, type_: str, status: str, reason: str) -> None:
        node = self._own_node(vm)
        if node is None:
            return
        now = self.objects.now_rfc3339()

        def change(n: Obj) -> None:
            set_condition(n, type_, status, reason, now, lastHeartbeatTime=now)

        self.objects.mutate(self.objects.nodes, node, change, status=True)

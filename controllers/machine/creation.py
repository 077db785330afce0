"""The creation flow: a VM for a Machine, found or made, and the Machine pointed at it.

MCM's order is kept, because each step is safe to repeat after a crash: ask the provider for the
machine's VM first (creation is idempotent per machine name only at the provider, so asking is
what prevents a second VM), create it when there is none, record the node name and providerID
on the Machine, initialise the VM, then enter Pending. The bootstrap token exists before the VM
does, since the VM's user data carries it.
"""

from __future__ import annotations

import base64
from typing import Any

import msgspec
import trio

from kubetrio.api.core import Secret
from kubetrio.api.machine import (
    OPERATION_CREATE,
    PHASE_CRASH_LOOP_BACK_OFF,
    PHASE_FAILED,
    PHASE_PENDING,
    STATE_FAILED,
    STATE_PROCESSING,
    Machine,
    MachineClass,
)
from kubetrio.api.meta import parse_time
from kubetrio.controllers.machine.bootstrap import (
    TOKEN_NAMESPACE,
    expiry,
    new_token_secret,
    render_user_data,
    token_id,
    token_secret,
    token_secret_name,
)
from kubetrio.controllers.machine.context import MachineContext
from kubetrio.controllers.machine.driver.codes import TRANSIENT_CODES, Code, MachineError
from kubetrio.controllers.machine.driver.driver import SecretData
from kubetrio.controllers.machine.driver.providerid import same_vm
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.controllers.machine.retry import LongRetry, MediumRetry, ShortRetry
from kubetrio.controllers.machine.status import (
    DEFAULT_PRIORITY,
    INITIALIZE_VM,
    NODE_LABEL,
    PRIORITY_ANNOTATION,
    Operation,
)
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.util.clock import now, seconds_since
from kubetrio.runtime.util.gotext import go_quote
from kubetrio.runtime.util.log import get_logger

log = get_logger("kubetrio.machine")

CREATING = "Creating machine on cloud provider"


async def create(
    ctx: MachineContext,
    machine: Machine,
    machine_class: MachineClass,
    secret_data: SecretData,
    options: MachineOptions,
) -> tuple[Machine, float]:
    """Run the creation flow; the machine as last written and when to look again."""
    if "userData" not in secret_data:
        machine = await ctx.status.write(
            machine,
            Operation(
                # MCM's words, then which of the class, its reference or its Secret is wrong.
                f"Userdata field not found in secret for machine {go_quote(machine.name)}: "
                + ctx.user_data_missing(machine_class),
                STATE_FAILED,
                OPERATION_CREATE,
            ),
            reason="MissingUserData",
        )
        return machine, ShortRetry
    token = await bootstrap_token(ctx, machine, options)
    data = {**secret_data, "userData": render_user_data(secret_data["userData"], token)}
    driver = ctx.drivers.for_class(machine_class)
    node_name = machine.metadata.labels.get(NODE_LABEL, "")
    provider_id = machine.spec.provider_id
    initialize = False
    try:
        vm = await driver.get_machine_status(machine, machine_class, data)
        node_name, provider_id = vm.node_name or node_name, vm.provider_id or provider_id
        if _foreign_node(ctx, machine, node_name, provider_id, fresh=False):
            return await _stale_node(ctx, machine, machine_class, data, provider_id)
    except MachineError as error:
        if error.code == Code.Uninitialized:
            initialize = True
        elif error.code not in (Code.NotFound, Code.Unimplemented):
            return await _create_failed(ctx, machine, options, error), _retry(error, options)
        if not node_name or not provider_id:
            try:
                created = await driver.create_machine(machine, machine_class, data)
            except MachineError as create_error:
                retry = _retry(create_error, options)
                return await _create_failed(ctx, machine, options, create_error), retry
            initialize = True
            elapsed = seconds_since(parse_time(machine.metadata.creation_timestamp))
            if elapsed is not None:
                ctx.durations.observe("create", machine, elapsed)
                if elapsed >= 0:
                    ctx.metrics.create.observe(elapsed)
            node_name = created.node_name or machine.name
            if _foreign_node(ctx, machine, node_name, created.provider_id, fresh=True):
                return await _stale_node(ctx, machine, machine_class, data, created.provider_id)
            provider_id = created.provider_id
    machine = await _point_at_vm(ctx, machine, node_name, provider_id)
    if initialize:
        started = trio.current_time()
        try:
            await driver.initialize_machine(machine, machine_class, data)
        except MachineError as error:
            if error.code != Code.Unimplemented:
                # MCM master: the same phases as a failed create, so a VM that never
                # initialises ends Failed (and is replaced) once the creation timeout passed.
                machine = await ctx.status.write(
                    machine,
                    Operation(
                        f"Provider error: {error}. {INITIALIZE_VM}",
                        STATE_FAILED,
                        OPERATION_CREATE,
                        error.code.name,
                    ),
                    phase=create_failure_phase(machine, options),
                    timeout_active=False,
                    reason="InitializeFailed",
                )
                return machine, ShortRetry
        # Unimplemented counts as done, as in MCM.
        ctx.durations.observe("initialize", machine, trio.current_time() - started)
    if machine.phase in ("", PHASE_CRASH_LOOP_BACK_OFF):
        machine = await ctx.status.write(
            machine,
            Operation(CREATING, STATE_PROCESSING, OPERATION_CREATE),
            phase=PHASE_PENDING,
            timeout_active=True,
            node=node_name,
            reason="Created",
        )
        return machine, min(LongRetry, options.creation_timeout)
    return machine, LongRetry


async def bootstrap_token(ctx: MachineContext, machine: Machine, options: MachineOptions) -> str:
    """The machine's ``<id>.<secret>`` token: the one made by an earlier attempt while it is
    unexpired (the VM may already carry it), else a new one."""
    name = token_secret_name(machine.name, machine.namespace)
    identifier = token_id(machine.name, machine.namespace)
    existing = ctx.tokens.get(TOKEN_NAMESPACE, name)
    if existing is not None:
        secret = _token_from(existing)
        if secret is not None:
            return f"{identifier}.{secret}"
        await ctx.target.delete(Secret, name, namespace=TOKEN_NAMESPACE, missing_ok=True)
    secret = new_token_secret()
    body = token_secret(
        machine.name, secret, expiry(now(), options.creation_timeout), machine.namespace
    )
    try:
        await ctx.target.create(Secret, body)
    except ApiError as error:
        if error.status != 409:
            raise
        # Made by an attempt the cache has not shown yet: read it rather than replace it.
        made = _token_from(await ctx.target.get(Secret, name, namespace=TOKEN_NAMESPACE))
        if made is None:
            raise
        secret = made
    return f"{identifier}.{secret}"


def _token_from(secret: Secret) -> str | None:
    """The secret part of a token Secret that is still valid; None for an expired or
    unreadable one (it is replaced, never a reason for creation to fail)."""
    raw: dict[str, Any] = dict(secret.string_data)
    try:
        for key in ("token-secret", "expiration"):
            if key in secret.data:
                raw[key] = base64.b64decode(secret.data[key], validate=True).decode()
        expires = parse_time(raw.get("expiration"))
        value = raw.get("token-secret")
        if not isinstance(value, str) or expires is None or expires <= now():
            return None
    except (ValueError, TypeError):  # bad base64 or UTF-8, a time without a zone
        return None
    return value


def create_failure_phase(machine: Machine, options: MachineOptions) -> str:
    """MCM's ``getCreateFailurePhase``: CrashLoopBackOff while the machine is younger than the
    creation timeout, then Failed."""
    age = seconds_since(parse_time(machine.metadata.creation_timestamp)) or 0.0
    return PHASE_FAILED if age > options.creation_timeout else PHASE_CRASH_LOOP_BACK_OFF


def _retry(error: MachineError, options: MachineOptions) -> float:
    """When to try a failed creation again: soon after a transient error, after
    ``resourceExhaustedRetry`` when the provider is out of capacity, else MCM's medium pace."""
    if error.code == Code.ResourceExhausted:
        return float(options.resource_exhausted_retry)
    return ShortRetry if error.code in TRANSIENT_CODES else MediumRetry


async def _create_failed(
    ctx: MachineContext, machine: Machine, options: MachineOptions, error: MachineError
) -> Machine:
    phase = create_failure_phase(machine, options)
    log.warning("machine creation failed", machine=machine.name, code=error.code.name, phase=phase)
    return await ctx.status.write(
        machine,
        Operation(
            f"Cloud provider message - {error}", STATE_FAILED, OPERATION_CREATE, error.code.name
        ),
        phase=phase,
        timeout_active=False,
        reason="CreateFailed",
    )


async def _stale_node(
    ctx: MachineContext,
    machine: Machine,
    machine_class: MachineClass,
    data: SecretData,
    provider_id: str,
) -> tuple[Machine, float]:
    """The new VM would register under a Node that already exists for another machine: a
    leftover the VM must not take over. Delete the VM again and fail the machine."""
    driver = ctx.drivers.for_class(machine_class)
    with_id = msgspec.structs.replace(
        machine, spec=msgspec.structs.replace(machine.spec, provider_id=provider_id)
    )
    try:
        await driver.delete_machine(with_id, machine_class, data)
    except MachineError as error:
        # Failed all the same: the machine must never adopt that node. Its own deletion
        # later deletes the VM by name.
        if error.code != Code.NotFound:
            log.warning("could not delete VM of stale node", machine=machine.name, error=str(error))
    machine = await ctx.status.write(
        machine,
        Operation("VM using old node obj", STATE_FAILED, OPERATION_CREATE),
        phase=PHASE_FAILED,
        timeout_active=False,
        reason="StaleNode",
    )
    return machine, ShortRetry


def _foreign_node(
    ctx: MachineContext, machine: Machine, node_name: str, provider_id: str, *, fresh: bool
) -> bool:
    """Whether ``node_name`` is a Node this machine's VM must not take over: another machine
    claims it, or it carries another VM's providerID. For a VM created just now (``fresh``) a
    Node without a providerID counts too: the VM cannot have registered it yet (MCM's
    "VM using old node obj"); a VM of an earlier pass may have, before its providerID was set."""
    node = ctx.nodes.get("", node_name)
    if node is None:
        return False
    if any(m.name != machine.name for m in ctx.machines_on_node(node_name)):
        return True
    node_id = node.spec.provider_id
    return not same_vm(node_id, provider_id) if (fresh or node_id) else False


async def _point_at_vm(
    ctx: MachineContext, machine: Machine, node_name: str, provider_id: str
) -> Machine:
    """Node label, priority annotation and providerID in one write (skipped when all set)."""
    labels = machine.metadata.labels
    annotations = machine.metadata.annotations
    if (
        labels.get(NODE_LABEL) == node_name
        and PRIORITY_ANNOTATION in annotations
        and machine.spec.provider_id == provider_id
    ):
        return machine
    return await ctx.client.patch(
        Machine,
        machine.name,
        {
            "metadata": {
                "resourceVersion": machine.metadata.resource_version,
                "labels": {NODE_LABEL: node_name},
                "annotations": {
                    PRIORITY_ANNOTATION: annotations.get(PRIORITY_ANNOTATION, DEFAULT_PRIORITY)
                },
            },
            "spec": {"providerID": provider_id},
        },
        namespace=machine.namespace,
    )

"""A write's admission webhooks (``admission/``), called by create, update, patch and delete
as kube's handlers call their admission chain: mutating webhooks first, then validating ones
on the object as it would be stored. Returns the object as mutated and the Warning headers to
send; a refusal carries the warnings given before it."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from kubetrio.emulator import errors
from kubetrio.emulator.admission.dispatch import Outcome
from kubetrio.emulator.admission.rules import Attributes
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.handlers.scope import Backend, Target


async def admit(
    backend: Backend,
    t: Target,
    old: dict[str, Any] | None,
    obj: dict[str, Any] | None,
    dry_run: bool,
    warnings: list[tuple[str, str]],
) -> tuple[Any, list[tuple[str, str]]]:
    """The write's admission webhooks (``admission/``): the object as mutated, and the
    Warning headers to send. Validating webhooks see the object as it would be stored: a
    dry run of the store's write (defaults, schema, validation) before the real one."""
    op = "CREATE" if old is None else "DELETE" if obj is None else "UPDATE"
    ns = t.namespace or ""
    attrs = Attributes(t.rt, t.version, op, ns, t.name, t.sub, obj, old, dry_run)
    outcome = Outcome()
    try:
        obj = await _webhooks(backend, attrs, t, outcome)
    except ApiError as exc:  # a refusal carries the warnings given before it, as in kube
        exc.headers += [errors.warning(w) for w in outcome.warnings]
        raise
    finally:
        if t.audit is not None:
            t.audit.annotations.update(outcome.annotations)
    return obj, warnings + [errors.warning(w) for w in outcome.warnings]


async def _webhooks(backend: Backend, attrs: Attributes, t: Target, outcome: Outcome) -> Any:
    """Mutating webhooks, then validating ones on the object as it would be stored."""
    if not backend.admission.configured():
        return attrs.obj  # what both rounds give back when no webhook matches
    ns, old = attrs.namespace, attrs.old
    obj = await backend.admission.mutate(attrs, t.user, outcome)

    def rehearsed() -> dict[str, Any] | None:
        if obj is None:
            return None
        trial = copy.deepcopy(obj)
        if old is None:
            made = backend.store.create(t.rt, ns, trial, dry_run=True).obj
            # a generated name is kept, so the webhooks saw the name that is stored
            obj.setdefault("metadata", {})["name"] = made["metadata"]["name"]
            return made
        return backend.store.update(t.rt, ns, t.name, trial, t.sub, dry_run=True).obj

    attrs = dataclasses.replace(attrs, obj=obj)
    await backend.admission.validate(attrs, t.user, outcome, rehearsed)
    return obj

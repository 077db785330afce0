"""Calling the admission webhooks of a write, in kube-apiserver's order: mutating webhooks one
after another (configurations by name), their JSON patches applied, ``IfNeeded`` ones invoked
once more when a later one changed the object; then the store's own defaulting and validation;
then every validating webhook at once. A denial answers with the webhook's status; a webhook that
cannot be called fails the request (``failurePolicy: Fail``) or is skipped (``Ignore``)."""

from __future__ import annotations

import base64
import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from kubetrio.emulator import crdconvert, errors
from kubetrio.emulator.admission.caller import CallError, Connections, post_review
from kubetrio.emulator.admission.configs import MUTATING, VALIDATING
from kubetrio.emulator.admission.rules import (
    Attributes,
    matched_version,
    namespace_selected,
    object_selected,
)
from kubetrio.emulator.auth.users import UserInfo
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.patch import json_patch
from kubetrio.emulator.store import Store
from kubetrio.runtime.util.inflight import waiting_on_simulated_time

# Never sent to webhooks, so a broken webhook can always be removed (as kube exempts them).
_EXEMPT = frozenset({MUTATING, VALIDATING})
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


class _ResponseShape(msgspec.Struct):
    """The typed fields of an AdmissionResponse: an answer that does not fit fails the call, as
    kube's decoding of the AdmissionReview does, instead of failing the emulator's handler."""

    allowed: bool = False
    uid: Any = None  # compared with the request's below, for kube's own wording
    status: dict[str, Any] | None = None
    patch: str | None = None
    patchType: str | None = None
    warnings: list[str] | None = None
    auditAnnotations: dict[str, str] | None = None


@dataclass(slots=True)
class Outcome:
    """What the webhooks added to the response: Warning texts and audit annotations."""

    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


def denied(name: str, result: Any) -> ApiError:
    """The webhook's own status, worded and coded as kube's ToStatusErr does."""
    status = result if isinstance(result, dict) else {}
    raw_code = status.get("code")
    code = raw_code if isinstance(raw_code, int) else 0
    by = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{by}: {status['message']}"
    elif status.get("reason"):
        message = f"{by}: {status['reason']}"
    else:
        message = f"{by} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return ApiError(max(code, 400), str(status.get("reason") or ""), message, details)


def _gvk(a: Attributes, version: str) -> dict[str, str]:
    return {"group": a.rt.group, "version": version, "kind": a.rt.kind}


def _gvr(a: Attributes, version: str) -> dict[str, str]:
    return {"group": a.rt.group, "version": version, "resource": a.rt.plural}


class Admission:
    """The emulator's webhook admission: reads the configurations from the store as they are
    now (kube's are eventually consistent; here a configuration applies from the next write)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.connections = Connections()  # kept alive between calls, as kube-apiserver does

    def configured(self) -> bool:
        """Whether any webhook configuration exists. Most requests meet none, and then the
        whole admission round (attributes, lookups, a trial write) is skipped."""
        return any(self.store.count_of(key) for key in (MUTATING, VALIDATING))

    def _hooks(self, key: str, a: Attributes) -> list[tuple[dict[str, Any], str]]:
        if a.rt.key in _EXEMPT:
            return []
        rt = self.store.types.by_key(key)
        if rt is None:
            return []
        configs = sorted(self.store.iter(rt), key=lambda e: str(e.obj["metadata"]["name"]))
        if not configs:
            return []  # the usual case: nothing registered, so no namespace lookup either
        ns_labels: dict[str, str] = {}
        if a.rt.namespaced and a.namespace:
            ns_rt = self.store.types.by_key("namespaces")
            ns = self.store.find(ns_rt, "", a.namespace) if ns_rt else None
            ns_labels = dict((ns.obj["metadata"].get("labels") or {}) if ns else {})
        out = []
        for entry in configs:
            for hook in entry.obj.get("webhooks") or []:
                version = matched_version(hook, a)
                if (
                    version is not None
                    and namespace_selected(hook, a, ns_labels)
                    and object_selected(hook, a)
                ):
                    out.append((hook, version))
        return out

    async def _as(
        self, a: Attributes, version: str, obj: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """``obj`` in ``version`` (a rule matched through ``matchPolicy: Equivalent``):
        converted as a read in that version would be."""
        if obj is None or version == a.version:
            return obj
        return (await crdconvert.convert(self.store, a.rt, [obj], a.rt.api_version(version)))[0]

    async def _review(
        self, a: Attributes, user: UserInfo, version: str, obj: dict[str, Any] | None
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "uid": str(uuid.uuid4()),
            "kind": _gvk(a, version),
            "resource": _gvr(a, version),
            "requestKind": _gvk(a, a.version),
            "requestResource": _gvr(a, a.version),
            "name": a.name or str(((obj or {}).get("metadata") or {}).get("name") or ""),
            "operation": a.operation,
            "userInfo": user.to_json(),
            "object": await self._as(a, version, obj),
            "oldObject": await self._as(a, version, a.old),
            "dryRun": a.dry_run,
            "options": {"kind": _OPTIONS[a.operation], "apiVersion": "meta.k8s.io/v1"},
        }
        # A namespace's own URL names it as the namespace too (kube's RequestInfo).
        namespace = a.namespace or (a.name if a.rt.key == "namespaces" else "")
        if namespace:
            request["namespace"] = namespace
        if a.sub:
            request["subResource"] = request["requestSubResource"] = a.sub
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}

    async def _call(
        self,
        hook: dict[str, Any],
        a: Attributes,
        user: UserInfo,
        version: str,
        obj: dict[str, Any] | None,
        outcome: Outcome,
    ) -> dict[str, Any] | None:
        """The webhook's response (None when it failed and its failure policy ignores that)."""
        name = str(hook.get("name"))
        review = await self._review(a, user, version, obj)
        try:
            answer = await post_review(
                hook.get("clientConfig") or {},
                int(hook.get("timeoutSeconds") or 10),
                review,
                self.connections,
            )
            response = answer.get("response") if isinstance(answer, dict) else None
            if not isinstance(response, dict):
                raise CallError("received invalid webhook response: the response is missing")
            try:
                msgspec.convert(response, _ResponseShape)
            except msgspec.ValidationError as exc:
                where = str(exc).replace("`$", "`response")
                raise CallError(f"received invalid webhook response: {where}") from None
            if response.get("uid") != review["request"]["uid"]:
                raise CallError(
                    f"received invalid webhook response: expected response.uid="
                    f'"{review["request"]["uid"]}", got "{response.get("uid")}"'
                )
        except CallError as exc:
            if hook.get("failurePolicy") == "Ignore":
                return None
            raise errors.internal(f'failed calling webhook "{name}": {exc}') from None
        outcome.warnings += [str(w) for w in response.get("warnings") or []]
        for key, value in (response.get("auditAnnotations") or {}).items():
            outcome.annotations[f"{name}/{key}"] = str(value)
        if not response.get("allowed"):
            raise denied(name, response.get("status"))
        return response

    async def mutate(
        self, a: Attributes, user: UserInfo, outcome: Outcome
    ) -> dict[str, Any] | None:
        """The object after every matching mutating webhook had its say."""
        hooks = self._hooks(MUTATING, a)
        obj = a.obj
        if not hooks:
            return obj
        after: list[Any] = []
        with waiting_on_simulated_time():  # the calls hold the clock themselves
            for hook, version in hooks:
                obj = await self._mutate_one(hook, a, user, version, obj, outcome)
                after.append(copy.deepcopy(obj))
            for (hook, version), seen in zip(hooks, after, strict=True):
                if hook.get("reinvocationPolicy") == "IfNeeded" and seen != obj:
                    obj = await self._mutate_one(hook, a, user, version, obj, outcome)
        return obj

    async def _mutate_one(
        self,
        hook: dict[str, Any],
        a: Attributes,
        user: UserInfo,
        version: str,
        obj: dict[str, Any] | None,
        outcome: Outcome,
    ) -> dict[str, Any] | None:
        response = await self._call(hook, a, user, version, obj, outcome)
        patch = (response or {}).get("patch")
        if not patch or obj is None:
            return obj
        name = hook.get("name")
        if (response or {}).get("patchType") != "JSONPatch":
            raise errors.internal(
                f'failed calling webhook "{name}": received invalid webhook response: '
                f'patchType "{(response or {}).get("patchType")}" is not supported'
            )
        try:
            ops = msgspec.json.decode(base64.b64decode(patch))
            patched = json_patch(copy.deepcopy(await self._as(a, version, obj)), ops)
        except (ValueError, ApiError) as exc:
            raise errors.internal(
                f'failed calling webhook "{name}": JSON patch could not be applied: {exc}'
            ) from None
        if not isinstance(patched, dict):
            raise errors.internal(f'webhook "{name}": the patched object is not a JSON object')
        if version == a.version:
            patched["apiVersion"] = obj.get("apiVersion")
            return patched
        patched["apiVersion"] = a.rt.api_version(version)
        request_version = a.rt.api_version(a.version)
        return (await crdconvert.convert(self.store, a.rt, [patched], request_version))[0]

    async def validate(
        self,
        a: Attributes,
        user: UserInfo,
        outcome: Outcome,
        final: Callable[[], dict[str, Any] | None],
    ) -> None:
        """Every matching validating webhook at once, on ``final()`` (the object as it would
        be stored); the first refusal in webhook order wins, as in kube."""
        hooks = self._hooks(VALIDATING, a)
        if not hooks:
            return
        obj = final()
        failures: list[ApiError | None] = [None] * len(hooks)

        async def one(i: int, hook: dict[str, Any], version: str) -> None:
            try:
                await self._call(hook, a, user, version, obj, outcome)
            except ApiError as exc:
                failures[i] = exc

        with waiting_on_simulated_time():
            async with trio.open_nursery() as nursery:
                for i, (hook, version) in enumerate(hooks):
                    nursery.start_soon(one, i, hook, version)
        for failure in failures:
            if failure is not None:
                raise failure

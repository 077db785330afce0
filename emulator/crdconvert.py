"""Custom resources converted between their served versions by the CRD's conversion webhook.

A CRD with ``spec.conversion.strategy: Webhook`` keeps its objects in the storage version; an
object read (get, list, watch) in another served version, or written in one, goes through the
webhook as an ``apiextensions.k8s.io/v1`` ``ConversionReview``, the objects of one list in one
review, as kube-apiserver batches them. Only labels and annotations may change in the metadata
(kube-apiserver keeps the rest). A failed call answers 500 ``conversion webhook for GROUP/VERSION,
Kind=KIND failed: ...``. With ``strategy: None`` a version differs only in its apiVersion.

Example::

    spec:
      conversion:
        strategy: Webhook
        webhook:
          conversionReviewVersions: [v1]
          clientConfig: {url: "https://127.0.0.1:9443/convert", caBundle: <base64 PEM>}
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from kubetrio.emulator import errors, hpaconvert
from kubetrio.emulator.admission.caller import CallError, post_review
from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.kinds import ResourceType
from kubetrio.runtime.util.inflight import waiting_on_simulated_time

if TYPE_CHECKING:  # the store validates CRDs with this module's checks
    from kubetrio.emulator.store import Store

_TIMEOUT = 30  # seconds: kube-apiserver's fixed conversion webhook timeout


HPA_KEY = "horizontalpodautoscalers.autoscaling"


def converts(store: Store, rt: ResourceType) -> bool:
    """Whether objects of ``rt`` change shape between versions (a CRD's conversion webhook,
    or a built-in converted as kube converts it), rather than only their apiVersion."""
    return rt.key == HPA_KEY or webhook_of(store, rt) is not None


def webhook_of(store: Store, rt: ResourceType) -> dict[str, Any] | None:
    """The CRD's conversion webhook, None when its versions convert by apiVersion alone."""
    if rt.builtin:
        return None
    conversion = ((store.crd_of(rt) or {}).get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return None
    webhook = conversion.get("webhook")
    return webhook if isinstance(webhook, dict) else {}


def conversion_causes(crd: dict[str, Any]) -> list[tuple[str, str, str]]:
    """What makes a CRD's ``spec.conversion`` unusable, as kube-apiserver words it."""
    conversion = (crd.get("spec") or {}).get("conversion") or {}
    if not isinstance(conversion, dict):
        return [("FieldValueInvalid", "spec.conversion", "Invalid value: must be an object")]
    strategy = conversion.get("strategy", "None")
    at = "spec.conversion"
    if strategy not in ("None", "Webhook"):
        return [
            (
                "FieldValueNotSupported",
                f"{at}.strategy",
                f'Unsupported value: "{strategy}": supported values: "None", "Webhook"',
            )
        ]
    webhook = conversion.get("webhook")
    if strategy == "None":
        if webhook is not None:
            return [
                (
                    "FieldValueForbidden",
                    f"{at}.webhook",
                    "Forbidden: should not be set when strategy is not set to Webhook",
                )
            ]
        return []
    if not isinstance(webhook, dict):
        return [
            (
                "FieldValueRequired",
                f"{at}.webhook",
                "Required value: required when strategy is set to Webhook",
            )
        ]
    out: list[tuple[str, str, str]] = []
    versions = webhook.get("conversionReviewVersions")
    if not isinstance(versions, list) or "v1" not in versions:
        out.append(
            (
                "FieldValueRequired",
                f"{at}.webhook.conversionReviewVersions",
                "Required value: must include v1 (the only version the emulator sends)",
            )
        )
    client = webhook.get("clientConfig")
    if not isinstance(client, dict) or not isinstance(client.get("url"), str):
        has_service = isinstance(client, dict) and "service" in client
        why = (
            "Unsupported value: the kubetrio emulator cannot reach in-cluster services: give a url"
            if has_service
            else "Required value: exactly one of url or service is required"
        )
        kind = "FieldValueNotSupported" if has_service else "FieldValueRequired"
        out.append((kind, f"{at}.webhook.clientConfig", why))
    elif not client["url"].startswith("https://"):
        out.append(
            (
                "FieldValueInvalid",
                f"{at}.webhook.clientConfig.url",
                f"Invalid value: \"{client['url']}\": 'https' is the only allowed URL scheme",
            )
        )
    return out


def _gvk(obj: dict[str, Any]) -> str:
    group, _, version = str(obj.get("apiVersion")).rpartition("/")
    return f"{group}/{version}, Kind={obj.get('kind')}"


def _keep_metadata(before: dict[str, Any], after: Any, api_version: str) -> dict[str, Any]:
    if not isinstance(after, dict) or after.get("apiVersion") != api_version:
        raise CallError(f"invalid converted object: apiVersion is not {api_version}")
    md = dict(before.get("metadata") or {})
    changed = after.get("metadata") or {}
    for key in ("labels", "annotations"):
        if key in changed:
            md[key] = changed[key]
        else:
            md.pop(key, None)
    return {**after, "metadata": md}


async def convert(
    store: Store,
    rt: ResourceType,
    objs: list[dict[str, Any]],
    api_version: str,
    answering: bool = False,
) -> list[dict[str, Any]]:
    """``objs`` in ``api_version``: one review for those in another version (none when all are
    already there, or when the CRD converts by apiVersion alone). ``answering``: a request's
    answer waits on the call, which holds a test's mock clock in its stead (a watch's
    conversion, or one made inside admission, is already accounted for)."""
    todo = [i for i, o in enumerate(objs) if o.get("apiVersion") != api_version]
    if not todo:
        return objs
    webhook = webhook_of(store, rt)
    if webhook is None and rt.key == HPA_KEY:
        return [hpaconvert.convert(o, api_version) for o in objs]
    if webhook is None:
        return [
            o if o.get("apiVersion") == api_version else {**o, "apiVersion": api_version}
            for o in objs
        ]
    sent = [objs[i] for i in todo]
    uid = str(uuid.uuid4())
    review = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": sent},
        # As kube-apiserver sends it: an empty response, its nil list written as null.
        "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}},
    }
    try:
        with waiting_on_simulated_time() if answering else contextlib.nullcontext():
            answer = await post_review(webhook.get("clientConfig") or {}, _TIMEOUT, review)
        response = answer.get("response") if isinstance(answer, dict) else None
        if not isinstance(response, dict) or response.get("uid") != uid:
            raise CallError("invalid ConversionReview response: the response uid does not match")
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise CallError(str(result.get("message") or "the webhook did not report Success"))
        converted = response.get("convertedObjects")
        if not isinstance(converted, list) or len(converted) != len(sent):
            raise CallError(
                f"expected {len(sent)} converted objects, got "
                f"{len(converted) if isinstance(converted, list) else 0}"
            )
        out = list(objs)
        for i, before, after in zip(todo, sent, converted, strict=True):
            out[i] = _keep_metadata(before, after, api_version)
        return out
    except CallError as exc:
        raise errors.internal(f"conversion webhook for {_gvk(sent[0])} failed: {exc}") from None


async def convert_entries(
    store: Store, rt: ResourceType, entries: list[Entry], api_version: str, answering: bool = False
) -> list[Entry]:
    """Stored entries as ``api_version`` shows them (the same entries when nothing changes)."""
    objs = await convert(store, rt, [e.obj for e in entries], api_version, answering)
    return [e if o is e.obj else Entry(o, e.rv) for e, o in zip(entries, objs, strict=True)]

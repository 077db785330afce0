"""The three PATCH formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902), and
strategic merge patch as far as kubectl's cordon/label/annotate/apply of built-ins need it.

All functions return new structures and never mutate their inputs, because the inputs are
stored objects shared with in-flight LIST and watch responses.
"""

from __future__ import annotations

import copy
from typing import Any

from kubetrio.emulator.errors import ApiError, bad_request

# Lists merged element-wise in strategic merge patch, by field name -> merge key (the
# patchMergeKey tags of the core Go types). Lists not named here are replaced whole.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "taints": "key",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "readinessGates": "conditionType",
    "topologySpreadConstraints": "topologyKey",
    "podIPs": "ip",
    "hostIPs": "ip",
    "webhooks": "name",  # Mutating/ValidatingWebhookConfiguration
}
# Lists of scalars merged as sets (patchStrategy=merge without a key).
MERGED_SCALAR_LISTS = frozenset({"finalizers"})


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        # Scalars are immutable: only a list needs a copy of its own.
        return copy.deepcopy(patch) if isinstance(patch, list) else patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class _PatchFailed(Exception):
    pass


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _PatchFailed(f'json pointer "{path}" must start with "/"')
    return [_unescape(t) for t in path[1:].split("/")]


def _parent(doc: Any, tokens: list[str], path: str, op: str) -> Any:
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list) and t.isdigit() and int(t) < len(cur):
            cur = cur[int(t)]
        else:
            raise _PatchFailed(
                f'{op} operation does not apply: doc is missing path: "{path}": missing value'
            )
    return cur


def _get(doc: Any, path: str, op: str) -> Any:
    tokens = _split(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise _PatchFailed(
        f'{op} operation does not apply: doc is missing path: "{path}": missing value'
    )


def _add(doc: Any, path: str, value: Any, op: str = "add") -> Any:
    tokens = _split(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise _PatchFailed(f"{op} operation does not apply: index out of range: {last}")
    else:
        raise _PatchFailed(
            f'{op} operation does not apply: doc is missing path: "{path}": missing value'
        )
    return doc


def _remove(doc: Any, path: str, op: str = "remove") -> Any:
    tokens = _split(path)
    if not tokens:
        raise _PatchFailed(f"{op} operation does not apply: cannot remove the document root")
    parent = _parent(doc, tokens, path, op)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise _PatchFailed(
            f'{op} operation does not apply: doc is missing path: "{path}": missing value'
        )
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902. A malformed patch is 400; an operation that cannot apply (a failed ``test``
    included) is 422, as the apiserver answers (NewGenericServerResponse with the
    jsonpatch error as the cause)."""
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)
    try:
        for i, op in enumerate(ops):
            if not isinstance(op, dict) or not isinstance(op.get("op"), str):
                raise bad_request(f"the patch operation {i} is missing the 'op' field")
            kind = op["op"]
            path = op.get("path")
            if not isinstance(path, str):
                raise bad_request(f"the {kind} operation is missing the 'path' field")
            if kind in ("add", "replace", "test") and "value" not in op:
                raise bad_request(f"the {kind} operation is missing the 'value' field")
            if kind == "add":
                doc = _add(doc, path, copy.deepcopy(op["value"]))
            elif kind == "remove":
                doc = _remove(doc, path)
            elif kind == "replace":
                _get(doc, path, "replace")
                tokens = _split(path)
                if tokens:
                    parent = _parent(doc, tokens, path, "replace")
                    last = tokens[-1]
                    if isinstance(parent, list):
                        parent[int(last)] = copy.deepcopy(op["value"])
                    else:
                        parent[last] = copy.deepcopy(op["value"])
                else:
                    doc = copy.deepcopy(op["value"])
            elif kind in ("move", "copy"):
                src = op.get("from")
                if not isinstance(src, str):
                    raise bad_request(f"the {kind} operation is missing the 'from' field")
                value = copy.deepcopy(_get(doc, src, kind))
                if kind == "move":
                    doc = _remove(doc, src, kind)
                doc = _add(doc, path, value, kind)
            elif kind == "test":
                try:
                    have = _get(doc, path, "test")
                except _PatchFailed:
                    have = None
                if have != op["value"]:
                    raise _PatchFailed(f"testing value {path} failed: test failed")
            else:
                raise bad_request(f"Unexpected kind: {kind}")
    except _PatchFailed as exc:
        raise ApiError(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            {"causes": [{"reason": "UnexpectedServerResponse", "message": str(exc)}]},
        ) from None
    return doc


def _merge_key(field: str, items: list[Any]) -> str | None:
    key = MERGE_KEYS.get(field)
    if key is None:
        return None
    if all(isinstance(i, dict) for i in items):
        return key
    return None


def _smp_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    if field in MERGED_SCALAR_LISTS:
        out = list(original)
        for p in patch:
            if p not in out:
                out.append(p)
        return out
    key = _merge_key(field, patch)
    if key is None or not all(isinstance(o, dict) for o in original):
        return [copy.deepcopy(p) for p in patch]
    out = [dict(o) for o in original]
    for p in patch:
        ident = p.get(key)
        idx = next((i for i, o in enumerate(out) if o.get(key) == ident), None)
        if p.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(strategic_merge({}, p))
        else:
            out[idx] = strategic_merge(out[idx], p)
    return out


def _order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def ident(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [ident(o) for o in order]
    ranked = [i for w in wanted for i in items if ident(i) == w]
    rest = [i for i in items if ident(i) not in wanted]
    return ranked + rest


def strategic_merge(original: Any, patch: Any) -> Any:
    """Strategic merge patch of ``patch`` onto ``original`` (both JSON values)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(original, dict):
        original = {}
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(original)
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            if isinstance(value, list):
                orders[key.partition("/")[2]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            fld = key.partition("/")[2]
            if isinstance(result.get(fld), list) and isinstance(value, list):
                result[fld] = [v for v in result[fld] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                result[key] = strategic_merge(result.get(key), value)
        elif isinstance(value, list):
            cur = result.get(key)
            result[key] = _smp_list(key, cur if isinstance(cur, list) else [], value)
        else:
            result[key] = value
    for fld, order in orders.items():
        if isinstance(result.get(fld), list):
            result[fld] = _order(result[fld], order, MERGE_KEYS.get(fld))
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result

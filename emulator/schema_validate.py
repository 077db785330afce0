"""Custom resource values checked against a CRD's structural ``openAPIV3Schema``.

kube-apiserver runs kube-openapi's schema validator and turns each failure into a
``field.Error``; clients (kubectl, controller-runtime) show those strings verbatim and branch on
their reasons, so every check here reproduces the validator's order, reason and wording rather
than a generic JSON Schema library's.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import math
import re
import uuid
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import Any

import re2

Schema = dict[str, Any]
Token = str | int  # one step of a field path: a property name or a list index


@dataclass(frozen=True, slots=True)
class Cause:
    """One field error: the Status cause kube reports, plus the path to find the value again
    (validation ratcheting compares old and new values there)."""

    reason: str
    field: str
    message: str
    path: tuple[Token, ...] = ()

    def triple(self) -> tuple[str, str, str]:
        return (self.reason, self.field, self.message)


def path_text(path: tuple[Token, ...]) -> str:
    """``spec.items[0].name`` as field.Path renders it."""
    out = ""
    for t in path:
        if isinstance(t, int):
            out += f"[{t}]"
        else:
            out += f".{t}" if out else t
    return out


def go_value(value: Any) -> str:
    """A bad value as field.Error prints it: strings quoted, scalars bare, the rest as JSON."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return go_number(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def go_number(x: float) -> str:
    """Go's ``%v`` for a JSON number: integral floats print without a fraction."""
    if isinstance(x, int):
        return str(x)
    if math.isfinite(x) and x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    text = repr(x)
    if "e" in text:
        mant, _, exp = text.partition("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        text = f"{mant}e{sign}{digits}"
    return text


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def schema_types(s: Schema) -> list[str]:
    """The allowed JSON types; int-or-string widens to both, as kube converts it."""
    if s.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    t = s.get("type")
    return [t] if isinstance(t, str) and t else []


_ABSENT: Any = object()  # no old value to ratchet against


class _Validator:
    def __init__(self) -> None:
        self.out: list[Cause] = []

    # -- error builders, one per kube-openapi error code --------------------------------------

    def _invalid(self, path: tuple[Token, ...], value: Any, detail: str) -> None:
        self.out.append(
            Cause(
                "FieldValueInvalid",
                path_text(path),
                f"Invalid value: {go_value(value)}: {detail}",
                path,
            )
        )

    def _type_invalid(self, path: tuple[Token, ...], actual: str, want: str) -> None:
        name = path_text(path)
        self.out.append(
            Cause(
                "FieldValueTypeInvalid",
                name,
                f'Invalid value: "{actual}": {name} in body must be of type {want}: "{actual}"',
                path,
            )
        )

    def _composite(self, path: tuple[Token, ...], text: str) -> None:
        """anyOf/oneOf/allOf/not failures are plain errors in kube-openapi, which kube turns
        into an Invalid error with no field (printed as ``<nil>``)."""
        self.out.append(
            Cause("FieldValueInvalid", "<nil>", f'Invalid value: "": {text}', path),
        )

    # -- the validator chain ---------------------------------------------------------------

    def check(self, s: Schema, v: Any, path: tuple[Token, ...], old: Any = _ABSENT) -> None:
        """``old``: the value at ``path`` in the object being updated (``_ABSENT`` when none,
        or when ratcheting does not apply). A subtree equal to it is skipped where no cause
        from it could survive ratcheting (see ``_ratcheted``)."""
        types = schema_types(s)
        if v is None:
            if types and not s.get("nullable"):
                self._type_invalid(path, "null", ",".join(types))
            self._enum(s, v, path)
            return
        actual = json_type(v)
        numeric = "integer" in types or "number" in types
        fmt = s.get("format")
        skip_type = bool(fmt) and not numeric and isinstance(v, (str, list))
        if types and not skip_type and not _type_ok(actual, v, types):
            self._type_invalid(path, actual, ",".join(types))
        self._props(s, v, path)
        if isinstance(v, str):
            self._string(s, v, path)
            self._format(s, v, path)
        if actual in ("integer", "number"):
            self._number(s, v, path)
        if isinstance(v, list):
            self._array(s, v, path, old)
        self._enum(s, v, path)
        if isinstance(v, dict):
            self._object(s, v, path, old)

    def _enum(self, s: Schema, v: Any, path: tuple[Token, ...]) -> None:
        enum = s.get("enum")
        if not enum or any(_equal(v, e) for e in enum):
            return
        allowed = ", ".join(
            json.dumps(e if isinstance(e, str) else json.dumps(e, separators=(",", ":")))
            for e in enum
        )
        self.out.append(
            Cause(
                "FieldValueNotSupported",
                path_text(path),
                f"Unsupported value: {go_value(v)}: supported values: {allowed}",
                path,
            )
        )

    def _string(self, s: Schema, v: str, path: tuple[Token, ...]) -> None:
        # kube-openapi reports only the first failing string constraint.
        max_len, min_len, pattern = s.get("maxLength"), s.get("minLength"), s.get("pattern")
        if isinstance(max_len, int) and len(v) > max_len:
            unit = "byte" if max_len == 1 else "bytes"
            self.out.append(
                Cause(
                    "FieldValueTooLong",
                    path_text(path),
                    f"Too long: may not be more than {max_len} {unit}",
                    path,
                )
            )
        elif isinstance(min_len, int) and len(v) < min_len:
            self._invalid(
                path, v, f"{path_text(path)} in body should be at least {min_len} chars long"
            )
        elif isinstance(pattern, str) and pattern:
            rx = compile_pattern(pattern)
            if rx is not None and not rx.search(v):
                self._invalid(path, v, f"{path_text(path)} in body should match '{pattern}'")

    def _format(self, s: Schema, v: str, path: tuple[Token, ...]) -> None:
        fmt = s.get("format")
        check = _FORMATS.get(fmt) if isinstance(fmt, str) else None
        if check is not None and not check(v):
            name = path_text(path)  # only on failure: most values pass
            self.out.append(
                Cause(
                    "FieldValueTypeInvalid",
                    name,
                    f"Invalid value: {go_value(v)}: {name} in body must be of type {fmt}: "
                    f"{go_value(v)}",
                    path,
                )
            )

    def _number(self, s: Schema, v: float, path: tuple[Token, ...]) -> None:
        mult: Any = s.get("multipleOf")
        if _is_num(mult) and mult > 0:
            if isinstance(v, int) and isinstance(mult, int):
                multiple = v % mult == 0  # exact, however large the integers
            else:
                try:
                    q = v / mult
                except OverflowError:
                    q = math.inf
                multiple = math.isfinite(q) and abs(q - round(q)) < 1e-9
            if not multiple:
                self._invalid(
                    path, v, f"{path_text(path)} in body should be a multiple of {go_number(mult)}"
                )
        mn: Any = s.get("minimum")
        mx: Any = s.get("maximum")
        if _is_num(mx):
            if s.get("exclusiveMaximum") and v >= mx:
                self._invalid(
                    path, v, f"{path_text(path)} in body should be less than {go_number(mx)}"
                )
            elif v > mx:
                self._invalid(
                    path,
                    v,
                    f"{path_text(path)} in body should be less than or equal to {go_number(mx)}",
                )
        if _is_num(mn):
            if s.get("exclusiveMinimum") and v <= mn:
                self._invalid(
                    path, v, f"{path_text(path)} in body should be greater than {go_number(mn)}"
                )
            elif v < mn:
                self._invalid(
                    path,
                    v,
                    f"{path_text(path)} in body should be greater than or equal to {go_number(mn)}",
                )

    def _array(self, s: Schema, v: list[Any], path: tuple[Token, ...], old: Any) -> None:
        items = s.get("items")
        if isinstance(items, dict):
            olds = old if isinstance(old, list) else ()
            for i, item in enumerate(v):
                was = olds[i] if i < len(olds) else _ABSENT
                if not _ratcheted(items, item, was):
                    self.check(items, item, (*path, i), was)
        mn, mx = s.get("minItems"), s.get("maxItems")
        if isinstance(mn, int) and len(v) < mn:
            self._invalid(
                path, len(v), f"{path_text(path)} in body should have at least {mn} items"
            )
        if isinstance(mx, int) and len(v) > mx:
            self._too_many(path, len(v), mx)
        if s.get("uniqueItems") and any(_equal(a, b) for i, a in enumerate(v) for b in v[i + 1 :]):
            self._invalid(path, "", f"{path_text(path)} in body shouldn't contain duplicates")

    def _too_many(self, path: tuple[Token, ...], actual: int, most: int) -> None:
        unit = "item" if most == 1 else "items"
        self.out.append(
            Cause(
                "FieldValueTooMany",
                path_text(path),
                f"Too many: {actual}: must have at most {most} {unit}",
                path,
            )
        )

    def _object(self, s: Schema, v: dict[str, Any], path: tuple[Token, ...], old: Any) -> None:
        mn, mx = s.get("minProperties"), s.get("maxProperties")
        if isinstance(mn, int) and len(v) < mn:
            self._invalid(
                path, len(v), f"{path_text(path)} in body should have at least {mn} properties"
            )
        if isinstance(mx, int) and len(v) > mx:
            self._too_many(path, len(v), mx)
        props: dict[str, Schema] = s.get("properties") or {}
        extra = s.get("additionalProperties")
        if extra is False:
            for k in sorted(v):
                if k not in props:
                    name = path_text(path)
                    self.out.append(
                        Cause(
                            "FieldValueInvalid",
                            name,
                            f'Invalid value: "{k}": {name}.{k} in body is a forbidden property',
                            path,
                        )
                    )
        olds = old if isinstance(old, dict) else {}
        if isinstance(extra, dict):
            for k in sorted(v):
                if k not in props and not _ratcheted(extra, v[k], was := olds.get(k, _ABSENT)):
                    self.check(extra, v[k], (*path, k), was)
        for k in sorted(props):
            if k in v and not _ratcheted(props[k], v[k], was := olds.get(k, _ABSENT)):
                self.check(props[k], v[k], (*path, k), was)
        for k in s.get("required") or []:
            if k not in v:
                p = (*path, k)
                self.out.append(Cause("FieldValueRequired", path_text(p), "Required value", p))

    def _props(self, s: Schema, v: Any, path: tuple[Token, ...]) -> None:
        if not _COMPOSITE.intersection(s):
            return  # the common node: no message to word, so none is worded
        quoted = json.dumps(path_text(path))
        any_of = s.get("anyOf")
        if any_of:
            failures = [self._sub(x, v, path) for x in any_of]
            if all(failures):
                self._composite(path, f"{quoted} must validate at least one schema (anyOf)")
                self.out.extend(_fewest(failures))
        one_of = s.get("oneOf")
        if one_of:
            failures = [self._sub(x, v, path) for x in one_of]
            ok = sum(1 for f in failures if not f)
            if ok != 1:
                more = "Found none valid" if ok == 0 else f"Found {ok} valid alternatives"
                self._composite(
                    path, f"{quoted} must validate one and only one schema (oneOf). {more}"
                )
                if ok == 0:
                    self.out.extend(_fewest(failures))
        all_of = s.get("allOf")
        if all_of:
            failures = [self._sub(x, v, path) for x in all_of]
            for f in failures:
                self.out.extend(f)
            bad = sum(1 for f in failures if f)
            if bad:
                more = ". None validated" if bad == len(all_of) else ""
                self._composite(path, f"{quoted} must validate all the schemas (allOf){more}")
        not_ = s.get("not")
        if isinstance(not_, dict) and not self._sub(not_, v, path):
            self._composite(path, f"{quoted} must not validate the schema (not)")

    @staticmethod
    def _sub(s: Any, v: Any, path: tuple[Token, ...]) -> list[Cause]:
        inner = _Validator()
        if isinstance(s, dict):
            inner.check(s, v, path)
        return inner.out


_COMPOSITE = frozenset(("anyOf", "oneOf", "allOf", "not"))


def validate(
    schema: Schema, value: Any, path: tuple[Token, ...] = (), old: dict[str, Any] | None = None
) -> list[Cause]:
    """Every schema violation in ``value``, in kube's order and wording.

    With ``old`` (the stored object an update replaces) the caller drops every cause whose
    value is unchanged from ``old`` (ratcheting); subtrees whose causes would all be dropped
    are then not walked at all, which is most of an object on a status write. Without it,
    everything is walked."""
    v = _Validator()
    v.check(schema, value, path, _ABSENT if old is None else old)
    return v.out


def _ratcheted(s: Schema, v: Any, old: Any) -> bool:
    """Whether validating ``v`` can be skipped: it equals the old value, so every cause under
    it names a value unchanged from the old object and ratcheting drops it, unless it is a
    missing required field (its value is absent, never "unchanged"), which only a schema
    with ``required`` somewhere below can raise."""
    return old is not _ABSENT and old == v and not _requires(s)


def _requires(s: Any) -> bool:
    """Whether ``required`` appears anywhere in schema ``s`` (conservatively: any key of that
    name, composites and items included). Cached per schema object: CRD schemas live as long
    as their stored CRD, and the entry keeps its schema so an id is never reused under it."""
    hit = _REQUIRES.get(id(s))
    if hit is not None and hit[0] is s:
        return hit[1]
    found, stack = False, [s]
    while stack and not found:
        node = stack.pop()
        if isinstance(node, dict):
            found = "required" in node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if len(_REQUIRES) > 100_000:
        _REQUIRES.clear()
    _REQUIRES[id(s)] = (s, found)
    return found


_REQUIRES: dict[int, tuple[Any, bool]] = {}


def list_sets_and_maps(schema: Schema, value: Any) -> list[Cause]:
    """x-kubernetes-list-type set/map uniqueness, checked after the schema as kube does: the
    first repeat of an element (set) or key (map) is a Duplicate at its own index."""
    out: list[Cause] = []
    _lists(schema, value, (), out)
    return out


def _lists(s: Any, v: Any, path: tuple[Token, ...], out: list[Cause]) -> None:
    if not isinstance(s, dict):
        return
    if isinstance(v, dict):
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        for k in sorted(v):
            sub = props.get(k, extra if isinstance(extra, dict) else None)
            _lists(sub, v[k], (*path, k), out)
    elif isinstance(v, list):
        kind = s.get("x-kubernetes-list-type")
        if kind == "set":
            keys: list[Any] = list(v)
        elif kind == "map":
            bad = next(
                (i for i, x in enumerate(v) if x is not None and not isinstance(x, dict)), None
            )
            if bad is not None:
                p = (*path, bad)
                out.append(
                    Cause(
                        "FieldValueInvalid",
                        path_text(p),
                        f"Invalid value: {go_value(v[bad])}: must be an object for an array of "
                        "list-type map",
                        p,
                    )
                )
                keys = []
            else:
                names = s.get("x-kubernetes-list-map-keys") or []
                keys = [{k: x[k] for k in names if k in x} if x else {} for x in v]
        else:
            keys = []
        seen: dict[tuple[str, str], int] = {}
        for i, key in enumerate(keys):
            ident = (type(key).__name__, json.dumps(key, sort_keys=True))
            seen[ident] = seen.get(ident, 0) + 1
            if seen[ident] == 2:
                p = (*path, i)
                out.append(
                    Cause(
                        "FieldValueDuplicate", path_text(p), f"Duplicate value: {go_value(key)}", p
                    )
                )
        for i, item in enumerate(v):
            _lists(s.get("items"), item, (*path, i), out)


def embedded_resources(schema: Schema, value: Any, path: tuple[Token, ...] = ()) -> list[Cause]:
    """x-kubernetes-embedded-resource objects need their own apiVersion and kind (strings),
    as kube's ObjectMeta/TypeMeta check of embedded resources demands."""
    out: list[Cause] = []
    _embedded(schema, value, path, out)
    return out


def _embedded(s: Any, v: Any, path: tuple[Token, ...], out: list[Cause]) -> None:
    if not isinstance(s, dict):
        return
    if isinstance(v, dict):
        if s.get("x-kubernetes-embedded-resource"):
            for key in ("apiVersion", "kind"):
                p = (*path, key)
                if key not in v or v[key] == "":
                    out.append(Cause("FieldValueRequired", path_text(p), "Required value", p))
                elif not isinstance(v[key], str):
                    out.append(
                        Cause(
                            "FieldValueInvalid",
                            path_text(p),
                            f"Invalid value: {go_value(v[key])}: must be a string",
                            p,
                        )
                    )
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        for k in sorted(v):
            sub = props.get(k, extra)
            _embedded(sub, v[k], (*path, k), out)
    elif isinstance(v, list):
        for i, item in enumerate(v):
            _embedded(s.get("items"), item, (*path, i), out)


def _fewest(failures: list[list[Cause]]) -> list[Cause]:
    """The alternative that came closest, whose errors kube reports with the composite one."""
    best = failures[0]
    for f in failures[1:]:
        if len(f) < len(best):
            best = f
    return best


def _type_ok(actual: str, v: Any, types: list[str]) -> bool:
    if actual in types:
        return True
    if actual == "number" and "integer" in types and math.isfinite(v) and float(v).is_integer():
        return True
    return actual == "integer" and "number" in types


def _is_num(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are the same number, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is reported to the client, not to stderr


@lru_cache(maxsize=512)
def _compile(pattern: str) -> tuple[Any, str]:
    try:
        return re2.compile(pattern, _RE2_OPTIONS), ""
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        return None, why.decode() if isinstance(why, bytes) else str(why)


def compile_pattern(pattern: str) -> Any:
    """The schema's pattern as kube compiles it: RE2, Go's regexp syntax (None if invalid)."""
    return _compile(pattern)[0]


def pattern_error(pattern: str) -> str:
    """Why RE2 refuses ``pattern`` ("" when it compiles)."""
    return _compile(pattern)[1]


def _datetime(v: str) -> bool:
    try:
        datetime.fromisoformat(v.replace("z", "Z"))
    except ValueError:
        return False
    return "T" in v.upper() or " " in v


def _date(v: str) -> bool:
    try:
        date.fromisoformat(v)
    except ValueError:
        return False
    return len(v) == 10


def _uuid(v: str) -> bool:
    try:
        uuid.UUID(v)
    except ValueError:
        return False
    return len(v) == 36


def _ip(version: int) -> Any:
    def check(v: str) -> bool:
        try:
            return ipaddress.ip_address(v).version == version
        except ValueError:
            return False

    return check


def _cidr(v: str) -> bool:
    try:
        ipaddress.ip_network(v, strict=False)
    except ValueError:
        return False
    return "/" in v


def _byte(v: str) -> bool:
    try:
        base64.b64decode(v, validate=True)
    except ValueError:
        return False
    return True


_HOSTNAME = re.compile(
    r"^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")

# The formats kube's CRD validation checks (others are accepted and ignored).
_FORMATS: dict[str, Any] = {
    "date-time": _datetime,
    "datetime": _datetime,
    "date": _date,
    "uuid": _uuid,
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "byte": _byte,
    "hostname": lambda v: len(v) <= 255 and bool(_HOSTNAME.match(v)),
    "email": lambda v: bool(_EMAIL.match(v)),
}

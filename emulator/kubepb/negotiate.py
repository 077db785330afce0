"""Content negotiation as kube-apiserver does it: which media type a response is written in,
and whether a request body's media type can be read for a kind.

Built-in kinds are served as JSON, YAML and protobuf; custom resources as JSON and YAML only.
The emulator answers YAML requests in JSON (a gap listed in gaps.py), so the question answered
here is only "protobuf or JSON?", plus 406 when the Accept header allows neither.
"""

from __future__ import annotations

from kubetrio.emulator.errors import ApiError

PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_WATCH = PROTOBUF + ";stream=watch"
_JSONISH = frozenset({"application/json", "application/yaml", "*/*", "application/*"})


def _accepted(builtin: bool) -> str:
    types = ["application/json", "application/yaml"]
    if builtin:
        types.append(PROTOBUF)
    return ", ".join(types)


def not_acceptable(builtin: bool) -> ApiError:
    return ApiError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {_accepted(builtin)}",
    )


def unsupported_body(builtin: bool) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + _accepted(builtin),
        {},
    )


def _clauses(accept: str) -> list[tuple[str, dict[str, str]]]:
    """Accept clauses, most preferred first (by q; ties keep the client's order); q=0 dropped."""
    ranked: list[tuple[float, int, str, dict[str, str]]] = []
    for i, clause in enumerate(accept.split(",")):
        media, *raw_params = (p.strip() for p in clause.split(";"))
        if not media:
            continue
        params: dict[str, str] = {}
        for p in raw_params:
            k, _, v = p.partition("=")
            params[k.strip().lower()] = v.strip()
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0:
            ranked.append((-q, i, media.lower(), params))
    ranked.sort(key=lambda r: (r[0], r[1]))
    return [(media, params) for _, _, media, params in ranked]


def plain_json(accept: str) -> bool:
    """The fast path of every JSON client: no protobuf asked for, and something we serve is."""
    return "protobuf" not in accept and (
        not accept or "json" in accept or "*" in accept or "yaml" in accept
    )


def protobuf_response(accept: str, has_codec: bool, builtin: bool) -> bool:
    """True when the response should be protobuf; raises 406 when nothing acceptable is served.

    Clauses with ``as=`` ask for a transformed form (Table, PartialObjectMetadata) that is
    written as JSON here; a protobuf clause for a kind without a codec is skipped, as the
    apiserver skips media types a resource does not serve."""
    if plain_json(accept):
        return False
    for media, params in _clauses(accept):
        if media == PROTOBUF and has_codec and "as" not in params:
            return True
        if media in _JSONISH:
            return False
    raise not_acceptable(builtin)


def status_protobuf(accept: str) -> bool:
    """True when an error Status should be protobuf (Status always has a codec). Never 406: an
    error is written in JSON when the client's preference cannot be met."""
    if "protobuf" not in accept:
        return False
    for media, params in _clauses(accept):
        if media == PROTOBUF and "as" not in params:
            return True
        if media in _JSONISH:
            return False
    return False


def is_protobuf_body(content_type: str) -> bool:
    return "protobuf" in content_type and (
        content_type.split(";", 1)[0].strip().lower() == PROTOBUF
    )

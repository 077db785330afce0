"""Regenerate the emulator's built-in OpenAPI definitions from the real apiserver's spec.

Dev-time only (CI never runs it: the source spec is not in the repository). Usage::

    python tools/trim_openapi.py /path/to/swagger.json [emulator/builtin-openapi.json.gz]

Keeps the definitions of the kinds the emulator serves (every version of its built-ins), their
lists, the shared meta types every API publishes, and everything those reach through ``$ref``
-- with their descriptions, since ``kubectl explain`` prints them. Paths are not kept: the emulator
builds its operations from what it actually serves.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from kubetrio.emulator.kinds import ResourceTypes

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
# Published by every group-version, or bodies of the subresources the emulator serves.
_ALWAYS = (
    _META + "Status",
    _META + "DeleteOptions",
    _META + "WatchEvent",
    _META + "Patch",
    _META + "APIResourceList",
    "io.k8s.api.policy.v1.Eviction",
    "io.k8s.api.core.v1.Binding",
    "io.k8s.api.authentication.v1.TokenRequest",
    "io.k8s.api.autoscaling.v1.Scale",
)
_DEFAULT_OUT = Path(__file__).resolve().parent.parent / "emulator/builtin-openapi.json.gz"


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            out.add(ref.removeprefix("#/definitions/"))
        for v in node.values():
            _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)


def trim(spec: dict[str, Any]) -> dict[str, Any]:
    defs: dict[str, Any] = spec["definitions"]
    # Every version the emulator serves a built-in in (some more than their storage one).
    versions = [(rt.group, v, rt.kind) for rt in ResourceTypes().all() for v in rt.versions]
    served = {(g, v, kind) for g, v, kind in versions}
    served |= {(g, v, kind + "List") for g, v, kind in versions}
    groups = {(g, v) for g, v, _ in versions}
    roots = {
        name
        for name, d in defs.items()
        for gvk in d.get("x-kubernetes-group-version-kind", ())
        if (gvk["group"], gvk["version"], gvk["kind"]) in served
    }
    roots.update(_ALWAYS)
    keep: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        found: set[str] = set()
        _refs(defs[name], found)
        todo.extend(found - keep)
    out: dict[str, Any] = {}
    for name in sorted(keep):
        d = dict(defs[name])
        gvks = d.get("x-kubernetes-group-version-kind")
        if gvks and len(gvks) > 1:
            # DeleteOptions/WatchEvent name every group-version; keep the ones served here.
            d["x-kubernetes-group-version-kind"] = [
                g for g in gvks if (g["group"], g["version"]) in groups
            ]
        out[name] = d
    return {"info": spec.get("info", {}), "definitions": out}


def main() -> None:
    src = Path(sys.argv[1])
    dst = Path(sys.argv[2]) if len(sys.argv) > 2 else _DEFAULT_OUT
    trimmed = trim(json.loads(src.read_text()))
    data = json.dumps(trimmed, sort_keys=True, separators=(",", ":")).encode()
    # mtime=0: the same input regenerates byte-identical output (clean diffs).
    dst.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{len(trimmed['definitions'])} definitions, {len(data)} bytes, gz {dst.stat().st_size}")


if __name__ == "__main__":
    main()

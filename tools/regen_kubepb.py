"""Regenerate the protobuf descriptors the emulator serves built-in kinds with (dev-time only).

    .venv/bin/pip install grpcio-tools
    .venv/bin/python tools/regen_kubepb.py [API_GIT_DIR] [APIMACHINERY_GIT_DIR] [APIEXT_GIT_DIR]

Reads k8s.io/api's, k8s.io/apimachinery's and k8s.io/apiextensions-apiserver's ``generated.proto``
files out of git mirrors (bare repositories are fine: files are read with ``git show``), compiles
the groups the emulator serves plus their imports into one FileDescriptorSet, and writes next to it
what the .proto files do not say but the JSON form needs: which fields are Go structs embedded
inline, which are ``omitempty``, and the JSON names that differ from the proto names (``$ref``,
``x-kubernetes-*``). All come from the Go struct tags (matched by protobuf field number), so nothing
is maintained by hand. Not run in CI: the outputs are committed as package data.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

API_GROUPS = [
    "core/v1",
    "apps/v1",
    "batch/v1",
    "networking/v1",
    "scheduling/v1",
    "rbac/v1",
    "policy/v1",
    "storage/v1",
    "coordination/v1",
    "authentication/v1",
    "authorization/v1",
    "admissionregistration/v1",
    "autoscaling/v1",
    "autoscaling/v2",
    "certificates/v1",
    "discovery/v1",
    "events/v1",
    "flowcontrol/v1",
    "node/v1",
    "resource/v1",
]
APIEXTENSIONS = ["pkg/apis/apiextensions/v1"]
MACHINERY = [
    "pkg/apis/meta/v1",
    "pkg/api/resource",
    "pkg/runtime",
    "pkg/runtime/schema",
    "pkg/util/intstr",
]
OUT = Path(__file__).resolve().parent.parent / "runtime" / "emulator" / "kubepb"

_STRUCT = re.compile(r"^type (\w+) struct \{")
_FIELD = re.compile(r"^\s+(\w+\s+)?([*\[\]\w.]+)\s+`(.*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')


def _git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True, text=True
    ).stdout


def _go_tags(repo: str, pkg_dir: str, package: str, out: dict[str, dict[str, list[int]]]) -> None:
    """Inline and omitempty fields per message, from the Go structs' json/protobuf tags."""
    for name in _git(repo, "ls-tree", "--name-only", "HEAD", pkg_dir + "/").split():
        if not name.endswith(".go") or name.endswith("_test.go") or "generated" in name:
            continue
        struct = None
        for line in _git(repo, "show", f"HEAD:{name}").splitlines():
            m = _STRUCT.match(line)
            if m:
                struct = m.group(1)
                continue
            if line.startswith("}"):
                struct = None
                continue
            fm = _FIELD.match(line) if struct else None
            if fm is None or struct is None:
                continue
            tags = dict(_TAG.findall(fm.group(3)))
            if "protobuf" not in tags or "json" not in tags:
                continue
            number = int(tags["protobuf"].split(",")[1])
            json_name, _, opts = tags["json"].partition(",")
            info = out.setdefault(f"{package}.{struct}", {"inline": [], "omitempty": []})
            anonymous = fm.group(1) is None
            proto_name = dict(p.split("=", 1) for p in tags["protobuf"].split(",") if "=" in p).get(
                "name"
            )
            if json_name not in ("", "-") and proto_name and json_name != proto_name:
                info.setdefault("names", {})[str(number)] = json_name
            if anonymous and json_name == "":
                info["inline"].append(number)
            elif "omitempty" in opts.split(",") and not fm.group(2).startswith("*"):
                # A pointer is omitted when nil, i.e. when absent on the wire: nothing to record.
                info["omitempty"].append(number)


def main() -> None:
    api = sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/kubernetes+api/repo"
    machinery = sys.argv[2] if len(sys.argv) > 2 else "/work/.mirror/kubernetes+apimachinery/repo"
    apiext = (
        sys.argv[3]
        if len(sys.argv) > 3
        else "/work/.mirror/kubernetes+apiextensions-apiserver/repo"
    )
    repos = {
        "k8s.io/api": api,
        "k8s.io/apimachinery": machinery,
        "k8s.io/apiextensions-apiserver": apiext,
    }
    from grpc_tools import protoc  # dev-time only

    tags: dict[str, dict[str, list[int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wanted: list[str] = []
        todo = (
            [("k8s.io/api", d) for d in API_GROUPS]
            + [("k8s.io/apimachinery", d) for d in MACHINERY]
            + [("k8s.io/apiextensions-apiserver", d) for d in APIEXTENSIONS]
        )
        while todo:
            prefix, d = todo.pop()
            path = f"{prefix}/{d}/generated.proto"
            if path in wanted:
                continue
            repo = repos[prefix]
            src = _git(repo, "show", f"HEAD:{d}/generated.proto")
            dest = root / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(src)
            wanted.append(path)
            package = re.search(r"^package ([\w.]+);", src, re.M)
            assert package is not None
            _go_tags(repo, d, package.group(1), tags)
            # Groups import each other (batch/v1 imports a scheduling alpha): follow them.
            for imp in re.findall(
                r'^import "(k8s\.io/[\w-]+)/(.+)/generated\.proto";',
                src,
                re.M,
            ):
                todo.append(imp)
        fds = OUT / "k8s.fds"
        rc = protoc.main(
            ["protoc", f"-I{root}", f"--descriptor_set_out={fds}", "--include_imports", *wanted]
        )
        if rc != 0:
            raise SystemExit(f"protoc failed ({rc})")
    (OUT / "gotags.json").write_text(json.dumps(tags, sort_keys=True, separators=(",", ":")))
    print(f"wrote {fds} ({fds.stat().st_size} bytes) and gotags.json ({len(tags)} messages)")


if __name__ == "__main__":
    main()

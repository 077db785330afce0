"""Compile gnostic's OpenAPIv2.proto into the descriptor set the emulator ships.

Dev-time only: needs grpcio-tools (``pip install -e '.[protoc]'``) and a copy of
``openapiv2/OpenAPIv2.proto`` from github.com/google/gnostic-models. Usage::

    python tools/build_openapiv2_descriptor.py path/to/OpenAPIv2.proto

The emulator encodes /openapi/v2 as protobuf with the ``protobuf`` library from this
descriptor set (``emulator/openapi_proto.py``), the form client-go asks for.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

_OUT = Path(__file__).resolve().parent.parent / "emulator/openapiv2.desc"


def main() -> None:
    src = Path(sys.argv[1])
    include = str(resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(src, Path(tmp) / "OpenAPIv2.proto")
        code = protoc.main(
            [
                "protoc",
                f"-I{tmp}",
                f"-I{include}",
                "--include_imports",
                f"--descriptor_set_out={_OUT}",
                "OpenAPIv2.proto",
            ]
        )
    if code:
        raise SystemExit(f"protoc failed ({code})")
    print(f"wrote {_OUT} ({_OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

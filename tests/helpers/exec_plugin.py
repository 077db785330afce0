"""A client-go credential plugin for the tests: ``python exec_plugin.py STATE_DIR``.

It hands out what the test put in STATE_DIR (``token``, optional ``expiry``, ``cert``/``key``,
or a verbatim ``output``/``exit`` to misbehave), answers with the apiVersion the caller asked
for in KUBERNETES_EXEC_INFO, and appends one JSON line per run to ``calls`` (the exec info and
the ``PLUGIN_GREETING`` variable), so the test counts runs and sees their input. It greets on
stderr unless ``quiet`` exists.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    state = Path(sys.argv[1])
    info = json.loads(os.environ.get("KUBERNETES_EXEC_INFO", "{}"))
    with (state / "calls").open("a") as calls:
        record = {"info": info, "greeting": os.environ.get("PLUGIN_GREETING")}
        calls.write(json.dumps(record) + "\n")
    if not (state / "quiet").exists():
        print("exec plugin: handing out a credential", file=sys.stderr)
    if (state / "exit").exists():
        return int((state / "exit").read_text())
    if (state / "output").exists():
        sys.stdout.write((state / "output").read_text())
        return 0
    status: dict[str, str] = {}
    if (state / "token").exists():
        status["token"] = (state / "token").read_text().strip()
    if (state / "cert").exists():
        status["clientCertificateData"] = (state / "cert").read_text()
        status["clientKeyData"] = (state / "key").read_text()
    if (state / "expiry").exists():
        status["expirationTimestamp"] = (state / "expiry").read_text().strip()
    credential = {"apiVersion": info.get("apiVersion"), "kind": "ExecCredential", "status": status}
    json.dump(credential, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The User-Agent our requests carry, in client-go's shape, so an API server's audit log (and
anyone reading it) can tell which manager sent what: ``kubetrio/<version> (<os>/<arch>)
<component>`` — client-go's is ``<binary>/<version> (<os>/<arch>) kubernetes/<commit>``, and
controllers usually end it with their name."""

from __future__ import annotations

import functools
import importlib.metadata
import platform
import sys

# Go's GOARCH names for what Python's platform.machine() says.
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@functools.cache
def _prefix() -> str:
    try:
        version = importlib.metadata.version("kubetrio")
    except importlib.metadata.PackageNotFoundError:
        version = "0.0.0"
    machine = platform.machine().lower()
    system = "windows" if sys.platform.startswith("win") else sys.platform.rstrip("0123456789")
    return f"kubetrio/v{version} ({system}/{_GO_ARCH.get(machine, machine)})"


def user_agent(component: str) -> str:
    """``component``: the manager's identity or the tool's name (HTTP header-safe text)."""
    clean = "".join(c if c.isprintable() and c.isascii() else "_" for c in component)
    return f"{_prefix()} {clean or 'kubetrio'}"

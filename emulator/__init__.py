"""An in-process Kubernetes API server double for tests and the embedded default.

Controllers talk to it over HTTP exactly as to kube-apiserver, so where it answers differently
that is a bug, unless the difference is listed in ``gaps``.

``async with serve_emulator() as emu:`` serves it on 127.0.0.1 inside the caller's trio run, so
the caller's clock (a MockClock in tests) drives watch timeouts, bookmarks, grace periods and
injected latency; ``kubetrio emulator`` runs it standalone. The pieces:

- ``emu.store``: every write goes through it; ``store.subscribe(hook)`` is where in-process
  extensions react to committed changes.
- ``emu.faults`` / ``emu.counters``: injected errors, latency, cut watches, expired history;
  requests per (verb, resource, subresource). Also over HTTP under ``/_emulator/`` (which, like
  routes added with ``emu.mount(prefix, handler)``, needs no token).
- ``emu.kubeconfig_path``: a kubeconfig kubectl and pykube-ng use as is: the same port over TLS
  (``emu.https_url``) with the admin's token ``emu.token`` (system:masters); clients of the
  plain ``emu.url`` pass ``emu.token`` themselves. ``emu.access`` is authentication and RBAC
  (``auth/``): ServiceAccount tokens, the bootstrap policy, reviews, impersonation.
- ``serve_emulator(extensions=[...])``: factories of things run beside the API on its clock;
  ``emu.extension(kind)`` finds one. The simulated cluster, cloud and storage
  service (``kubetrio.sim``) are such extensions: the emulator itself simulates nothing beyond
  what kube-apiserver and kube-controller-manager's garbage collector, namespace and
  ServiceAccount-token controllers do.
"""

from kubetrio.emulator.faults import Counters, FaultRule, Faults
from kubetrio.emulator.server import (
    Emulator,
    EmulatorOptions,
    Extension,
    ExtensionFactory,
    serve_emulator,
)

__all__ = [
    "Counters",
    "Emulator",
    "EmulatorOptions",
    "Extension",
    "ExtensionFactory",
    "FaultRule",
    "Faults",
    "serve_emulator",
]

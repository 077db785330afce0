"""An in-process Kubernetes API server emulator for tests and the embedded default (DESIGN §5).

``async with serve_emulator() as emu:`` serves it on 127.0.0.1 inside the caller's trio run, so
the caller's clock (a MockClock in tests) drives watch timeouts, bookmarks, grace periods and
injected latency; ``kubetrio emulator`` runs it standalone. The pieces:

- ``emu.store``: every write goes through it; ``store.subscribe(hook)`` is where in-process
  cluster behaviours (kubelet, PDB controller, scheduler, …) react to committed changes.
- ``emu.faults`` / ``emu.counters``: injected errors, latency, cut watches, expired history;
  requests per (verb, resource, subresource). Also over HTTP under ``/_emulator/`` (which, like
  routes added with ``emu.mount(prefix, handler)``, needs no token).
- ``emu.kubeconfig_path``: a kubeconfig kubectl and pykube-ng use as is: the same port over TLS
  (``emu.https_url``) with the admin's token ``emu.token`` (system:masters); clients of the
  plain ``emu.url`` pass ``emu.token`` themselves. ``emu.access`` is authentication and RBAC
  (``auth/``): ServiceAccount tokens, the bootstrap policy, reviews, impersonation.
- ``serve_emulator(simulate=ClusterSimulation(...))`` (``kubetrio emulator --simulate``): the
  simulated cluster of ``cluster/`` (kubelets, scheduler, attach/detach, workload, disruption
  and node lifecycle controllers) runs behind the API on the same clock; ``emu.simulation``.
- ``emu.cloud``: the simulated cloud of ``cloud/``, always served under ``/_cloud/v1/`` (what the
  ``sim`` machine driver calls): VMs boot on the same clock and register their Node. Its VMs
  live in memory only; ``--state`` does not persist them.
"""

from kubetrio.runtime.emulator.cluster import ClusterSimulation
from kubetrio.runtime.emulator.faults import Counters, FaultRule, Faults
from kubetrio.runtime.emulator.server import Emulator, EmulatorOptions, serve_emulator

__all__ = [
    "ClusterSimulation",
    "Counters",
    "Emulator",
    "EmulatorOptions",
    "FaultRule",
    "Faults",
    "serve_emulator",
]

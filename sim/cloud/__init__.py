"""The simulated cloud served beside the emulator, so the machine controller has a provider to call
over HTTP, as a real driver calls its cloud, without one: VMs that boot on the emulator's clock and
register their Node through the store, scriptable failures, and the small JSON API the ``sim``
machine driver calls. ``kubetrio.sim.serve_world`` always serves it, on an address of its own
(``cloud.url``; it is idle until a VM is created); VMs live in memory only and are not part of
the persisted state.
"""

from kubetrio.sim.cloud.api import VERSION, CloudApi
from kubetrio.sim.cloud.errors import CODE_HTTP_STATUS, CloudError
from kubetrio.sim.cloud.script import VmScript
from kubetrio.sim.cloud.service import SimulatedCloud, Vm

__all__ = [
    "CODE_HTTP_STATUS",
    "VERSION",
    "CloudApi",
    "CloudError",
    "SimulatedCloud",
    "Vm",
    "VmScript",
]

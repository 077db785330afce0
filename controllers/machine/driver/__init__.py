"""Machine drivers: the protocol the machine controller calls to manage VMs at a provider, MCM's
status codes, and the registry that picks a driver by a MachineClass's ``provider``."""

from kubetrio.controllers.machine.driver.codes import Code, MachineError, parse_machine_error
from kubetrio.controllers.machine.driver.driver import CreateResult, Driver, StatusResult
from kubetrio.controllers.machine.driver.registry import DriverRegistry, UnknownProvider

__all__ = [
    "Code",
    "CreateResult",
    "Driver",
    "DriverRegistry",
    "MachineError",
    "StatusResult",
    "UnknownProvider",
    "parse_machine_error",
]

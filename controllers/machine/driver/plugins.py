"""Machine drivers as plug-ins: the ones kubetrio ships and those other packages contribute.

A package ships a provider for its cloud (``kubetrio-provider-<cloud>``) without forking by
declaring an entry point in the ``kubetrio.drivers`` group::

    [project.entry-points."kubetrio.drivers"]
    mycloud = "kubetrio_provider_mycloud:register"

where ``register(registry, manager)`` registers its driver(s) under the provider names its
MachineClasses carry (``registry.register("mycloud", driver)``), built from what the manager
holds (its clusters, its metrics registry) and the machine section of its configuration
(``registry.options``). ``sim`` and ``aws`` are registered the same way. A
driver whose dependencies are not installed (``aws`` without ``kubetrio[aws]``) is left out
with one log line, so a deployment that does not use it does not need them; classes naming it
are then refused as naming an unknown provider.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from importlib.metadata import entry_points

from kubetrio.controllers.machine.driver.registry import DriverRegistry
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.util.log import get_logger

ENTRY_POINT_GROUP = "kubetrio.drivers"
BUILTIN: Mapping[str, str] = {
    "sim": "kubetrio.controllers.machine.driver.sim:register_for_manager",
    "aws": "kubetrio.controllers.machine.driver.aws.register:register_for_manager",
}
# What to install for a built-in driver whose dependencies are missing.
EXTRAS = {"aws": "kubetrio[aws]"}

DriverSetup = Callable[[DriverRegistry, Manager], None]
log = get_logger("kubetrio.machine")


class DriverPluginError(Exception):
    """A driver plug-in that is installed but broken (not a function, a name clash)."""


def driver_targets() -> dict[str, str]:
    """Plug-in name -> ``module:function``: the built-in ones, then the entry points."""
    targets = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in targets and targets[ep.name] != ep.value:
            raise DriverPluginError(
                f"machine driver plug-in {ep.name!r} from package "
                f"{ep.dist.name if ep.dist else '?'} clashes with one already registered"
            )
        targets[ep.name] = ep.value
    return targets


def load_drivers(
    manager: Manager,
    targets: Mapping[str, str] | None = None,
    options: MachineOptions | None = None,
) -> DriverRegistry:
    """Every available plug-in's drivers, registered for ``manager`` configured with
    ``options``."""
    registry = DriverRegistry(options=options)
    for name, target in (driver_targets() if targets is None else targets).items():
        module_name, _, attribute = target.partition(":")
        try:
            register: DriverSetup = getattr(import_module(module_name), attribute)
        except ModuleNotFoundError as error:
            hint = f" (pip install {EXTRAS[name]})" if name in EXTRAS else ""
            log.info("machine driver not available", plugin=name, reason=f"{error}{hint}")
            continue
        if not callable(register):
            raise DriverPluginError(f"machine driver plug-in {name!r}: {target} is not callable")
        register(registry, manager)
    return registry

"""Drivers by provider name, so a MachineClass's ``provider`` picks the driver that serves it and
the manager can be wired with the drivers a deployment needs. The registry carries the machine
section of the manager's configuration (``options``), so a plug-in registering into it finds the
settings it is configured with (the ``sim`` driver's cloud address)."""

from __future__ import annotations

from collections.abc import Iterator

from kubetrio.api.machine import MachineClass
from kubetrio.controllers.machine.driver.driver import Driver
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.runtime.util.gotext import go_quote


class UnknownProvider(LookupError):
    """No driver is registered for a provider name."""


class DriverRegistry:
    def __init__(self, default: str = "", options: MachineOptions | None = None) -> None:
        self._drivers: dict[str, Driver] = {}
        self.default = default
        self.options = options or MachineOptions()

    def register(self, provider: str, driver: Driver) -> None:
        if not provider:
            raise ValueError("a driver needs a provider name")
        if provider in self._drivers:
            raise ValueError(f"a driver for provider {provider!r} is already registered")
        self._drivers[provider] = driver

    def get(self, provider: str) -> Driver:
        name = provider or self.default
        try:
            return self._drivers[name]
        except KeyError:
            known = ", ".join(sorted(self._drivers)) or "none"
            raise UnknownProvider(
                f"no machine driver for provider {go_quote(name)} (known: {known})"
            ) from None

    def for_class(self, machine_class: MachineClass) -> Driver:
        """The driver of a class (its ``provider``, else the registry's default)."""
        return self.get(machine_class.provider)

    def __contains__(self, provider: object) -> bool:
        return provider in self._drivers

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._drivers))

"""Drivers by provider name, so a MachineClass's ``provider`` picks the driver that serves it and
the manager can be wired with the drivers a deployment needs. The registry carries the machine
section of the manager's configuration (``options``), so a plug-in registering into it finds the
settings it is configured with (the ``sim`` driver's cloud address)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kubetrio.api.machine import MachineClass
from kubetrio.controllers.machine.driver.driver import Driver
from kubetrio.controllers.machine.options import MachineOptions
from kubetrio.runtime.util.gotext import go_quote


class UnknownProvider(LookupError):
    """No driver is registered for a provider name."""


class DriverRegistry:
    def __init__(self, default: str = "", options: MachineOptions | None = None) -> None:
        self._drivers: dict[str, Driver] = {}
        self._pending: dict[str, Callable[[], Driver]] = {}
        self.default = default
        self.options = options or MachineOptions()

    def register(self, provider: str, driver: Driver) -> None:
        self._check_free(provider)
        self._drivers[provider] = driver

    def register_lazy(self, provider: str, make: Callable[[], Driver]) -> None:
        """Register the driver ``make()`` builds, built when a class first names ``provider``:
        a driver whose client library is large (boto3) costs a manager that never uses it no
        memory. ``make`` is called once per provider name; share its result across names by
        caching it."""
        self._check_free(provider)
        self._pending[provider] = make

    def _check_free(self, provider: str) -> None:
        if not provider:
            raise ValueError("a driver needs a provider name")
        if provider in self:
            raise ValueError(f"a driver for provider {provider!r} is already registered")

    def get(self, provider: str) -> Driver:
        name = provider or self.default
        if name in self._pending:
            self._drivers[name] = self._pending.pop(name)()
        try:
            return self._drivers[name]
        except KeyError:
            known = ", ".join(self) or "none"
            raise UnknownProvider(
                f"no machine driver for provider {go_quote(name)} (known: {known})"
            ) from None

    def for_class(self, machine_class: MachineClass) -> Driver:
        """The driver of a class (its ``provider``, else the registry's default)."""
        return self.get(machine_class.provider)

    def built(self) -> Iterator[Driver]:
        """The drivers in use: a lazily registered one joins when a class first names it, which
        a machine's reconcile does before any drain of its node."""
        return iter(list(self._drivers.values()))

    def __contains__(self, provider: object) -> bool:
        return provider in self._drivers or provider in self._pending

    def __iter__(self) -> Iterator[str]:
        return iter(sorted([*self._drivers, *self._pending]))

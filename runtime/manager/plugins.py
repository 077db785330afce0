"""Finding controllers by name: the built-in ones and those other packages contribute.

A third-party package adds a controller to the ``kubetrio`` binary without forking by
declaring an entry point in the ``kubetrio.controllers`` group::

    [project.entry-points."kubetrio.controllers"]
    configmap-hash = "mypkg.hash:setup"

where ``setup(manager, config)`` registers its controller(s) with the manager. Entry points
load lazily: a broken plugin fails with its own name only when it is enabled.

What a controller needs from the API server is declared next to it: ``RBAC =
Permissions(...)`` (``kubetrio.runtime.gen.rbac``) in the module holding ``setup``, or in an
``rbac`` module of its package; ``kubetrio rbac`` turns the enabled controllers' declarations
into roles.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from kubetrio.runtime.gen.rbac import Permissions

if TYPE_CHECKING:
    from kubetrio.runtime.manager.manager import Manager

ENTRY_POINT_GROUP = "kubetrio.controllers"

ControllerSetup = Callable[["Manager", Any], None]


class PluginError(Exception):
    """A controller name that resolves to nothing runnable (unknown, or its entry point fails
    to import); ``str`` is one line naming it."""


class ControllerRegistry:
    """Names → setup functions, each given as ``"module:function"`` and imported on use."""

    def __init__(self, builtin: Mapping[str, str]) -> None:
        self._targets: dict[str, str] = dict(builtin)
        self._origins: dict[str, str] = dict.fromkeys(builtin, "built-in")
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in self._targets:
                raise PluginError(
                    f"controller {ep.name!r} from package "
                    f"{ep.dist.name if ep.dist else '?'} clashes with one already registered"
                )
            self._targets[ep.name] = ep.value
            self._origins[ep.name] = ep.dist.name if ep.dist else "entry point"

    def names(self) -> list[str]:
        return sorted(self._targets)

    def origin(self, name: str) -> str:
        return self._origins[name]

    def target(self, name: str) -> str:
        """Where controller ``name``'s setup is, ``"module:function"``."""
        return self._targets[name]

    def permissions(self, name: str) -> Permissions:
        """The RBAC declaration of controller ``name``: ``RBAC`` in its setup's module, else in
        the ``rbac`` module of the package it belongs to."""
        target = self._targets[name]
        module_name = target.partition(":")[0]
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise PluginError(
                f"controller {name!r} ({target}) cannot be loaded: {error}"
            ) from error
        declared = getattr(module, "RBAC", None)
        if declared is None:
            is_package = hasattr(module, "__path__")
            package = module_name if is_package else module_name.rpartition(".")[0]
            if package:
                try:
                    declared = getattr(importlib.import_module(f"{package}.rbac"), "RBAC", None)
                except ModuleNotFoundError as error:
                    if error.name != f"{package}.rbac":
                        raise PluginError(
                            f"controller {name!r}: {package}.rbac cannot be loaded: {error}"
                        ) from error
        if not isinstance(declared, Permissions):
            raise PluginError(
                f"controller {name!r} ({target}) declares no RBAC: put "
                "RBAC = kubetrio.runtime.gen.rbac.Permissions(...) beside its setup"
            )
        return declared

    def setup(self, name: str) -> ControllerSetup:
        target = self._targets[name]
        module_name, _, attribute = target.partition(":")
        try:
            setup: ControllerSetup = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            raise PluginError(
                f"controller {name!r} ({target}) cannot be loaded: {error}"
            ) from error
        if not callable(setup):
            raise PluginError(f"controller {name!r}: {target} is not callable")
        return setup

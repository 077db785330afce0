"""What a controller's options are made of, so that every controller's section of the manager's
configuration reads, validates and reports errors the same way.

A controller declares its options as one frozen ``Options`` struct with its defaults (lengths
of time as ``kubetrio.runtime.util.duration.Duration``); the command line composes those structs
into its configuration file, environment variables and flags. Field names are spelled camelCase
in files (Kubernetes' convention), unknown fields are refused (a typo must not silently fall
back on a default), and the constrained scalars below turn nonsense such as zero workers or an
empty name into an error that names the field.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = [
    "Name",
    "Names",
    "NonNegativeInt",
    "Options",
    "PositiveFloat",
    "PositiveInt",
]

PositiveFloat = Annotated[float, msgspec.Meta(gt=0)]
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0)]
Name = Annotated[str, msgspec.Meta(min_length=1)]
# An empty list would silently turn a feature off (no controllers, no unhealthy conditions).
Names = Annotated[tuple[Name, ...], msgspec.Meta(min_length=1)]


class Options(
    msgspec.Struct, kw_only=True, forbid_unknown_fields=True, rename="camel", frozen=True
):
    """The base of every options section. msgspec does not inherit ``kw_only`` and mypy does
    not see an inherited ``frozen``, so every subclass repeats both."""

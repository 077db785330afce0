"""A user's own kind, declared as the tutorial declares it: the e2e tests of ``@resource`` and
``kubetrio crd generate`` install and use it."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from kubetrio.api import Condition, KubeObject, Model, PrinterColumn, resource


class GreetingSpec(Model, kw_only=True):
    """What to greet, and how."""

    name: Annotated[str, msgspec.Meta(min_length=1, description="Who is greeted.")]
    style: Literal["formal", "casual"] = "casual"
    repeat: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1


class GreetingStatus(Model, kw_only=True):
    message: str = ""
    observed_generation: int = 0
    conditions: tuple[Condition, ...] = ()


@resource(
    group="example.com",
    version="v1",
    plural="greetings",
    namespaced=True,
    short_names=("gr",),
    status=True,
    printer_columns=(
        PrinterColumn("Style", ".spec.style"),
        PrinterColumn("Age", ".metadata.creationTimestamp", type="date"),
    ),
)
class Greeting(KubeObject, kw_only=True):
    """A greeting rendered into a ConfigMap."""

    spec: GreetingSpec
    status: GreetingStatus = msgspec.field(default_factory=GreetingStatus)

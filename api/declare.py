"""Declaring your own kind: ``@resource`` turns a msgspec Struct into a typed custom resource.

One decorator says everything the API server, the client and the CRD generator need to know
about a kind — group, version, plural, scope, subresources, printer columns — so it is written
once, next to the fields, instead of being repeated in YAML, in client code and in RBAC rules::

    from typing import Annotated, Literal
    import msgspec
    from kubetrio.api import Condition, KubeObject, Model, PrinterColumn, resource

    class GreetingSpec(Model, kw_only=True):
        \"\"\"What to greet, and how.\"\"\"
        name: Annotated[str, msgspec.Meta(min_length=1, description="Who is greeted.")]
        style: Literal["formal", "casual"] = "casual"

    class GreetingStatus(Model, kw_only=True):
        message: str = ""
        conditions: tuple[Condition, ...] = ()

    @resource(group="example.com", version="v1", short_names=("gr",), status=True,
              printer_columns=(PrinterColumn("Style", ".spec.style"),))
    class Greeting(KubeObject, kw_only=True):
        \"\"\"A greeting rendered into a ConfigMap.\"\"\"
        spec: GreetingSpec
        status: GreetingStatus = msgspec.field(default_factory=GreetingStatus)

``Greeting.KIND`` is then the kind's ``KindInfo`` and the class works with ``Client``, informers,
``manager.controller(...).for_(Greeting)`` and the RBAC helpers. The cluster must serve it:
``kubetrio crd generate mymodule:Greeting | kubectl apply -f -`` installs its CRD.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kubetrio.api.registry import CrdFacts, KindInfo, PrinterColumn, Scale, register

__all__ = ["plural_of", "resource"]

C = TypeVar("C", bound=type)

_VOWELS = frozenset("aeiou")


def plural_of(kind: str) -> str:
    """The resource name kube tooling guesses for ``kind``: lowercased, English plural rules.

    ``Greeting`` → ``greetings``, ``Box`` → ``boxes``, ``Policy`` → ``policies``. Irregular
    words need ``plural=`` (as with controller-gen's ``+kubebuilder:resource:path``)."""
    word = kind.lower()
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in _VOWELS:
        return word[:-1] + "ies"
    return word + "s"


def resource(
    *,
    group: str,
    version: str,
    kind: str | None = None,
    plural: str | None = None,
    namespaced: bool = True,
    short_names: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    status: bool = False,
    scale: Scale | None = None,
    printer_columns: tuple[PrinterColumn, ...] = (),
    storage: bool = True,
    served: bool = True,
    singular: str | None = None,
) -> Callable[[C], C]:
    """Declare the decorated ``KubeObject`` subclass as ``group/version`` kind ``kind``.

    ``kind`` defaults to the class name and ``plural`` to its English plural. ``status=True``
    and ``scale=Scale(...)`` enable those subresources. ``storage``/``served`` matter when one
    kind has several versioned classes: exactly one of them is stored. The kind is registered
    (``kubetrio.api.registry.register``), so a second, different declaration of the same
    apiVersion/kind fails at import time rather than addressing the wrong URL later."""
    if not group or not version:
        raise ValueError("@resource needs both group= and version= (e.g. 'example.com', 'v1')")

    def declare(cls: C) -> C:
        name = kind or cls.__name__
        subresources = (("status",) if status else ()) + (("scale",) if scale else ())
        facts = CrdFacts(
            printer_columns=tuple(printer_columns),
            scale=scale,
            storage=storage,
            served=served,
            source=f"{cls.__module__}:{cls.__qualname__}",
        )
        info = KindInfo(
            f"{group}/{version}",
            name,
            plural or plural_of(name),
            namespaced,
            tuple(short_names),
            subresources,
            tuple(categories),
            singular or name.lower(),
            facts,
        )
        cls.KIND = register(info)  # type: ignore[attr-defined]
        return cls

    return declare

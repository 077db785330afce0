"""``kubetrio.runtime`` is the front door: the names a controller author needs import from it,
each says what it is for, and the documentation's code uses it rather than the
packages behind it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import kubetrio.runtime

ROOT = Path(__file__).resolve().parents[2]
# Documents whose code a newcomer copies; they may reach behind the door only for RBAC
# declarations, which have a package of their own.
COPIED = (
    "docs/tutorial.md",
    "docs/writing-controllers.md",
    "docs/how-to/time.md",
    "docs/coming-from-kopf.md",
)
ALLOWED_BEHIND = {"kubetrio.runtime.gen.rbac"}


@pytest.mark.parametrize("name", kubetrio.runtime.__all__)
def test_every_front_door_name_loads_and_is_documented(name: str) -> None:
    value = getattr(kubetrio.runtime, name)
    if inspect.isclass(value) or inspect.isfunction(value):  # not type aliases
        assert inspect.getdoc(value), f"kubetrio.runtime.{name} has no docstring"


def test_the_front_door_has_what_a_controller_author_needs() -> None:
    needed = {"Manager", "Client", "load_client", "Result", "TerminalError", "Reconciler"}
    needed |= {"ObjectKey", "ApiError", "now", "generation_changed", "create_or_patch"}
    assert needed <= set(kubetrio.runtime.__all__)


def _public_classes() -> list[tuple[str, type]]:
    found = []
    for info in pkgutil.walk_packages(kubetrio.runtime.__path__, "kubetrio.runtime."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__:
                found.append((f"{module.__name__}.{name}", value))
    return [(name, cls) for name, cls in found if not name.rpartition(".")[2].startswith("_")]


def test_every_public_class_of_the_framework_says_what_it_is() -> None:
    missing = [
        name
        for name, cls in _public_classes()
        # a dataclass or NamedTuple without a docstring gets its signature as one
        if not cls.__doc__ or not cls.__doc__.strip() or cls.__doc__.startswith(f"{cls.__name__}(")
    ]
    assert missing == []


@pytest.mark.parametrize("document", COPIED)
def test_copied_code_imports_the_framework_through_the_front_door(document: str) -> None:
    text = (ROOT / document).read_text()
    behind = set(re.findall(r"from (kubetrio\.runtime\.[\w.]+) import", text))
    assert behind <= ALLOWED_BEHIND
    assert "from kubetrio.runtime import" in text

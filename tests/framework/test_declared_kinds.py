"""A user's own kind end to end: ``kubetrio crd generate … | kubectl apply -f -`` installs its CRD
in the emulator, then the typed class works through ``Client``, an informer, a controller and
kubectl; the server enforces the generated schema (enum, minimum, defaults) in kube's words."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
import trio
import trio.testing

from kubetrio.api.core import ConfigMap
from kubetrio.api.meta import KubeObject, ObjectMeta, UndeclaredKind
from kubetrio.emulator import Emulator
from kubetrio.runtime.cache.informer import EventHandler
from kubetrio.runtime.client.discovery import UnservedKinds, check_served
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.controller.controller import Result
from kubetrio.runtime.controller.queue import ObjectKey
from kubetrio.runtime.gen.crd import crd_for
from kubetrio.runtime.manager.manager import Manager
from tests.helpers.greeting import Greeting, GreetingSpec
from tests.helpers.kube import Kubectl

REPO = Path(__file__).resolve().parents[2]
SPEC = "tests.helpers.greeting:Greeting"


async def generate(*args: str) -> trio.CompletedProcess[bytes]:
    """``kubetrio crd generate`` as a user runs it: a separate process from the project root.
    (Tests running processes use the real clock: a mock one would jump past their deadlines.)"""
    argv = [sys.executable, "-m", "kubetrio.cmd.main", "crd", "generate", *args]
    with trio.fail_after(120):
        return await trio.run_process(
            argv, cwd=REPO, capture_stdout=True, capture_stderr=True, check=False
        )


def hello(name: str = "hello", **spec: object) -> Greeting:
    return Greeting(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=msgspec.convert({"name": "world", **spec}, GreetingSpec),
    )


@pytest.mark.kubectl
@pytest.mark.process
@pytest.mark.slow
async def test_generated_crd_installs_with_kubectl_and_the_kind_round_trips(
    emu: Emulator, kubectl: Kubectl
) -> None:
    generated = await generate(SPEC)
    assert generated.returncode == 0, generated.stderr.decode()
    applied = await kubectl.run("apply", "-f", "-", stdin=generated.stdout)
    assert "customresourcedefinition.apiextensions.k8s.io/greetings.example.com" in (
        applied.stdout.decode()
    )
    kube = Client.from_url(emu.url, token=emu.token)

    # The client sends neither style nor repeat; the server applies the CRD's defaults, and
    # kubectl sees them in the stored object.
    created = await kube.create(
        Greeting, {"metadata": {"name": "hello"}, "spec": {"name": "w"}}, namespace="default"
    )
    assert (created.spec.style, created.spec.repeat) == ("casual", 1)
    stored = await kubectl.json("get", "greeting", "hello", "-n", "default")
    assert stored["spec"] == {"name": "w", "style": "casual", "repeat": 1}

    patched = await kube.patch(
        Greeting, "hello", {"spec": {"style": "formal"}}, namespace="default"
    )
    assert patched.spec.style == "formal"
    await kube.patch(
        Greeting,
        "hello",
        {"status": {"message": "Good day, w"}},
        namespace="default",
        subresource="status",
    )
    got = await kube.get(Greeting, "hello", namespace="default")
    assert got.status.message == "Good day, w"
    assert got.metadata.generation == 2  # the status write did not bump it
    listed = await kube.list(Greeting, namespace="default")
    assert [g.name for g in listed.items] == ["hello"]

    table = await kubectl.out("get", "gr", "-n", "default")
    header, row = table.splitlines()
    assert header.split() == ["NAME", "STYLE", "AGE"]
    assert row.split()[:2] == ["hello", "formal"]


@pytest.mark.kubectl
@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"name": "w", "style": "loud"},
            'spec.style: Unsupported value: "loud": supported values: "casual", "formal"',
        ),
        (
            {"name": "w", "repeat": 0},
            "spec.repeat: Invalid value: 0: spec.repeat in body "
            "should be greater than or equal to 1",
        ),
        (
            {"name": ""},
            'spec.name: Invalid value: "": spec.name in body should be at least 1 chars long',
        ),
        ({"style": "formal"}, "spec.name: Required value"),
    ],
)
async def test_the_server_refuses_what_the_types_refuse(
    emu: Emulator,
    kubectl: Kubectl,
    spec: dict[str, object],
    message: str,
) -> None:
    for crd in crd_for(Greeting):
        emu.create(crd)
    kube = Client.from_url(emu.url, token=emu.token)
    with pytest.raises(ApiError) as caught:
        await kube.create(
            Greeting, {"metadata": {"name": "bad"}, "spec": spec}, namespace="default"
        )
    assert caught.value.status == 422
    assert message in str(caught.value)
    doc = {
        "apiVersion": "example.com/v1",
        "kind": "Greeting",
        "metadata": {"name": "bad"},
        "spec": spec,
    }
    proc = await kubectl.run(
        "apply", "-n", "default", "-f", "-", stdin=msgspec.json.encode(doc), check=False
    )
    assert proc.returncode == 1
    assert 'The Greeting "bad" is invalid' in proc.stderr.decode()
    assert message in proc.stderr.decode()


class RenderGreeting:
    """Writes each Greeting's message into a ConfigMap it owns, and reports it in status."""

    def __init__(self, manager: Manager) -> None:
        self.client = manager.client
        self.informer = manager.cache.informer(Greeting)

    async def reconcile(self, key: ObjectKey) -> Result:
        greeting = self.informer.lister.get(key.namespace, key.name)
        if greeting is None:
            return Result()
        salutation = "Good day" if greeting.spec.style == "formal" else "Hi"
        message = ", ".join([f"{salutation} {greeting.spec.name}"] * greeting.spec.repeat)
        owner = {
            "apiVersion": Greeting.KIND.api_version,
            "kind": "Greeting",
            "name": greeting.name,
            "uid": greeting.metadata.uid,
            "controller": True,
        }
        document = {
            "metadata": {"name": greeting.name, "ownerReferences": [owner]},
            "data": {"message": message},
        }
        try:
            await self.client.create(ConfigMap, document, namespace=key.namespace)
        except ApiError as error:
            if error.status != 409:
                raise
            await self.client.patch(
                ConfigMap, greeting.name, {"data": {"message": message}}, namespace=key.namespace
            )
        status = {"message": message, "observedGeneration": greeting.metadata.generation}
        await self.client.patch(
            Greeting,
            greeting.name,
            {"status": status},
            namespace=key.namespace,
            subresource="status",
        )
        return Result()


async def test_an_informer_and_a_controller_reconcile_the_kind(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    for crd in crd_for(Greeting):
        emu.create(crd)
    kube = Client.from_url(emu.url, token=emu.token)
    manager = Manager(kube, metrics_bind_address="0", health_probe_bind_address="0")
    reconciler = RenderGreeting(manager)
    manager.controller("greeting").for_(Greeting).owns(ConfigMap).complete(reconciler)
    changed = trio.Event()
    seen: list[str] = []

    def note(greeting: Greeting) -> None:
        seen.append(greeting.status.message)
        changed.set()

    reconciler.informer.add_handler(
        EventHandler(on_add=lambda g, _: note(g), on_update=lambda _, g: note(g))
    )

    async def until(condition: Callable[[], bool]) -> None:
        nonlocal changed
        while not condition():
            await changed.wait()
            changed = trio.Event()

    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        await kube.create(Greeting, hello(repeat=2), namespace="default")
        await until(lambda: "Hi world, Hi world" in seen)
        config = await kube.get(ConfigMap, "hello", namespace="default")
        assert config.metadata.controller_ref() is not None
        await kube.patch(Greeting, "hello", {"spec": {"style": "formal"}}, namespace="default")
        await until(lambda: "Good day world, Good day world" in seen)
        got = await kube.get(Greeting, "hello", namespace="default")
        assert got.status.observed_generation == got.metadata.generation == 2
        manager.stop()


class Undeclared(KubeObject, kw_only=True):
    pass


class NotAKind(msgspec.Struct):
    name: str = ""


async def test_undeclared_and_uninstalled_kinds_name_the_fix(
    emu: Emulator, mock_clock: trio.testing.MockClock
) -> None:
    kube = Client.from_url(emu.url, token=emu.token)
    fix = "is not a declared kind: decorate it with @kubetrio.api.resource(group=..., version=...)"
    for cls in (Undeclared, NotAKind):
        with pytest.raises(UndeclaredKind, match=re.escape(f"{cls.__qualname__} {fix}")):
            await kube.get(cls, "x", namespace="default")  # type: ignore[type-var]
    manager = Manager(kube, metrics_bind_address="0", health_probe_bind_address="0")
    with pytest.raises(UndeclaredKind, match=re.escape(fix)):
        manager.controller("x").for_(Undeclared)
    with pytest.raises(UndeclaredKind, match=re.escape(fix)):
        manager.controller("y").for_(Greeting).owns(NotAKind)  # type: ignore[arg-type]
    with pytest.raises(UndeclaredKind, match=re.escape(fix)):
        manager.cache.informer(NotAKind)  # type: ignore[type-var]

    # Declared but not installed: discovery says how to install it.
    with pytest.raises(UnservedKinds) as caught:
        await check_served(kube, [Greeting.KIND])
    assert re.search(
        r"CRD not installed: greetings\.example\.com \(.*\); install its CRD: "
        r"kubetrio crd generate \S*greeting:Greeting \| kubectl apply -f -$",
        str(caught.value),
    ), str(caught.value)


@pytest.mark.process
@pytest.mark.slow
async def test_generate_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    cases = {
        "nomodule": "'nomodule': expected module:Class",
        "no.such.module:X": "cannot import no.such.module",
        "tests.helpers.greeting:Nope": "tests.helpers.greeting has no Nope",
        "tests.helpers.greeting:GreetingSpec": "GreetingSpec is not a declared kind",
    }
    for spec, message in cases.items():
        proc = await generate(spec)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and len(err.splitlines()) == 1 and message in err, err
    written = await generate(SPEC, "-o", str(tmp_path))
    assert written.returncode == 0, written.stderr.decode()
    assert [p.name for p in await trio.Path(tmp_path).iterdir()] == ["example.com_greetings.yaml"]


@pytest.mark.process
@pytest.mark.slow
async def test_generate_reports_a_module_that_fails_to_import_in_one_line(tmp_path: Path) -> None:
    """The user's module raising while imported (a typo, a kind declared twice) is their bug
    to fix: one line naming the module, the error and where it was raised, not a traceback."""
    (tmp_path / "broken_api.py").write_text("import os\n\nundefined_name + 1\n")
    argv = [sys.executable, "-m", "kubetrio.cmd.main", "crd", "generate", "broken_api:Greeting"]
    with trio.fail_after(120):
        proc = await trio.run_process(
            argv, cwd=tmp_path, capture_stdout=True, capture_stderr=True, check=False
        )
    err = proc.stderr.decode()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert "cannot import broken_api: NameError: name 'undefined_name' is not defined" in err
    assert "broken_api.py:3" in err

"""Running the emulator: in-process (``serve_emulator``, inside the caller's trio run and clock)
or standalone (``kubetrio emulator``)."""

from __future__ import annotations

import base64
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar

import trio
import yaml

from kubetrio.emulator.admin import PREFIX as ADMIN_PREFIX
from kubetrio.emulator.admin import Admin
from kubetrio.emulator.audit import AuditLog
from kubetrio.emulator.auth import Access
from kubetrio.emulator.clock import EmuClock
from kubetrio.emulator.errors import ApiError
from kubetrio.emulator.eventlog import Entry
from kubetrio.emulator.faults import Counters, Faults
from kubetrio.emulator.gc.collector import GarbageCollector
from kubetrio.emulator.handlers import ApiSettings, KubeApi
from kubetrio.emulator.http import (
    Handler,
    Request,
    Response,
    Router,
    StreamResponse,
    api_server,
)
from kubetrio.emulator.kinds import ResourceType, ResourceTypes
from kubetrio.emulator.persistence import Persister, load_state
from kubetrio.emulator.store import Store
from kubetrio.emulator.tls import ServingCert, sniffing

CONTEXT = "kubetrio-emulator"

_E = TypeVar("_E")


class Extension(Protocol):
    """Something run beside the API on the emulator's clock (the simulated cloud, cluster or
    storage service): built by its factory from the finished emulator, where it may subscribe
    to the store, and run for as long as the emulator serves.
    The emulator knows nothing else of it, so the API server double never depends on a world
    simulated around it."""

    async def run(self) -> None: ...


ExtensionFactory = Callable[["Emulator"], Extension]


def kubeconfig(url: str, token: str, ca_pem: bytes) -> dict[str, Any]:
    """The admin's kubeconfig: ``url`` is the https one (kubectl sends tokens only over TLS)."""
    cluster = {"server": url, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


@dataclass(slots=True)
class EmulatorOptions:
    port: int = 0
    host: str = "127.0.0.1"
    token: str | None = None  # the admin's (system:masters) bearer token; made up when None
    state_path: Path | None = None
    kubeconfig_path: Path | None = None
    window: int = 10_000
    bookmark_interval: float = 60.0
    persist_debounce: float = 0.5
    fault_seed: int = 0
    rbac: bool = True  # False: every authenticated or anonymous request is allowed
    audit_log_path: Path | None = None  # kube-apiserver's --audit-log-path ("-": stdout)


class Emulator:
    """A served emulator: ``url``, ``token`` (the admin's bearer token), ``store`` (Python
    access), ``faults``, ``counters``, ``access`` (authentication and RBAC),
    ``kubeconfig_path``; ``mount(prefix, handler)`` adds further APIs on the same port and
    ``extension(kind)`` finds an extension served beside the API."""

    def __init__(self, options: EmulatorOptions) -> None:
        self.options = options
        self.clock = EmuClock()
        self.types = ResourceTypes()
        self.store = Store(self.types, self.clock, window=options.window)
        self.faults = Faults(seed=options.fault_seed)
        self.faults.expire_history = self.store.expire_history
        self.counters = Counters()
        self.persister: Persister | None = None
        if options.state_path is not None:
            load_state(self.store, options.state_path)
            self.persister = Persister(self.store, options.state_path, options.persist_debounce)
        self.store.ensure_default_namespaces()
        if self.persister is not None:
            self.store.on_change = self.persister.mark_dirty
        self.gc = GarbageCollector(self.store)
        self.settings = ApiSettings(bookmark_interval=options.bookmark_interval)
        # The admin credential every in-tree client uses (the kubeconfig carries it).
        self.token = options.token or secrets.token_urlsafe(32)
        key_path = (
            options.state_path.with_name(options.state_path.name + ".sa.key")
            if options.state_path is not None
            else None
        )
        self.access = Access(
            self.store, self.clock, self.token, rbac=options.rbac, key_path=key_path
        )
        self.api = KubeApi(self.store, self.faults, self.counters, self.settings, self.access)
        if options.audit_log_path is not None:
            self.api.audit = AuditLog(options.audit_log_path)
        self.router = Router(self.api)
        self.router.mount(ADMIN_PREFIX, Admin(self.store, self.faults, self.counters))
        self.http = api_server(self._dispatch)
        self.tls = ServingCert(options.host)
        self.extensions: list[Extension] = []
        self.port = 0
        self.url = ""  # plain HTTP; the same port speaks TLS at https_url
        self.https_url = ""
        self.kubeconfig_path = Path()

    async def _dispatch(self, req: Request) -> Response | StreamResponse:
        return await self.router.resolve(req.path)(req)

    def mount(self, prefix: str, handler: Handler) -> None:
        self.router.mount(prefix, handler)

    def extension(self, kind: type[_E]) -> _E:
        """The extension of type ``kind`` this emulator serves; LookupError when none."""
        for extension in self.extensions:
            if isinstance(extension, kind):
                return extension
        raise LookupError(f"the emulator serves no {kind.__name__}")

    # -- Python conveniences for tests and in-process cluster behaviours

    def resource(self, plural: str, group: str = "") -> ResourceType:
        for rt in self.types.all():
            if rt.plural == plural and rt.group == group:
                return rt
        raise KeyError(f"no served resource {plural!r} in group {group!r}")

    def _rt_of(self, obj: dict[str, Any]) -> ResourceType:
        rt = self.types.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rt is None:
            raise KeyError(f"no served kind {obj.get('kind')!r} in {obj.get('apiVersion')!r}")
        return rt

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        rt = self._rt_of(obj)
        ns = (obj.get("metadata") or {}).get("namespace", "default") if rt.namespaced else ""
        return self.store.create(rt, ns, obj).clone()

    def get(
        self, api_version: str, kind: str, name: str, namespace: str = ""
    ) -> dict[str, Any] | None:
        rt = self.types.by_kind(api_version, kind)
        if rt is None:
            raise KeyError(f"no served kind {kind!r} in {api_version!r}")
        entry: Entry | None = self.store.find(
            rt, namespace or "default" if rt.namespaced else "", name
        )
        return entry.clone() if entry else None

    def update(self, obj: dict[str, Any], subresource: str = "") -> dict[str, Any]:
        rt = self._rt_of(obj)
        md = obj["metadata"]
        ns = md.get("namespace", "default") if rt.namespaced else ""
        return self.store.update(rt, ns, md["name"], obj, subresource).clone()

    def set_status(
        self, api_version: str, kind: str, name: str, status: dict[str, Any], namespace: str = ""
    ) -> dict[str, Any]:
        current = self.get(api_version, kind, name, namespace)
        if current is None:
            raise KeyError(f"{kind} {namespace}/{name} not found")
        current["status"] = status
        return self.update(current, subresource="status")

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str = "", grace: int | None = None
    ) -> None:
        rt = self.types.by_kind(api_version, kind)
        if rt is None:
            raise KeyError(f"no served kind {kind!r} in {api_version!r}")
        try:
            self.store.delete(
                rt, namespace or "default" if rt.namespaced else "", name, grace=grace
            )
        except ApiError as exc:
            if exc.code != 404:
                raise


@asynccontextmanager
async def serve_emulator(
    *,
    port: int = 0,
    token: str | None = None,
    state: str | Path | None = None,
    kubeconfig_path: str | Path | None = None,
    window: int = 10_000,
    bookmark_interval: float = 60.0,
    persist_debounce: float = 0.5,
    options: EmulatorOptions | None = None,
    extensions: Sequence[ExtensionFactory] = (),
) -> AsyncIterator[Emulator]:
    """Serve an emulator on 127.0.0.1 for the duration of the block, in the caller's trio run
    (so it shares the caller's clock); each of ``extensions`` is built from the emulator before
    it listens and runs beside it (``kubetrio.sim`` builds the simulated world this way)."""
    opts = options or EmulatorOptions(
        port=port,
        token=token,
        state_path=Path(state) if state is not None else None,
        kubeconfig_path=Path(kubeconfig_path) if kubeconfig_path is not None else None,
        window=window,
        bookmark_interval=bookmark_interval,
        persist_debounce=persist_debounce,
    )
    emu = Emulator(opts)
    emu.extensions.extend(build(emu) for build in extensions)
    tmpdir: str | None = None
    try:
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(
                partial(
                    trio.serve_tcp,
                    sniffing(emu.http.serve_connection, emu.tls),
                    opts.port,
                    host=opts.host,
                )
            )
            emu.port = listeners[0].socket.getsockname()[1]
            emu.url = f"http://{opts.host}:{emu.port}"
            emu.https_url = f"https://{opts.host}:{emu.port}"
            emu.settings.server_address = f"{opts.host}:{emu.port}"
            if opts.kubeconfig_path is None:
                tmpdir = tempfile.mkdtemp(prefix="kubetrio-emulator-")
                emu.kubeconfig_path = Path(tmpdir) / "kubeconfig"
            else:
                emu.kubeconfig_path = opts.kubeconfig_path
            emu.kubeconfig_path.parent.mkdir(parents=True, exist_ok=True)
            emu.kubeconfig_path.write_text(
                yaml.safe_dump(kubeconfig(emu.https_url, emu.token, emu.tls.ca_pem))
            )
            if emu.persister is not None:
                nursery.start_soon(emu.persister.run)
            for extension in emu.extensions:
                nursery.start_soon(extension.run)
            nursery.start_soon(emu.gc.run)
            try:
                yield emu
            finally:
                nursery.cancel_scope.cancel()
    finally:
        emu.api.admission.connections.close()
        if emu.persister is not None:
            emu.persister.flush()
        if emu.api.audit is not None:
            emu.api.audit.close()
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)

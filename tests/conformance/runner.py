"""The differential runner: each probe (a short sequence of requests, see ``corpus/``) runs on a
fresh emulator and, in a namespace of its own, on the real kube-apiserver of this test process;
both sets of answers are normalised (uids, timestamps, resourceVersions, generated names and
addresses) and compared path by path.

A probe whose answers differ must say where (``differences.DIFFERS``: paths of the differing
parts, with ``*`` wildcards) and be named by a row of ``kubetrio.emulator.gaps.GAPS``; the
comparison then asserts they still differ exactly there, so closing a gap fails the probe until
its entry and row go.

Paths: ``<step>.code``, ``<step>.body.metadata.name``, ``<step>.body.items[0]``, and for a watch
``<step>.events[1].object.data``; a pattern also covers everything below the path it names.
"""

from __future__ import annotations

import base64
import json
import re
import ssl
import string
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import h11
import trio

from kubetrio.runtime.util.inflight import request_in_flight

USER_AGENT = "conformance/v1.0.0"
JSON = "application/json"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSONPATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
STEP_TIMEOUT = 60.0  # a step that takes longer has hung (on the server's own clock)

# ---------------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Req:
    """One request. ``path`` and string values of ``body`` are templates: ``$ns`` is the probe's
    namespace (also the prefix of its cluster-scoped names), ``$name`` a value captured by an
    earlier step. ``body``: a dict or list is sent as JSON, a str or bytes as is. ``user``: a
    captured token to send instead of the admin's ("" for none: anonymous). ``compare=False``
    compares the status code only (set-up steps). ``view`` projects the normalised body before
    it is compared; ``headers`` names response headers to compare."""

    method: str
    path: str
    body: Any = None
    ctype: str | None = None
    accept: str | None = None
    user: str | None = None
    capture: Mapping[str, str] = field(default_factory=dict)
    compare: bool = True
    view: Callable[[Any], Any] | None = None
    headers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Watch:
    """Open a watch on ``path``, send ``then`` (on other connections) once it is open, and read
    events until ``events`` have come, the stream ends or ``timeout`` seconds pass."""

    path: str
    then: tuple[Req, ...] = ()
    events: int = 1
    timeout: float = 5.0
    view: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class Poll:
    """Repeat ``req`` (every ``every`` seconds, at most ``timeout``) until ``until`` holds for
    its answer (``{"code": ..., "body": ...}``, not normalised); the last answer is compared."""

    req: Req
    until: Callable[[dict[str, Any]], bool]
    timeout: float = 30.0
    every: float = 0.2


Step = Req | Watch | Poll


@dataclass(frozen=True)
class Probe:
    id: str
    steps: tuple[Step, ...]
    managed_fields: bool = False  # compare metadata.managedFields (dropped otherwise)
    crd: bool = False  # needs the corpus's Widget CRD installed first


def probe(id: str, *steps: Step, managed_fields: bool = False, crd: bool = False) -> Probe:
    return Probe(id, tuple(steps), managed_fields, crd)


# ----------------------------------------------------------------------------- the transport


@dataclass(frozen=True)
class Server:
    """Where a probe runs: ``url``, the admin ``token``, ``ca`` for TLS; ``real`` says whose
    clock waits are measured on (the real server's are wall-clock seconds)."""

    kind: str
    url: str
    token: str
    ca: bytes | None = None
    real: bool = False

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.ca is None:
            return None
        return ssl.create_default_context(cadata=self.ca.decode())

    async def sleep(self, seconds: float) -> None:
        if self.real:
            await trio.to_thread.run_sync(time.sleep, seconds)
        else:
            await trio.sleep(seconds)

    @asynccontextmanager
    async def deadline(self, seconds: float) -> Any:
        """A cancel scope that ends the block after ``seconds`` on this server's clock."""
        if not self.real:
            with trio.move_on_after(seconds) as scope:
                yield scope
            return
        # The alarm thread is woken when the block ends: an abandoned sleeping thread would
        # hold one of trio's default thread tokens (40) until its time ran out, and a run of
        # many steps would then wait for tokens instead of for the server.
        done = threading.Event()
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as scope:

                async def alarm() -> None:
                    if not await trio.to_thread.run_sync(done.wait, seconds):
                        scope.cancel()

                nursery.start_soon(alarm)
                try:
                    yield scope
                finally:
                    done.set()


@dataclass
class Answer:
    code: int
    headers: dict[str, str]
    body: Any


def _decode(data: bytes, ctype: str) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        if "protobuf" in ctype or "cbor" in ctype:
            return f"<{len(data)} bytes of {ctype.split(';')[0]}>"
        return data.decode(errors="replace")


async def _open(server: Server) -> trio.abc.Stream:
    parts = urlsplit(server.url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
    context = server.ssl_context()
    if context is not None:
        tls = trio.SSLStream(stream, context, server_hostname=host)
        await tls.do_handshake()
        stream = tls
    return stream


def _request_headers(
    server: Server, token: str | None, body: bytes | None, ctype: str | None, accept: str | None
) -> list[tuple[str, str]]:
    headers = [
        ("Host", urlsplit(server.url).netloc),
        ("User-Agent", USER_AGENT),
        ("Accept", accept or JSON),
    ]
    if token:
        headers.append(("Authorization", f"Bearer {token}"))
    if body is not None:
        headers.append(("Content-Type", ctype or JSON))
        headers.append(("Content-Length", str(len(body))))
    return headers


async def exchange(
    server: Server,
    method: str,
    target: str,
    body: bytes | None,
    *,
    token: str | None,
    ctype: str | None = None,
    accept: str | None = None,
) -> Answer:
    with request_in_flight():
        stream = await _open(server)
        async with stream:
            conn = h11.Connection(h11.CLIENT)
            headers = _request_headers(server, token, body, ctype, accept)
            out = conn.send(h11.Request(method=method, target=target, headers=headers))
            if body is not None:
                out += conn.send(h11.Data(data=body))
            out += conn.send(h11.EndOfMessage())
            await stream.send_all(out)
            status, got, chunks = 0, {}, []
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await stream.receive_some(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                    got = {k.decode().lower(): v.decode() for k, v in event.headers}
                elif isinstance(event, h11.Data):
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    break
    data = b"".join(chunks)
    return Answer(status, got, _decode(data, got.get("content-type", "")))


class _WatchReader:
    def __init__(self, conn: h11.Connection, stream: trio.abc.Stream) -> None:
        self.conn, self.stream = conn, stream
        self.buf = b""
        self.code = 0
        self.ended = False

    async def head(self) -> None:
        while not self.code and not self.ended:
            await self._pump()

    async def _pump(self) -> None:
        try:
            event = self.conn.next_event()
        except h11.RemoteProtocolError:
            self.ended = True
            return
        if event is h11.NEED_DATA:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            self.conn.receive_data(data)
        elif isinstance(event, h11.Response):
            self.code = event.status_code
        elif isinstance(event, h11.Data):
            self.buf += bytes(event.data)
        elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            self.ended = True

    async def line(self) -> Any:
        while b"\n" not in self.buf:
            if self.ended:
                if self.buf.strip():
                    rest, self.buf = self.buf, b""
                    return _decode(rest, JSON)
                return None
            await self._pump()
        line, _, self.buf = self.buf.partition(b"\n")
        return _decode(line, JSON) if line.strip() else await self.line()


# ------------------------------------------------------------------------------ normalising

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_ADDRESS = re.compile(r"127\.0\.0\.1:\d+")
_TOO_OLD = re.compile(r"too old resource version: \d+ \(\d+\)")
_RV_IN_TEXT = re.compile(
    r"(resourceVersion|ResourceVersion|resource version|current)"
    r"( in precondition| in record| in object meta)?( ?[:=]? ?\(?)\"?\d+\"?"
)
_ACCESS_VOLUME = re.compile(r"kube-api-access-[a-z0-9]{5}")
_GENERATED = ("clusterIP", "podIP", "hostIP", "token", "nodePort", "healthCheckNodePort")
_TIMES = frozenset(
    {
        "creationTimestamp",
        "deletionTimestamp",
        "time",
        "lastTransitionTime",
        "firstTimestamp",
        "lastTimestamp",
        "eventTime",
        "expirationTimestamp",
        "lastHeartbeatTime",
        "lastProbeTime",
        "startTime",
        "renewTime",
        "acquireTime",
    }
)
ADMIN_NAMES = ("kubetrio-admin", "kubernetes-admin")


class Normaliser:
    """Replaces what differs between two correct servers by placeholders."""

    def __init__(self, namespace: str, managed_fields: bool) -> None:
        self.namespace = namespace
        self.managed_fields = managed_fields

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return self._dict(value)
        if isinstance(value, list):
            if key == "clusterIPs":
                return ["<ip>" for _ in value]
            return [self(v) for v in value]
        if isinstance(value, str):
            return self._str(value, key)
        if key in _GENERATED and isinstance(value, int) and not isinstance(value, bool):
            return f"<{key}>"
        return value

    def _dict(self, value: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "managedFields" and not self.managed_fields:
                continue
            if k in ("resourceVersion", "continue") and isinstance(v, str) and v:
                out[k] = f"<{k}>"
            elif k in ("uid",) and isinstance(v, str) and v:
                out[k] = "<uid>"
            elif k in _TIMES and isinstance(v, str) and v:
                out[k] = "<time>"
            else:
                out[k] = self(v, k)
        gen, name = value.get("generateName"), value.get("name")
        if isinstance(gen, str) and gen and isinstance(name, str) and name.startswith(gen):
            out["name"] = gen + "<suffix>"
        return out

    def _str(self, value: str, key: str) -> str:
        if key in _GENERATED and value and value != "None":
            return f"<{key}>"
        value = _UUID.sub("<uid>", value)
        value = _TIME.sub("<time>", value)
        value = _ADDRESS.sub("<address>", value)
        value = _TOO_OLD.sub("too old resource version: <rv> (<rv>)", value)
        value = _RV_IN_TEXT.sub(r"\1\2\3<rv>", value)
        value = _ACCESS_VOLUME.sub("kube-api-access-<suffix>", value)
        for admin in ADMIN_NAMES:
            value = value.replace(admin, "<admin>")
        if key == "credential-id" or value.startswith("JTI="):
            return "<credential-id>"
        return value


# -------------------------------------------------------------------------------- comparing


def diff(a: Any, b: Any, path: str = "") -> Iterator[str]:
    """Paths where ``a`` and ``b`` differ (a dict key missing on one side counts)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                yield sub
            else:
                yield from diff(a[k], b[k], sub)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from diff(x, y, f"{path}[{i}]")
    elif a != b or type(a) is not type(b):
        yield path


def _pattern(pattern: str) -> re.Pattern[str]:
    """``*`` matches anything (dots and brackets too); the rest is literal. A pattern also
    names everything below the path it matches."""
    body = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.compile(rf"{body}(?:[.\[].*)?")


def covers(pattern: str, path: str) -> bool:
    """Whether ``pattern`` names ``path`` or a part above it."""
    return _pattern(pattern).fullmatch(path) is not None


@dataclass
class Outcome:
    probe: Probe
    emulator: list[Any]
    real: list[Any]
    paths: list[str]  # where the answers differ
    differs: tuple[str, ...] = ()  # where they are documented to differ

    @property
    def unexplained(self) -> list[str]:
        return [p for p in self.paths if not any(covers(d, p) for d in self.differs)]

    @property
    def unseen(self) -> list[str]:
        return [d for d in self.differs if not any(covers(d, p) for p in self.paths)]

    @property
    def ok(self) -> bool:
        return not self.unexplained and not self.unseen

    def report(self, width: int = 6000) -> str:
        lines = [f"probe {self.probe.id}:"]
        if self.unexplained:
            lines.append(f"  differs where nothing says so: {self.unexplained[:30]}")
        if self.unseen:
            lines.append(f"  documented difference no longer seen: {self.unseen}")
        for name, answers in (("emulator", self.emulator), ("real", self.real)):
            text = json.dumps(answers, indent=1, sort_keys=True)
            if len(text) > width:
                text = text[:width] + f"\n... ({len(text) - width} more characters)"
            lines.append(f"  --- {name}:\n{text}")
        return "\n".join(lines)


# -------------------------------------------------------------------------------- running


class _Template(string.Template):
    idpattern = r"[A-Za-z_][A-Za-z0-9_]*"


def fill(value: Any, env: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _Template(value).substitute(env)
    if isinstance(value, dict):
        return {k: fill(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, env) for v in value]
    return value


def dig(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, list):
            value = value[int(part)]
        elif isinstance(value, dict):
            value = value.get(part)
        else:
            return None
    return value


def _encode(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body).encode()


class Run:
    """One probe on one server."""

    def __init__(self, server: Server, probe: Probe, namespace: str) -> None:
        self.server = server
        self.probe = probe
        self.env: dict[str, str] = {"ns": namespace, "bogus": "not-a-token"}
        self.norm = Normaliser(namespace, probe.managed_fields)

    def _token(self, user: str | None) -> str | None:
        if user is None:
            return self.server.token
        return self.env[user] if user else None

    async def send(self, req: Req) -> Answer:
        body = _encode(fill(req.body, self.env))
        target = fill(req.path, self.env)
        answer = await exchange(
            self.server,
            req.method,
            target,
            body,
            token=self._token(req.user),
            ctype=req.ctype,
            accept=req.accept,
        )
        for name, where in req.capture.items():
            got = dig(answer.body, where)
            if got is not None:
                self.env[name] = str(got)
        return answer

    def shown(self, req: Req, answer: Answer) -> Any:
        out: dict[str, Any] = {"code": answer.code}
        if req.compare:
            body = self.norm(answer.body)
            out["body"] = req.view(body) if req.view is not None else body
            for h in req.headers:
                out[h] = answer.headers.get(h.lower())
        return out

    async def step(self, step: Step) -> Any:
        if isinstance(step, Req):
            return self.shown(step, await self.send(step))
        if isinstance(step, Poll):
            answer = await self.send(step.req)
            waited = 0.0
            while not step.until({"code": answer.code, "body": answer.body}):
                if waited >= step.timeout:
                    break
                await self.server.sleep(step.every)
                waited += step.every
                answer = await self.send(step.req)
            return self.shown(step.req, answer)
        return await self.watch(step)

    async def watch(self, step: Watch) -> Any:
        target = fill(step.path, self.env)
        events: list[Any] = []
        then: list[Any] = []
        code = 0
        stream = await _open(self.server)
        async with stream:
            conn = h11.Connection(h11.CLIENT)
            headers = _request_headers(self.server, self.server.token, None, None, None)
            await stream.send_all(
                conn.send(h11.Request(method="GET", target=target, headers=headers))
                + conn.send(h11.EndOfMessage())
            )
            reader = _WatchReader(conn, stream)
            async with self.server.deadline(step.timeout):
                with request_in_flight():
                    await reader.head()
                code = reader.code
                if code != 200:
                    events.append(await reader.line())
                else:
                    for req in step.then:
                        then.append(self.shown(req, await self.send(req)))
                    while len(events) < step.events:
                        line = await reader.line()
                        if line is None:
                            break
                        events.append(line)
        shown = [self.norm(e) for e in events]
        out: dict[str, Any] = {
            "code": code,
            "events": step.view(shown) if step.view is not None else shown,
        }
        if then:
            out["then"] = then
        return out

    async def run(self) -> list[Any]:
        answers = []
        for i, step in enumerate(self.probe.steps):
            async with self.server.deadline(STEP_TIMEOUT) as scope:
                answers.append(await self.step(step))
            if scope.cancelled_caught:
                raise TimeoutError(
                    f"step {i} of probe {self.probe.id} on the {self.server.kind} server took "
                    f"over {STEP_TIMEOUT:g} s: {step}"
                )
        return answers


def compare(
    probe: Probe, emulator: list[Any], real: list[Any], differs: tuple[str, ...] = ()
) -> Outcome:
    paths: list[str] = []
    for i, (a, b) in enumerate(zip(emulator, real, strict=True)):
        paths += diff(a, b, str(i))
    return Outcome(probe, emulator, real, paths, differs)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@contextmanager
def holding() -> Iterator[None]:
    """Hold the mock clock for a block spent waiting on the real server."""
    with request_in_flight():
        yield

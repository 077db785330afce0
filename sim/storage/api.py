"""``/v1``: the simulated storage service's REST API, on an address of its own.

What the storage client (and so the controllers) calls, ``storage.backendURL`` being
``<address>/v1``:

* ``GET    /v1/nodes``        → ``{"items": [{"id", "name", "health"}]}``
* ``DELETE /v1/nodes/{id}``   → 200 ``{}``; 404 / 409 / 423 ``{"error": reason}``

Administration, for tests and demos (never faulted, never in the request log):

* ``POST   /v1/nodes``        ``{"name", "offline"?, "lockExpired"?}`` add a node
* ``GET    /v1/volumes``      list; ``POST`` ``{"name", "namespace"?, "master",
  "replicas"?: [node names]}`` create; ``DELETE /v1/volumes/{id}``
* ``POST   /v1/faults``       ``{"op": list|delete|any, "count", "status",
  "hangSeconds", "message"}``; ``DELETE`` clears them
"""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from kubetrio.emulator.http import Request, Response, json_response
from kubetrio.runtime.util.inflight import waiting_on_simulated_time
from kubetrio.sim.storage.faults import FaultError, FaultRule
from kubetrio.sim.storage.service import SimError, SimulatedStorage

VERSION = "v1"


class StorageApi:
    def __init__(self, storage: SimulatedStorage) -> None:
        self.storage = storage

    async def __call__(self, req: Request) -> Response:
        parts = req.path.strip("/").split("/")
        if parts[0] != VERSION or len(parts) > 3:
            return _error(404, f"no storage endpoint {req.method} {req.path}")
        resource, item = parts[1] if len(parts) > 1 else "", parts[2] if len(parts) > 2 else ""
        self.storage.sync()
        try:
            if resource == "nodes" and not item and req.method == "GET":
                return await self._faulted("list", "", self._list)
            if resource == "nodes" and item and req.method == "DELETE":
                return await self._faulted("delete", item, lambda: self._delete(item))
            return json_response(*self._admin(req, resource, item))
        except SimError as exc:
            return _error(exc.status, exc.message)

    # -- the controllers' API

    async def _faulted(self, op: str, node_id: str, answer: Any) -> Response:
        storage = self.storage
        node = storage.by_id(node_id) if node_id else None
        name = node.name if node is not None else ""
        rule = storage.faults.take(op)
        if rule is not None:
            if rule.hang_seconds:
                with waiting_on_simulated_time():
                    await trio.sleep(rule.hang_seconds)
            storage.record(op, rule.status, name, rule.message)
            return _error(rule.status, rule.message)
        try:
            response: Response = answer()
        except SimError as exc:
            storage.record(op, exc.status, name, exc.message)
            raise
        storage.record(op, response.status, name)
        return response

    def _list(self) -> Response:
        return json_response({"items": self.storage.list_nodes()})

    def _delete(self, node_id: str) -> Response:
        self.storage.delete_node(node_id)
        return json_response({})

    # -- administration

    def _admin(self, req: Request, resource: str, item: str) -> tuple[Any, int]:
        storage = self.storage
        method = req.method
        if resource == "nodes" and not item and method == "POST":
            body = _body(req)
            node = storage.add_node(
                _str(body, "name"),
                offline=_bool(body, "offline"),
                lock_expired=_bool(body, "lockExpired"),
            )
            return node.to_json(trio.current_time()), 201
        if resource == "volumes" and not item and method == "GET":
            return {"items": [v.to_json() for v in storage.volumes.values()]}, 200
        if resource == "volumes" and not item and method == "POST":
            body = _body(req)
            replicas = body.get("replicas", [])
            if not isinstance(replicas, list) or not all(isinstance(r, str) for r in replicas):
                raise SimError(400, "replicas: must be a list of node names")
            volume = storage.add_volume(
                _str(body, "name"),
                _str(body, "master"),
                replicas,
                namespace=_str(body, "namespace", "default"),
            )
            return volume.to_json(), 201
        if resource == "volumes" and item and method == "DELETE":
            storage.delete_volume(item)
            return {}, 200
        if resource == "faults" and not item and method == "POST":
            try:
                storage.faults.add(FaultRule.parse(_body(req)))
            except FaultError as exc:
                raise SimError(400, f"fault: {exc}") from None
            return {"pending": storage.faults.pending}, 201
        if resource == "faults" and not item and method == "DELETE":
            storage.faults.clear()
            return {}, 200
        raise SimError(404, f"no storage endpoint {method} {req.path}")


def _error(status: int, message: str) -> Response:
    return json_response({"error": message}, status)


def _body(req: Request) -> dict[str, Any]:
    try:
        data = msgspec.json.decode(req.body or b"{}")
    except msgspec.DecodeError:
        raise SimError(400, "the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise SimError(400, "the request body must be a JSON object")
    return data


def _str(body: dict[str, Any], key: str, default: str | None = None) -> str:
    value = body.get(key, default)
    if not isinstance(value, str) or not value:
        raise SimError(400, f"{key}: must be a non-empty string")
    return value


def _bool(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise SimError(400, f"{key}: must be true or false")
    return value

"""``/v1/``: the simulated cloud's JSON API, on an address of its own (``kubetrio.sim.serving``):
what the ``sim`` machine driver calls (one POST per driver operation, the class's providerSpec in
every request so the cloud needs no copy of the cluster's objects), plus ``vms`` (GET),
``script`` (POST/DELETE) and ``fail`` (POST: a VM breaks) for tests and demos scripting from
outside."""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from kubetrio.emulator.http import Request, Response, json_response
from kubetrio.runtime.util.inflight import waiting_on_simulated_time
from kubetrio.sim.cloud.errors import CloudError
from kubetrio.sim.cloud.script import OPERATIONS, VmScript, parse_failure
from kubetrio.sim.cloud.service import SimulatedCloud, Vm

VERSION = "v1"


class CloudApi:
    def __init__(self, cloud: SimulatedCloud) -> None:
        self.cloud = cloud

    async def __call__(self, req: Request) -> Response:
        try:
            answer, delay = self._handle(req)
        except CloudError as exc:
            return json_response(exc.body(), exc.http_status)
        if delay > 0:
            with waiting_on_simulated_time():
                await trio.sleep(delay)
        return json_response(answer)

    def _handle(self, req: Request) -> tuple[Any, float]:
        """The answer, and how long the cloud takes to give it."""
        version, _, op = req.path.strip("/").partition("/")
        if version != VERSION:
            raise CloudError("NotFound", f"no cloud endpoint {req.method} {req.path}")
        if op == "vms" and req.method == "GET":
            return {"items": [vm.to_json() for vm in self.cloud.vms.values()]}, 0.0
        if op == "script":
            return self._script(req), 0.0
        if op == "fail" and req.method == "POST":
            provider_id = _body(req).get("providerID")
            if not isinstance(provider_id, str) or not provider_id:
                raise CloudError("InvalidArgument", "providerID: must name the VM")
            return self.cloud.fail(provider_id).to_json(), 0.0
        if req.method != "POST" or op not in OPERATIONS:
            raise CloudError("NotFound", f"no cloud endpoint {req.method} {req.path}")
        body = _body(req)
        class_key, script = _machine_class(body)
        if op == "list":
            return {"machines": self.cloud.list(class_key, script)}, 0.0
        name, namespace, provider_id = _machine(body)
        vm: Vm
        delay = 0.0
        if op == "create":
            vm = self.cloud.create(name, namespace, class_key, script)
            delay = script.create_seconds
        elif op == "status":
            vm = self.cloud.status(name, namespace, provider_id, class_key, script)
        elif op == "initialize":
            vm = self.cloud.initialize(name, namespace, provider_id, class_key, script)
        else:
            vm = self.cloud.delete(name, namespace, provider_id, class_key, script)
        return {"providerID": vm.provider_id, "nodeName": vm.node_name}, delay

    def _script(self, req: Request) -> Any:
        if req.method == "DELETE":
            self.cloud.clear_scripts()
            return {}
        if req.method != "POST":
            raise CloudError("NotFound", f"no cloud endpoint {req.method} {req.path}")
        body = _body(req)
        class_key = body.get("class")
        op = body.get("operation")
        if not isinstance(class_key, str) or "/" not in class_key:
            raise CloudError("InvalidArgument", "class: must be namespace/name")
        if op not in OPERATIONS:
            raise CloudError("InvalidArgument", f"operation: one of {', '.join(OPERATIONS)}")
        self.cloud.script(class_key, op, parse_failure(body, "script"))
        return {}


def _body(req: Request) -> dict[str, Any]:
    try:
        data = msgspec.json.decode(req.body or b"{}")
    except msgspec.DecodeError:
        raise CloudError("InvalidArgument", "the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise CloudError("InvalidArgument", "the request body must be a JSON object")
    return data


def _machine_class(body: dict[str, Any]) -> tuple[str, VmScript]:
    cls = body.get("machineClass")
    if not isinstance(cls, dict) or not isinstance(cls.get("name"), str):
        raise CloudError("InvalidArgument", "machineClass: must name the class")
    key = f"{cls.get('namespace') or ''}/{cls['name']}"
    return key, VmScript.parse(cls.get("providerSpec"), cls.get("nodeTemplate"))


def _machine(body: dict[str, Any]) -> tuple[str, str, str]:
    machine = body.get("machine")
    if not isinstance(machine, dict) or not isinstance(machine.get("name"), str):
        raise CloudError("InvalidArgument", "machine: must name the machine")
    return (
        machine["name"],
        str(machine.get("namespace") or ""),
        str(machine.get("providerID") or ""),
    )

"""``/_emulator/``: the test hooks over HTTP, for clients in other processes (benchmarks, kubectl
tests) that cannot reach the Python objects."""

from __future__ import annotations

from typing import Any

import msgspec

from kubetrio.emulator.errors import ApiError, bad_request
from kubetrio.emulator.faults import Counters, FaultRule, Faults
from kubetrio.emulator.http import Request, Response, json_response
from kubetrio.emulator.store import Store

PREFIX = "/_emulator"
_RULE_FIELDS = set(FaultRule.__dataclass_fields__) - {"id"}


class Admin:
    def __init__(self, store: Store, faults: Faults, counters: Counters) -> None:
        self.store = store
        self.faults = faults
        self.counters = counters

    async def __call__(self, req: Request) -> Response:
        try:
            return self._handle(req)
        except ApiError as exc:
            return json_response(exc.status(), exc.code)

    def _handle(self, req: Request) -> Response:
        path = req.path[len(PREFIX) :].strip("/")
        m = req.method
        if path == "faults":
            if m == "GET":
                return json_response([r.to_json() for r in self.faults.rules])
            if m == "POST":
                return json_response(self.faults.add(self._rule(req.body)).to_json(), 201)
            if m == "DELETE":
                self.faults.clear()
                return json_response({})
        if path.startswith("faults/") and m == "DELETE":
            try:
                self.faults.remove(int(path.partition("/")[2]))
            except ValueError:
                raise bad_request("fault id must be an integer") from None
            return json_response({})
        if path == "counters":
            if m == "GET":
                return json_response(self.counters.snapshot())
            if m == "DELETE":
                self.counters.reset()
                return json_response({})
        if path == "expire-watch-history" and m == "POST":
            self.faults.expire_watch_history()
            return json_response({"resourceVersion": str(self.store.rv)})
        if path == "cut-watches" and m == "POST":
            return json_response({"cut": self.faults.cut_watches()})
        if path == "state" and m == "GET":
            return json_response({"resourceVersion": str(self.store.rv)})
        raise ApiError(404, "NotFound", f"no admin endpoint {m} {req.path}", {})

    @staticmethod
    def _rule(body: bytes) -> FaultRule:
        try:
            data: Any = msgspec.json.decode(body or b"{}")
        except msgspec.DecodeError as exc:
            raise bad_request(f"the request body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise bad_request("a fault rule must be a JSON object")
        unknown = sorted(set(data) - _RULE_FIELDS)
        if unknown:
            raise bad_request(f"unknown fault rule field(s): {', '.join(unknown)}")
        try:
            return msgspec.convert(data, FaultRule)
        except msgspec.ValidationError as exc:
            raise bad_request(f"invalid fault rule: {exc}") from None

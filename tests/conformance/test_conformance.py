"""The emulator against a real kube-apiserver, probe by probe (``corpus/``, run by ``runner``).

Each area is one test: its probes run on a fresh emulator each and on this process's control
plane (a namespace per probe). A probe passes when both answer alike after normalising, or when
they differ exactly where ``differences.py`` says and a row of ``emulator/gaps.py`` names it.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
import trio
import trio.testing

from kubetrio.emulator import serve_emulator
from kubetrio.emulator.gaps import GAPS
from kubetrio.testing.controlplane import ControlPlane

from . import crd
from .corpus import ALL, AREAS
from .differences import DIFFERS
from .runner import Outcome, Probe, Run, Server, compare, exchange, holding

_real_crd: set[str] = set()


async def _ok(server: Server, method: str, path: str, body: Any = None) -> None:
    raw = None if body is None else json.dumps(body).encode()
    answer = await exchange(server, method, path, raw, token=server.token)
    if answer.code >= 400 and answer.code != 409:
        raise AssertionError(f"set-up {method} {path} on {server.kind}: {answer.body}")


async def _await_widgets(server: Server, namespace: str) -> None:
    # Listed, and watched from the watch cache (429 while it starts).
    path = crd.WIDGETS.replace("$ns", namespace)
    if server.real:
        path += "?watch=1&timeoutSeconds=1&resourceVersion=0"
    for _ in range(300):
        answer = await exchange(server, "GET", path, None, token=server.token)
        if answer.code == 200:
            return
        await server.sleep(0.1)
    raise AssertionError(f"the Widget CRD is not served on {server.kind}")


async def _prepare(server: Server, probe: Probe, namespace: str) -> None:
    await _ok(server, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    await _ok(server, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", account)
    if probe.crd and (not server.real or server.url not in _real_crd):
        await _ok(
            server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd.CRD
        )
        await _await_widgets(server, namespace)
        if server.real:
            _real_crd.add(server.url)


async def run_probe(probe: Probe, plane: ControlPlane) -> Outcome:
    namespace = f"cf-{secrets.token_hex(4)}"
    async with serve_emulator() as emu:
        server = Server("emulator", emu.url, emu.token)
        await _prepare(server, probe, namespace)
        on_emulator = await Run(server, probe, namespace).run()
    real = Server("real", plane.url, plane.token, plane.ca_pem, real=True)
    with holding():
        await _prepare(real, probe, namespace)
        try:
            on_real = await Run(real, probe, namespace).run()
        finally:
            await exchange(
                real, "DELETE", f"/api/v1/namespaces/{namespace}", None, token=real.token
            )
    return compare(probe, on_emulator, on_real, DIFFERS.get(probe.id, ()))


@pytest.mark.slow
@pytest.mark.parametrize("area", sorted(AREAS))
async def test_emulator_answers_as_kube_apiserver(
    area: str, control_plane: ControlPlane, mock_clock: trio.testing.MockClock
) -> None:
    failures: list[str] = []
    for probe in AREAS[area]:
        try:
            outcome = await run_probe(probe, control_plane)
        except Exception as error:  # one broken probe must not hide the others' results
            failures.append(f"probe {probe.id}: {type(error).__name__}: {error}")
            continue
        if not outcome.ok:
            failures.append(outcome.report())
    assert not failures, f"{len(failures)} probes of {area} failed:\n\n" + "\n\n".join(failures)


def test_probe_ids_are_unique() -> None:
    ids = [p.id for p in ALL]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_documented_difference_has_its_gap_row() -> None:
    ids = {p.id for p in ALL}
    documented = set(DIFFERS)
    named = {pid for g in GAPS for pid in g.conformance}
    assert documented - ids == set(), "differences of probes the corpus lacks"
    assert documented - named == set(), "probes that differ but no gap row names"
    assert named - documented == set(), "gap rows name probes that do not differ"
    assert all(DIFFERS.values()), "a documented probe must say where it differs"

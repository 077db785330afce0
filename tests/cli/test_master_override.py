"""``--master`` overrides the kubeconfig's server and nothing else, as client-go's
``BuildConfigFromFlags``: the kubeconfig's user still authenticates the requests (they went
out anonymous, and RBAC refused the manager as system:anonymous)."""

from __future__ import annotations

import json

from kubetrio.cmd.clusters import Endpoint, client_for
from kubetrio.emulator import Emulator

OPTIONS = {"qps": 0.0, "burst": 1, "timeout": 10.0}


async def test_master_keeps_the_kubeconfigs_credentials(emu: Emulator) -> None:
    # The kubeconfig names the https URL; the same port speaks plain HTTP at emu.url.
    client = client_for(Endpoint(str(emu.kubeconfig_path), None, emu.url), **OPTIONS)
    assert client.base_url == emu.url
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
    }
    body = await client.request(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        body=json.dumps(review).encode(),
    )
    assert json.loads(body)["status"]["userInfo"]["username"] == "kubernetes-admin"

"""The client through an HTTP proxy (``tests/helpers/proxy.py``, in the test's run) in front of the
emulator: requests and watches go through it as CONNECT tunnels for ``https://`` and as
absolute-form requests for ``http://``; ``HTTPS_PROXY`` and ``NO_PROXY`` act as client-go reads
them, a kubeconfig's ``proxy-url`` wins over them, and a refusing proxy is a clear error.

The server is named ``kubernetes.default.svc`` (a name the emulator's certificate carries),
which a custom trio resolver points at 127.0.0.1: client-go never takes a proxy from the
environment for a loopback address, and the name keeps the test off the machine's DNS.
"""

from __future__ import annotations

import base64
import socket
import ssl
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trustme
import yaml

from kubetrio.api.core import ConfigMap
from kubetrio.emulator import Emulator
from kubetrio.emulator.server import kubeconfig
from kubetrio.runtime.client.errors import ApiError
from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.client.typed import Client, WatchEvent
from tests.helpers.proxy import http_proxy

SVC = "kubernetes.default.svc"
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


class Resolver(trio.abc.HostnameResolver):
    """``SVC`` is 127.0.0.1; every other name resolves as usual (numeric ones never ask)."""

    async def getaddrinfo(
        self,
        host: bytes | None,
        port: bytes | str | int | None,
        family: int = 0,
        type: int = 0,
        proto: int = 0,
        flags: int = 0,
    ) -> list[tuple[Any, ...]]:
        if host == SVC.encode():
            host = b"127.0.0.1"
        return socket.getaddrinfo(host, port, family, type, proto, flags)

    async def getnameinfo(self, sockaddr: tuple[str, int], flags: int) -> tuple[str, str]:
        return socket.getnameinfo(sockaddr, flags)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def client_for(
    emulator: Emulator, tmp_path: Path, server: str, ca_pem: bytes | None = None, **cluster: str
) -> Client:
    """Admin on ``emulator`` at ``server``, from a kubeconfig file (``cluster``: more fields of
    its cluster, such as ``proxy-url``)."""
    doc = kubeconfig(server, emulator.token, ca_pem or emulator.tls.ca_pem)
    doc["clusters"][0]["cluster"].update(cluster)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return Client.from_kubeconfig(str(path))


async def watch_sees_a_create(client: Client, name: str) -> None:
    """List, watch from there, create: the watch must report the create."""
    listed = await client.list(ConfigMap, namespace="default")
    send, receive = trio.open_memory_channel[list[WatchEvent[ConfigMap]]](10)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            partial(
                client.watch,
                ConfigMap,
                send,
                namespace="default",
                resource_version=listed.metadata.resource_version,
            )
        )
        await client.create(ConfigMap, {"metadata": {"name": name, "namespace": "default"}})
        with trio.fail_after(60):
            async for batch in receive:
                if any(e.type == "ADDED" and e.obj and e.obj.name == name for e in batch):
                    break
        nursery.cancel_scope.cancel()


async def test_requests_and_watches_go_through_the_https_proxy_tunnel(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trio.socket.set_custom_hostname_resolver(Resolver())
    async with http_proxy() as (proxy_port, log):
        monkeypatch.setenv("https_proxy", f"127.0.0.1:{proxy_port}")  # no scheme: http://
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # for http:// URLs only
        client = client_for(emulator, tmp_path, f"https://{SVC}:{emulator.port}")
        await watch_sees_a_create(client, "tunnelled")
    # The list, then the watch on its kept-alive connection, and the create on another one.
    assert log.tunnels == [f"{SVC}:{emulator.port}"] * 2
    assert client.wire.pool.opened == 2
    assert log.forwarded == [] and log.authorizations == []


async def test_no_proxy_sends_a_host_straight_to_the_server(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trio.socket.set_custom_hostname_resolver(Resolver())
    async with http_proxy() as (proxy_port, log):
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy_port}")
        monkeypatch.setenv("NO_PROXY", "10.0.0.0/8, example.com, default.svc")  # and subdomains
        client = client_for(emulator, tmp_path, f"https://{SVC}:{emulator.port}")
        await watch_sees_a_create(client, "direct")
    assert log.tunnels == []


async def test_a_proxy_url_carries_plain_http_requests_in_absolute_form(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kubeconfig's ``proxy-url`` applies to its cluster whatever the environment says, even
    to a loopback address; its user and password go in a ``Proxy-Authorization`` header."""
    async with http_proxy() as (proxy_port, log):
        monkeypatch.setenv("NO_PROXY", "*")
        server = f"http://127.0.0.1:{emulator.port}"
        proxy_url = f"http://ann:p%40ss@127.0.0.1:{proxy_port}"
        client = client_for(emulator, tmp_path, server, **{"proxy-url": proxy_url})
        await watch_sees_a_create(client, "forwarded")
    collection = f"{server}/api/v1/namespaces/default/configmaps"
    assert [target.partition("?")[0] for target in log.forwarded] == [collection] * 3
    assert sum("watch=true" in target for target in log.forwarded) == 1
    basic = "Basic " + base64.b64encode(b"ann:p@ss").decode()
    assert log.authorizations == [basic] * 3
    assert log.tunnels == []


async def test_an_https_proxy_is_spoken_to_over_tls(emulator: Emulator, tmp_path: Path) -> None:
    """As in Go, the proxy's certificate is verified with the cluster's CA bundle."""
    trio.socket.set_custom_hostname_resolver(Resolver())
    proxy_ca = trustme.CA()
    proxy_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    proxy_ca.issue_cert("127.0.0.1").configure_cert(proxy_tls)
    async with http_proxy(tls=proxy_tls) as (proxy_port, log):
        client = client_for(
            emulator,
            tmp_path,
            f"https://{SVC}:{emulator.port}",
            ca_pem=emulator.tls.ca_pem + proxy_ca.cert_pem.bytes(),
            **{"proxy-url": f"https://127.0.0.1:{proxy_port}"},
        )
        await client.list(ConfigMap, namespace="default")
    assert log.tunnels == [f"{SVC}:{emulator.port}"]


async def test_a_proxy_refusing_the_tunnel_is_a_clear_error(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trio.socket.set_custom_hostname_resolver(Resolver())
    async with http_proxy(refuse=True) as (proxy_port, _):
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy_port}")
        client = client_for(emulator, tmp_path, f"https://{SVC}:{emulator.port}")
        with pytest.raises(ApiError) as refused:
            await client.list(ConfigMap)
    assert refused.value.reason == "Unreachable"
    assert refused.value.message == (
        f"no response from the API server at https://{SVC}:{emulator.port}: proxy "
        f"http://127.0.0.1:{proxy_port} answered CONNECT {SVC}:{emulator.port} with 407 "
        "Proxy Authentication Required"
    )


def test_an_unusable_proxy_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = kubeconfig("https://192.0.2.1:6443", "t", b"")
    del doc["clusters"][0]["cluster"]["certificate-authority-data"]
    doc["clusters"][0]["cluster"]["proxy-url"] = "socks5://user:secret@127.0.0.1:1080"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    cluster = doc["clusters"][0]["name"]
    with pytest.raises(KubeconfigError) as refused:
        Client.from_kubeconfig(str(path))
    assert str(refused.value) == (
        f"kubeconfig {path}: clusters[{cluster}].proxy-url: socks5 proxies are not supported: "
        "use an http or https proxy"
    )
    del doc["clusters"][0]["cluster"]["proxy-url"]
    path.write_text(yaml.safe_dump(doc))
    monkeypatch.setenv("HTTPS_PROXY", "socks5h://127.0.0.1:1080")
    with pytest.raises(KubeconfigError, match=r": proxy for https://192\.0\.2\.1:6443: HTTPS_PROX"):
        Client.from_kubeconfig(str(path))

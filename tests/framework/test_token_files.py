"""Tokens kept in files that rotate: the in-cluster ServiceAccount token (projected, replaced by
the kubelet) and a kubeconfig's ``tokenFile``. Re-read at most every 50 s as client-go does (a
minute less ten seconds' leeway), and at once after a 401, the refused request then sent again.
The emulator issues and expires the tokens on the test's MockClock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio
import trio.testing

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from kubetrio.runtime.client.errors import ApiError, is_forbidden
from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.client.typed import Client
from tests.helpers.credentials import admin_account, fresh_token, revoke, write_kubeconfig
from tests.helpers.rbac import service_account

NAMESPACES = "/api/v1/namespaces"


def replace(path: Path, text: str) -> None:
    """As the kubelet swaps a projected volume's contents: whole, at once."""
    staged = path.with_name(f".{path.name}.new")
    staged.write_text(text)
    os.replace(staged, path)


def mounted_account(emu: Emulator, root: Path, token: str) -> tuple[Path, dict[str, str]]:
    """A pod's ServiceAccount mount and environment, pointing at the emulator over TLS."""
    root.mkdir()
    (root / "token").write_text(token)
    (root / "ca.crt").write_bytes(emu.tls.ca_pem)
    (root / "namespace").write_text("default")
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(emu.port)}
    return root, env


async def test_in_cluster_token_is_reread_after_fifty_seconds(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """The file now holds another account's token (one with no rights): seen only once the
    last reading is 50 s old."""
    await admin_account(client, "manager")
    await service_account(client, "nobody")
    root, env = mounted_account(emu, tmp_path / "sa", await fresh_token(client, "manager"))
    kube = Client.in_cluster(str(root), env)
    assert kube.base_url == f"https://127.0.0.1:{emu.port}"  # and the CA is the mounted one
    await kube.request("GET", NAMESPACES)
    replace(root / "token", await fresh_token(client, "nobody"))
    await trio.sleep(45)
    await kube.request("GET", NAMESPACES)  # still the manager's token
    await trio.sleep(6)
    with pytest.raises(ApiError) as denied:
        await kube.request("GET", NAMESPACES)
    assert is_forbidden(denied.value)
    assert 'User "system:serviceaccount:default:nobody"' in denied.value.message


async def test_in_cluster_token_rotated_and_the_old_one_revoked(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """The old token stops working before the 50 s are up: the 401 makes the client read the
    file at once, and the request succeeds with the new token."""
    await admin_account(client, "manager")
    root, env = mounted_account(emu, tmp_path / "sa", await fresh_token(client, "manager"))
    kube = Client.in_cluster(str(root), env)
    await kube.request("GET", NAMESPACES)
    await revoke(client, "manager")
    replace(root / "token", await fresh_token(client, "manager"))
    async with trio.open_nursery() as nursery:
        for _ in range(6):
            nursery.start_soon(kube.request, "GET", NAMESPACES)
    # Expiry at the emulator (10 minutes, its shortest lifetime) is the same story.
    replace(root / "token", await fresh_token(client, "manager", seconds=600))
    await trio.sleep(555)
    await kube.request("GET", NAMESPACES)  # re-read (last read long ago): the 10-minute token
    replace(root / "token", await fresh_token(client, "manager"))
    await trio.sleep(46)  # it has expired; read only 46 s ago, so only the 401 tells
    await kube.request("GET", NAMESPACES)


async def test_token_file_in_a_kubeconfig_rotates_the_same_way(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    await admin_account(client, "ci")
    (tmp_path / "ci.token").write_text(await fresh_token(client, "ci"))
    # Relative to the kubeconfig's folder, as kubectl resolves it.
    path = write_kubeconfig(tmp_path / "kubeconfig", emu.url, {"tokenFile": "ci.token"})
    kube = Client.from_kubeconfig(str(path))
    await kube.request("GET", NAMESPACES)
    await revoke(client, "ci")
    replace(tmp_path / "ci.token", await fresh_token(client, "ci"))
    await kube.request("GET", NAMESPACES)


async def test_a_token_beside_a_token_file_gives_way_to_the_file(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """client-go: the static token is used only while the file cannot be read."""
    await admin_account(client, "ci")
    await service_account(client, "nobody")
    (tmp_path / "t").write_text(await fresh_token(client, "nobody"))
    user = {"token": await fresh_token(client, "ci"), "tokenFile": str(tmp_path / "t")}
    kube = Client.from_kubeconfig(str(write_kubeconfig(tmp_path / "kc", emu.url, user)))
    with pytest.raises(ApiError) as denied:
        await kube.request("GET", NAMESPACES)
    assert "default:nobody" in denied.value.message


async def test_an_unreadable_token_file_keeps_the_last_good_token(
    emu: Emulator, client: EmuClient, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    await admin_account(client, "ci")
    token_file = tmp_path / "t"
    token_file.write_text(await fresh_token(client, "ci"))
    kube = Client.from_kubeconfig(
        str(write_kubeconfig(tmp_path / "kc", emu.url, {"tokenFile": str(token_file)}))
    )
    await kube.request("GET", NAMESPACES)
    token_file.unlink()
    await trio.sleep(120)
    await kube.request("GET", NAMESPACES)


def test_missing_token_file_and_not_in_a_cluster_are_one_line(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:1", {"tokenFile": "gone"})
    with pytest.raises(KubeconfigError) as missing:
        Client.from_kubeconfig(str(path))
    assert str(missing.value) == (
        f"kubeconfig {path}: token file {tmp_path / 'gone'}: No such file or directory"
    )
    with pytest.raises(KubeconfigError) as outside:
        Client.in_cluster(str(tmp_path), {})
    assert str(outside.value) == (
        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be defined"
    )
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(KubeconfigError) as no_token:
        Client.in_cluster(str(tmp_path), env)
    assert str(no_token.value) == f"token file {tmp_path / 'token'}: No such file or directory"

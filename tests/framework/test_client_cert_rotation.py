"""Client certificates that rotate, checked at the TLS level.

The emulator does not authenticate client certificates (it asks for none, as a documented gap),
so the certificate a request carried is seen by a small TLS server that requires one and
answers with its subject's common name. Certificate files are re-read every five minutes as
client-go does (CertCallbackRefreshDuration); a plugin's certificate is used as it hands it out.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import pytest
import trio
import trio.testing
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubetrio.runtime.client.kubeconfig import KubeconfigError
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.util.clock import now
from tests.helpers.credentials import V1, exec_user, plugin_runs, write_kubeconfig

Pair = tuple[bytes, bytes]  # certificate PEM, key PEM


class Authority:
    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
        self.cert = self._sign(self.name, self.key.public_key(), ca=True)
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def _sign(
        self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey, *, ca: bool = False
    ) -> x509.Certificate:
        start = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            # What strict X.509 verification (Python 3.13's default) requires of a chain.
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                critical=False,
            )
        )
        if ca:
            unused = (
                "content_commitment",
                "key_encipherment",
                "data_encipherment",
                "key_agreement",
            )
            builder = builder.add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                    **dict.fromkeys(unused, False),
                ),
                critical=True,
            )
        else:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return builder.sign(self.key, hashes.SHA256())

    def issue(self, common_name: str) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        cert = self._sign(subject, key.public_key())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return cert.public_bytes(serialization.Encoding.PEM), key_pem


async def _answer(context: ssl.SSLContext, connections: list[str], raw: trio.SocketStream) -> None:
    stream = trio.SSLStream(raw, context, server_side=True)
    try:
        await stream.do_handshake()
        peer = stream.getpeercert()
        common_name = dict(pair[0] for pair in peer["subject"])["commonName"]
        connections.append(common_name)
        pending = b""
        while True:
            while b"\r\n\r\n" not in pending:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return
                pending += chunk
            _, pending = pending.split(b"\r\n\r\n", 1)
            body = json.dumps({"cn": common_name}).encode()
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            await stream.send_all(head.encode() + body)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return
    finally:
        await trio.aclose_forcefully(stream)


@asynccontextmanager
async def mutual_tls_server(ca: Authority, tmp: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """An HTTPS server that requires a client certificate from ``ca``; yields its URL and the
    common name of every connection's client certificate."""
    cert, key = ca.issue("server")
    (tmp / "server.crt").write_bytes(cert)
    (tmp / "server.key").write_bytes(key)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp / "server.crt", tmp / "server.key")
    context.load_verify_locations(cadata=ca.pem.decode())
    context.verify_mode = ssl.CERT_REQUIRED
    connections: list[str] = []
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, partial(_answer, context, connections), 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        yield f"https://127.0.0.1:{port}", connections
        nursery.cancel_scope.cancel()


async def who(kube: Client) -> str:
    return str(json.loads(await kube.request("GET", "/whoami"))["cn"])


def write_pair(folder: Path, pair: Pair) -> None:
    (folder / "client.crt").write_bytes(pair[0])
    (folder / "client.key").write_bytes(pair[1])


async def test_client_certificate_files_are_reread_every_five_minutes(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    ca = Authority()
    (tmp_path / "ca.crt").write_bytes(ca.pem)
    write_pair(tmp_path, ca.issue("alice"))
    async with mutual_tls_server(ca, tmp_path) as (url, connections):
        user = {"client-certificate": "client.crt", "client-key": "client.key"}
        path = write_kubeconfig(
            tmp_path / "kubeconfig", url, user, **{"certificate-authority": "ca.crt"}
        )
        kube = Client.from_kubeconfig(str(path))
        assert await who(kube) == "alice"
        write_pair(tmp_path, ca.issue("bob"))
        await trio.sleep(240)
        assert await who(kube) == "alice"  # not re-read yet
        await trio.sleep(61)
        assert await who(kube) == "bob"  # a new connection, with the new pair
        assert await who(kube) == "bob"
        # A half-written rotation (a key that does not match) keeps the last good pair.
        (tmp_path / "client.crt").write_bytes(ca.issue("carol")[0])
        await trio.sleep(301)
        assert await who(kube) == "bob"
        # A connection per identity in force, and a fresh one after each sleep longer than
        # the pool's idle timeout: never one with a pair that was replaced.
        assert connections == ["alice", "alice", "bob", "bob"]


@pytest.mark.process
async def test_a_plugin_certificate_is_used_until_it_expires(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    ca = Authority()
    (tmp_path / "ca.crt").write_bytes(ca.pem)
    state = tmp_path / "plugin"
    state.mkdir()
    cert, key = ca.issue("dave")
    (state / "cert").write_bytes(cert)
    (state / "key").write_bytes(key)
    expiry = (now() + dt.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    (state / "expiry").write_text(expiry)
    async with mutual_tls_server(ca, tmp_path) as (url, _):
        path = write_kubeconfig(
            tmp_path / "kubeconfig",
            url,
            exec_user(state, V1),
            **{"certificate-authority": "ca.crt"},
        )
        kube = Client.from_kubeconfig(str(path))
        assert await who(kube) == "dave"
        cert, key = ca.issue("erin")
        (state / "cert").write_bytes(cert)
        (state / "key").write_bytes(key)
        (state / "expiry").unlink()
        assert await who(kube) == "dave"
        await trio.sleep(601)
        assert await who(kube) == "erin"
        assert plugin_runs(state) == 2


def test_a_certificate_without_its_key_is_a_kubeconfig_error(tmp_path: Path) -> None:
    ca = Authority()
    write_pair(tmp_path, ca.issue("alice"))
    user = {"client-certificate": str(tmp_path / "client.crt")}
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", user)
    with pytest.raises(KubeconfigError) as bad:
        Client.from_kubeconfig(str(path))
    assert str(bad.value) == (
        f"kubeconfig {path}: users[me].client-key: required with a client certificate"
    )


def test_a_key_without_its_certificate_names_the_field(tmp_path: Path) -> None:
    write_pair(tmp_path, Authority().issue("alice"))
    user = {"client-key": str(tmp_path / "client.key")}
    path = write_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", user)
    with pytest.raises(KubeconfigError) as bad:
        Client.from_kubeconfig(str(path))
    assert str(bad.value) == (
        f"kubeconfig {path}: users[me].client-certificate: required with a client key"
    )

"""HTTPS beside HTTP on the one port. kubectl (client-go) sends a kubeconfig's bearer token and
impersonation headers only over TLS, so the kubeconfig points at ``https://`` with a CA made at
start; in-process clients keep using the plain ``http://`` URL. A connection whose first byte
is a TLS handshake record is wrapped in TLS, anything else is served as plain HTTP."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import ssl
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubetrio.runtime.emulator.audit import peer_address

_HANDSHAKE = 0x16  # TLS record type of a ClientHello


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


class ServingCert:
    """A CA (what the kubeconfig trusts) and the serving certificate it signs, for 127.0.0.1,
    localhost and the in-cluster service names."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        until = now + dt.timedelta(days=365)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = (
            x509.CertificateBuilder()
            .subject_name(_name("kubetrio-emulator-ca"))
            .issuer_name(_name("kubetrio-emulator-ca"))
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = [
            x509.DNSName("localhost"),
            x509.DNSName("kubernetes.default.svc"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]
        try:
            if host != "127.0.0.1":
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name("kube-apiserver"))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(until)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        self.ca_pem = ca.public_bytes(serialization.Encoding.PEM)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        # ssl loads chains from files only; they live just long enough to be read.
        with tempfile.TemporaryDirectory(prefix="kubetrio-tls-") as tmp:
            cert_file, key_file = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            key_file.write_bytes(_pem_key(key))
            self.context.load_cert_chain(cert_file, key_file)
        self.context.set_alpn_protocols(["http/1.1"])


class _Replay(trio.abc.Stream):
    """A stream whose first bytes were already read (to look at them) and are given back."""

    def __init__(self, inner: trio.SocketStream, first: bytes) -> None:
        self._inner = inner
        self._first = first

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._first:
            data, self._first = self._first, b""
            return data
        return bytes(await self._inner.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._inner.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self._inner.aclose()


def sniffing(
    serve: Callable[[trio.abc.Stream], Awaitable[None]], cert: ServingCert
) -> Callable[[trio.SocketStream], Awaitable[None]]:
    """A ``serve_tcp`` handler that hands ``serve`` a TLS stream or the plain one."""

    async def handler(stream: trio.SocketStream) -> None:
        with contextlib.suppress(OSError):  # the audit log's sourceIPs
            peer_address.set(str(stream.socket.getpeername()[0]))
        try:
            first = bytes(await stream.receive_some(65536))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await trio.aclose_forcefully(stream)
            return
        replay = _Replay(stream, first)
        if first[:1] == bytes([_HANDSHAKE]):
            await serve(trio.SSLStream(replay, cert.context, server_side=True))
        else:
            await serve(replay)

    return handler

"""The metrics server's TLS certificate: a self-signed one made in memory, and server contexts
built from PEM bytes.

When no certificate files are given, controller-runtime serves ``/metrics`` with a certificate
it signs itself (``certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", [127.0.0.1])``):
a throwaway CA and a serving certificate it issued, both valid for a year, the chain sent to
the client. What matters there is that the scrape is encrypted, not who vouches for the server
(kube-controller-manager does the same). We make the same pair, with P-256 keys (quicker to
make than RSA, and every TLS client speaks it), and with every extension RFC 5280 asks of a CA
and the certificates it issues (subject and authority key identifiers, basic constraints, key
usage): strict verifiers refuse a chain without them (Python 3.13's default context does, with
"Missing Authority Key Identifier"). The emulator's serving certificate is made here too.

Python's ``ssl`` loads keys only from files. The manager's container has a read-only root
filesystem, and a private key should not touch a disk anyway, so the PEM goes through an
anonymous in-memory file (``memfd_create``) where the kernel has one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import os
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from cryptography import x509

__all__ = ["CertificateError", "ServingPair", "self_signed", "server_context"]

VALIDITY: Final = dt.timedelta(days=365)  # certutil's maxAge
# The protocol the server speaks (h11): advertised so a client never tries h2 on it.
ALPN: Final = ["http/1.1"]


class CertificateError(Exception):
    """A certificate or key that cannot serve: unreadable, malformed, or not a pair. The
    message names the files."""


@dataclass(frozen=True, slots=True)
class ServingPair:
    """A serving certificate (with its chain) and its private key, PEM-encoded; ``ca_pem`` is
    the self-signed CA that issued it (None for certificates from files)."""

    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes | None = None


def self_signed(
    host: str = "localhost",
    ips: tuple[str, ...] = ("127.0.0.1",),
    also: tuple[str, ...] = (),
) -> ServingPair:
    """A CA and a serving certificate it issued for ``host``, the DNS names in ``also`` and
    the addresses in ``ips``, as certutil makes; both pass strict X.509 verification.

    cryptography's X.509 modules are imported here, not with the module: several MiB that a
    manager serving plain HTTP never needs."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    stamp = int(now.timestamp())
    start, end = now - dt.timedelta(hours=1), now + VALIDITY  # an hour for clock skew
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_id = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{stamp}")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(ca_id, critical=False)
        .add_extension(_authority(ca_id), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dict.fromkeys((host, *also))]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in dict.fromkeys(ips)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{stamp}")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(_authority(ca_id), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    return ServingPair(
        cert.public_bytes(serialization.Encoding.PEM) + ca_pem,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
        ca_pem,
    )


def _authority(issuer: x509.SubjectKeyIdentifier) -> x509.AuthorityKeyIdentifier:
    from cryptography import x509

    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(issuer)


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not cert_sign,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def server_context(
    pair: ServingPair, source: str = "the self-signed certificate"
) -> ssl.SSLContext:
    """A TLS server context (TLS 1.2+, HTTP/1.1 by ALPN) serving ``pair``; CertificateError
    naming ``source`` when the PEM is no certificate, no key, or not a matching pair."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(ALPN)
    try:
        with _memory_file(pair.cert_pem) as cert, _memory_file(pair.key_pem) as key:
            context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise CertificateError(f"{source}: {_ssl_reason(exc)}") from None
    return context


def _ssl_reason(exc: ssl.SSLError) -> str:
    reason = exc.reason or str(exc)
    known = {
        "KEY_VALUES_MISMATCH": "the key does not belong to the certificate",
        "NO_START_LINE": "no PEM certificate or key found",
        "PEM_LIB": "not a PEM certificate and key",
    }
    return known.get(reason, reason.replace("_", " ").lower())


@contextlib.contextmanager
def _memory_file(data: bytes) -> Iterator[str]:
    """A path ``ssl`` can read ``data`` from, gone when the block ends."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kubetrio-serving-cert", os.MFD_CLOEXEC)
        try:
            rest = memoryview(data)
            while rest:
                rest = rest[os.write(fd, rest) :]
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.NamedTemporaryFile(prefix="kubetrio-cert-") as file:  # not Linux
        file.write(data)
        file.flush()
        yield file.name

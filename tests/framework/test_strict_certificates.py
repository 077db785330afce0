"""The certificates kubetrio makes (the emulator's, the webhook server's, secure metrics') pass
strict X.509 verification, as Python 3.13's default client context demands; a chain that does
not is reported as the server certificate's fault, not the kubeconfig's.

Each check is a real TLS handshake between two ``ssl`` objects over memory buffers, with the
client context set as 3.13 sets it by default (``VERIFY_X509_STRICT``), on every Python."""

from __future__ import annotations

import datetime as dt
import ssl

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubetrio.emulator.tls import ServingCert
from kubetrio.runtime.certs.serving import ServingPair, self_signed, server_context
from kubetrio.runtime.client.unreachable import classify, transport_problem


def _strict_client(ca_pem: bytes) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    context.verify_flags |= ssl.VERIFY_X509_STRICT
    return context


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str) -> None:
    """Drive both ends of a TLS handshake over memory until the client is done; raises what
    the client's verification raises."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    from_server, from_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_client = client.wrap_bio(from_server, from_client, server_hostname=host)
    tls_server = server.wrap_bio(to_server, to_client, server_side=True)
    client_done = server_done = False
    for _ in range(10):
        if not client_done:
            try:
                tls_client.do_handshake()
                client_done = True
            except ssl.SSLWantReadError:
                pass
        to_server.write(from_client.read())
        if not server_done:
            try:
                tls_server.do_handshake()
                server_done = True
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError:
                pass  # the client's alert; the client raises the reason
        from_server.write(to_client.read())
        if client_done and server_done:
            return
    raise AssertionError("the handshake did not finish")


def test_the_emulators_certificate_passes_strict_verification() -> None:
    cert = ServingCert()
    for host in ("127.0.0.1", "localhost", "kubernetes.default.svc"):
        _handshake(cert.context, _strict_client(cert.ca_pem), host)


def test_the_emulators_certificate_names_a_host_it_serves_on() -> None:
    cert = ServingCert("emulator.example")
    _handshake(cert.context, _strict_client(cert.ca_pem), "emulator.example")
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(cert.context, _strict_client(cert.ca_pem), "elsewhere.example")


def test_the_self_signed_serving_pair_passes_strict_verification() -> None:
    pair = self_signed("webhook.kubetrio-system.svc", ("127.0.0.1",))
    assert pair.ca_pem is not None
    _handshake(server_context(pair), _strict_client(pair.ca_pem), "webhook.kubetrio-system.svc")
    _handshake(server_context(pair), _strict_client(pair.ca_pem), "127.0.0.1")


def test_certificates_carry_the_identifiers_strict_verifiers_require() -> None:
    pair = self_signed()
    leaf, ca = x509.load_pem_x509_certificates(pair.cert_pem)
    ca_id = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    issuer = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert issuer.key_identifier == ca_id.key_identifier
    assert leaf.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.key_cert_sign


def _pair_without_key_identifiers() -> ServingPair:
    """A CA and a leaf as the emulator made them before: valid, trusted, but without the
    authority and subject key identifiers."""
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old-ca")])
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())

    def build(subject: x509.Name, public: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(name)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=1))
        )

    ca = (
        build(name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "server")])
    leaf = (
        build(leaf_name, key.public_key())
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ServingPair(leaf.public_bytes(pem), key_pem, ca.public_bytes(pem))


def test_a_certificate_strict_verification_refuses_is_blamed_on_the_server() -> None:
    pair = _pair_without_key_identifiers()
    assert pair.ca_pem is not None
    with pytest.raises(ssl.SSLCertVerificationError) as caught:
        _handshake(server_context(pair), _strict_client(pair.ca_pem), "localhost")
    assert classify(caught.value) == "bad-certificate"
    said = transport_problem(caught.value)
    assert "the server's TLS certificate is unacceptable" in said
    assert "Key Identifier" in said


def test_a_certificate_from_another_ca_is_blamed_on_the_clients_ca() -> None:
    pair, other = self_signed(), self_signed()
    assert other.ca_pem is not None
    with pytest.raises(ssl.SSLCertVerificationError) as caught:
        _handshake(server_context(pair), _strict_client(other.ca_pem), "localhost")
    assert classify(caught.value) == "untrusted"
    assert "its TLS certificate is not trusted" in transport_problem(caught.value)

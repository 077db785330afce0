"""The pure parts of secure metrics: bearer-token parsing, the review retry schedule, the groups
a reviewed user is authorized with, the self-signed certificate, certificate errors, the
declared RBAC rules against the shipped ClusterRoles, the settings and the bind defaults."""

from __future__ import annotations

import random
import ssl
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from cryptography import x509
from prometheus_client import CollectorRegistry

from kubetrio.cmd.config import ConfigError
from kubetrio.runtime.certs.serving import (
    CertificateError,
    ServingPair,
    self_signed,
    server_context,
)
from kubetrio.runtime.certs.watcher import CertWatcher
from kubetrio.runtime.client.typed import Client
from kubetrio.runtime.manager.manager import Manager
from kubetrio.runtime.metrics.auth import (
    METRICS_AUTH_RULES,
    METRICS_READER_RULES,
    ReviewBackoff,
    _User,
    _with_authenticated,
    bearer_token,
)
from kubetrio.runtime.metrics.secure import SecureServing
from tests.helpers.config import load

RBAC = Path(__file__).resolve().parents[2] / "config" / "rbac"


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER abc extra", "abc"),
        ("  Bearer abc  ", "abc"),
        ("Bearer", None),
        ("Bearer ", None),
        ("Bearer  abc", None),  # the apiserver reads an empty token between the two spaces
        ("Basic dXNlcjpwYXNz", None),
        ("", None),
        ("abc", None),
    ],
)
def test_bearer_token_is_read_as_the_apiserver_reads_it(header: str, token: str | None) -> None:
    assert bearer_token(header) == token


def test_review_retries_wait_as_the_apiserver_webhook() -> None:
    waits = ReviewBackoff().waits(random.Random(7))
    assert len(waits) == 4  # five attempts
    for wait, base in zip(waits, (0.5, 0.75, 1.125, 1.6875), strict=True):
        assert base <= wait <= base * 1.2


def test_reviewed_users_are_authorized_as_authenticated() -> None:
    assert _with_authenticated(_User("sa", groups=["g"])) == ["g", "system:authenticated"]
    assert _with_authenticated(_User("sa", groups=["system:authenticated"])) == [
        "system:authenticated"
    ]
    assert _with_authenticated(_User("system:anonymous")) == []


def test_self_signed_is_a_ca_and_a_serving_certificate_for_localhost() -> None:
    pair = self_signed()
    assert pair.ca_pem is not None
    leaf, ca = x509.load_pem_x509_certificates(pair.cert_pem)
    assert ca == x509.load_pem_x509_certificate(pair.ca_pem)
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    lifetime = leaf.not_valid_after_utc - leaf.not_valid_before_utc
    assert 365 <= lifetime.days <= 366
    context = server_context(pair)
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2


def test_a_broken_pair_is_one_error_naming_its_source() -> None:
    one, other = self_signed(), self_signed()
    with pytest.raises(CertificateError) as caught:
        server_context(ServingPair(one.cert_pem, other.key_pem), "a.crt and a.key")
    assert str(caught.value) == "a.crt and a.key: the key does not belong to the certificate"
    with pytest.raises(CertificateError, match=r"^x: "):
        server_context(ServingPair(b"junk", b"junk"), "x")


def test_the_watcher_names_a_missing_file_and_counts_reads(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    watcher = CertWatcher(tmp_path / "tls.crt", tmp_path / "tls.key", registry=registry)
    with pytest.raises(CertificateError) as caught:
        watcher.read()
    assert str(caught.value) == f"cannot read {tmp_path}/tls.crt: No such file or directory"
    cert = trustme.CA().issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "tls.crt"))
    cert.private_key_pem.write_to_path(str(tmp_path / "tls.key"))
    assert watcher.read() is True
    assert watcher.read() is False  # unchanged: the served context stays
    assert registry.get_sample_value("certwatcher_read_certificate_total") == 3
    assert registry.get_sample_value("certwatcher_read_certificate_errors_total") == 1


def shipped_rules(name: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = yaml.safe_load((RBAC / name).read_text())["rules"]
    return rules


def test_declared_rules_are_the_shipped_cluster_roles() -> None:
    assert shipped_rules("metrics_auth_role.yaml") == list(METRICS_AUTH_RULES)
    assert shipped_rules("metrics_reader_role.yaml") == list(METRICS_READER_RULES)
    binding = yaml.safe_load((RBAC / "metrics_auth_role_binding.yaml").read_text())
    assert binding["roleRef"]["name"] == "kubetrio-metrics-auth-role"
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "kubetrio-controller-manager",
            "namespace": "kubetrio-system",
        }
    ]


def test_metrics_settings() -> None:
    config = load(["--metrics-secure", "--metrics-cert-path", "/certs"])
    assert (config.metrics_secure, config.metrics_cert_path) == (True, "/certs")
    assert load([], {"KUBETRIO_METRICS_SECURE": "true"}).metrics_secure is True
    with pytest.raises(ConfigError) as caught:
        load(["--metrics-cert-path", "/certs"])
    assert str(caught.value) == (
        "flag --metrics-cert-path (metricsCertPath): only with metricsSecure "
        "(the certificate serves /metrics over TLS)"
    )
    same = ["--metrics-secure", "--metrics-bind-address", ":9000"]
    with pytest.raises(ConfigError, match="probes stay plain HTTP on a port of their own"):
        load([*same, "--health-probe-bind-address", ":9000"])
    # Port 0 twice is two free ports, and without TLS one listener serves both, as before.
    two_free = [
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
    ]
    load(["--metrics-secure", *two_free])
    load(["--metrics-bind-address", ":9000", "--health-probe-bind-address", ":9000"])


def test_bind_defaults_are_controller_runtimes() -> None:
    client = Client.from_url("http://127.0.0.1:1")  # never asked: nothing runs
    plain = Manager(client)
    assert (plain.metrics_bind_address, plain.health_probe_bind_address) == (":8080", ":8081")
    secure = Manager(client, metrics_secure=SecureServing())
    assert secure.metrics_bind_address == ":8443"
    assert Manager(client, metrics_bind_address="0").metrics_bind_address == "0"
    assert Manager(client, health_probe_bind_address="").health_probe_bind_address == ""

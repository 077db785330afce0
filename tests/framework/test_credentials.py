"""The pure parts of credentials: plugin output and stanza checks, the token file's re-read
period on an injected clock, in-cluster configuration, and which credential wins."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pykube
import pytest

from kubetrio.runtime.client.credentials import Credentials
from kubetrio.runtime.client.execplugin import (
    CredentialError,
    ExecConfig,
    ExecPlugin,
    parse_exec_credential,
)
from kubetrio.runtime.client.filecreds import FileToken
from kubetrio.runtime.client.incluster import in_cluster_config, pod_namespace
from kubetrio.runtime.client.threadclock import ThreadClock

V1 = "client.authentication.k8s.io/v1"


class Hands:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def clock(self) -> ThreadClock:
        return ThreadClock(lambda: self.t, lambda: self.t)


def output(**status: object) -> bytes:
    return json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": status}).encode()


def test_expiration_timestamps_in_any_rfc3339_form() -> None:
    plain = parse_exec_credential(output(token="t", expirationTimestamp="2030-01-01T00:00:00Z"), V1)
    offset = parse_exec_credential(
        output(token="t", expirationTimestamp="2030-01-01T01:00:00.5+01:00"), V1
    )
    assert plain.expires is not None and offset.expires == plain.expires + 0.5
    assert parse_exec_credential(output(token="t"), V1).expires is None
    with pytest.raises(CredentialError, match=r"status\.expirationTimestamp: has no time zone"):
        parse_exec_credential(output(token="t", expirationTimestamp="2030-01-01T00:00:00"), V1)
    with pytest.raises(CredentialError, match=r"status\.token: not a string"):
        parse_exec_credential(output(token=5), V1)


def test_v1beta1_defaults_interactive_mode_and_resolves_nothing_else() -> None:
    config = ExecConfig.parse(
        {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws"}, "users[x].exec"
    )
    assert config.interactive_mode == "IfAvailable"
    with pytest.raises(CredentialError, match=r"^users\[x\]\.exec\.args: must be a list"):
        ExecConfig.parse({"apiVersion": V1, "command": "c", "args": "a b"}, "users[x].exec")


def plugin(script: str, hands: Hands) -> ExecPlugin:
    config = ExecConfig(
        api_version=V1, command=sys.executable, args=("-c", script), interactive_mode="Never"
    )
    return ExecPlugin(config, clock=hands.clock())


@pytest.mark.process
def test_cached_until_the_instant_after_expiry() -> None:
    hands = Hands()
    status = {"token": "t", "expirationTimestamp": "1970-01-01T00:20:00Z"}  # t = 1200
    credential = {"apiVersion": V1, "kind": "ExecCredential", "status": status}
    p = plugin(f"print({json.dumps(json.dumps(credential))})", hands)
    assert p.credential().token == "t"
    hands.t = 1200.0
    p.credential()
    assert p.runs == 1
    hands.t = 1200.5
    p.credential()
    assert p.runs == 2


def test_interactive_always_needs_a_terminal() -> None:
    config = ExecConfig(api_version=V1, command="x", interactive_mode="Always")
    p = ExecPlugin(config, stdin_is_terminal=lambda: False)
    with pytest.raises(CredentialError, match="interactiveMode Always, but standard input"):
        p.credential()
    assert p.runs == 0


def test_token_file_period_and_reset(tmp_path: Path) -> None:
    hands = Hands()
    path = tmp_path / "token"
    path.write_text("one\n")
    source = FileToken(path, hands.clock())
    path.write_text("two")
    hands.t += 49.9
    assert source.token() == "one"
    hands.t += 0.1
    assert source.token() == "two"
    # A 401 for a token sent before the last reading: no re-read, retry with what was read.
    path.write_text("three")
    assert source.refresh_after_unauthorized("one", sent_at=hands.t - 1) is True
    assert source.token() == "two"
    assert source.refresh_after_unauthorized("two", sent_at=hands.t) is True
    assert source.token() == "three"
    path.unlink()
    hands.t += 120
    assert source.token() == "three"  # unreadable: the last good token
    path.write_text("")
    hands.t += 120
    assert source.token() == "three"  # empty: likewise


def test_in_cluster_ipv6_and_no_ca(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    config = in_cluster_config(str(tmp_path), env)
    assert config.cluster["server"] == "https://[fd00::1]:443"
    assert "certificate-authority" not in config.cluster
    assert config.namespace == "default"
    assert config.doc["users"][0]["user"] == {"tokenFile": str(tmp_path / "token")}


def kubeconfig(user: dict[str, object]) -> pykube.KubeConfig:
    return pykube.KubeConfig(
        {
            "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:1"}}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )


def test_which_credential_wins() -> None:
    exec_stanza = {"apiVersion": V1, "command": "never-run", "interactiveMode": "Never"}
    clock = ThreadClock()
    with_token = Credentials.for_user(kubeconfig({"token": "t", "exec": exec_stanza}), clock)
    assert with_token.exec_plugin is None  # as client-go
    # A password keeps a plugin from being consulted (client-go), and gives way to a token.
    basic = Credentials.for_user(kubeconfig({"username": "a", "password": "b:c"}), clock)
    headers: dict[str, str] = {}
    basic.apply(headers)
    assert headers == {"Authorization": "Basic YTpiOmM="}  # base64 of "a:b:c"
    with_plugin = {"username": "a", "password": "b", "exec": exec_stanza}
    assert Credentials.for_user(kubeconfig(with_plugin), clock).exec_plugin is None
    token_first = Credentials.for_user(kubeconfig({"token": "t", "username": "a"}), clock)
    token_first.apply(headers)
    assert headers == {"Authorization": "Bearer t"}
    anonymous = Credentials.for_user(kubeconfig({}), clock)
    headers = {}
    assert anonymous.apply(headers).cert is None
    assert headers == {}


@pytest.mark.parametrize(
    ("provider", "successor"),
    [
        ("gcp", "gke-gcloud-auth-plugin"),
        ("azure", "kubelogin (Azure)"),
        ("oidc", "kubelogin (kubectl oidc-login get-token)"),
        ("acme", "the provider's credential plugin"),
    ],
)
def test_auth_providers_are_refused_with_their_exec_plugin_named(
    provider: str, successor: str
) -> None:
    user = {"auth-provider": {"name": provider, "config": {"id-token": "x"}}}
    with pytest.raises(CredentialError) as refused:
        Credentials.for_user(kubeconfig(user), ThreadClock())
    assert str(refused.value) == (
        f"users[u].auth-provider {provider!r} is not supported: authenticate with an exec "
        f"credential plugin instead, such as {successor}"
    )
    # A token or a password of its own authenticates the user as before.
    assert Credentials.for_user(kubeconfig({**user, "token": "t"}), ThreadClock()).static_token


def test_the_pod_namespace_comes_from_the_service_account_mount(tmp_path: Path) -> None:
    assert pod_namespace(str(tmp_path)) is None  # outside a pod: no mount
    (tmp_path / "namespace").write_text("")
    assert pod_namespace(str(tmp_path)) is None
    (tmp_path / "namespace").write_text("kubetrio-system\n")
    assert pod_namespace(str(tmp_path)) == "kubetrio-system"

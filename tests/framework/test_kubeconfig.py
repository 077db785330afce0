"""Broken kubeconfigs are reported by file and field, not as a KeyError."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrio.runtime.client.kubeconfig import KubeconfigError, kubeconfig_path, load_kubeconfig

GOOD = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}, {name: other, context: {cluster: c}}]
current-context: ctx
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config"
    path.write_text(text)
    return str(path)


def test_good_file_and_named_context(tmp_path: Path) -> None:
    config = load_kubeconfig(write(tmp_path, GOOD))
    assert config.current_context == "ctx"
    assert load_kubeconfig(write(tmp_path, GOOD), "other").current_context == "other"


@pytest.mark.parametrize(
    ("text", "context", "message"),
    [
        ("clusters: [", None, "not valid YAML"),
        ("- a\n- b\n", None, "expected a mapping"),
        ("clusters: []\n", None, "clusters is missing or empty"),
        (GOOD.replace("current-context: ctx", ""), None, "no current-context"),
        (GOOD, "prod", "no context named 'prod'"),
        (GOOD.replace("cluster: c, user: u", "cluster: x, user: u"), None, "no cluster named 'x'"),
        (GOOD.replace('server: "https://10.0.0.1:6443"', "insecure: true"), None, "has no server"),
        (GOOD.replace("user: u}", "user: nobody}"), None, "no user named 'nobody'"),
    ],
)
def test_errors_name_the_file_and_field(
    tmp_path: Path, text: str, context: str | None, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(KubeconfigError, match=message) as caught:
        load_kubeconfig(path, context)
    assert str(caught.value).startswith(f"kubeconfig {path}: ")


def test_missing_file_and_kubeconfig_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(KubeconfigError, match="No such file"):
        load_kubeconfig(str(tmp_path / "absent"))
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'first'}:{tmp_path / 'second'}")
    assert kubeconfig_path() == tmp_path / "first"
    monkeypatch.setenv("KUBECONFIG", "")
    assert kubeconfig_path() == Path("~/.kube/config").expanduser()

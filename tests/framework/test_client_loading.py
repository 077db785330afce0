"""``load_client`` follows client-go's default loading rules, so a script's client finds the
same API server ``kubetrio run`` would: the path given, ``$KUBECONFIG``, the pod's
ServiceAccount, ``~/.kube/config`` — and says in one line what it looked for when none is
there."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubetrio.runtime import KubeconfigError, load_client


def _kubeconfig(path: Path, server: str) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment with no kubeconfig and outside any pod."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    return tmp_path


def _service_account(directory: Path) -> str:
    directory.mkdir()
    (directory / "token").write_text("pod-token")
    (directory / "namespace").write_text("team-a")
    return str(directory)


def test_the_path_given_comes_first(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given = _kubeconfig(nowhere / "given", "https://given.example:6443")
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(nowhere / "env", "https://env.example")))
    assert load_client(str(given)).host == "given.example:6443"


def test_kubeconfig_variable_before_the_pod(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(nowhere / "env", "https://env.example")))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    assert load_client().host == "env.example"


def test_in_a_pod_its_service_account(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    _kubeconfig(_home_config(nowhere), "https://home.example")  # the pod wins over it
    client = load_client(service_account_dir=_service_account(nowhere / "sa"))
    assert client.host == "10.0.0.1:443"


def _home_config(root: Path) -> Path:
    path = root / "home" / ".kube" / "config"
    path.parent.mkdir(parents=True)
    return path


def test_outside_a_pod_the_home_kubeconfig(nowhere: Path) -> None:
    _kubeconfig(_home_config(nowhere), "https://home.example")
    assert load_client().host == "home.example"
    assert load_client(master="https://other.example:8443").host == "other.example:8443"


def test_a_master_alone_is_used_without_a_kubeconfig(nowhere: Path) -> None:
    assert load_client(master="http://127.0.0.1:8080").host == "127.0.0.1:8080"


def test_nothing_found_is_one_line_saying_what_was_looked_for(nowhere: Path) -> None:
    with pytest.raises(KubeconfigError) as caught:
        load_client()
    message = str(caught.value)
    assert "\n" not in message
    assert "KUBECONFIG" in message and "KUBERNETES_SERVICE_HOST is unset" in message
    assert str(nowhere / "home" / ".kube" / "config") in message

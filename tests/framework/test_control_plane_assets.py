"""Where the kit finds a real control plane's binaries: controller-runtime's conventions, so a
``setup-envtest`` user's folder works as it is, and a missing binary is named with how to get
it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrio.testing.controlplane import ControlPlaneUnavailable, find_assets

NAMES = ("etcd", "kube-apiserver", "kube-controller-manager")


def _binary(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_kubebuilder_assets_holds_all_three(tmp_path: Path) -> None:
    for name in NAMES:
        _binary(tmp_path / name)
    found = find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)})
    assert found == {name: tmp_path / name for name in NAMES}


def test_a_per_binary_override_wins(tmp_path: Path) -> None:
    for name in NAMES:
        _binary(tmp_path / name)
    own = _binary(tmp_path / "elsewhere" / "my-etcd")
    found = find_assets({"KUBEBUILDER_ASSETS": str(tmp_path), "TEST_ASSET_ETCD": str(own)})
    assert found["etcd"] == own and found["kube-apiserver"] == tmp_path / "kube-apiserver"


def test_missing_binaries_are_named_with_how_to_get_them(tmp_path: Path) -> None:
    _binary(tmp_path / "etcd")
    (tmp_path / "kube-apiserver").write_text("not executable")
    with pytest.raises(ControlPlaneUnavailable) as caught:
        find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)})
    message = str(caught.value)
    missing = message.partition("missing ")[2].partition(")")[0]
    assert missing == f"{tmp_path / 'kube-apiserver'}, {tmp_path / 'kube-controller-manager'}"
    assert "setup-envtest" in message


def test_no_folder_says_the_variable_is_unset() -> None:
    with pytest.raises(ControlPlaneUnavailable, match="KUBEBUILDER_ASSETS is unset"):
        find_assets({})

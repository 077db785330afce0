"""Which API server is the control cluster and which the target (``cmd.clusters``), from the
flags MCM users know, and the checks that keep a bad setting from starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetrio.cmd.clusters import (
    Endpoint,
    clusters_are_one,
    control_endpoint,
    embedded_conflict,
    target_endpoint,
)
from tests.helpers.config import error_of, load

HERE = __file__  # an existing file: kubeconfig paths are checked to exist


def roles(*argv: str) -> tuple[Endpoint, Endpoint, bool]:
    config = load(argv)
    return control_endpoint(config), target_endpoint(config), clusters_are_one(config)


def test_one_kubeconfig_for_both_is_the_default() -> None:
    assert roles() == (Endpoint(), Endpoint(), True)
    top = Endpoint(HERE, "ctx", None)
    assert roles("--kubeconfig", HERE, "--context", "ctx") == (top, top, True)
    master = Endpoint(None, None, "https://api:6443")
    assert roles("--master", "https://api:6443") == (master, master, True)


def test_only_a_target_kubeconfig_makes_it_the_control_cluster_too() -> None:
    """MCM: --control-kubeconfig "default value is same as target-kubeconfig"."""
    assert roles("--target-kubeconfig", HERE) == (Endpoint(HERE), Endpoint(HERE), True)
    # A top-level context names the control cluster in the default kubeconfig instead.
    control, target, one = roles("--context", "seed", "--target-kubeconfig", HERE)
    assert (control, target, one) == (Endpoint(None, "seed"), Endpoint(HERE), False)


def test_a_target_kubeconfig_beside_the_kubeconfig_is_a_second_cluster(tmp_path: Path) -> None:
    other = tmp_path / "control"
    other.write_text("{}")
    control, target, one = roles("--kubeconfig", str(other), "--target-kubeconfig", HERE)
    assert (control, target, one) == (Endpoint(str(other)), Endpoint(HERE), False)
    control, target, one = roles(
        "--control-kubeconfig", str(other), "--target-kubeconfig", HERE, "--target-context", "t"
    )
    assert (control, target, one) == (Endpoint(str(other)), Endpoint(HERE, "t"), False)


def test_two_contexts_of_one_kubeconfig_are_two_clusters() -> None:
    control, target, one = roles(
        "--kubeconfig", HERE, "--control-context", "seed", "--target-context", "shoot"
    )
    assert (control, target, one) == (Endpoint(HERE, "seed"), Endpoint(HERE, "shoot"), False)


def test_in_cluster_control_as_mcm_spells_it() -> None:
    control, target, one = roles("--control-kubeconfig", "inClusterConfig")
    assert target == Endpoint()  # the default loading rules: KUBECONFIG, ~/.kube/config
    assert control == Endpoint("inClusterConfig") and not one


def test_namespace_is_mcms_name_for_the_machine_namespace() -> None:
    assert load(["--namespace", "shoot--x"]).machine.namespace == "shoot--x"
    assert "--namespace" in error_of(["--namespace", "Not_A_Label"])
    assert load(["--namespace", "a", "--machine-namespace", "a"]).machine.namespace == "a"
    assert error_of(["--machine-namespace", "a", "--namespace", "b"]) == (
        "flag --namespace: disagrees with flag --machine-namespace (both set machine.namespace)"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["--control-kubeconfig", "/nope"],
            'flag --control-kubeconfig (control.kubeconfig): kubeconfig file "/nope" does not '
            "exist",
        ),
        (["--target-kubeconfig", "none"], '"none" (no target cluster) is not supported'),
        (["--target-kube-api-burst", "5"], "flag --target-kube-api-burst (target.burst): "),
        (["--control-kube-api-qps", "0"], "flag --control-kube-api-qps (control.qps): "),
    ],
)
def test_bad_cluster_settings_name_their_flag(argv: list[str], expected: str) -> None:
    assert expected in error_of(argv)


def test_a_config_file_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "kubetrio.yaml"
    path.write_text("target:\n  kubeconfig: /nope\n")
    assert error_of(["--config", str(path)]) == (
        f'config file {path}: target.kubeconfig: kubeconfig file "/nope" does not exist'
    )
    path.write_text("target:\n  kubeconfg: x\n")
    assert 'target: unknown field "kubeconfg" (did you mean "kubeconfig"?)' in error_of(
        ["--config", str(path)]
    )


def test_the_embedded_cluster_is_one_cluster() -> None:
    assert embedded_conflict(load()) is None
    assert embedded_conflict(load(["--target-context", "x"])) is not None
    assert embedded_conflict(load(["--control-kubeconfig", HERE])) is not None

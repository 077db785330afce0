"""The safety controller's settings: MCM's flag names and defaults, durations written Go's way,
bad values refused with one line naming the flag or the file field."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kubetrio.cmd.config import (
    ConfigError,
    ManagerConfig,
    add_config_flags,
    config_to_dict,
    load_config,
)

KNOWN = ("machine", "nodedelete", "storagegc")


def load(*argv: str) -> ManagerConfig:
    parser = argparse.ArgumentParser(prog="kubetrio run")
    add_config_flags(parser)
    return load_config(parser.parse_args(list(argv)), {}, KNOWN)


def test_mcm_defaults() -> None:
    machine = load().machine
    assert machine.safety_apiserver_status_check_period == 60
    assert machine.safety_apiserver_status_check_timeout == 30


def test_flags_take_go_durations_and_round_trip() -> None:
    config = load(
        "--machine-safety-apiserver-statuscheck-period",
        "2m30s",
        "--machine-safety-apiserver-statuscheck-timeout",
        "45s",
    )
    machine = config.machine
    assert machine.safety_apiserver_status_check_period == 150
    assert machine.safety_apiserver_status_check_timeout == 45
    dumped = config_to_dict(config)
    assert dumped["machine"]["safetyAPIServerStatusCheckPeriod"] == "2m30s"
    assert dumped["machine"]["safetyAPIServerStatusCheckTimeout"] == "45s"


def test_file_field_names(tmp_path: Path) -> None:
    path = tmp_path / "kubetrio.yaml"
    path.write_text("machine:\n  safetyAPIServerStatusCheckTimeout: 1m\n")
    config = load("--config", str(path))
    assert config.machine.safety_apiserver_status_check_timeout == 60


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--machine-safety-apiserver-statuscheck-period", "0s"],
            "flag --machine-safety-apiserver-statuscheck-period "
            "(machine.safetyAPIServerStatusCheckPeriod): must be greater than 0",
        ),
        (
            ["--machine-safety-apiserver-statuscheck-timeout", "soon"],
            "flag --machine-safety-apiserver-statuscheck-timeout",
        ),
    ],
)
def test_bad_values_name_the_flag(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(*argv)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_overshooting_flags() -> None:
    default = load().machine
    assert (default.safety_up, default.safety_down, default.safety_overshooting_period) == (
        2,
        1,
        60,
    )
    machine = load(
        "--safety-up", "5", "--safety-down", "0", "--machine-safety-overshooting-period", "30s"
    ).machine
    assert (machine.safety_up, machine.safety_down, machine.safety_overshooting_period) == (
        5,
        0,
        30,
    )
    with pytest.raises(ConfigError, match=r"flag --safety-down \(machine.safetyDown\)"):
        load("--safety-down", "-1")

"""Loading a manager configuration from flags and environment as ``kubetrio run`` does, and the
one-line error a bad setting gets: the configuration tests and those of the settings built on it
(clusters, secure metrics) load the same way."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kubetrio.cmd.config import (
    ConfigError,
    ManagerConfig,
    add_config_flags,
    config_to_dict,
    load_config,
)
from kubetrio.cmd.config.settings import kind_of

KNOWN = ("machine", "machineset", "machinedeployment", "safety", "nodedelete", "storagegc")


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="kubetrio run")
    add_config_flags(result)
    return result


def load(
    argv: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    known: Sequence[str] = KNOWN,
) -> ManagerConfig:
    return load_config(parser().parse_args(list(argv)), env or {}, known)


def error_of(
    argv: Sequence[str] = (), env: Mapping[str, str] | None = None, known: Sequence[str] = KNOWN
) -> str:
    with pytest.raises(ConfigError) as caught:
        load(argv, env, known)
    message = str(caught.value)
    assert "\n" not in message
    return message


def write(tmp_path: Path, text: str, name: str = "kubetrio.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def sample_text(path: tuple[str, ...]) -> str:
    """A valid non-default value for the field at ``path``, as text on a command line."""
    by_path: dict[tuple[str, ...], str] = {
        ("controllers",): "machine",
        ("metricsBindAddress",): ":9999",
        ("healthProbeBindAddress",): "0",
        ("webhookBindAddress",): "127.0.0.1:9444",
        ("master",): "https://example.com:6443",
        ("storage", "backendURL"): "http://storage:5705",
        ("machine", "simCloudURL"): "http://cloud:8080",
        ("logging", "format"): "json",
        ("logging", "level"): "error",
        ("leaderElection", "leaseDuration"): "40s",
        ("leaderElection", "renewDeadline"): "9s",
        ("leaderElection", "retryPeriod"): "1s",
        ("leaderElection", "releaseOnCancel"): "false",
        ("machine", "nodeConditions"): "A,B",
        ("machine", "metricsPerMachine"): "false",  # on by default
        ("machine", "autoscalerScaleDownAnnotationDuringRollout"): "false",  # on by default
        ("sharding", "runSharder"): "false",  # on by default
        ("gc",): "default",  # tuned by default
        ("workers",): "storagegc=4",
        ("control", "kubeconfig"): "inClusterConfig",
        ("target", "kubeconfig"): __file__,  # checked to exist
    }
    if path in by_path:
        return by_path[path]
    return {"str": "custom-value", "bool": "true", "int": "4", "float": "7.5"}.get(
        kind_of(path), "7m"
    )


TARGET_LIMITS = {("target", "qps"), ("target", "burst")}


def apart_for(path: tuple[str, ...]) -> list[str]:
    """Flags a sample value at ``path`` needs beside it to be valid."""
    if path in TARGET_LIMITS:
        # A target cluster's rate limit needs a target cluster apart from the control one.
        return ["--target-context", "other"]
    if path == ("metricsCertPath",):
        return ["--metrics-secure"]  # the certificate serves /metrics over TLS only
    if path == ("sharding", "enabled"):
        return ["--leader-elect"]  # the singletons and the sharder run on the leader
    return []


def value_at(config: ManagerConfig, path: Sequence[str]) -> Any:
    node: Any = config_to_dict(config)
    for part in path:
        node = node.get(part)  # unset values are left out of a dump
    return node

"""Loading a manager configuration from flags and environment as ``kubetrio run`` does, and the
one-line error a bad setting gets: the configuration tests and those of the settings built on it
(clusters, secure metrics) load the same way."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence

import pytest

from kubetrio.cmd.config import (
    ConfigError,
    ManagerConfig,
    add_config_flags,
    load_config,
)

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

"""The command line as a process: ``--help`` shows each flag's default, taken from the
config's own defaults; a mistyped flag is answered in one line with the one that was meant,
for every subcommand."""

from __future__ import annotations

import re

import pytest
import trio

from kubetrio.cmd.argparser import format_default
from kubetrio.cmd.config import SETTINGS, ManagerConfig, config_to_dict
from tests.helpers.cli import environment, kubetrio

pytestmark = pytest.mark.process


async def run_cli(*args: str) -> tuple[int, str, str]:
    with trio.fail_after(60):
        proc = await trio.run_process(
            kubetrio(*args),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=environment() | {"COLUMNS": "1000"},  # one line per flag
        )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


@pytest.mark.slow
async def test_run_help_shows_every_default_from_the_config() -> None:
    code, out, _ = await run_cli("run", "--help")
    assert code == 0
    defaults = config_to_dict(ManagerConfig())
    # Each flag's entry: from its name to the next flag's (long ones wrap onto a second line).
    entries = {
        chunk.split()[0]: " ".join(chunk.split())
        for chunk in re.split(r"\n  (?=-)", out)
        if chunk.startswith("-")
    }
    shown = 0
    for setting in SETTINGS:
        line = entries.get(setting.flag)
        assert line is not None, f"{setting.flag} missing from --help"
        value = defaults
        for part in setting.path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None:  # unset by default (kubeconfig, context, ...): nothing to show
            assert f"(env {setting.env})" in line, line
            continue
        assert f"(default: {format_default(value)}; env {setting.env})" in line, line
        shown += 1
    assert shown >= 35  # most settings have one
    assert "--leader-elect-lease-duration DURATION" in out and "(default: 15s;" in out
    assert re.search(r"--leader-elect \[BOOL\]\s+.*\(default: false;", out), out


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["run", "--leader-elekt"],
            "kubetrio run: unknown flag --leader-elekt; did you mean --leader-elect?",
        ),
        (
            ["run", "--metrics-bind-adress=:8080"],
            "kubetrio run: unknown flag --metrics-bind-adress; "
            "did you mean --metrics-bind-address?",
        ),
        (
            ["emulator", "--prot", "0"],
            "kubetrio emulator: unknown flag --prot; did you mean --port?",
        ),
        (["--verison"], "kubetrio: unknown flag --verison; did you mean --version?"),
        (["run", "--zzz"], "kubetrio run: unknown flag --zzz"),
        (["rnu"], "kubetrio: unknown command 'rnu'; did you mean run?"),
        (
            ["run", "--embedded", "--machines", "x"],
            "kubetrio run: argument --machines: expected a positive number, got 'x'",
        ),
        (["xyz"], "kubetrio: unknown command 'xyz' (one of run, emulator"),  # and any later
    ],
)
async def test_a_mistyped_command_line_gets_one_line_with_what_was_meant(
    args: list[str], line: str
) -> None:
    code, out, err = await run_cli(*args)
    assert code == 2
    assert out == ""
    prog = line.split(":", 1)[0]
    if line.endswith("emulator"):  # the list of commands goes on as subcommands are added
        assert err.startswith(line) and err.endswith(f") (see {prog} --help)\n"), err
        assert err.count("\n") == 1, err
    else:
        assert err == f"{line} (see {prog} --help)\n"

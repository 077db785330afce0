"""The command line's parser: mistakes answered in one line, with the flag that was meant.

argparse answers an unknown flag with the whole usage (fifty flags for ``run``) and
"unrecognized arguments" at the top level, naming neither the subcommand nor what was meant.
Here the subcommand's parser reports it, suggesting the closest of its own flags.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["CommandParser", "format_default", "unknown_argument"]


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line; subparsers made from it are too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            commands = list(action.choices)
            close = difflib.get_close_matches(value, commands, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]}?" if close else f" (one of {', '.join(commands)})"
            raise argparse.ArgumentError(None, f"unknown command {value!r}{hint}")
        super()._check_value(action, value)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self._chosen(parsed)
            parser.error(unknown_argument(extras[0], parser))
        return parsed

    def _chosen(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The subcommand's parser when one was given: the extras were left over by it."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = getattr(parsed, action.dest or "", None)
                choices: dict[str, argparse.ArgumentParser] = action.choices
                if chosen in choices:
                    return choices[chosen]
        return self


def unknown_argument(argument: str, parser: argparse.ArgumentParser) -> str:
    """``unknown flag --leader-elekt; did you mean --leader-elect?`` (or without a guess)."""
    if not argument.startswith("-"):
        return f"unexpected argument {argument!r}"
    flag = argument.split("=", 1)[0]
    known = [option for action in parser._actions for option in action.option_strings]
    close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
    return f"unknown flag {flag}" + (f"; did you mean {close[0]}?" if close else "")


def format_default(value: Any) -> str:
    """A default as it would be typed on the command line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return ",".join(format_default(item) for item in value)
    if isinstance(value, dict):
        return ",".join(f"{key}={format_default(item)}" for key, item in value.items())
    return str(value)

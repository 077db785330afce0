"""MCM's machine status codes (``machinecodes/codes``) and the error drivers raise with them.

The controller branches on the code (transient codes retry sooner, NotFound skips steps), and
MCM writes the rendered error into ``lastOperation``; keeping its exact rendering lets operators
and tools that parse it keep working.
"""

from __future__ import annotations

import enum
import re


class Code(enum.IntEnum):
    OK = 0
    Canceled = 1
    Unknown = 2
    InvalidArgument = 3
    DeadlineExceeded = 4
    NotFound = 5
    AlreadyExists = 6
    PermissionDenied = 7
    ResourceExhausted = 8
    FailedPrecondition = 9
    Aborted = 10
    OutOfRange = 11
    Unimplemented = 12
    Internal = 13
    Unavailable = 14
    DataLoss = 15
    Unauthenticated = 16
    Uninitialized = 17

    @classmethod
    def from_name(cls, name: str) -> Code:
        """The code of a name as MCM prints it ("ResourceExhausted"); ValueError otherwise."""
        try:
            return cls[name]
        except KeyError:
            raise ValueError(f"unknown machine code {name!r}") from None


# The codes MCM treats as transient: the operation is retried after ShortRetry.
TRANSIENT_CODES = frozenset({Code.Unknown, Code.DeadlineExceeded, Code.Aborted, Code.Unavailable})

_RENDERED = re.compile(
    r"machine codes error: code = \[(?P<code>[A-Za-z]+)\] message = \[(?P<message>.*)\]\Z",
    re.DOTALL,
)


class MachineError(Exception):
    """A driver failure with an MCM code. The message must not carry secrets or user data:
    it ends up in the Machine's status, events and logs."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"machine codes error: code = [{self.code.name}] message = [{self.message}]"

    @property
    def transient(self) -> bool:
        return self.code in TRANSIENT_CODES


def parse_machine_error(text: str) -> MachineError | None:
    """The error rendered in ``text`` (MCM's ``status.FromError``), or None for any other text
    (MCM then treats the error as Unknown)."""
    match = _RENDERED.search(text)
    if match is None:
        return None
    try:
        code = Code.from_name(match.group("code"))
    except ValueError:
        return None
    return MachineError(code, match.group("message"))

"""Writing a subcommand's result to standard output."""

from __future__ import annotations

import os
import sys


def write_stdout(text: str) -> int:
    """Write ``text``; a reader that went away early (``kubetrio crds | head``) is not an
    error worth a traceback, as for any Unix filter."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # Python would complain again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0

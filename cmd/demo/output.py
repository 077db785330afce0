"""Where the demo writes: a live table on a terminal, plain lines for pipes and files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console, RenderableType
from rich.live import Live
from rich.text import Text

__all__ = ["Output"]


class Output:
    """Where the demo writes: a ``rich.Live`` table with milestone lines printed above it, or
    plain lines (machine changes included) for pipes and files."""

    def __init__(self, live: bool, stream: TextIO) -> None:
        self.live = live
        self.stream = stream
        self.console = Console(file=stream, highlight=False) if live else None
        self._live: Live | None = None
        self.gone = False

    @contextmanager
    def showing(self, renderable: Callable[[], RenderableType]) -> Iterator[None]:
        if self.console is None:
            yield
            return
        with Live(renderable(), console=self.console, auto_refresh=False, transient=False) as live:
            self._live = live
            try:
                yield
            finally:
                self.refresh(renderable())  # the final state stays on screen
                self._live = None

    def refresh(self, renderable: RenderableType) -> None:
        live = self._live
        if live is not None:
            self._write(lambda: live.update(renderable, refresh=True))

    def line(self, text: str, *, always: bool = True) -> None:
        """A line of text; ``always=False`` lines (machine changes) only in plain mode, where
        they stand in for the table."""
        console = self.console
        if console is None:
            self._write(lambda: print(text, file=self.stream, flush=True))
        elif always:
            self._write(lambda: console.print(Text(text)))

    def print(self, renderable: RenderableType) -> None:
        console = self.console
        if console is not None:
            self._write(lambda: console.print(renderable))

    def _write(self, write: Callable[[], None]) -> None:
        """A closed terminal or pipe (EIO, EPIPE) ends the output, not the demo: the cluster
        still has to be stopped cleanly."""
        if self.gone:
            return
        try:
            write()
        except OSError:
            self.gone = True

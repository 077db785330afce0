"""Where each field's value came from (the file, an environment variable, a flag, or the
default), so that an error names what the operator has to go and fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubetrio.cmd.config.errors import ConfigError, dotted

__all__ = ["FieldPath", "Sources", "lookup"]

FieldPath = tuple[str, ...]


class Sources:
    """Which source set each field path, to name it in an error."""

    def __init__(self, file_label: str | None, file_data: Mapping[str, Any]) -> None:
        self.file_label = file_label
        self.file_data = file_data
        self.explicit: dict[FieldPath, str] = {}  # path -> "environment variable X" / "flag --x"

    def set(self, path: FieldPath, label: str) -> None:
        self.explicit[path] = label

    def label(self, path: Sequence[str]) -> str | None:
        """The source of ``path`` (or of its nearest ancestor set as a whole); None = default."""
        for end in range(len(path), 0, -1):
            found = self.explicit.get(tuple(path[:end]))
            if found is not None:
                return found
        return self.file_label if self.file_label and lookup(self.file_data, path)[0] else None

    def is_default(self, path: Sequence[str]) -> bool:
        return self.label(path) is None

    def error(self, path: Sequence[str], message: str) -> ConfigError:
        source = self.label(path)
        where = dotted(path)
        if source is None:
            return ConfigError(f"{where}: {message}" if where else message)
        if source == self.file_label:
            return ConfigError(f"{source}: {where}: {message}" if where else f"{source}: {message}")
        return ConfigError(f"{source} ({where}): {message}" if where else f"{source}: {message}")


def lookup(data: Any, path: Sequence[str]) -> tuple[bool, Any]:
    """Whether plain data (a file's, a dump's) has a value at ``path``, and which."""
    node = data
    for part in path:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list | tuple) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node
